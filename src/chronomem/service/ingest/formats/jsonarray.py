"""Stream the elements of a top-level JSON array (a ChatGPT or Claude.ai
``conversations.json`` of several GB) one at a time, in memory bounded by the
largest element, and find that file in an export (a folder, the file itself,
or the export's ``.zip`` read member by member without extracting it).

Stdlib only: :meth:`json.JSONDecoder.raw_decode` over a text buffer that grows
by chunks. The bytes are decoded incrementally as UTF-8 (a multibyte
character split across two chunks is joined; undecodable bytes become
U+FFFD), a leading BOM is dropped. A truncated or garbled file ends the
stream with a :class:`~chronomem.service.ingest.source.Skip`, never an
exception.
"""

from __future__ import annotations

import codecs
import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Protocol

from ....errors import InvalidInputError
from ..source import Skip

__all__ = ["CHUNK", "MAX_ELEMENT", "Readable", "export_files", "head", "iter_array", "iter_export", "iter_objects",
           "open_members"]

CHUNK = 1 << 16
#: one element larger than this (chars) is not buffered further: the rest of
#: the file is skipped, so a garbled file cannot make a reader eat all memory
MAX_ELEMENT = 1 << 30
#: a conversation file that is one object is read whole: at most this many bytes
MAX_OBJECT_FILE = 256 << 20
# how close to the buffer's end a decode error may be and still be "the
# element goes on in the next chunk" (a cut number, literal or \\u escape)
_TAIL = 16
_WS = " \t\r\n"
_NUMBER = "0123456789.eE+-"
#: split exports (ChatGPT, 2026): conversations-000.json, conversations-001.json ...
_SPLIT = re.compile(r"^conversations-\d+\.json$")
_NAME = "conversations.json"


class Readable(Protocol):
    """What :func:`iter_array` reads from: a binary file, a zip member."""

    def read(self, n: int = -1, /) -> bytes: ...


def iter_array(fp: Readable, where: str, chunk: int = CHUNK,
               max_element: int = MAX_ELEMENT) -> Iterator[tuple[int, Any] | Skip]:
    """``(index, value)`` for each element of the JSON array in ``fp``, then
    stop; a :class:`Skip` naming ``where[index]`` ends the stream early if
    the input is not an array, is cut short, or holds invalid JSON."""
    decoder = json.JSONDecoder(strict=False)  # raw control chars in strings: accept, not abort
    text = codecs.getincrementaldecoder("utf-8")("replace")
    buf, pos, eof, first = "", 0, False, True
    want = chunk  # the next read's size: doubles while one element is incomplete

    def more() -> bool:
        nonlocal buf, pos, eof, first, want
        if eof:
            return False
        raw = fp.read(want)
        eof = not raw
        part = text.decode(raw, final=eof)
        if first and part:
            part, first = part.removeprefix("\ufeff"), False
        if pos > chunk:  # drop what was consumed, so the buffer is one element + a chunk
            buf, pos = buf[pos:], 0
        buf += part
        return bool(part) or not eof

    def skip_ws() -> bool:
        """Move past whitespace; False at the end of the input."""
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            if pos < len(buf):
                return True
            if not more():
                return False

    if not skip_ws() or buf[pos] != "[":
        yield Skip(where, "not a JSON array")
        return
    pos += 1
    index = 0
    while True:
        if not skip_ws():
            yield Skip(f"{where}[{index}]", "truncated: the array is not closed")
            return
        if buf[pos] == "]":
            return
        if index:
            if buf[pos] != ",":
                yield Skip(f"{where}[{index}]", "invalid JSON: expected ',' or ']' after the element before")
                return
            pos += 1
            if not skip_ws():
                yield Skip(f"{where}[{index}]", "truncated: the array is not closed")
                return
        while True:
            try:
                value, end = decoder.raw_decode(buf, pos)
            except json.JSONDecodeError as err:
                maybe_cut = err.msg.startswith("Unterminated string") or err.pos >= len(buf) - _TAIL
                if not maybe_cut:
                    yield Skip(f"{where}[{index}]", f"invalid JSON: {err.msg}")
                    return
                if len(buf) - pos > max_element:
                    yield Skip(f"{where}[{index}]", f"element larger than {max_element} chars")
                    return
                want = max(chunk, len(buf) - pos)  # geometric growth: re-parsing stays linear
                if not more():
                    yield Skip(f"{where}[{index}]", "truncated: the file ends inside this element")
                    return
                continue
            if (isinstance(value, (int, float)) and not isinstance(value, bool) and not eof
                    and (end == len(buf) or buf[end] in _NUMBER) and more()):
                continue  # a number cut by the chunk's end ("-1" of "-1.5e-10"): read on
            break
        want = chunk
        pos = end
        yield index, value
        index += 1


def iter_objects(fp: Readable, where: str, reason: str) -> Iterator[tuple[int, dict[str, Any]] | Skip]:
    """:func:`iter_array`, an element that is not a JSON object becoming a
    :class:`Skip` (``reason`` says what it should have been) and the stream
    going on."""
    for item in iter_array(fp, where):
        if isinstance(item, Skip) or isinstance(item[1], dict):
            yield item
        else:
            yield Skip(f"{where}[{item[0]}]", reason)


def _members(names: list[str]) -> list[str]:
    """The conversation files among a zip's member names: the shallowest
    ``conversations.json``, else the split ``conversations-NNN.json`` files."""
    by_depth = sorted((n.count("/"), n) for n in names if n.rsplit("/", 1)[-1] == _NAME)
    if by_depth:
        return [by_depth[0][1]]
    return sorted(n for n in names if _SPLIT.match(n.rsplit("/", 1)[-1]))


