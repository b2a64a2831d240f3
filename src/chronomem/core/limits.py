"""Every documented input limit, and the checks that enforce them at the door.

The services call these checks where they read their arguments, before
anything is written, so every adapter (CLI, HTTP, MCP) refuses the same
values the same way on every backend. ``docs/limits.md`` lists the limits;
``tests/hostile/test_python.py`` keeps it in step with this module.

Text, everywhere: a string, at most the field's number of characters, and
no NUL (``"\\x00"``) or lone surrogate (``"\\ud800"``): PostgreSQL cannot
store either and UTF-8 cannot encode a surrogate, so SQLite refuses them too
(episode text included: refused, not escaped). JSON values (fact and
entity properties, episode metadata): an object of JSON types only, finite
numbers, integers in the 64-bit range, string keys, clean text, bounded in
depth, key count and serialized size.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from ..errors import InvalidInputError, LimitExceededError

__all__ = [
    "LIMITS",
    "MAX_BATCH",
    "MAX_BUDGET_TOKENS",
    "MAX_COUNT",
    "MAX_ENTITY_TYPE_CHARS",
    "MAX_EPISODE_CHARS",
    "MAX_FACTS_LIMIT",
    "MAX_ID_CHARS",
    "MAX_INT",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_KEYS",
    "MAX_K",
    "MAX_LITERAL_CHARS",
    "MAX_AGENT_CHARS",
    "MAX_NAMESPACE_CHARS",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_REASON_CHARS",
    "MAX_SESSION_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_SPEAKER_CHARS",
    "MIN_INT",
    "check_bool",
    "check_clean",
    "check_clean_tree",
    "check_count",
    "check_int",
    "check_json",
    "check_text",
    "opt_text",
]

MAX_NAME_CHARS = 1000
"""Entity, alias and predicate names: characters, as given (trimmed) and after normalization."""
MAX_ENTITY_TYPE_CHARS = 200
"""An entity's ``type``."""
MAX_NAMESPACE_CHARS = 200
"""A namespace name."""
MAX_AGENT_CHARS = 200
"""Who a write is recorded as (``agent=``, a token's name)."""
MAX_EPISODE_CHARS = 100_000
"""An episode's text."""
MAX_QUERY_CHARS = 100_000
"""A ``search`` query or a ``recall`` question."""
MAX_SOURCE_CHARS = 10_000
"""A fact's or an episode's ``source``."""
MAX_ID_CHARS = 200
"""An id given as an argument (``episode_id`` of a fact, a fact id, an episode id)."""
MAX_SESSION_CHARS = 1000
"""An episode's ``session`` (and the ``session`` filter of ``search``)."""
MAX_SPEAKER_CHARS = 1000
"""An episode's ``speaker``."""
MAX_REASON_CHARS = 10_000
"""The free-text ``reason`` of ``invalidate``, ``correct``, ``retract`` and ``erase``."""
MAX_LITERAL_CHARS = 100_000
"""A literal (non-entity) string object."""
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
"""Integers stored as values (literal objects, numbers inside JSON): the signed 64-bit range."""
MAX_JSON_BYTES = 100_000
"""Properties and metadata: bytes of their UTF-8 JSON text."""
MAX_JSON_DEPTH = 64
"""Properties and metadata: nesting depth (``{"a": 1}`` is depth 1)."""
MAX_JSON_KEYS = 1000
"""Properties and metadata: object keys in all, at every depth."""
MAX_BATCH = 1_000_000
"""Items in one ``add_facts`` or ``add_episodes`` call."""
MAX_FACTS_LIMIT = 1_000_000
"""``limit`` of ``facts`` (0 is allowed: no facts)."""
MAX_K = 1000
"""``k`` of ``search`` (at least 1)."""
MAX_BUDGET_TOKENS = 1_000_000
"""``budget_tokens`` of ``recall`` (at least 1)."""
MAX_COUNT = 1_000_000
"""Any other count argument (``hops``, ``top``, ``limit`` of the other reads, ...)."""

LIMITS: dict[str, int] = {
    name: value for name, value in globals().items() if name.startswith(("MAX_", "MIN_")) and isinstance(value, int)
}
"""Every limit by name (what ``docs/limits.md`` lists)."""


def check_clean(value: str, field: str) -> str:
    """``value`` if it has no NUL and no lone surrogate, else :class:`InvalidInputError` naming ``field``."""
    if "\x00" in value:
        raise InvalidInputError(f"{field} must not contain a NUL character (\\x00)")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(
                f"{field} contains a lone surrogate ({value[exc.start]!r} at {exc.start}), which is not text"
            ) from None
    return value


def check_clean_tree(value: object, field: str) -> None:
    """Every string (and key) inside a parsed JSON value passes :func:`check_clean`
    (an import line: its values go to the store as they are)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            check_clean(v, field)
        elif isinstance(v, dict):
            for k, item in v.items():
                if isinstance(k, str):
                    check_clean(k, field)
                stack.append(item)
        elif isinstance(v, list):
            stack.extend(v)


def check_text(value: object, field: str, limit: int) -> str:
    """``value`` as a clean string of at most ``limit`` characters."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise LimitExceededError(field, limit, len(value))
    return check_clean(value, field)


