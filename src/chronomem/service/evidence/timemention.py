"""Time mentions: find time expressions in text and resolve them to intervals.

A small pattern layer finds candidate phrases ("yesterday", "last Tuesday",
"2 weeks ago", "in March", "7 May 2023", "10月12日", "上周二", "下午3点",
"Q3 2024" ...); each phrase is resolved against the episode's ``occurred_at``
(the speaker's time, ``base``) either by a rule of our own (weekdays, month
days, months, quarters, weekends, seasons, "N units ago", Chinese relative
days, weeks, months and clock hours, day-of-month ordinals) or by
``dateparser``'s :class:`DateDataParser` (always with explicit ``languages``
and ``RELATIVE_BASE``), whose period (day, week, month, year, quarter)
becomes a half-open interval ``[start, end)``.

Tense. Phrases that fix their own direction keep it whatever the clause
says: "last Tuesday", "next week", "3 days ago", "in 3 days", "tomorrow",
"上周二", explicit years and dates. An *open* phrase (a weekday, a month day
or month without a year, "the 3rd", a quarter without a year) has a
backward candidate (the latest occurrence not after ``base``) and a forward
one (the earliest not before it; for a weekday, the previous and the next
one); :func:`.tense.direction` reads the clause's cues and picks forward
(future: "will", "is on", "start", "due", "by", 将/会/要 ...) or backward
(past: "was", "-ed" verbs, "ago", 了/过 ...). With no cue the nearer
candidate wins when it is at most a third as far from ``base`` (midpoint to
``base``) as the other; otherwise the mention is ambiguous. "next Friday"
said before Friday in the same week is ambiguous too (this week's or next
week's).

Spans (the table in docs/evidence.md, "Time mentions"): "N days/weeks ago",
"in N weeks", "N weeks from now", 两周后 name the day (7·N days away); months
and years name the calendar month or year; seasons are meteorological,
northern hemisphere; "end/start of <period>" is its last/first day; a clock
time narrows the day phrase it is attached to. A year word before a month,
day, quarter or season (去年十月, "March last year") is part of that phrase.
An ordinal needs date context ("the 2nd option" is none) and a weekday inside
a capitalised name ("The Sunday Times") is none.

Ambiguity is kept, never guessed: an ambiguous :class:`TimeMention` has
``certain == False``, its nearer candidate as ``start``/``end`` and the other
in ``alternatives``. In the store (table ``episode_times``, no extra column)
each candidate is one row with the same phrase; on reading, a phrase with
more than one distinct span in one episode is ambiguous (``TimeSpan.certain``
is False on each of its rows). So the same phrase twice in one text with two
different resolutions also reads back as uncertain: the safe side.

Only the matched phrases reach dateparser, never whole texts, which keeps
ingest fast and avoids its false positives on ordinary words.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import importlib
import logging
import re
from dataclasses import dataclass
from typing import Callable, Iterable

from ...core.lazyre import LazyPattern, lazy
from ...core.time import Precision
from .mention_periods import (
    Either,
    Interval,
    Open,
    Result,
    add_months,
    day_span,
    days_of,
    days_span,
    month_span,
    open_result,
    seasons,
    settle,
    week_span,
    weekend_of,
    year_span,
)
from .mention_zh import (
    ZH_NUM,
    ZH_WEEKDAY,
    ZH_YEAR_PRE,
    rule_zh_ago,
    rule_zh_clock,
    rule_zh_date,
    rule_zh_quarter,
    rule_zh_relative,
    rule_zh_season,
    rule_zh_weekend,
)

__all__ = ["TimeMention", "ambiguous_phrases", "resolve_mentions"]

log = logging.getLogger("chronomem.evidence.timemention")


@dataclass(frozen=True)
class TimeMention:
    """A phrase and the interval ``[start, end)`` it names (aware datetimes).

    ``alternatives``: the other candidate spans when the phrase is ambiguous
    (then ``start``/``end`` is only the nearer candidate, not a resolution)."""

    phrase: str
    start: _dt.datetime
    end: _dt.datetime
    precision: Precision
    alternatives: tuple[tuple[_dt.datetime, _dt.datetime], ...] = ()

    @property
    def certain(self) -> bool:
        return not self.alternatives

    def spans(self) -> tuple[tuple[_dt.datetime, _dt.datetime], ...]:
        """Every candidate ``(start, end)``: one when certain."""
        return ((self.start, self.end), *self.alternatives)


_NUM_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "few": 3, "a couple of": 2, "a couple": 2,
    "couple of": 2, "several": 3,
}
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": 4}
_QUARTER_STEPS = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}
_MONTH_NUM = {name: i for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_WEEKDAY_NUM = {name: i for i, name in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))}


# -- rules -------------------------------------------------------------------
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_NUM = (r"(?:\d{1,3}|a few|a couple of|a couple|couple of|several|an?|"
        r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)")
# a year word or an explicit year that qualifies the month, quarter or season after it


def _rule_quarter(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    q = (m.group("q") or m.group("qw") or "").lower()
    this_q = (base.month - 1) // 3
    if not m.group("qy") and q in _QUARTER_STEPS:  # "last quarter": the one before this one
        return month_span(base.year, 3 * (this_q + _QUARTER_STEPS[q]) + 1, tz, 3)
    quarter = int(q) if q.isdigit() else _QUARTER_WORDS.get(q, 4)
    if m.group("qy"):
        return month_span(int(m.group("qy")), 3 * (quarter - 1) + 1, tz, 3)
    years = (base.year - 1, base.year, base.year + 1)
    return open_result([month_span(y, 3 * (quarter - 1) + 1, tz, 3) for y in years], base)


_DATE_WORD = lazy(rf"(?:{_MONTH}|{_WEEKDAY}|I)$", re.I)


def _in_name(text: str, a: int, b: int) -> bool:
    """A weekday inside a capitalised name ("The Sunday Times", "Super Tuesday"):
    next to a capitalised word that is not a date word, mid-sentence before it."""
    nxt = re.match(r"[ \t]+([A-Z][\w'’]*)", text[b:])
    if nxt and not _DATE_WORD.match(nxt.group(1)):
        return True
    prv = re.search(r"\b([A-Z][\w'’]*)[ \t]+$", text[:a])
    if not prv or _DATE_WORD.match(prv.group(1)):
        return False
    before = text[:prv.start()].rstrip()
    return bool(before) and before[-1] not in ".!?:;\"“("


def _rule_weekday(m: re.Match[str], base: _dt.datetime) -> Result | None:
    g = m.groupdict()
    if g.get("wd"):
        if not g.get("pre") and _in_name(m.string, m.start("wd"), m.end("wd")):
            return None
        return _weekday_result(_WEEKDAY_NUM[g["wd"][:3].lower()], (g.get("pre") or "").lower(), base)
    return _weekday_result(ZH_WEEKDAY[g["zwd"]], "", base)


def _weekday_result(wd: int, pre: str, base: _dt.datetime) -> Result:
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    fwd = day_span(d + _dt.timedelta(days=(wd - d.weekday()) % 7 or 7), tz)
    back = day_span(d - _dt.timedelta(days=(d.weekday() - wd) % 7 or 7), tz)
    if pre in ("last", "past"):
        return back
    if pre == "coming":
        return fwd
    if pre == "next" and wd > d.weekday():  # later this week, or the week after?
        return Either((fwd, day_span(fwd[0].date() + _dt.timedelta(days=7), tz)))
    if pre == "next":
        return fwd
    return Open(back, fwd)


def _rule_month_day(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    month = _MONTH_NUM[m.group("mn")[:3].lower()]
    day = int(m.group("d"))
    if m.group("y"):
        return day_span(_dt.date(int(m.group("y")), month, day), tz)
    return open_result(days_of(base.year, month, day, tz), base)


def _rule_month(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    month = _MONTH_NUM[m.group("mn")[:3].lower()]
    return open_result([month_span(y, month, tz) for y in (base.year - 1, base.year, base.year + 1)], base)


def _rule_weekend(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    which = m.group("rel").lower()
    saturday = d + _dt.timedelta(days=(5 - d.weekday()))  # this week's Saturday
    if which in ("last", "past"):
        if saturday >= d - _dt.timedelta(days=1):  # not yet over (or still on): the one before
            saturday -= _dt.timedelta(days=7)
    elif which in ("next", "coming"):
        if saturday <= d:
            saturday += _dt.timedelta(days=7)
    return days_span(saturday, 2, tz)


def _rule_relative_period(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    rel = m.group("rel").lower()
    unit = m.group("unit").lower()
    step = -1 if rel in ("last", "past", "previous") else 1 if rel in ("next", "coming") else 0
    d = base.date()
    if unit == "week":
        return week_span(d + _dt.timedelta(days=7 * step), tz)
    if unit == "month":
        return month_span(d.year, d.month + step, tz)
    if unit == "year":
        return year_span(d.year + step, tz)
    if unit in _SEASONS:
        start_month = _SEASONS[unit]
        year = d.year
        this_start = _dt.date(year, start_month, 1) if start_month != 12 else _dt.date(year - 1, 12, 1)
        if step < 0 and this_start >= _dt.date(d.year, d.month, 1):
            year -= 1
        elif step > 0 and this_start <= d:
            year += 1
        if start_month == 12:
            return month_span(year - 1 if year == d.year and step <= 0 and d.month < 12 else year, 12, tz, 3)
        return month_span(year, start_month, tz, 3)
    return None


def _rule_ago(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    raw = m.group("n").lower()
    n = int(raw) if raw.isdigit() else _NUM_WORDS.get(raw, 1)
    unit = m.group("unit").lower().rstrip("s")
    d = base.date()
    sign = 1 if m.group("dir") or (m.group("post") or "").lower().startswith("from") else -1
    if unit in ("day", "week"):  # "2 weeks ago" is a day, 14 days back, like "14 days ago"
        return day_span(d + _dt.timedelta(days=sign * n * (7 if unit == "week" else 1)), tz)
    if unit == "month":
        t = add_months(d, sign * n)
        return month_span(t.year, t.month, tz)
    if unit == "year":
        return year_span(d.year + sign * n, tz)
    return None


# "the 3rd" is a day of the month only in date context: at the end of a clause
# ("what about the 5th?"), or after a date preposition, a form of "be" or a clause
# start when not followed by a noun ("the 2nd option", "on the 3rd floor"): the
# next word, if any, is a function word.
_ORD_BEFORE = lazy(r"(?:^|[:(\-–—]\s*|\b(?:on|by|until|till|til|from|since|before|after|to|through|thru|"
                         r"for|is|was|be|being|it['’]s|that['’]s|due|starting|ending|of)\s+)$", re.I)
_ORD_END = lazy(r"\s*(?:$|[.;:!?)])")
_ORD_AFTER = lazy(r"\s*(?:$|[.,;:!?)\-–—]|(?:and|or|but|at|to|through|thru|till|until|when|then|we|i|you|he|"
                        r"she|they|it|is|was|will|would|of|in|for|from|after|before|so|because|if|as|instead|"
                        r"please|this|next|last|too|again|then|instead)\b)", re.I)


def _rule_ordinal_day(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    day = int(m.group("day"))
    if not 1 <= day <= 31:
        return None
    if not (_ORD_END.match(m.string, m.end())
            or (_ORD_BEFORE.search(m.string, 0, m.start()) and _ORD_AFTER.match(m.string, m.end()))):
        return None
    d = base.date()
    options = []
    for delta in (-2, -1, 0, 1, 2):
        t = add_months(_dt.date(d.year, d.month, 1), delta)
        if day <= calendar.monthrange(t.year, t.month)[1]:
            options.append(day_span(_dt.date(t.year, t.month, day), tz))
    return open_result(options, base)


def _rule_season(m: re.Match[str], base: _dt.datetime) -> Result | None:
    year = m.group("y")
    return seasons(int(year) if year else None, _SEASONS[m.group("season").lower()], base)


def _rule_weekend_open(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"on/over the weekend": as a bare 周末."""
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    monday = d - _dt.timedelta(days=d.weekday())
    return open_result([weekend_of(monday + _dt.timedelta(days=7 * k), tz) for k in (-1, 0, 1)], base)


