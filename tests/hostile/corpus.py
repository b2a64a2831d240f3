"""The hostile-input corpus: one table of fields x bad values, run through
every surface (Python API here in ``test_python.py``, CLI/HTTP/MCP in
``test_surfaces.py``) on both backends.

A :class:`Case` calls one operation every surface offers with keyword
arguments named as the Python method's parameters:

* ``add_fact(subject, predicate, object, valid_from, valid_to, confidence, source, episode_id, properties,
  supersede, literal)``
* ``add_episode(text, occurred_at, recorded_at, source, session, speaker, metadata)``
* ``facts(subject, predicate, object, as_of, known_at, direction, limit, literal)``
* ``search(query, k, view, at, known_at, session, since, until)``
* ``recall(question, at, known_at, budget_tokens)``
* ``invalidate(subject, predicate, object, ended, reason, literal)`` (``ended`` is the Python name of the
  end time; surfaces call it ``valid_to``/``--at``/... as they do)
* ``timeline(entity, start, end)``
* ``entity(name)``

``expect`` names the :mod:`chronomem.errors` class the raised error must be
an instance of, or ``"accept"`` (a documented acceptance: the call returns).
After an error the store must be unchanged. Every case runs on a store
prepared by :func:`setup`.

``python_only`` marks values JSON cannot carry (NaN, infinities, non-string
keys, sets, bytes, datetime objects); ``tags`` say what a case is about
(``nul``, ``surrogate``, ``size``, ``huge``, ``deep``, ``nan``, ``type``, ``time``, ``bool``,
``count``, ``interval``, ``enum``, ``ok``) so a surface that cannot transmit a
kind of value (a lone surrogate in argv, a 200k-character argument) can
leave it out and say so.

The limits below are the documented ones (docs/limits.md), written out
here on purpose: the corpus states what is promised, and
``test_python.py`` checks they agree with :mod:`chronomem.core.limits`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CASES", "Case", "OPS", "setup"]

# the documented limits (docs/limits.md)
MAX_NAME_CHARS = 1000
MAX_EPISODE_CHARS = 100_000
MAX_QUERY_CHARS = 100_000
MAX_SOURCE_CHARS = 10_000
MAX_ID_CHARS = 200
MAX_SESSION_CHARS = 1000
MAX_SPEAKER_CHARS = 1000
MAX_REASON_CHARS = 10_000
MAX_LITERAL_CHARS = 100_000
MAX_JSON_BYTES = 100_000
MAX_JSON_DEPTH = 64
MAX_JSON_KEYS = 1000
MAX_INT = 2**63 - 1
MAX_FACTS_LIMIT = 1_000_000
MAX_K = 1000
MAX_BUDGET_TOKENS = 1_000_000

OPS = ("add_fact", "add_episode", "facts", "search", "recall", "invalidate", "timeline", "entity")


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    args: dict[str, Any]
    expect: str
    python_only: bool = False
    tags: tuple[str, ...] = field(default=())


def setup(mem: Any) -> None:
    """The state every case assumes: entities Acme, Globex and Initech, a fact
    ``Acme -works_with-> Globex`` valid from 2020 (the one ``invalidate``
    cases end), a literal fact and one episode in session ``s1``."""
    mem.add_fact("Acme", "works_with", "Globex", valid_from="2020-01-01")
    mem.add_fact("Initech", "founded", 1999)
    mem.add_episode("Acme signed a deal with Globex last Tuesday.", occurred_at="2024-03-05",
                    session="s1", speaker="ann", source="call notes")


# valid arguments of each operation; a case replaces one of them
BASE: dict[str, dict[str, Any]] = {
    "add_fact": {"subject": "Acme", "predicate": "partners_with", "object": "Initech"},
    "add_episode": {"text": "Acme met Initech on Monday.", "occurred_at": "2024-03-04"},
    "facts": {"subject": "Acme"},
    "search": {"query": "Acme deal"},
    "recall": {"question": "Who does Acme work with?"},
    "invalidate": {"subject": "Acme", "predicate": "works_with", "object": "Globex", "ended": "2024-06-01",
                   "reason": "contract ended"},
    "timeline": {"entity": "Acme"},
    "entity": {"name": "Acme"},
}

OK = "ok"  # an acceptable value: the field's own outcome (accept, or e.g. "not found" for a read)


def _nested(depth: int) -> dict[str, Any]:
    """A JSON object ``depth`` objects deep ({"a": {"a": ... 1}})."""
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value  # type: ignore[no-any-return]


def _nested_list(depth: int) -> list[Any]:
    """A JSON array ``depth`` arrays deep ([[...[1]...]])."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value  # type: ignore[no-any-return]


