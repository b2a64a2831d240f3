"""Automatic memory for agents: the runtime behind the hooks ``chronomem
install claude-code --hooks`` writes, and ``chronomem watch`` for clients
without hooks.

* :mod:`.claude_code` -- ``chronomem hook claude-code``: recall for each
  prompt as additional context, the transcript imported when a turn, a
  compaction or the session ends;
* :mod:`.ingest` -- that import, in a detached child process, one at a time
  per transcript;
* :mod:`.watch` -- ``chronomem watch PATH...``: a polling loop importing
  session files as they grow;
* :mod:`.server_link` -- a running ``chronomem serve`` found and asked for
  the recall instead;
* :mod:`.entry` -- the hook's fast start (no click, no rich);
* :mod:`.guard`, :mod:`.runlog`, :mod:`.target` -- the time limit, the log
  file, and one name for every spelling of a database.

Nothing is imported here: ``python -m chronomem.adapters.hooks.ingest`` and
the hook's fast start must not pay for the modules they do not use.
See ``docs/hooks.md``.
"""
