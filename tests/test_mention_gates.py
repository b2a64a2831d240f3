"""The per-pattern gates of ``resolve_mentions`` (a text must hold a digit, a
CJK character or one of some words for a pattern to run) only skip work:
with and without them every text resolves to the same mentions."""

from __future__ import annotations

import datetime as _dt
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem.service.evidence import timemention

WORDS = ["on", "Monday", "next", "last", "week", "the", "5th", "of", "March", "2024", "3pm", "at", "10:30",
         "Q3", "quarter", "end", "summer", "in", "two", "weeks", "ago", "yesterday", "tonight", "weekend",
         "2023-07-20", "7/4/24", "by", "Friday", "from", "Jan", "this", "morning", "去年", "3月5日", "下周一",
         "明天", "上午9点", "两天前", "周末", "第三季度", "meeting", "ship", ",", "day", "after", "tomorrow"]
BASE = _dt.datetime(2024, 1, 10, 12, 0, tzinfo=_dt.timezone.utc)


def _open(_text: str) -> Callable[[str | tuple[str, ...]], bool]:
    return lambda _gate: True


def _both(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """Gated, then with every gate open (the patch is undone before returning)."""
    gated = timemention.resolve_mentions(text, BASE)
    with monkeypatch.context() as m:
        m.setattr(timemention, "_gate", _open)
        ungated = timemention.resolve_mentions(text, BASE)
    return gated, ungated


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(WORDS) | st.text(max_size=3), min_size=1, max_size=14).map(" ".join))
def test_gates_change_no_result(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    gated, ungated = _both(text, monkeypatch)
    assert gated == ungated


def test_a_gate_skips_what_cannot_match(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = timemention._gate

    def spy(text: str) -> Callable[[str | tuple[str, ...]], bool]:
        may = real(text)

        def check(gate: str | tuple[str, ...]) -> bool:
            ok = may(gate)
            calls.append("run" if ok else "skip")
            return ok
        return check

    monkeypatch.setattr(timemention, "_gate", spy)
    assert timemention.resolve_mentions("we shipped it and it works", BASE) == []
    assert calls.count("run") <= 2 and calls.count("skip") == len(timemention._PATTERNS) - calls.count("run")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["yesterday", "today", "tonight", "tomorrow", "last night", "this morning",
                        "this afternoon", "this evening", "Tomorrow", "LAST  NIGHT"]),
       st.datetimes(min_value=_dt.datetime(1990, 1, 1), max_value=_dt.datetime(2090, 1, 1)),
       st.sampled_from(["UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Kiritimati"]))
def test_day_names_resolve_as_dateparser_does(phrase: str, when: _dt.datetime, zone: str) -> None:
    """The day-name rule answers what dateparser answered for these phrases."""
    from zoneinfo import ZoneInfo

    base = when.replace(tzinfo=ZoneInfo(zone))
    m = timemention._PATTERNS[11][0].search(phrase)
    assert m is not None
    assert timemention._rule_day_name(m, base) == timemention._via_dateparser(m.group(0), "en", base)