def opt_text(value: object, field: str, limit: int) -> str | None:
    """An optional free text: ``None`` for ``None`` or an empty one, else it trimmed (see :func:`check_text`)."""
    if value is None:
        return None
    return check_text(value, field, limit).strip() or None


def check_bool(value: object, field: str, *, optional: bool = False) -> bool | None:
    """A strict boolean: ``True`` or ``False`` (or ``None`` if ``optional``), never ``"no"`` or ``1``."""
    if isinstance(value, bool) or (optional and value is None):
        return value
    choices = "True, False or None" if optional else "True or False"
    raise InvalidInputError(f"{field} must be {choices}, not {value!r}")


def check_count(value: object, field: str, minimum: int, maximum: int = MAX_COUNT) -> int:
    """An integer count in ``[minimum, maximum]`` (a larger one is a :class:`LimitExceededError`)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field} must be an integer, not {value!r}")
    if value < minimum:
        raise InvalidInputError(f"{field} must be an integer of at least {minimum}, not {value}")
    if value > maximum:
        raise LimitExceededError(field, maximum, value, unit="")
    return value


def check_int(value: int, field: str) -> int:
    """An integer stored as a value: inside the signed 64-bit range."""
    if not MIN_INT <= value <= MAX_INT:
        raise LimitExceededError(field, MAX_INT, None, unit="",
                                 why=f"integers must lie in [{MIN_INT}, {MAX_INT}]")
    return value


class _Walk:
    __slots__ = ("field", "keys")

    def __init__(self, field: str) -> None:
        self.field = field
        self.keys = 0

    def value(self, v: object, depth: int, path: str) -> None:
        if v is None or isinstance(v, bool):
            return
        if isinstance(v, str):
            check_clean(v, f"{self.field}{path}")
        elif isinstance(v, int):
            check_int(v, f"{self.field}{path}")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise InvalidInputError(f"{self.field}{path} must be a finite number, not {v!r}")
        elif isinstance(v, (dict, list, tuple)):
            if depth >= MAX_JSON_DEPTH:
                raise LimitExceededError(self.field, MAX_JSON_DEPTH, None, unit="levels of nesting")
            if isinstance(v, dict):
                self.keys += len(v)
                if self.keys > MAX_JSON_KEYS:
                    raise LimitExceededError(self.field, MAX_JSON_KEYS, None, unit="keys")
                for k, item in v.items():
                    if not isinstance(k, str):
                        raise InvalidInputError(f"{self.field}{path} keys must be strings, not {type(k).__name__}")
                    check_clean(k, f"{self.field}{path} key")
                    self.value(item, depth + 1, f"{path}.{k}" if len(path) < 200 else path)
            else:
                for i, item in enumerate(v):
                    self.value(item, depth + 1, f"{path}[{i}]" if len(path) < 200 else path)
        else:
            raise InvalidInputError(
                f"{self.field}{path} must be a JSON value (str, int, float, bool, None, list or dict), "
                f"not {type(v).__name__}"
            )


def check_json(value: object, field: str) -> str:
    """``value`` (a mapping) as its JSON text (sorted keys), after every JSON check."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{field} must be a dict, not {type(value).__name__}")
    obj: Any = dict(value)
    _Walk(field).value(obj, 0, "")
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False)
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > MAX_JSON_BYTES:
        raise LimitExceededError(field, MAX_JSON_BYTES, size, unit="bytes of JSON")
    return text


# -- output bounds (paging) ------------------------------------------------------
# The page sizes of every list a surface answers with: web pages and their
# ``.json`` twins, the ``/api`` routes, MCP tools and resources. How a page is
# read and echoed is in :mod:`chronomem.core.paging`; docs/web.md ("Paging")
# and docs/mcp.md ("Paging") list these. Not in :data:`LIMITS` (input limits).
DEFAULT_PAGE_SIZE = 50
"""Items per page unless ``page_size`` (or ``limit``) says otherwise."""
MAX_PAGE_SIZE = 1000
"""The largest ``page_size`` / MCP ``limit`` of a list (about 0.5 MB of facts)."""
ENTITY_PAGE_SIZE = 150
"""The entity page's default page size (facts valid at the basis, timeline bars and history rows, each)."""
MAX_MULTI_PAGE_SIZE = 300
"""The largest ``page_size`` of an answer paging three lists by one ``page`` (entity page; diff)."""
MAX_OFFSET = MAX_COUNT
"""The deepest item a page may start at (``offset``, or ``(page - 1) * page_size``)."""
CONFLICT_FACTS = 20
"""Facts listed per conflict (``facts_total`` counts them all)."""
HIT_FACTS = 20
"""Facts listed per search hit, the episode's supported or mentioned facts (``facts_total`` counts them all)."""
RESOURCE_LINES = 200
"""Lines of the MCP ``chronomem://entity/{name}`` resource (its first events)."""
