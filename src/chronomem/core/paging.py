"""Output bounds: how every list a surface answers with (web pages, their
``.json`` twins, the ``/api`` routes, MCP tools and resources) is paged.

The numbers live with the input limits, in the "output bounds" section of
:mod:`chronomem.core.limits` (re-exported here). A page is ``page`` (1-based)
and ``page_size``; an answer echoes ``page``, ``page_size`` and ``next`` (the
next page's number, ``None`` on the last page). A page past the end is an
empty page, not an error.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence, TypeVar

from ..errors import InvalidInputError, LimitExceededError
from .limits import (
    CONFLICT_FACTS,
    DEFAULT_PAGE_SIZE,
    ENTITY_PAGE_SIZE,
    HIT_FACTS,
    MAX_MULTI_PAGE_SIZE,
    MAX_OFFSET,
    MAX_PAGE_SIZE,
    RESOURCE_LINES,
)

__all__ = [
    "CONFLICT_FACTS",
    "DEFAULT_PAGE_SIZE",
    "ENTITY_PAGE_SIZE",
    "HIT_FACTS",
    "MAX_MULTI_PAGE_SIZE",
    "MAX_OFFSET",
    "MAX_PAGE",
    "MAX_PAGE_SIZE",
    "RESOURCE_LINES",
    "Page",
    "page_of",
    "parse_page",
]

MAX_PAGE = MAX_OFFSET + 1
"""The largest ``page`` number (with ``page_size`` 1)."""

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Page:
    """One page: ``number`` (from 1) of ``size`` items."""

    number: int = 1
    size: int = DEFAULT_PAGE_SIZE

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.size

    @property
    def fetch(self) -> int:
        """How many items to read to show this page and know whether another follows."""
        return self.offset + self.size + 1

    def take(self, items: Sequence[T]) -> tuple[list[T], int | None]:
        """This page of ``items`` (all items from the start, or at least
        :attr:`fetch` of them) and the next page's number (``None``: last)."""
        shown = list(items[self.offset: self.offset + self.size])
        more = len(items) > self.offset + self.size
        return shown, (self.number + 1 if more else None)

    def after(self, items: Sequence[T]) -> tuple[list[T], int | None]:
        """This page from ``items`` read from :attr:`offset` on (at least
        ``size + 1`` of them, if there are), and the next page's number."""
        return list(items[: self.size]), (self.number + 1 if len(items) > self.size else None)

    def echo(self, next_page: int | None, **extra: Any) -> dict[str, Any]:
        """The paging fields of an answer."""
        return {"page": self.number, "page_size": self.size, "next": next_page, **extra}


def _int(value: object, field: str, lo: int, hi: int) -> int:
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or not text.lstrip("-").isdigit():
            raise InvalidInputError(f"{field} must be an integer from {lo} to {hi}, not {value!r}")
        if len(text) > 12:  # digits enough to be past any limit: not worth converting
            raise LimitExceededError(field, hi, unit="", why=f"it must be at most {hi}")
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise InvalidInputError(f"{field} must be an integer from {lo} to {hi}, not {value!r}")
    if value > hi:  # the same error as the library's counts past their maximum
        raise LimitExceededError(field, hi, value, unit="")
    return value


def parse_page(page: object = None, page_size: object = None, *, default_size: int = DEFAULT_PAGE_SIZE,
               max_size: int = MAX_PAGE_SIZE, size_field: str = "page_size") -> Page:
    """A :class:`Page` from request parameters (strings from a query string,
    or integers); ``None`` or ``""``: the default. Out of range or not an
    integer: :class:`InvalidInputError` naming the field."""
    number = 1 if page is None or page == "" else _int(page, "page", 1, MAX_PAGE)
    size = default_size if page_size is None or page_size == "" else _int(page_size, size_field, 1, max_size)
    if (number - 1) * size > MAX_OFFSET:
        raise InvalidInputError(f"page {number} of {size} starts past item {MAX_OFFSET:,}, the deepest a page may "
                                f"start (the last page is {MAX_OFFSET // size + 1} at this page_size)")
    return Page(number, size)


def page_of(items: Sequence[T], page: Page) -> tuple[list[T], dict[str, Any]]:
    """``page`` of ``items`` and its echo (with ``total``: ``items`` is the whole list)."""
    shown, nxt = page.take(items)
    return shown, page.echo(nxt, total=len(items))
