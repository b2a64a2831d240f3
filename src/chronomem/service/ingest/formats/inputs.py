"""How readers find their inputs: claiming a path in ``detect()`` (never
raising), taking a single file or a folder in ``files()`` (an
:class:`InvalidInputError` naming the path otherwise), and the head of a
file that ``detect()`` looks at."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ....errors import InvalidInputError

__all__ = ["claims", "lone_file", "one_file", "read_head"]


def claims(path: Path, file: Callable[[Path], bool], folder: Callable[[Path], bool]) -> bool:
    """``file(path)`` for a file, ``folder(path)`` for a folder, ``False``
    for anything else or when the path cannot be read."""
    try:
        if path.is_file():
            return file(path)
        if path.is_dir():
            return folder(path)
    except OSError:
        pass
    return False


def lone_file(root: Path, accepts: Callable[[Path], bool], what: str) -> bool:
    """Is ``root`` a single input (``True``) or a folder to look in
    (``False``)? A file ``accepts`` refuses is "not a ``what``"; a path that
    is neither does not exist."""
    if root.is_file():
        if not accepts(root):
            raise InvalidInputError(f"path: {str(root)!r} is not a {what}")
        return True
    if not root.is_dir():
        raise InvalidInputError(f"path: {str(root)!r} does not exist")
    return False


def one_file(root: Path, what: str) -> list[Path]:
    """``[root]`` for a format that is always one file; anything else is not
    a ``what``."""
    if not root.is_file():
        raise InvalidInputError(f"path: {str(root)!r} is not a {what}")
    return [root]


def read_head(path: Path, limit: int = 8192) -> bytes:
    """The first ``limit`` bytes of ``path`` (BOM dropped), ``b""`` if it
    cannot be read: what ``detect()`` looks at."""
    try:
        with open(path, "rb") as fp:
            head = fp.read(limit)
    except OSError:
        return b""
    return head[3:] if head.startswith(b"\xef\xbb\xbf") else head