def _long_text(n: int) -> str:
    return ("abcdefghij" * (n // 10 + 1))[:n]


# (label, value, expect, python_only, tags) per kind of field
Value = tuple[str, Any, str, bool, tuple[str, ...]]

_NAME: list[Value] = [
    ("nul", "Ac\x00me", "InvalidInputError", False, ("nul",)),
    ("nul_only", "\x00", "InvalidInputError", False, ("nul",)),
    ("surrogate", "Acme\ud800", "InvalidInputError", False, ("surrogate",)),
    ("low_surrogate", "\udfffAcme", "InvalidInputError", False, ("surrogate",)),
    ("too_long", "x" * (MAX_NAME_CHARS + 1), "LimitExceededError", False, ("size",)),
    ("too_long_key", "a-" * (MAX_NAME_CHARS // 2 + 1), "LimitExceededError", False, ("size",)),
    ("huge", "x" * 200_000, "LimitExceededError", False, ("size", "huge")),
    ("int", 5, "InvalidInputError", False, ("type",)),
    ("float", 1.5, "InvalidInputError", False, ("type",)),
    ("bool", True, "InvalidInputError", False, ("type",)),
    ("dict", {"a": 1}, "InvalidInputError", False, ("type",)),
    ("list", ["Acme"], "InvalidInputError", False, ("type",)),
    ("empty", "", "InvalidNameError", False, ("type",)),
    ("blank", " \t\n ", "InvalidNameError", False, ("type",)),
    ("separators_only", "-_-", "InvalidNameError", False, ("type",)),
    ("at_limit", "y" * MAX_NAME_CHARS, OK, False, ("ok", "size")),
    ("sql", "Robert'); DROP TABLE facts;--", OK, False, ("ok",)),
    ("like_wildcards", "%_%", OK, False, ("ok",)),
    ("rtl_override", "\u202eemcA", OK, False, ("ok",)),
    ("emoji", "Acme \U0001f680", OK, False, ("ok",)),
]

# an object that is not a string is a literal (documented): a number or a bool is accepted as one
_OBJECT: list[Value] = [v for v in _NAME if v[0] not in ("int", "float", "bool")] + [
    ("number_is_literal", 5, OK, False, ("ok", "type")),
    ("float_is_literal", 1.5, OK, False, ("ok", "type")),
    ("bool_is_literal", True, OK, False, ("ok", "type")),
]


# optional free text (source, session, speaker, reason, episode_id): limit filled in per field
def _opt_text(limit: int) -> list[Value]:
    return [
        ("nul", "a\x00b", "InvalidInputError", False, ("nul",)),
        ("surrogate", "a\ud800b", "InvalidInputError", False, ("surrogate",)),
        ("too_long", _long_text(limit + 1), "LimitExceededError", False, ("size",)),
        ("huge", _long_text(200_000), "LimitExceededError", False, ("size", "huge")),
        ("int", 5, "InvalidInputError", False, ("type",)),
        ("dict", {"a": 1}, "InvalidInputError", False, ("type",)),
        ("list", ["a"], "InvalidInputError", False, ("type",)),
        ("bool", False, "InvalidInputError", False, ("type",)),
        ("at_limit", _long_text(limit), OK, False, ("ok", "size")),
        ("markup", "<script>alert(1)</script>", OK, False, ("ok",)),
    ]


_TEXT: list[Value] = [  # episode text, search query, recall question
    ("nul", "Acme\x00 met Initech.", "InvalidInputError", False, ("nul",)),
    ("surrogate", "Acme \ud800 met Initech.", "InvalidInputError", False, ("surrogate",)),
    ("too_long", _long_text(MAX_EPISODE_CHARS + 1), "LimitExceededError", False, ("size",)),
    ("int", 5, "InvalidInputError", False, ("type",)),
    ("dict", {"text": "a"}, "InvalidInputError", False, ("type",)),
    ("list", ["a"], "InvalidInputError", False, ("type",)),
    ("empty", "", "InvalidInputError", False, ("type",)),
    ("blank", "  \n\t ", "InvalidInputError", False, ("type",)),
    ("emoji", "Acme \U0001f680 met \u202eInitech\u202c.", OK, False, ("ok",)),
    ("fts_syntax", '"unclosed NEAR(a b) OR * col:val -x', OK, False, ("ok",)),
    ("sql", "'; DROP TABLE episodes;--", OK, False, ("ok",)),
]

_WRITE_TIME: list[Value] = [
    ("year_10000", "10000-01-01", "InvalidTimeError", False, ("time",)),
    ("year_0", "0000-06-01", "InvalidTimeError", False, ("time",)),
    ("month_13", "2024-13-01", "InvalidTimeError", False, ("time",)),
    ("feb_30", "2024-02-30", "InvalidTimeError", False, ("time",)),
    ("hour_25", "2024-01-01T25:00:00Z", "InvalidTimeError", False, ("time",)),
    ("past_9999_utc", "9999-12-31T23:00:00-05:00", "InvalidTimeError", False, ("time",)),
    ("before_1_utc", "0001-01-01T00:00:00+01:00", "InvalidTimeError", False, ("time",)),
    ("phrase", "yesterday", "InvalidTimeError", False, ("time",)),
    ("garbage", "not a date", "InvalidTimeError", False, ("time",)),
    ("empty", "", "InvalidTimeError", False, ("time",)),
    ("nul", "2024\x00-01-01", "InvalidTimeError", False, ("time", "nul")),
    ("surrogate", "2024-01-01\ud800", "InvalidTimeError", False, ("time", "surrogate")),
    ("long_digits", "2" * 5000, "InvalidTimeError", False, ("time", "size")),
    ("int", 1_700_000_000, "InvalidTimeError", False, ("time", "type")),
    ("dict", {"year": 2024}, "InvalidTimeError", False, ("time", "type")),
    ("list", ["2024"], "InvalidTimeError", False, ("time", "type")),
    ("bool", True, "InvalidTimeError", False, ("time", "type")),
    ("nan", float("nan"), "InvalidTimeError", True, ("time", "nan")),
    ("ok_day", "2001-02-03", OK, False, ("ok", "time")),
    ("ok_east_offset", "2001-02-03T04:05:06+14:00", OK, False, ("ok", "time")),
    ("ok_first_instant", "0001-01-01T00:00:00Z", OK, False, ("ok", "time")),
    ("ok_naive_datetime", _dt.datetime(2001, 2, 3, 4, 5, 6), OK, True, ("ok", "time")),
]

# a read basis takes phrases too
_READ_TIME: list[Value] = [v for v in _WRITE_TIME if v[0] not in ("phrase", "ok_naive_datetime")] + [
    ("ok_phrase", "3 days ago", OK, False, ("ok", "time")),
]

_BOOL: list[Value] = [
    ("str_no", "no", "InvalidInputError", False, ("bool",)),
    ("str_yes", "yes", "InvalidInputError", False, ("bool",)),
    ("str_false", "false", "InvalidInputError", False, ("bool",)),
    ("int_1", 1, "InvalidInputError", False, ("bool",)),
    ("int_0", 0, "InvalidInputError", False, ("bool",)),
    ("list", [], "InvalidInputError", False, ("bool", "type")),
    ("ok_false", False, OK, False, ("ok", "bool")),
]

_CONFIDENCE: list[Value] = [
    ("negative", -0.1, "InvalidInputError", False, ()),
    ("above_one", 1.5, "InvalidInputError", False, ()),
    ("huge_int", 10**30, "InvalidInputError", False, ("count",)),
    ("str", "0.5", "InvalidInputError", False, ("type",)),
    ("bool", True, "InvalidInputError", False, ("type",)),
    ("nan", float("nan"), "InvalidInputError", True, ("nan",)),
    ("inf", float("inf"), "InvalidInputError", True, ("nan",)),
    ("ok_zero", 0, OK, False, ("ok",)),
    ("ok_half", 0.5, OK, False, ("ok",)),
]

_JSON: list[Value] = [  # fact properties, episode metadata
    ("nan", {"a": float("nan")}, "InvalidInputError", True, ("nan",)),
    ("inf", {"a": float("inf")}, "InvalidInputError", True, ("nan",)),
    ("nested_inf", {"a": [1, {"b": float("-inf")}]}, "InvalidInputError", True, ("nan",)),
    ("depth_past_limit", _nested(MAX_JSON_DEPTH + 1), "LimitExceededError", False, ("deep",)),
    ("depth_500", _nested(500), "LimitExceededError", False, ("deep",)),
    ("depth_100000", _nested(100_000), "LimitExceededError", False, ("deep", "huge")),
    ("list_depth", {"a": _nested_list(MAX_JSON_DEPTH + 1)}, "LimitExceededError", False, ("deep",)),
    ("too_many_keys", {f"k{i}": i for i in range(MAX_JSON_KEYS + 1)}, "LimitExceededError", False, ("size",)),
    ("too_big", {"a": _long_text(MAX_JSON_BYTES)}, "LimitExceededError", False, ("size",)),
    ("huge_int", {"a": 2**70}, "LimitExceededError", False, ("count",)),
    ("nul_value", {"a": "x\x00y"}, "InvalidInputError", False, ("nul",)),
    ("nul_key", {"a\x00": 1}, "InvalidInputError", False, ("nul",)),
    ("surrogate_value", {"a": "\ud800"}, "InvalidInputError", False, ("surrogate",)),
    ("surrogate_key", {"\udc00": 1}, "InvalidInputError", False, ("surrogate",)),
    ("list", [1, 2], "InvalidInputError", False, ("type",)),
    ("str", '{"a": 1}', "InvalidInputError", False, ("type",)),
    ("int", 5, "InvalidInputError", False, ("type",)),
    ("int_key", {1: "a"}, "InvalidInputError", True, ("type",)),
    ("set_value", {"a": {1, 2}}, "InvalidInputError", True, ("type",)),
    ("bytes_value", {"a": b"x"}, "InvalidInputError", True, ("type",)),
    ("ok_empty", {}, OK, False, ("ok",)),
    ("ok_at_depth_limit", _nested(MAX_JSON_DEPTH), OK, False, ("ok", "deep")),
    ("ok_at_key_limit", {f"k{i}": i for i in range(MAX_JSON_KEYS)}, OK, False, ("ok", "size")),
    ("ok_mixed", {"a": [1, 2.5, None, True, {"b": "\u202ex"}]}, OK, False, ("ok",)),
]


def _count(maximum: int, minimum: int) -> list[Value]:
    return [
        ("negative", -1, "InvalidInputError", False, ("count",)),
        ("past_max", maximum + 1, "LimitExceededError", False, ("count", "size")),
        ("int_2_70", 2**70, "LimitExceededError", False, ("count", "size")),
        ("int_10_30", 10**30, "LimitExceededError", False, ("count", "size")),
        ("str", "10", "InvalidInputError", False, ("count", "type")),
        ("float", 2.5, "InvalidInputError", False, ("count", "type")),
        ("bool", True, "InvalidInputError", False, ("count", "type")),
        ("zero", 0, "InvalidInputError" if minimum > 0 else OK, False, ("count",)),
        ("nan", float("nan"), "InvalidInputError", True, ("count", "nan")),
        ("ok_max", maximum, OK, False, ("ok", "count")),
    ]


_DIRECTION: list[Value] = [
    ("unknown", "sideways", "InvalidInputError", False, ("enum",)),
    ("int", 5, "InvalidInputError", False, ("enum", "type")),
    ("nul", "out\x00", "InvalidInputError", False, ("enum", "nul")),
    ("ok_both", "both", OK, False, ("ok", "enum")),
]

_VIEW: list[Value] = [
    ("unknown", "sideways", "InvalidInputError", False, ("enum",)),
    ("int", 5, "InvalidInputError", False, ("enum", "type")),
    ("list", ["raw"], "InvalidInputError", False, ("enum", "type")),
    ("surrogate", "raw\ud800", "InvalidInputError", False, ("enum", "surrogate")),
    ("ok_raw", "raw", OK, False, ("ok", "enum")),
]

_OBJECT_LITERAL: list[Value] = [  # object with literal=True (or a non-string object)
    ("str_too_long", _long_text(MAX_LITERAL_CHARS + 1), "LimitExceededError", False, ("size",)),
    ("str_nul", "a\x00b", "InvalidInputError", False, ("nul",)),
    ("str_surrogate", "a\ud800", "InvalidInputError", False, ("surrogate",)),
    ("int_2_70", 2**70, "LimitExceededError", False, ("count", "size")),
    ("int_neg_2_70", -(2**70), "LimitExceededError", False, ("count", "size")),
    ("nan", float("nan"), "InvalidInputError", True, ("nan",)),
    ("inf", float("inf"), "InvalidInputError", True, ("nan",)),
    ("dict", {"a": 1}, "InvalidInputError", False, ("type",)),
    ("list", [1], "InvalidInputError", False, ("type",)),
    ("ok_at_limit", _long_text(MAX_LITERAL_CHARS), OK, False, ("ok", "size")),
    ("ok_max_int", MAX_INT, OK, False, ("ok", "count")),
]

# (op, field, values, outcome of an acceptable value, extra args)
FIELDS: list[tuple[str, str, list[Value], str, dict[str, Any]]] = [
    ("add_fact", "subject", _NAME, "accept", {}),
    ("add_fact", "predicate", _NAME, "accept", {}),
    ("add_fact", "object", _OBJECT, "accept", {}),
    ("add_fact", "object", _OBJECT_LITERAL, "accept", {"literal": True}),
    ("add_fact", "valid_from", _WRITE_TIME, "accept", {}),
    ("add_fact", "valid_to", _WRITE_TIME, "accept", {}),
    ("add_fact", "confidence", _CONFIDENCE, "accept", {}),
    ("add_fact", "source", _opt_text(MAX_SOURCE_CHARS), "accept", {}),
    ("add_fact", "episode_id", _opt_text(MAX_ID_CHARS), "accept", {}),
    ("add_fact", "properties", _JSON, "accept", {}),
    ("add_fact", "supersede", _BOOL, "accept", {}),
    ("add_fact", "literal", _BOOL, "accept", {}),
    ("add_episode", "text", _TEXT, "accept", {}),
    ("add_episode", "occurred_at", _WRITE_TIME, "accept", {}),
    ("add_episode", "recorded_at", _WRITE_TIME, "accept", {}),
    ("add_episode", "source", _opt_text(MAX_SOURCE_CHARS), "accept", {}),
    ("add_episode", "session", _opt_text(MAX_SESSION_CHARS), "accept", {}),
    ("add_episode", "speaker", _opt_text(MAX_SPEAKER_CHARS), "accept", {}),
    ("add_episode", "metadata", _JSON, "accept", {}),
    ("facts", "subject", _NAME, "accept", {}),
    ("facts", "predicate", _NAME, "accept", {}),
    ("facts", "as_of", _READ_TIME, "accept", {}),
    ("facts", "known_at", _READ_TIME, "accept", {}),
    ("facts", "direction", _DIRECTION, "accept", {}),
    ("facts", "limit", _count(MAX_FACTS_LIMIT, 0), "accept", {}),
    ("facts", "literal", _BOOL, "accept", {}),
    ("search", "query", [v for v in _TEXT if v[0] != "too_long"] + [
        ("too_long", _long_text(MAX_QUERY_CHARS + 1), "LimitExceededError", False, ("size",))], "accept", {}),
    ("search", "k", _count(MAX_K, 1), "accept", {}),
    ("search", "view", _VIEW, "accept", {}),
    ("search", "at", _READ_TIME, "accept", {}),
    ("search", "known_at", _READ_TIME, "accept", {}),
    ("search", "session", _opt_text(MAX_SESSION_CHARS), "accept", {}),
    ("search", "since", _READ_TIME, "accept", {}),
    ("search", "until", _READ_TIME, "accept", {}),
    ("recall", "question", [v for v in _TEXT if v[0] != "too_long"] + [
        ("too_long", _long_text(MAX_QUERY_CHARS + 1), "LimitExceededError", False, ("size",))], "accept", {}),
    ("recall", "at", _READ_TIME, "accept", {}),
    ("recall", "known_at", _READ_TIME, "accept", {}),
    ("recall", "budget_tokens", _count(MAX_BUDGET_TOKENS, 1), "accept", {}),
    ("invalidate", "subject", _NAME, "FactNotFoundError", {}),
    ("invalidate", "predicate", _NAME, "FactNotFoundError", {}),
    ("invalidate", "object", _OBJECT, "FactNotFoundError", {}),
    ("invalidate", "ended", _WRITE_TIME, "FactNotFoundError", {}),
    ("invalidate", "reason", _opt_text(MAX_REASON_CHARS), "accept", {}),
    ("invalidate", "literal", [v for v in _BOOL if v[2] != OK], "accept", {}),
    ("timeline", "entity", _NAME, "EntityNotFoundError", {}),
    ("timeline", "start", _READ_TIME, "accept", {}),
    ("timeline", "end", _READ_TIME, "accept", {}),
    ("entity", "name", _NAME, "EntityNotFoundError", {}),
]

# cases that are about two arguments together
_PAIRS: list[Case] = [
    Case("add_fact.interval.reversed", "add_fact",
         {**BASE["add_fact"], "valid_from": "2024", "valid_to": "2020"}, "InvalidIntervalError", tags=("interval",)),
    Case("add_fact.interval.empty", "add_fact",
         {**BASE["add_fact"], "valid_from": "2024-01-01", "valid_to": "2024-01-01"}, "InvalidIntervalError",
         tags=("interval",)),
    Case("add_fact.interval.same_year_as_written", "add_fact",
         {**BASE["add_fact"], "valid_from": "2024", "valid_to": "2024"}, "InvalidIntervalError", tags=("interval",)),
    Case("add_fact.object.none", "add_fact", {**BASE["add_fact"], "object": None}, "InvalidInputError",
         tags=("type",)),
    Case("timeline.interval.reversed", "timeline", {"entity": "Acme", "start": "2024", "end": "2020"},
         "InvalidIntervalError", tags=("interval",)),
    Case("search.interval.reversed", "search", {"query": "Acme", "since": "2024", "until": "2020"},
         "InvalidIntervalError", tags=("interval",)),
    Case("invalidate.ended.at_start", "invalidate", {**BASE["invalidate"], "ended": "2020-01-01"},
         "InvalidIntervalError", tags=("interval",)),
    Case("invalidate.ended.ok", "invalidate", BASE["invalidate"], "accept", tags=("ok",)),
    Case("entity.name.ok", "entity", {"name": "acme"}, "accept", tags=("ok",)),
    Case("timeline.entity.ok", "timeline", {"entity": "Globex"}, "accept", tags=("ok",)),
    Case("facts.object.surrogate", "facts", {"object": "Globex\ud800"}, "InvalidInputError", tags=("surrogate",)),
    Case("facts.object.nul", "facts", {"object": "Glo\x00bex"}, "InvalidInputError", tags=("nul",)),
]


def _build() -> list[Case]:
    cases: list[Case] = []
    for op, name, values, ok_outcome, extra in FIELDS:
        prefix = f"{op}.{name}" + (".literal" if extra.get("literal") is True and name == "object" else "")
        for label, value, expect, python_only, tags in values:
            args = {**BASE[op], **extra, name: value}
            cases.append(Case(f"{prefix}.{label}", op, args, ok_outcome if expect == OK else expect,
                              python_only, tags))
    cases.extend(_PAIRS)
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return cases


CASES: list[Case] = _build()