def export_files(root: Path, fmt: str) -> list[Path]:
    """The input files of an export at ``root``: the ``.zip`` itself, the
    folder's ``conversations.json`` (or its split files), or ``root`` if it is
    a JSON file. :class:`InvalidInputError` if there is none."""
    if root.is_dir():
        single = root / _NAME
        if single.is_file():
            return [single]
        split = sorted(p for p in root.iterdir() if p.is_file() and _SPLIT.match(p.name))
        if split:
            return split
        raise InvalidInputError(f"path: {str(root)!r} has no {_NAME}; give the {fmt} export folder, "
                                f"its .zip or its {_NAME}")
    if not root.is_file():
        raise InvalidInputError(f"path: {str(root)!r} does not exist")
    if zipfile.is_zipfile(root):
        try:
            with zipfile.ZipFile(root) as zf:
                found = _members(zf.namelist())
        except (OSError, zipfile.BadZipFile) as err:
            raise InvalidInputError(f"path: {str(root)!r} is not a readable zip: {err}") from None
        if not found:
            raise InvalidInputError(f"path: {str(root)!r} holds no {_NAME}")
    return [root]


@contextmanager
def open_members(file: Path) -> Iterator[list[tuple[str, Readable]]]:
    """``(name, binary stream)`` of each conversation file of an input from
    :func:`export_files`: the file itself, or each member of a zip, opened
    lazily (one decompressor at a time, streamed by :mod:`zipfile`)."""
    if not zipfile.is_zipfile(file):
        with open(file, "rb") as fp:
            yield [(file.name, fp)]
        return
    with zipfile.ZipFile(file) as zf:
        yield [(f"{file.name}:{name}", _Lazy(zf, name)) for name in _members(zf.namelist())]


class _Lazy:
    """A zip member opened on first read, closed at its end."""

    def __init__(self, zf: zipfile.ZipFile, name: str) -> None:
        self._zf, self._name = zf, name
        self._fp: IO[bytes] | None = None

    def read(self, n: int = -1) -> bytes:
        if self._fp is None:
            self._fp = self._zf.open(self._name)
        data = self._fp.read(n)
        if not data:
            self._fp.close()
        return data


class _Prefixed:
    """A stream whose first bytes were read ahead to look at: gives them back first."""

    def __init__(self, head: bytes, rest: Readable) -> None:
        self._head, self._rest = head, rest

    def read(self, n: int = -1) -> bytes:
        if self._head:
            data = self._head if n < 0 or n >= len(self._head) else self._head[:n]
            self._head = self._head[len(data):]
            return data
        return self._rest.read(n)


def _object_file(fp: Readable, name: str) -> Iterator[tuple[int, Any] | Skip]:
    """A conversation file that is one JSON object, not the export's array:
    one conversation (what single-chat exporters write), or a wrapper
    ``{"conversations": [...]}``. Read whole: these files hold one chat, or
    are a tool's re-packing; the official exports are arrays and stream."""
    parts: list[bytes] = []
    size = 0
    while size <= MAX_OBJECT_FILE:
        got = fp.read(CHUNK)
        if not got:
            break
        parts.append(got)
        size += len(got)
    raw = b"".join(parts)
    if size > MAX_OBJECT_FILE:
        yield Skip(name, f"a JSON object larger than {MAX_OBJECT_FILE} bytes: give the export's array file")
        return
    try:
        value = json.loads(raw.decode("utf-8", "replace").removeprefix("\ufeff"), strict=False)
    except json.JSONDecodeError as err:
        yield Skip(name, f"invalid JSON: {err.msg}")
        return
    inner = value.get("conversations") if isinstance(value, dict) else None
    if isinstance(inner, list):
        yield from enumerate(inner)
    else:
        yield 0, value


def iter_conversations(fp: Readable, name: str) -> Iterator[tuple[int, Any] | Skip]:
    """The elements of a conversation file: the export's array streamed
    (:func:`iter_array`), or the conversations of a file holding one object."""
    ahead = b""
    while len(ahead) < 64:
        got = fp.read(64)
        if not got:
            break
        ahead += got
    first = ahead.removeprefix(b"\xef\xbb\xbf").lstrip()[:1]
    stream = _Prefixed(ahead, fp)
    return _object_file(stream, name) if first == b"{" else iter_array(stream, name)


def iter_export(file: Path) -> Iterator[tuple[str, int, Any] | Skip]:
    """``(where, index, element)`` over every conversation file of ``file``
    (see :func:`open_members`); a bad zip or a bad file is a :class:`Skip`."""
    try:
        with open_members(file) as members:
            for name, fp in members:
                for item in iter_conversations(fp, name):
                    yield item if isinstance(item, Skip) else (name, item[0], item[1])
    except (OSError, zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError) as err:
        # a damaged zip or member, or one compressed with a method zipfile lacks (Deflate64)
        yield Skip(file.name, f"unreadable: {err}")


def head(path: Path, size: int = 65536) -> str:
    """The first ``size`` bytes of the conversation file at ``path`` (a JSON
    file, a folder holding one, or an export zip), decoded; ``""`` if there is
    none or it cannot be read. For cheap ``detect()``: never raises."""
    try:
        if path.is_dir():
            found = [p for p in (path / _NAME,) if p.is_file()] or sorted(
                p for p in path.iterdir() if p.is_file() and _SPLIT.match(p.name))
            if not found:
                return ""
            path = found[0]
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                names = _members(zf.namelist())
                if not names:
                    return ""
                with zf.open(names[0]) as fp:
                    raw = fp.read(size)
        else:
            with open(path, "rb") as fp:
                raw = fp.read(size)
    except (OSError, zipfile.BadZipFile, EOFError, ValueError, zlib.error, NotImplementedError):
        return ""
    return raw.decode("utf-8", "replace").lstrip("\ufeff")
