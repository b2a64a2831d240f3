"""What an importer reads: a :class:`SourceMessage` per message, or a
:class:`Skip` for what it could not read, from a :class:`Reader` that knows one
format (Claude Code logs, a ChatGPT export, a Slack folder ...).

Readers are pure parsers: they stream the input (constant memory, a
generator per file), never touch a store, and never raise on a bad record
(a line that is not JSON, a message with no text): they yield a ``Skip``
naming where and why, and go on. Only an unreadable *input* (a missing
path, a folder that is not the format) raises :class:`InvalidInputError`.
The import service (:mod:`chronomem.service.ingest.run`) turns messages
into episodes, once each: a message is identified by its ``key``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Mapping, Union

__all__ = [
    "Item",
    "ReadOptions",
    "Reader",
    "Skip",
    "SourceMessage",
    "file_fingerprint",
    "iter_lines",
]


@dataclass(frozen=True)
class SourceMessage:
    """One message of a source, about to become one episode.

    ``key``: stable and unique within the format for this message, the same
    on every run over the same data (a message uuid, ``<conversation>/<node>``,
    ``<channel>/<ts>``, ``<relative path>#<section>``, a commit sha) and never
    derived from the message's content, so an edited message keeps its key
    and becomes a new version of its episode. ``occurred_at``: the message's
    own timestamp, an aware datetime, or an ISO date string (``"2024-03-05"``)
    when the source only gives a day; ``None`` if it has none. ``context``:
    JSON values only (session title, project, cwd, branch, channel, sidechain,
    model, url ...), stored in the episode's metadata. ``links``: entity names
    the message links to (``[[Alice]]`` in a note).
    """

    key: str
    text: str
    occurred_at: _dt.datetime | str | None
    speaker: str | None = None
    session: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    links: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skip:
    """A record a reader could not turn into a message: ``where`` names it
    (``file:line``, a message key), ``reason`` says why, briefly."""

    where: str
    reason: str


Item = Union[SourceMessage, Skip]


@dataclass(frozen=True)
class ReadOptions:
    """What the caller asked for. ``root`` is the path given on the command
    line (a file or a folder). Readers *may* use ``since`` and ``project`` to
    prune early (skip files older than ``since``, folders of other projects);
    the service filters every message on them again, so pruning is only an
    optimisation. ``project`` matches a message's ``context["project"]``
    (case-insensitive substring)."""

    root: Path
    since: _dt.datetime | None = None
    project: str | None = None


class Reader(ABC):
    """One source format. Subclasses set ``name`` (the CLI's FORMAT) and
    ``description`` (one line for ``--help``)."""

    name: str = ""
    description: str = ""

    @abstractmethod
    def detect(self, path: Path) -> bool:
        """Is ``path`` (a file or folder) in this format? Cheap: names and
        the first few KB only; never raises."""

    @abstractmethod
    def files(self, opts: ReadOptions) -> list[Path]:
        """The inputs under ``opts.root`` this reader reads, in a stable
        order (``[root]`` for a single file). Raises
        :class:`~chronomem.errors.InvalidInputError` if ``root`` is not in
        this format."""

    @abstractmethod
    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        """Stream the messages of one input returned by :meth:`files`."""

    def fingerprint(self, file: Path) -> str:
        """Changes whenever ``file``'s content may have: an unchanged
        fingerprint lets a re-run skip the file unread. The default is
        :func:`file_fingerprint`; a reader of something that is not a file
        (a git repository) overrides it."""
        return file_fingerprint(file)


def file_fingerprint(path: Path) -> str:
    """Size, mtime and a hash of the first and last 64 KiB: cheap for a 2 GB
    file, and any append, truncation or in-place edit of a size-preserving
    kind that touches mtime changes it."""
    st = path.stat()
    h = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode())
    with open(path, "rb") as fp:
        h.update(fp.read(65536))
        if st.st_size > 65536:
            fp.seek(max(65536, st.st_size - 65536))
            h.update(fp.read(65536))
    return h.hexdigest()


def iter_lines(path: Path | BinaryIO) -> Iterator[tuple[int, str]]:
    """``(line_number, text)`` for each line of a file, streamed (a line at a
    time, constant memory), decoded as UTF-8 with undecodable bytes replaced
    by U+FFFD instead of aborting the import; a leading BOM is dropped and
    line ends stripped. Blank lines are skipped."""
    fp: BinaryIO = open(path, "rb") if isinstance(path, (str, os.PathLike)) else path  # noqa: SIM115
    try:
        for number, raw in enumerate(fp, 1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line.strip():
                yield number, line
    finally:
        if fp is not path:
            fp.close()
