"""``hook`` and ``watch``: automatic memory for agents (``docs/hooks.md``).

``chronomem hook claude-code`` is what Claude Code's hooks run (``chronomem
install claude-code --hooks`` writes them); ``chronomem watch PATH...``
imports session files as they grow, for clients without hooks. The runtime
lives in :mod:`chronomem.adapters.hooks`; these are its click faces.
"""

from __future__ import annotations

import json
import logging
import sys

import click

from ..hooks import claude_code
from ._common import json_option, state

__all__ = ["register"]

log = logging.getLogger("chronomem.cli")

_CLIENTS = ("claude-code",)


@click.command("hook", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("client", metavar="CLIENT")
@click.option("--budget", type=click.IntRange(*claude_code.BUDGET_RANGE, clamp=True),
              default=claude_code.DEFAULT_BUDGET_CHARS, show_default=True,
              help="Characters of recalled memory added to a prompt at most.")
@click.option("--time-limit", type=click.FloatRange(0.001, claude_code.MAX_TIME_LIMIT, clamp=True),
              default=claude_code.DEFAULT_TIME_LIMIT, show_default=True,
              help="Seconds after which the hook gives up silently (keep it below the hook's timeout).")
@click.pass_context
def hook_cmd(ctx: click.Context, client: str, budget: int, time_limit: float) -> None:
    """Answer one hook event of CLIENT (claude-code): the event's JSON on stdin.

    On UserPromptSubmit, prints what the memory recalls for the prompt as
    additional context for the model (nothing when it has nothing); on
    Stop, PreCompact and SessionEnd, imports the session's transcript in
    the background. Always exits 0 and writes nothing to stderr, even for
    an unknown CLIENT or option (an agent reads exit status 2 as "block"):
    problems go to the hook log ($XDG_STATE_HOME/chronomem/hooks.log).
    """
    st = state()
    if client not in _CLIENTS or ctx.args:
        from ..hooks.runlog import log_to_file

        log_to_file()
        logging.getLogger("chronomem.hooks").warning(
            "hook %s %s: unknown client or arguments (known clients: %s); ignored",
            client, " ".join(ctx.args), ", ".join(_CLIENTS))
        return
    code = claude_code.run(st.db_path, st.namespace, stdin=sys.stdin.buffer, stdout=sys.stdout,
                           budget_chars=budget, time_limit=time_limit, embedder=st.embedder, timezone=st.timezone)
    raise SystemExit(code)


@click.command("watch")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--format", "fmt", default="auto", show_default=True, metavar="FORMAT",
              help="Format of every PATH, as for ingest (auto: detected once per PATH).")
@click.option("--interval", type=click.FloatRange(0.1, 3600), default=2.0, show_default=True,
              help="Seconds between two passes.")
@click.option("--once", is_flag=True, help="One pass, then exit.")
@click.option("--keep-secrets", is_flag=True, help="Store credentials as written (default: redacted).")
@json_option
def watch_cmd(paths: tuple[str, ...], fmt: str, interval: float, once: bool, keep_secrets: bool) -> None:
    """Import the session files under PATHS as they are written, until Ctrl-C.

    For clients without hooks: point it at ~/.claude/projects,
    ~/.codex/sessions or any folder or file ingest reads. Each pass imports
    only what changed since the last (new files, grown files); an import
    adds only messages not stored yet. With --json, one JSON line per import.
    """
    from ..hooks.watch import Watcher

    st = state()

    def report(data: dict[str, object]) -> None:
        if st.json:
            click.echo(json.dumps(data, ensure_ascii=False, default=str))

    watch_log = logging.getLogger("chronomem.watch")
    if watch_log.getEffectiveLevel() > logging.INFO:
        watch_log.setLevel(logging.INFO)  # say what each pass imported, without -v
    watcher = Watcher(paths, fmt, report=report, keep_secrets=keep_secrets)
    mem = st.memory()
    if not once:
        click.echo(f"watching {len(paths)} path(s) every {interval:g} s into {st.db_path}; Ctrl-C to stop",
                   err=True)
    try:
        watcher.run(mem, interval, once=once)
    except KeyboardInterrupt:
        click.echo("stopped", err=True)


def register(main: click.Group) -> None:
    main.add_command(hook_cmd)
    main.add_command(watch_cmd)
