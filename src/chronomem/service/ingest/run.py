"""One import: a format reader's messages stored as episodes, once each.

Incremental and idempotent: every message has a stable key in its source
(:class:`~.source.SourceMessage`), kept hashed in ``import_keys`` with the
episode holding its latest version and a digest of what that version was
made of (text, speaker, occurred_at). A re-run adds only new keys; a message
whose digest changed becomes a new episode that supersedes the old one (an
edit keeps its history, never a duplicate); an erased one stays erased.
Keys commit in the same transaction as their episodes, a batch at a time,
so an import killed at any point resumes by running it again: nothing is
duplicated and every committed batch stays. A file read to its end gets its
fingerprint stored; an unchanged file is skipped unread on the next run.

Memory stays constant: the reader streams and at most one batch of messages
(``batch`` items, default 500) is held at a time.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

from ...core.limits import MAX_EPISODE_CHARS, MAX_SESSION_CHARS, MAX_SOURCE_CHARS, MAX_SPEAKER_CHARS, check_bool
from ...core.time import TimeLike, period_end, to_us
from ...errors import InvalidInputError
from ...store.protocol import EpisodeRecord, EpisodeWriteTx
from ..evidence.episodes import Episodes, episode_store, supersede_in
from ..scope import Scope
from .formats import detect, reader
from .formats.text import clean
from .source import ReadOptions, Skip, SourceMessage

__all__ = ["ImportProgress", "ImportSummary", "Importer"]

log = logging.getLogger("chronomem.ingest")

_EXAMPLES = 20  # skipped records listed in a summary (the counts are complete)
_TRUNCATED = "\n[… truncated: {n} more characters]"


@dataclass
class ImportProgress:
    """Where an import is: files done of all, messages read so far, the file
    being read."""

    files_done: int
    files: int
    messages: int
    file: str


@dataclass
class ImportSummary:
    """What an import did. ``added``: new messages stored; ``updated``:
    messages whose content changed, stored as a new version superseding the
    old; ``unchanged``: already stored as they are; ``skipped``: records the
    reader could not use or the store refused, by reason (``skips`` lists
    the first few); ``filtered``: left out by ``since`` / ``project``;
    ``files_unchanged``: inputs skipped unread (fingerprint unchanged). With
    ``dry_run`` the counts say what a real run would do and nothing is written."""

    format: str
    path: str
    dry_run: bool = False
    files: int = 0
    files_unchanged: int = 0
    messages: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    filtered: int = 0
    truncated: int = 0
    redacted: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    redacted_by_kind: dict[str, int] = field(default_factory=dict)
    skips: list[dict[str, str]] = field(default_factory=list)
    episode_ids: list[str] = field(default_factory=list, repr=False)
    seconds: float = 0.0

    def skip(self, where: str, reason: str) -> None:
        self.skipped += 1
        kind = reason.split(":", 1)[0].split(" (", 1)[0]  # "invalid JSON (a truncated line)" -> "invalid JSON"
        self.skipped_by_reason[kind] = self.skipped_by_reason.get(kind, 0) + 1
        if len(self.skips) < _EXAMPLES:
            self.skips.append({"where": where, "reason": reason})

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "episode_ids"}
        out["episodes"] = len(self.episode_ids)  # stored by this run: added + updated
        out["seconds"] = round(self.seconds, 3)
        return out

    def line(self) -> str:
        """One line for people: what was new, then the rest."""
        what = "would add" if self.dry_run else "added"
        head = (f"{what} {self.added} new, {self.updated} changed, {self.unchanged} unchanged "
                f"of {self.messages} messages")
        files = f"{self.files} files" + (f" ({self.files_unchanged} unchanged, not read)" if self.files_unchanged
                                         else "")
        tail = [files]
        if self.skipped:
            reasons = ", ".join(f"{k} {n}" for k, n in sorted(self.skipped_by_reason.items()))
            tail.append(f"{self.skipped} skipped ({reasons})")
        if self.filtered:
            tail.append(f"{self.filtered} outside --since/--project")
        if self.redacted:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.redacted_by_kind.items()))
            tail.append(f"redacted {self.redacted} secrets ({kinds})")
        return f"{head}; {'; '.join(tail)}"


def message_key(fmt: str, key: str) -> str:
    """The stored key: a hash, so the table holds no source ids or paths."""
    return hashlib.sha256(f"{fmt}\0{key}".encode("utf-8", "surrogatepass")).hexdigest()


def _digest(text: str, speaker: str | None, occurred: str | None) -> str:
    blob = json.dumps([text, speaker, occurred], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def _clean(text: str) -> str:
    """What a store accepts, from whatever a file held: NUL dropped, lone
    surrogates replaced (the API refuses both; an import should not)."""
    return clean(text.replace("\x00", "") if "\x00" in text else text)


def _clip(value: str | None, limit: int) -> str | None:
    if value is None:
        return None
    value = _clean(value)
    return value if len(value) <= limit else value[:limit - 1] + "…"


class Importer:
    """Imports into one namespace (:meth:`Memory.import_source`)."""

    def __init__(self, scope: Scope, episodes: Episodes) -> None:
        self._scope = scope
        self._episodes = episodes

    def import_source(self, path: str | Path, format: str = "auto", *, since: TimeLike | None = None,
            project: str | None = None, dry_run: bool = False, keep_secrets: bool = False,
            recorded_at: Literal["now", "original"] = "now", batch: int = 500,
            progress: Callable[[ImportProgress], None] | None = None,
            embed_progress: Callable[[int, int], None] | None = None) -> ImportSummary:
        """Import the transcripts at ``path`` (a file or folder) in ``format``
        (``"auto"``: detected; the readers are in ``docs/import/``): each
        message becomes one episode once (module docstring). ``since`` (a
        time or phrase) and ``project`` (a substring of the message's
        project) leave the rest out; ``dry_run`` counts without writing;
        ``recorded_at="original"`` stores history as recorded when said;
        secrets are redacted unless ``keep_secrets``. Commits every
        ``batch`` messages; ``progress`` gets an :class:`ImportProgress` as
        files and batches advance, ``embed_progress(done, total)`` per batch.
        Returns an :class:`ImportSummary`."""
        root = self._root(path)
        if not isinstance(format, str):
            raise InvalidInputError("format must be a string")
        fmt = detect(root) if format == "auto" else format
        rd = reader(fmt)
        since_dt = self._scope.read_time(since, "since").datetime if since is not None else None
        if project is not None and (not isinstance(project, str) or not project.strip()):
            raise InvalidInputError("project must be a non-empty string")
        if recorded_at not in ("now", "original"):
            raise InvalidInputError(f"recorded_at must be 'now' or 'original', not {recorded_at!r}")
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 10_000:
            raise InvalidInputError("batch must be an integer from 1 to 10000")
        dry = bool(check_bool(dry_run, "dry_run"))
        keep = bool(check_bool(keep_secrets, "keep_secrets"))
        opts = ReadOptions(root=root, since=since_dt, project=project.strip().lower() if project else None)
        summary = ImportSummary(format=fmt, path=str(root), dry_run=dry)
        started = time.perf_counter()
        files = rd.files(opts)
        summary.files = len(files)
        es = episode_store(self._scope.store)
        ns = self._scope.ns_id
        for done, file in enumerate(files):
            if progress is not None:
                progress(ImportProgress(done, len(files), summary.messages, str(file)))
            path_key = message_key(fmt, str(file.resolve()))
            fingerprint = rd.fingerprint(file)
            if es.import_file(ns, path_key) == fingerprint:
                summary.files_unchanged += 1
                continue
            pending: list[SourceMessage] = []
            for item in rd.read(file, opts):
                if isinstance(item, Skip):
                    summary.skip(item.where, item.reason)
                    continue
                summary.messages += 1
                if not self._wanted(item, opts):
                    summary.filtered += 1
                    continue
                pending.append(item)
                if len(pending) >= batch:
                    self._flush(fmt, pending, summary, dry, keep, recorded_at, embed_progress)
                    pending = []
                    if progress is not None:
                        progress(ImportProgress(done, len(files), summary.messages, str(file)))
            self._flush(fmt, pending, summary, dry, keep, recorded_at, embed_progress,
                        file_done=None if dry else (path_key, fingerprint))
        if progress is not None:
            progress(ImportProgress(len(files), len(files), summary.messages, ""))
        summary.seconds = time.perf_counter() - started
        log.info("import %s %s: %s", fmt, root, summary.line())
        return summary

    @staticmethod
    def _root(path: object) -> Path:
        if not isinstance(path, (str, Path)) or not str(path).strip():
            raise InvalidInputError("path must be a file or folder path")
        root = Path(path).expanduser()
        if not root.exists():
            raise InvalidInputError(f"path: {str(root)!r} does not exist")
        return root

    def _wanted(self, msg: SourceMessage, opts: ReadOptions) -> bool:
        if opts.project is not None:
            project = msg.context.get("project")
            if not isinstance(project, str) or opts.project not in project.lower():
                return False
        if opts.since is None or msg.occurred_at is None:
            return True
        try:  # a day is wanted if it ends after since
            said = self._scope.parse_time(msg.occurred_at, "occurred_at")
        except InvalidInputError:
            return True  # the write reports it
        return period_end(said).us > to_us(opts.since)

    def _item(self, fmt: str, msg: SourceMessage, text: str, summary: ImportSummary,
              recorded_at: str) -> dict[str, Any]:
        """The episode for ``msg`` whose text, cleaned (:func:`_clean`), is ``text``."""
        if len(text) > MAX_EPISODE_CHARS:  # a pasted log: keep the head, say how much is missing
            cut = MAX_EPISODE_CHARS - 64
            text = text[:cut] + _TRUNCATED.format(n=len(text) - cut)
            summary.truncated += 1
        meta: dict[str, Any] = {k: v for k, v in msg.context.items() if v is not None}
        if msg.links:
            meta["links"] = list(dict.fromkeys(msg.links))
        meta["import"] = {"format": fmt, "key": msg.key}
        occurred = msg.occurred_at
        item: dict[str, Any] = {
            "text": text, "occurred_at": occurred, "speaker": _clip(msg.speaker, MAX_SPEAKER_CHARS),
            "session": _clip(msg.session, MAX_SESSION_CHARS), "source": _clip(f"{fmt}:{msg.key}", MAX_SOURCE_CHARS),
            "metadata": meta,
        }
        if recorded_at == "original" and occurred is not None:
            item["recorded_at"] = occurred
        return item

    def _flush(self, fmt: str, msgs: Sequence[SourceMessage], summary: ImportSummary, dry: bool, keep: bool,
               recorded_at: str, embed_progress: Callable[[int, int], None] | None,
               file_done: tuple[str, str] | None = None) -> None:
        es = episode_store(self._scope.store)
        ns = self._scope.ns_id
        latest: dict[str, SourceMessage] = {}
        for msg in msgs:  # the same key twice in a batch: the later record is the message's state
            latest[message_key(fmt, msg.key)] = msg
        stored = es.import_keys(ns, list(latest))
        items: list[dict[str, Any]] = []
        keys: list[tuple[str, str, str | None]] = []  # (key, digest, the episode it replaces)
        for key, msg in latest.items():
            occurred = msg.occurred_at.isoformat() if isinstance(msg.occurred_at, _dt.datetime) else msg.occurred_at
            text = _clean(msg.text)
            digest = _digest(text, msg.speaker, occurred)
            known = stored.get(key)
            if known is not None and known[1] == digest:
                summary.unchanged += 1
                continue
            if known is not None and known[1] == "":
                summary.skip(f"{fmt}:{msg.key}", "erased: the stored episode was erased; not imported again")
                continue
            items.append(self._item(fmt, msg, text, summary, recorded_at))
            keys.append((key, digest, known[0] if known else None))
        if dry:
            for _key, _d, old in keys:
                if old is None:
                    summary.added += 1
                else:
                    summary.updated += 1
            return
        if not items and file_done is None:
            return

        def after(tx: EpisodeWriteTx, recs: list[EpisodeRecord | None]) -> None:
            rows: list[tuple[int, str, str, str]] = []
            for (key, digest, old), rec in zip(keys, recs, strict=True):
                if rec is None:
                    continue
                rows.append((ns, key, rec.id, digest))
                if old is not None:
                    self._supersede(tx, old, rec)
            tx.put_import_keys(rows)
            if file_done is not None:
                tx.put_import_file(ns, *file_done)

        recs, errors, redacted = self._episodes.write_batch(items, keep_secrets=keep, after=after,
                                                            progress=embed_progress)
        for index, exc in errors.items():
            summary.skip(str(items[index]["source"]), f"invalid: {exc}")
        for (_key, _d, old), rec in zip(keys, recs, strict=True):
            if rec is None:
                continue
            summary.episode_ids.append(rec.id)
            if old is None:
                summary.added += 1
            else:
                summary.updated += 1
        for counts in redacted.values():
            for kind, n in counts.items():
                summary.redacted += n
                summary.redacted_by_kind[kind] = summary.redacted_by_kind.get(kind, 0) + n

    def _supersede(self, tx: EpisodeWriteTx, old_id: str, new: EpisodeRecord) -> None:
        """The new version overrides the old from when it was said; a version
        someone already superseded, or erased, is left as it is."""
        old = tx.episode_by_id(old_id)
        if old is not None and old.erased_at is None and old.superseded_by is None:
            supersede_in(tx, old, new)