def _rule_day_word(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    """"the day after tomorrow", "the day before yesterday"."""
    tz = base.tzinfo or _dt.timezone.utc
    step = 2 if m.group("dw").lower().startswith("after") else -2
    return day_span(base.date() + _dt.timedelta(days=step), tz)


_DAY_WORDS = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}


def _rule_day_name(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    """"yesterday", "today", "tonight", "tomorrow", "last night", "this
    morning": the day they name (what dateparser answers, without its cost:
    these are the commonest phrases of a chat)."""
    tz = base.tzinfo or _dt.timezone.utc
    word = m.group(0).lower()
    step = -1 if word.startswith("last") else _DAY_WORDS.get(word, 0)
    return day_span(base.date() + _dt.timedelta(days=step), tz)


def _at_hour(iv: Interval, hour: int, minute: int) -> Interval:
    s = iv[0].replace(hour=hour, minute=minute)
    if minute:
        return s, s + _dt.timedelta(minutes=1), Precision.MINUTE
    return s, s + _dt.timedelta(hours=1), Precision.HOUR


def _map(res: Result, f: Callable[[Interval], Interval]) -> Result:
    if isinstance(res, Open):
        return Open(f(res.back), f(res.fwd))
    if isinstance(res, Either):
        return Either((f(res.options[0]), f(res.options[1])))
    return f(res)


def _rule_clock(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"3pm", "at 15:30", "3pm tomorrow", "Friday at 9am": a clock time narrows
    the day phrase it is attached to; alone it is the last or next such hour."""
    tz = base.tzinfo or _dt.timezone.utc
    g = m.groupdict()
    hour = int(g["h"] or g["H"])
    minute = int(g["mi"] or g["M"] or 0)
    if g["ap"]:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if g["ap"].lower().startswith("p") else 0)
    if hour > 23:
        return None
    word = (g["d1"] or g["d2"] or "").lower()
    wd = g["w1"] or g["w2"]
    d = base.date()
    if word:
        return _at_hour(day_span(d + _dt.timedelta(days=_DAY_WORDS[word]), tz), hour, minute)
    if wd:
        return _map(_weekday_result(_WEEKDAY_NUM[wd[:3].lower()], "", base), lambda iv: _at_hour(iv, hour, minute))
    days = [day_span(d + _dt.timedelta(days=k), tz) for k in (-1, 0, 1)]
    return open_result([_at_hour(iv, hour, minute) for iv in days], base)


def _edge(res: Result, edge: str) -> Result:
    """The first or last day of each candidate period ("end of Q2")."""
    def one(iv: Interval) -> Interval:
        s, e, _p = iv
        if e - s <= _dt.timedelta(days=1):
            return iv
        day = (e - _dt.timedelta(days=1)).date() if edge == "end" else s.date()
        return day_span(day, s.tzinfo or _dt.timezone.utc)
    return _map(res, one)


def _rule_edge_current(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"the end of the month", "the start of this week": the current period's edge."""
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    unit = m.group("unit").lower()
    period: Interval
    if unit == "week":
        period = week_span(d, tz)
    elif unit == "month":
        period = month_span(d.year, d.month, tz)
    elif unit == "quarter":
        period = month_span(d.year, 3 * ((d.month - 1) // 3) + 1, tz, 3)
    else:
        period = year_span(d.year, tz)
    return _edge(period, m.group("edge").lower())


def _rule_month_rel_year(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"March last year", "in May of next year": the year word qualifies the month."""
    tz = base.tzinfo or _dt.timezone.utc
    step = {"last": -1, "this": 0, "next": 1}[m.group("rel").lower()]
    return month_span(base.year + step, _MONTH_NUM[m.group("mn")[:3].lower()], tz)


def _rule_month_rel(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"last March", "next May": the nearest such month before / after the
    current one ("this March": of this year), as the read phrases read it."""
    tz = base.tzinfo or _dt.timezone.utc
    rel = m.group("rel").lower()
    month = _MONTH_NUM[m.group("mn")[:3].lower()]
    year = base.year
    if rel in ("last", "past"):
        year = year if month < base.month else year - 1
    elif rel in ("next", "coming"):
        year = year if month > base.month else year + 1
    return month_span(year, month, tz)


Rule = Callable[[re.Match[str], _dt.datetime], "Result | None"]

# (pattern, rule or None for dateparser, language for dateparser)
_CLOCK = (r"(?:(?P<h>\d{1,2})(?::(?P<mi>[0-5]\d))?\s*(?P<ap>[ap]\.?m)\b\.?|"
          r"(?<=\bat\s)(?P<H>[01]?\d|2[0-3]):(?P<M>[0-5]\d)\b)")
_DAY_WORD = r"(?:yesterday|today|tonight|tomorrow)"
_PATTERNS: list[tuple[LazyPattern, Rule | None, str]] = [
    (lazy(rf"\b(?:(?P<d1>{_DAY_WORD})\s+(?:at\s+)?|(?:on\s+)?(?P<w1>{_WEEKDAY})\s+(?:at\s+)?)?(?:at\s+)?{_CLOCK}"
                rf"(?:\s+(?P<d2>{_DAY_WORD})\b|\s+(?:on\s+)?(?P<w2>{_WEEKDAY})\b)?", re.I), _rule_clock, "en"),
    (lazy(r"\b(?P<edge>end|start|beginning)\s+of\s+(?:the|this)\s+(?P<unit>week|month|quarter|year)\b", re.I),
     _rule_edge_current, "en"),
    (lazy(rf"\b(?P<mn>{_MONTH})\s+(?:of\s+)?(?P<rel>last|this|next)\s+year\b", re.I), _rule_month_rel_year,
     "en"),
    (lazy(r"\b(?P<season>spring|summer|fall|autumn|winter)\s+(?:of\s+)?(?P<y>(?:19|20)\d{2})\b", re.I),
     _rule_season, "en"),
    (lazy(r"\b(?:in|during|over)\s+(?:the\s+)?(?P<season>spring|summer|fall|autumn|winter)\b(?P<y>)", re.I),
     _rule_season, "en"),
    (lazy(r"\b(?:on|over|during|at)\s+the\s+weekend\b", re.I), _rule_weekend_open, "en"),
    (lazy(r"\b(?:the\s+)?day\s+(?P<dw>after\s+tomorrow|before\s+yesterday)\b", re.I), _rule_day_word, "en"),
    (lazy(r"\b(?:(?P<qw>first|second|third|fourth|last|next|this|past|previous|coming)\s+quarter|q(?P<q>[1-4]))(?:\s+(?:of\s+)?(?P<qy>(?:19|20)\d{2}))?\b",
                re.I), _rule_quarter, "en"),
    (lazy(r"\b(?P<rel>last|next|this|past|coming)\s+weekend\b", re.I), _rule_weekend, "en"),
    (lazy(r"\b(?P<rel>last|next|this|past|previous|coming)\s+(?P<unit>week|month|year|spring|summer|fall|autumn|winter)\b",
                re.I), _rule_relative_period, "en"),
    (lazy(rf"\b(?:(?P<dir>in)\s+)?(?P<n>{_NUM})\s+(?P<unit>day|week|month|year)s?(?(dir)|\s+(?P<post>ago|from\s+now|from\s+today))\b",
                re.I),
     _rule_ago, "en"),
    (lazy(r"\b(?:yesterday|today|tonight|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening))\b", re.I),
     _rule_day_name, "en"),
    # "may" and "mar" are words too: only a capitalised May or Mar names the month here
    (lazy(r"\b(?P<rel>(?i:last|next|this|past|coming))\s+(?P<mn>(?i:jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|"
          r"june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)|May|Mar)\b"),
     _rule_month_rel, "en"),
    (lazy(rf"\b(?:(?P<pre>last|next|this|on|past|coming|by|until|till|before|since|from|after)\s+)?"
                rf"(?P<wd>{_WEEKDAY})\b", re.I), _rule_weekday, "en"),
    (lazy(r"\b(?:19|20)\d{2}-\d{2}-\d{2}\b"), None, "en"),
    (lazy(r"\b\d{1,2}/\d{1,2}/(?:19|20)?\d{2}\b"), None, "en"),
    (lazy(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn>{_MONTH})\b(?:,?\s+(?P<y>(?:19|20)\d{{2}}))?",
                re.I), _rule_month_day, "en"),
    (lazy(rf"\b(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>(?:19|20)\d{{2}}))?", re.I),
     _rule_month_day, "en"),
    (lazy(rf"\b{_MONTH},?\s+(?:19|20)\d{{2}}\b", re.I), None, "en"),
    (lazy(rf"\b(?:in|since|during|until|till|by|before|after|early|late|mid|of)[\s-]+(?P<mn>{_MONTH})\b",
                re.I), _rule_month, "en"),
    # after "to", "from", "through" only a capitalised month ("to march" is a verb)
    (lazy(r"\b(?i:to|from|through)\s+(?P<mn>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|"
                r"May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b"),
     _rule_month, "en"),
    (lazy(r"\b(?:in|since|during|until|by|of|from)\s+(?:19|20)\d{2}\b", re.I), None, "en"),
    (lazy(r"\bthe\s+(?P<day>\d{1,2})(?:st|nd|rd|th)\b", re.I), _rule_ordinal_day, "en"),
    # Chinese
    (lazy(rf"(?P<day>大前天|大后天|前天|昨天|今天|明天|后天)?(?P<part>上午|下午|早上|晚上|中午)(?P<h>{ZH_NUM})[点點](?P<half>半)?"),
     rule_zh_clock, "zh"),
    (lazy(rf"{ZH_YEAR_PRE}(?P<mo>{ZH_NUM})月(?:(?P<d>{ZH_NUM})[日号號])?"), rule_zh_date, "zh"),
    (lazy(rf"{ZH_YEAR_PRE}(?:第?(?P<q>[一二三四1-4])季度|[Qq](?P<q2>[1-4])\b)"), rule_zh_quarter, "zh"),
    (lazy(rf"{ZH_YEAR_PRE}(?P<season>[春夏秋冬])(?:天|季)"), rule_zh_season, "zh"),
    (lazy(r"(?P<y>\d{4})年(?P<mo>)(?P<d>)"), rule_zh_date, "zh"),
    (lazy(rf"(?P<zn>{ZH_NUM})(?P<zu>天|周|个星期|星期|个礼拜|礼拜|个月|年)(?P<zdir>前|后)"), rule_zh_ago, "zh"),
    (lazy(r"(?P<zrel>上个?|下个?|本|这个?)?(?:周末|礼拜末)"), rule_zh_weekend, "zh"),
    (lazy(r"(?P<zrel>上个?|下个?|本|这个?)(?P<zunit>周|星期|礼拜|月)(?P<zwd>[一二三四五六日天])?"),
     rule_zh_relative, "zh"),
    (lazy(r"大前天|大后天|前天|昨天|昨晚|今天|今晚|明天|后天|前年|去年|今年|明年"), rule_zh_relative, "zh"),
    # a bare 周一 / 星期一 (not 一周一次: the digit before makes it a count)
    (lazy(r"(?<![上下本这个零一二两三四五六七八九十\d])(?:周|星期|礼拜)(?P<zwd>[一二三四五六日天])"),
     _rule_weekday, "zh"),
]

# What a text must hold for each pattern above (same order) to have a chance
# to match: a digit, a CJK character, or one of some lower-case substrings.
# Checked first, in C (``in`` / one character class), so a long message
# pays for the few patterns it could match, not all of them.
_DIGIT, _CJK_CHAR = "digit", "cjk"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_SEASON_WORDS = tuple(_SEASONS)
_GATES: list[str | tuple[str, ...]] = [
    _DIGIT, ("end", "start", "beginning"), ("year",), _SEASON_WORDS, _SEASON_WORDS, ("weekend",),
    ("tomorrow", "yesterday"),
    ("quarter", "q1", "q2", "q3", "q4"), ("weekend",), ("week", "month", "year", *_SEASON_WORDS),
    ("day", "week", "month", "year"),
    ("yesterday", "today", "tonight", "tomorrow", "night", "morning", "afternoon", "evening"), _MONTHS, ("day",),
    _DIGIT, ("/",), _DIGIT, _DIGIT, _DIGIT, _MONTHS, _MONTHS, _DIGIT, _DIGIT,
    *[_CJK_CHAR] * 10,
]
assert len(_GATES) == len(_PATTERNS)
_HAS_DIGIT = lazy(r"\d")
_HAS_CJK = lazy(r"[\u3400-\u9fff]")


def _gate(text: str) -> Callable[[str | tuple[str, ...]], bool]:
    low = text.lower()
    digit = _HAS_DIGIT.search(text) is not None
    cjk = _HAS_CJK.search(text) is not None

    def may_match(gate: str | tuple[str, ...]) -> bool:
        if gate == _DIGIT:
            return digit
        if gate == _CJK_CHAR:
            return cjk
        return any(part in low for part in gate)

    return may_match


def _via_dateparser(phrase: str, language: str, base: _dt.datetime) -> Interval | None:
    try:
        mod = importlib.import_module("dateparser.date")
    except ModuleNotFoundError:  # pragma: no cover - dateparser is part of the evidence extra
        return None
    naive = base.replace(tzinfo=None)
    cleaned = re.sub(r"^(?:on|in|since|during|until|by|early|late|mid|of|from|this|past)\s+", "", phrase.strip(),
                     flags=re.I) if not re.match(r"^this\s+(?:morning|afternoon|evening)", phrase, re.I) else phrase
    if re.match(r"^past\s", phrase, re.I):
        cleaned = "last " + cleaned
    parser = mod.DateDataParser(
        languages=[language],
        settings={"RELATIVE_BASE": naive, "RETURN_AS_TIMEZONE_AWARE": False},
    )
    try:
        data = parser.get_date_data(cleaned)
    except Exception as exc:  # dateparser raises assorted errors on odd input
        log.debug("dateparser failed on %r: %s", phrase, exc)
        return None
    when = data.date_obj
    if when is None:
        return None
    tz = base.tzinfo or _dt.timezone.utc
    period = data.period or "day"
    d = when.date()
    if period == "year":
        return year_span(d.year, tz)
    if period == "month":
        return month_span(d.year, d.month, tz)
    if period == "week":
        return week_span(d, tz)
    if period == "quarter":
        return month_span(d.year, 3 * ((d.month - 1) // 3) + 1, tz, 3)
    if period == "time":
        s = when.replace(tzinfo=tz, second=0, microsecond=0)
        return s, s + _dt.timedelta(minutes=1), Precision.MINUTE
    return day_span(d, tz)


# "end of" before a period ("of" may open the phrase itself: "of March", "of 2025")
_EDGE = lazy(r"\b(?P<edge>end|start|beginning)\s+(?:of\s+)?(?:the\s+)?$", re.I)


def resolve_mentions(text: str, base: _dt.datetime, *, limit: int = 20) -> list[TimeMention]:
    """The time expressions in ``text``, resolved against ``base`` (an aware
    datetime in the memory's timezone). Overlapping matches keep the first
    pattern that claimed the characters. At most ``limit`` mentions."""
    if base.tzinfo is None:
        raise ValueError("base must be timezone-aware")
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, TimeMention]] = []
    may_match = _gate(text)
    for (pattern, rule, language), gate in zip(_PATTERNS, _GATES, strict=True):
        if not may_match(gate):
            continue
        for m in pattern.finditer(text):
            a, b = m.span()
            if a == b or any(a < y and x < b for x, y in taken):
                continue
            try:
                got = rule(m, base) if rule is not None else _via_dateparser(m.group(0), language, base)
            except (ValueError, OverflowError, KeyError) as exc:
                log.debug("time rule failed on %r: %s", m.group(0), exc)
                got = None
            if got is None:
                continue
            edge = _EDGE.search(text, 0, a)
            if edge:  # "end of Q2": the period's last day
                got, a = _edge(got, edge.group("edge").lower()), edge.start()
            taken.append((a, b))
            (start, end, prec), others = settle(got, text, a, b, base)
            found.append((a, TimeMention(text[a:b].strip().rstrip(","), start, end, prec,
                                         tuple((s, e) for s, e, _p in others))))
    found.sort(key=lambda x: x[0])
    return [tm for _, tm in found[:limit]]


def ambiguous_phrases(rows: Iterable[tuple[str, int, int]]) -> set[str]:
    """The phrases of one episode's stored ``(phrase, start_us, end_us)`` rows
    that have more than one distinct span: the ambiguous ones."""
    spans: dict[str, set[tuple[int, int]]] = {}
    for phrase, a, b in rows:
        spans.setdefault(phrase, set()).add((a, b))
    return {p for p, got in spans.items() if len(got) > 1}
