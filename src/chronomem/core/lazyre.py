"""Regular expressions compiled on first use.

The time-mention, tense and redaction rules are a few dozen large patterns
whose compilation costs tens of milliseconds at import; a process that never
resolves a mention (a hook answering one prompt, a read-only CLI call) should
not pay for them. :func:`lazy` returns an object with the methods of
:class:`re.Pattern` that callers use, which compiles the pattern the first
time one is called (``re.compile`` is thread-safe; two threads racing on the
first use both get an equal pattern).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

__all__ = ["LazyPattern", "lazy"]


class LazyPattern:
    """A :class:`re.Pattern` compiled when first used."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int | re.RegexFlag = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        got = self._compiled
        if got is None:
            got = self._compiled = re.compile(self._source, self._flags)
        return got

    @property
    def pattern(self) -> str:
        return self._source

    def search(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = 2**63 - 1) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def subn(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> tuple[str, int]:
        return self.compiled.subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(string, maxsplit)

    def __repr__(self) -> str:
        return f"lazy({self._source!r})"


def lazy(source: str, flags: int | re.RegexFlag = 0) -> LazyPattern:
    """``re.compile(source, flags)``, deferred to the first use."""
    return LazyPattern(source, flags)
