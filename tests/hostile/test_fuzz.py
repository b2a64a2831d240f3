"""Hypothesis fuzzing of the write and read API on both backends, for a
bounded number of examples: every call either returns or raises a
:class:`ChronomemError`, and a call that raised left the store unchanged."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronomem
from chronomem import Memory
from hostile.corpus import CASES, OPS
from hostile.test_python import state

# the parameters of each operation (corpus.py's docstring)
PARAMS: dict[str, tuple[str, ...]] = {
    "add_fact": ("subject", "predicate", "object", "valid_from", "valid_to", "confidence", "source", "episode_id",
                 "properties", "supersede", "literal"),
    "add_episode": ("text", "occurred_at", "recorded_at", "source", "session", "speaker", "metadata"),
    "facts": ("subject", "predicate", "object", "as_of", "known_at", "direction", "limit", "literal"),
    "search": ("query", "k", "view", "at", "known_at", "session", "since", "until"),
    "recall": ("question", "at", "known_at", "budget_tokens"),
    "invalidate": ("subject", "predicate", "object", "ended", "reason", "literal"),
    "timeline": ("entity", "start", "end"),
    "entity": ("name",),
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "add_fact": ("subject", "predicate", "object"), "add_episode": ("text",), "facts": (), "search": ("query",),
    "recall": ("question",), "invalidate": ("subject", "predicate", "object"), "timeline": ("entity",),
    "entity": ("name",),
}

# any code point, lone surrogates and NUL included
_chars = st.characters(codec=None, exclude_categories=())
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(_chars, max_size=40),
    st.sampled_from(["Acme", "Globex", "works_with", "2024", "2020-01-01", "yesterday", "raw", "both", "", "\x00",
                     "\ud800", "10000-01-01", "9999-12-31T23:59:59.999999Z"]),
    st.datetimes(timezones=st.none() | st.timezones()), st.dates(),
)
_json = st.recursive(_scalars.filter(lambda v: not isinstance(v, (_dt.date, _dt.datetime))),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(_chars, max_size=8), inner,
                                                                                 max_size=4),
                     max_leaves=20)
# the corpus' own values: sizes and depths past every limit
_corpus_values = st.sampled_from([v for c in CASES for v in c.args.values()])
_value = st.one_of(_scalars, _json, _corpus_values)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    op = draw(st.sampled_from(OPS))
    names = PARAMS[op]
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    args = {name: draw(_value) for name in chosen}
    for name in REQUIRED[op]:
        args.setdefault(name, draw(st.sampled_from(["Acme", "Globex", "works_with", "Acme deal"])))
    return op, args


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(call=calls())
def test_every_call_returns_or_raises_a_typed_error(prepared: Memory, call: tuple[str, dict[str, Any]]) -> None:
    op, args = call
    before = state(prepared)
    try:
        getattr(prepared, op)(**args)
    except chronomem.ChronomemError:
        assert state(prepared) == before, f"{op}({args!r}) raised but changed the store"
