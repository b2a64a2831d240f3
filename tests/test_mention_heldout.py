"""Held-out table for time-mention resolution, written from docs/evidence.md alone.

Written without reading the resolver or its own table (tests/test_mention_table.py), so
that its pass rate is an out-of-fold figure. Each expected value is what a careful reader
takes the phrase to mean, under the rules docs/evidence.md ("Time mentions", "Mentions
respect tense", "No cue") states. Rows where the doc says nothing about the case
(a phrase type it does not list, or a tense cue outside its list that a reader relies on)
carry ``doc_unspecified=True``: they record behaviour and are left out of the pass rate.

A row's span is given as naive calendar values. A day-or-coarser span matches when the
resolver returns it either at UTC boundaries (the partial-time rule of
docs/concepts/time.md) or at the speaker's local boundaries — the calendar day is the
speaker's either way; a time of day matches only in the speaker's zone.
Rows that fail today are strict xfails named by error class (``XFAIL``), so a fix shows.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import pytest

from chronomem.core.time import Precision
from chronomem.service.evidence.timemention import TimeMention, resolve_mentions

UTC = _dt.timezone.utc
LA = ZoneInfo("America/Los_Angeles")
NY = ZoneInfo("America/New_York")
TOKYO = ZoneInfo("Asia/Tokyo")
SHANGHAI = ZoneInfo("Asia/Shanghai")

Naive = _dt.datetime
Span = tuple[Naive, Naive]


@dataclass(frozen=True)
class Expect:
    """``kind``: "span" (one certain span), "ambiguous" (these candidates, uncertain), "none"."""

    kind: str
    spans: tuple[Span, ...] = ()
    precision: Precision | None = None  # None: the doc gives no precision for this period


@dataclass(frozen=True)
class Row:
    rid: str
    text: str
    said: _dt.datetime
    key: str  # the phrase (or part of it) the expectation is about
    expect: Expect
    doc_unspecified: bool = False


def _d(s: str) -> Naive:
    return _dt.datetime.fromisoformat(s)


def day(s: str) -> Expect:
    start = _d(s)
    return Expect("span", ((start, start + _dt.timedelta(days=1)),), Precision.DAY)


def month(s: str) -> Expect:
    y, m = (int(p) for p in s.split("-"))
    end = _dt.datetime(y + (m == 12), m % 12 + 1, 1)
    return Expect("span", ((_dt.datetime(y, m, 1), end),), Precision.MONTH)


def year(y: int) -> Expect:
    return Expect("span", ((_dt.datetime(y, 1, 1), _dt.datetime(y + 1, 1, 1)),), Precision.YEAR)


def span(a: str, b: str, precision: Precision | None = None) -> Expect:
    return Expect("span", ((_d(a), _d(b)),), precision)


def amb(*days: str) -> Expect:
    return Expect("ambiguous", tuple((_d(x), _d(x) + _dt.timedelta(days=1)) for x in days))


def amb_months(*months: str) -> Expect:
    return Expect("ambiguous", tuple(s for m in months for s in month(m).spans))


NONE = Expect("none")


def at(s: str, tz: _dt.tzinfo = UTC) -> _dt.datetime:
    return _dt.datetime.fromisoformat(s).replace(tzinfo=tz)


# Weekdays of the utterance dates (checked against a calendar):
# 2025-12-30 Tue; 2026-01-02 Fri; 2026-01-08 Thu; 2026-01-20 Tue; 2026-02-02 Mon; 2026-02-03 Tue;
# 2026-03-01 Sun; 2026-03-10 Tue; 2026-03-11 Wed; 2026-03-19 Thu; 2026-04-10 Fri; 2026-04-20 Mon;
# 2026-06-10 Wed; 2026-09-10 Thu; 2026-11-28 Sat; 2026-12-06 Sun; 2026-12-30 Wed; 2026-12-31 Thu.
EN: list[Row] = [
    # Weekdays, resolved by the clause's tense (or nearest / ambiguous without a cue).
    Row("en01", "ok so we will ship on Friday, fingers crossed", at("2026-03-11T10:00"),
        "Friday", day("2026-03-13")),
    Row("en02", "on Tuesday we decided", at("2026-01-08T10:00"), "Tuesday", day("2026-01-06")),
    Row("en03", "it was due Monday, we're late", at("2026-01-08T15:00"), "Monday",
        day("2026-01-05")),
    Row("en04", "can we meet Wednesday?", at("2026-02-03T09:00"), "Wednesday", day("2026-02-04")),
    Row("en05", "the build should be ready Monday", at("2026-11-28T18:00"), "Monday",
        day("2026-11-30")),
    Row("en06", "I'll send the invoice Thursday", at("2026-01-08T11:00"), "Thursday",
        day("2026-01-15")),
    Row("en07", "We talked about it Thursday", at("2026-01-08T11:00"), "Thursday",
        day("2026-01-01")),
    Row("en08", "retro Monday?", at("2026-01-08T11:00"), "Monday", amb("2026-01-05", "2026-01-12")),
    Row("en09", "let's sync next Friday", at("2026-03-10T10:00"), "next Friday",
        amb("2026-03-13", "2026-03-20")),
    Row("en10", "sure, next Friday works for me", at("2026-11-28T10:00"), "next Friday",
        day("2026-12-04")),
    Row("en11", "the deploy broke last Tuesday", at("2026-02-02T10:00"), "last Tuesday",
        day("2026-01-27")),
    Row("en12", "I'll be in Berlin until Friday", at("2026-11-28T10:00"), "Friday",
        day("2026-12-04")),
    Row("en13", "It's been flaky since Tuesday", at("2026-01-08T10:00"), "Tuesday",
        day("2026-01-06")),
    Row("en14", "Please get the review done before Monday", at("2026-03-11T10:00"), "Monday",
        day("2026-03-16")),
    Row("en15", "we agreed to move it to Thursday", at("2026-02-02T10:00"), "Thursday",
        day("2026-02-05")),
    Row("en16", "We shipped on Monday but we will demo on Friday", at("2026-03-11T10:00"),
        "Monday", day("2026-03-09")),
    Row("en17", "We shipped on Monday but we will demo on Friday", at("2026-03-11T10:00"),
        "Friday", day("2026-03-13")),
    # Month days.
    Row("en18", "I'll be off from the 14th", at("2026-03-11T10:00"), "the 14th", day("2026-03-14")),
    Row("en19", "the sprint will end on the 30th", at("2026-03-11T10:00"), "the 30th",
        day("2026-03-30")),
    Row("en20", "I was sick on the 3rd; I'll be back on the 20th", at("2026-03-11T10:00"),
        "the 3rd", day("2026-03-03")),
    Row("en21", "I was sick on the 3rd; I'll be back on the 20th", at("2026-03-11T10:00"),
        "the 20th", day("2026-03-20")),
    Row("en22", "what about the 5th?", at("2026-03-19T10:00"), "the 5th",
        amb("2026-03-05", "2026-04-05")),
    Row("en23", "we migrated the db on the 28th", at("2026-03-02T10:00"), "the 28th",
        day("2026-02-28")),
    Row("en24", "The launch is on the 31st", at("2026-04-10T10:00"), "the 31st", day("2026-05-31")),
    Row("en25", "rent is due the 1st", at("2026-12-30T10:00"), "the 1st", day("2027-01-01")),
    Row("en26", "the server went down on the 29th", at("2026-01-02T10:00"), "the 29th",
        day("2025-12-29")),
    Row("en27", "The meeting got moved to the 12th", at("2026-03-11T10:00"), "the 12th",
        day("2026-03-12")),
    # Month + day without a year.
    Row("en28", "the offsite, July 15", at("2026-01-20T10:00"), "July 15",
        amb("2025-07-15", "2026-07-15")),
    Row("en29", "his final day is March 6", at("2026-02-02T10:00"), "March 6", day("2026-03-06")),
    Row("en30", "Kickoff is January 5", at("2025-12-30T10:00"), "January 5", day("2026-01-05")),
    # Months without a year, near the year boundary and far from it.
    Row("en31", "the contract expired in March", at("2026-09-10T10:00"), "March", month("2026-03")),
    Row("en32", "The new office opens in January", at("2025-12-30T10:00"), "January",
        month("2026-01")),
    Row("en33", "we closed the books in December", at("2026-01-02T10:00"), "December",
        month("2025-12")),
    Row("en34", "we're gonna release in April", at("2026-06-10T10:00"), "April", month("2027-04")),
    Row("en35", "He'd moved out in October", at("2026-03-11T10:00"), "October", month("2025-10")),
    Row("en36", "we'll revisit this in October", at("2026-03-11T10:00"), "October",
        month("2026-10")),
    # Quarters.
    Row("en37", "we need it by Q2", at("2026-02-02T10:00"), "Q2",
        span("2026-04-01", "2026-07-01")),
    Row("en38", "Q3 was rough for sales", at("2026-02-02T10:00"), "Q3",
        span("2025-07-01", "2025-10-01")),
    Row("en39", "They're going to announce it in Q4", at("2026-02-02T10:00"), "Q4",
        span("2026-10-01", "2027-01-01")),
    Row("en40", "Revenue dipped in Q3 2024", at("2026-02-02T10:00"), "Q3 2024",
        span("2024-07-01", "2024-10-01")),
    # Fixed-direction phrases.
    Row("en41", "my sister visits next month", at("2026-12-30T10:00"), "next month",
        month("2027-01")),
    Row("en42", "2 weeks from now we'll know", at("2026-03-11T10:00"), "2 weeks from now",
        day("2026-03-25")),
    Row("en43", "the day after tomorrow is fine", at("2026-01-02T10:00"), "day after tomorrow",
        day("2026-01-04")),
    Row("en44", "anyone around this weekend?", at("2026-03-11T10:00"), "this weekend",
        span("2026-03-14", "2026-03-16")),
    Row("en45", "we hiked last weekend", at("2026-02-02T10:00"), "last weekend",
        span("2026-01-31", "2026-02-02")),
    Row("en46", "that was three days ago", at("2026-03-01T10:00"), "three days ago",
        day("2026-02-26")),
    Row("en47", "I'll circle back in 10 days", at("2026-12-30T10:00"), "in 10 days",
        day("2027-01-09")),
    Row("en48", "the regression landed 2 weeks ago", at("2026-01-08T10:00"), "2 weeks ago",
        day("2025-12-25")),
    Row("en49", "we went to Lisbon last summer", at("2026-03-11T10:00"), "last summer",
        span("2025-06-01", "2025-09-01")),
    Row("en50", "no releases next week", at("2026-12-06T10:00"), "next week",
        span("2026-12-07", "2026-12-14")),
    Row("en51", "budget got cut last month", at("2026-01-02T10:00"), "last month",
        month("2025-12")),
    Row("en52", "last year was chaos", at("2026-01-02T10:00"), "last year", year(2025)),
    # Explicit dates and years.
    Row("en53", "he retired in 2019", at("2026-03-11T10:00"), "2019", year(2019)),
    Row("en54", "she joined in May 2021", at("2026-03-11T10:00"), "May 2021", month("2021-05")),
    Row("en55", "postmortem for the incident on 14 Feb 2025", at("2026-03-11T10:00"),
        "14 Feb 2025", day("2025-02-14")),
    Row("en56", "On March 3rd, 2024 we migrated", at("2026-03-11T10:00"), "March 3rd, 2024",
        day("2024-03-03")),
    # The speaker's zone: the calendar day is the speaker's, not UTC's.
    Row("en57", "I fixed it yesterday", at("2026-03-10T23:30", LA), "yesterday", day("2026-03-09")),
    Row("en58", "deploying tomorrow", at("2026-03-11T08:00", TOKYO), "tomorrow", day("2026-03-12")),
    Row("en59", "we will ship on Friday", at("2026-03-13T00:30", SHANGHAI), "Friday",
        day("2026-03-20")),
    Row("en60", "see you all next year!", at("2026-12-31T20:00", NY), "next year", year(2027)),
    # No time expression a reader would see.
    Row("en61", "May I push to main?", at("2026-03-11T10:00"), "May", NONE),
    Row("en62", "I have 2 weeks of PTO left", at("2026-03-11T10:00"), "2 weeks", NONE),
    Row("en63", "pick the 2nd option, it's cleaner", at("2026-03-11T10:00"), "the 2nd", NONE),
    # Not covered by the doc: recorded, not counted.
    Row("en64", "the contract ran out in March", at("2026-09-10T10:00"), "March", month("2026-03"),
        doc_unspecified=True),  # "ran" is past, but irregular verbs are not in the cue list
    Row("en65", "can we meet Wednesday?", at("2026-02-02T09:00"), "Wednesday", day("2026-02-04"),
        doc_unspecified=True),  # a proposal is future; no listed cue, 2 vs 5 days → doc: ambiguous
    Row("en66", "the sprint ends on the 30th", at("2026-04-20T10:00"), "the 30th",
        day("2026-04-30"), doc_unspecified=True),  # "ends" is not a listed cue
    Row("en67", "the audit is in December", at("2026-01-02T10:00"), "December", month("2026-12"),
        doc_unspecified=True),  # "is in" (not "is on") for a scheduled event
    Row("en68", "we're shipping this Friday", at("2026-03-11T10:00"), "this Friday",
        day("2026-03-13"), doc_unspecified=True),  # "this <weekday>" is not listed
    Row("en69", "by end of Q2", at("2026-02-02T10:00"), "Q2", day("2026-06-30"),
        doc_unspecified=True),  # "end of" a period is not listed
    Row("en70", "let's do 3pm tomorrow", at("2026-03-11T10:00"), "3pm",
        span("2026-03-12T15:00", "2026-03-12T16:00", Precision.HOUR),
        doc_unspecified=True),  # English times of day are not listed
    Row("en71", "The Sunday Times ran the story", at("2026-03-11T10:00"), "Sunday", NONE,
        doc_unspecified=True),  # a weekday inside a name
]

ZH: list[Row] = [
    Row("zh01", "下周三开会", at("2026-03-11T10:00", SHANGHAI), "下周三", day("2026-03-18")),
    Row("zh02", "上个月我们搬家了", at("2026-01-02T10:00", SHANGHAI), "上个月", month("2025-12")),
    Row("zh03", "三月份要交", at("2026-06-10T10:00", SHANGHAI), "三月", month("2027-03")),
    Row("zh04", "周五前完成", at("2026-03-11T10:00", SHANGHAI), "周五", day("2026-03-13")),
    Row("zh05", "明年春天去日本", at("2026-03-11T10:00", SHANGHAI), "明年春天",
        span("2027-03-01", "2027-06-01")),
    Row("zh06", "去年十月他入职的", at("2026-03-11T10:00", SHANGHAI), "去年十月", month("2025-10")),
    Row("zh07", "前天下雨了", at("2026-03-01T10:00", SHANGHAI), "前天", day("2026-02-27")),
    Row("zh08", "大后天放假", at("2026-12-30T10:00", SHANGHAI), "大后天", day("2027-01-02")),
    Row("zh09", "后天再说吧", at("2026-12-31T10:00", SHANGHAI), "后天", day("2027-01-02")),
    Row("zh10", "上周二服务挂了", at("2026-02-02T10:00", SHANGHAI), "上周二", day("2026-01-27")),
    Row("zh11", "三天前就提交了", at("2026-03-01T10:00", SHANGHAI), "三天前", day("2026-02-26")),
    Row("zh12", "两周后上线", at("2026-03-11T10:00", SHANGHAI), "两周后", day("2026-03-25")),
    Row("zh13", "我们12月25日上线了", at("2026-01-02T10:00", SHANGHAI), "12月25日",
        day("2025-12-25")),
    Row("zh14", "1月5日要交报告", at("2025-12-30T10:00", SHANGHAI), "1月5日", day("2026-01-05")),
    Row("zh15", "那就周三见", at("2026-02-02T10:00", SHANGHAI), "周三", day("2026-02-04")),
    Row("zh16", "周一我们已经讨论过了", at("2026-01-08T10:00", SHANGHAI), "周一", day("2026-01-05")),
    Row("zh17", "下午3点开会", at("2026-03-11T10:00", SHANGHAI), "下午3点",
        span("2026-03-11T15:00", "2026-03-11T16:00", Precision.HOUR)),
    Row("zh18", "明天上线", at("2026-01-01T07:00", SHANGHAI), "明天", day("2026-01-02")),
    Row("zh19", "我昨天修好了", at("2026-03-11T06:00", SHANGHAI), "昨天", day("2026-03-10")),
    Row("zh20", "去年我们开了三家店", at("2026-01-02T10:00", SHANGHAI), "去年", year(2025)),
    Row("zh21", "下个月我妹妹来", at("2026-12-30T10:00", SHANGHAI), "下个月", month("2027-01")),
    Row("zh22", "上周末去爬山了", at("2026-02-02T10:00", SHANGHAI), "上周末",
        span("2026-01-31", "2026-02-02")),
    Row("zh23", "这周末有空吗", at("2026-03-11T10:00", SHANGHAI), "这周末",
        span("2026-03-14", "2026-03-16")),
    Row("zh24", "周五的会", at("2026-03-10T10:00", SHANGHAI), "周五",
        amb("2026-03-13", "2026-03-06")),
    Row("zh25", "十月份他离职了", at("2026-03-11T10:00", SHANGHAI), "十月", month("2025-10")),
    Row("zh26", "下周不发版", at("2026-12-06T10:00", SHANGHAI), "下周",
        span("2026-12-07", "2026-12-14")),
    Row("zh27", "2023年5月7日签的合同", at("2026-03-11T10:00", SHANGHAI), "2023年5月7日",
        day("2023-05-07")),
    Row("zh28", "五天后交付", at("2026-12-30T10:00", SHANGHAI), "五天后", day("2027-01-04")),
    Row("zh29", "我们三个人一起去", at("2026-03-11T10:00", SHANGHAI), "三", NONE),
    Row("zh30", "第三个方案更好", at("2026-03-11T10:00", SHANGHAI), "第三", NONE),
    Row("zh31", "2024年第三季度营收下滑", at("2026-03-11T10:00", SHANGHAI), "第三季度",
        span("2024-07-01", "2024-10-01"), doc_unspecified=True),  # Chinese quarters not listed
]

ROWS = EN + ZH

# Rows failing today, by error class (filled in from a run, never by editing an expectation).
XFAIL: dict[str, str] = {
}


def _candidates(start: Naive, end: Naive, said: _dt.datetime, local_only: bool) -> list[tuple[
        _dt.datetime, _dt.datetime]]:
    tz = said.tzinfo
    assert tz is not None
    local = (start.replace(tzinfo=tz), end.replace(tzinfo=tz))
    return [local] if local_only else [local, (start.replace(tzinfo=UTC), end.replace(tzinfo=UTC))]


def _same(got: tuple[_dt.datetime, _dt.datetime], want: Span, row: Row,
          precision: Precision | None) -> bool:
    local_only = precision is not None and precision >= Precision.HOUR
    return got in _candidates(want[0], want[1], row.said, local_only)


def _matching(mentions: list[TimeMention], key: str) -> list[TimeMention]:
    k = key.lower()
    return [m for m in mentions if k in m.phrase.lower() or m.phrase.lower() in k]


def check(row: Row) -> tuple[bool, str]:
    """Whether the resolver meets the row's expectation, and what it returned."""
    mentions = resolve_mentions(row.text, row.said)
    got = "; ".join(
        f"{m.phrase!r} [{m.start.isoformat()}, {m.end.isoformat()}) {m.precision.name}"
        + ("" if m.certain else f" AMBIGUOUS alt={[(a.isoformat(), b.isoformat()) for a, b in m.alternatives]}")
        for m in mentions) or "(none)"
    exp = row.expect
    if exp.kind == "none":
        return not mentions, got
    hits = _matching(mentions, row.key)
    if not hits:
        return False, got
    if exp.kind == "ambiguous":
        ok = all(not m.certain and all(any(_same(c, w, row, None) for c in ((m.start, m.end), *m.alternatives))
                                       for w in exp.spans) for m in hits)
        return ok, got
    want = exp.spans[0]
    ok = all(m.certain and _same((m.start, m.end), want, row, exp.precision)
             and (exp.precision is None or m.precision == exp.precision) for m in hits)
    return ok, got


def _param(row: Row) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[row.rid])] if row.rid in XFAIL else []
    return pytest.param(row, id=row.rid, marks=marks)


def test_table_shape() -> None:
    """At least 50 English and 20 Chinese counted rows, ids unique."""
    assert len({r.rid for r in ROWS}) == len(ROWS)
    assert sum(not r.doc_unspecified for r in EN) >= 50
    assert sum(not r.doc_unspecified for r in ZH) >= 20
    assert set(XFAIL) <= {r.rid for r in ROWS}


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_heldout_row(row: Row) -> None:
    ok, got = check(row)
    assert ok, f"{row.text!r} said {row.said.isoformat()}: expected {row.expect}, got {got}"
