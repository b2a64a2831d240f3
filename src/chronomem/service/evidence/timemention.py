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
from typing import Callable, Iterable, Union

from ...core.time import Precision
from .tense import direction

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


# -- interval helpers ----------------------------------------------------------
def _day(d: _dt.date, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    s = _dt.datetime(d.year, d.month, d.day, tzinfo=tz)
    return s, s + _dt.timedelta(days=1), Precision.DAY


def _days(d: _dt.date, n: int, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    s = _dt.datetime(d.year, d.month, d.day, tzinfo=tz)
    return s, s + _dt.timedelta(days=n), Precision.DAY


def _week(d: _dt.date, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    return _days(d - _dt.timedelta(days=d.weekday()), 7, tz)


def _month(year: int, month: int, tz: _dt.tzinfo, n: int = 1) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    while month < 1:
        month += 12
        year -= 1
    while month > 12:
        month -= 12
        year += 1
    s = _dt.datetime(year, month, 1, tzinfo=tz)
    em, ey = month + n, year
    while em > 12:
        em -= 12
        ey += 1
    return s, _dt.datetime(ey, em, 1, tzinfo=tz), Precision.MONTH


def _year(year: int, tz: _dt.tzinfo) -> tuple[_dt.datetime, _dt.datetime, Precision]:
    return _dt.datetime(year, 1, 1, tzinfo=tz), _dt.datetime(year + 1, 1, 1, tzinfo=tz), Precision.YEAR


def _add_months(d: _dt.date, n: int) -> _dt.date:
    m = d.month - 1 + n
    y = d.year + m // 12
    m = m % 12 + 1
    return _dt.date(y, m, min(d.day, calendar.monthrange(y, m)[1]))


Interval = tuple[_dt.datetime, _dt.datetime, Precision]


@dataclass(frozen=True)
class _Open:
    """An open phrase: the clause's tense picks ``back`` or ``fwd``."""

    back: Interval
    fwd: Interval


@dataclass(frozen=True)
class _Either:
    """Ambiguous whatever the clause says ("next Friday" said on a Tuesday)."""

    options: tuple[Interval, Interval]


Result = Union[Interval, _Open, _Either]


def _open(candidates: list[Interval], base: _dt.datetime) -> Result | None:
    """The latest candidate starting at or before ``base`` and the earliest
    ending after it (the same one, so certain, when it contains ``base``)."""
    back_c = [c for c in candidates if c[0] <= base]
    fwd_c = [c for c in candidates if c[1] > base]
    back = max(back_c, key=lambda c: c[0]) if back_c else None
    fwd = min(fwd_c, key=lambda c: c[0]) if fwd_c else None
    if back is None or fwd is None or back == fwd:
        return back or fwd
    return _Open(back, fwd)


def _mid(iv: Interval) -> _dt.datetime:
    return iv[0] + (iv[1] - iv[0]) / 2


def _settle(res: Result, text: str, a: int, b: int, base: _dt.datetime) -> tuple[Interval, tuple[Interval, ...]]:
    """The resolution of ``text[a:b]`` and its other candidates (empty when certain)."""
    if isinstance(res, _Either):
        back, fwd = res.options
    elif isinstance(res, _Open):
        way = direction(text, a, b)
        if way:
            return (res.fwd if way > 0 else res.back), ()
        back, fwd = res.back, res.fwd
        near_b, near_f = base - _mid(back), _mid(fwd) - base
        if near_f * 3 <= near_b:
            return fwd, ()
        if near_b * 3 <= near_f:
            return back, ()
    else:
        return res, ()
    # ambiguous: the nearer candidate first, the other as the alternative
    return (back, (fwd,)) if base - _mid(back) <= _mid(fwd) - base else (fwd, (back,))


_NUM_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "few": 3, "a couple of": 2, "a couple": 2,
    "couple of": 2, "several": 3,
}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_ZH_SEASONS = {"春": 3, "夏": 6, "秋": 9, "冬": 12}
_ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "今天": 0, "今晚": 0, "明天": 1, "后天": 2, "大后天": 3}
_ZH_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1}
_ZH_QUARTER = {"一": 1, "二": 2, "三": 3, "四": 4, "1": 1, "2": 2, "3": 3, "4": 4}
_QUARTER_WORDS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": 4}
_QUARTER_STEPS = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}
_MONTH_NUM = {name: i for i, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_WEEKDAY_NUM = {name: i for i, name in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))}


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    return _ZH_DIGITS.get(text, 0)


# -- rules -------------------------------------------------------------------
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_NUM = (r"(?:\d{1,3}|a few|a couple of|a couple|couple of|several|an?|"
        r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)")
_ZH_NUM = r"(?:\d{1,4}|[零一二两三四五六七八九十]{1,3})"
# a year word or an explicit year that qualifies the month, quarter or season after it
_ZH_YEAR_PRE = r"(?:(?P<y>\d{4})年|(?P<ry>前年|去年|今年|明年))?"


def _rule_quarter(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    q = (m.group("q") or m.group("qw") or "").lower()
    this_q = (base.month - 1) // 3
    if not m.group("qy") and q in _QUARTER_STEPS:  # "last quarter": the one before this one
        return _month(base.year, 3 * (this_q + _QUARTER_STEPS[q]) + 1, tz, 3)
    quarter = int(q) if q.isdigit() else _QUARTER_WORDS.get(q, 4)
    if m.group("qy"):
        return _month(int(m.group("qy")), 3 * (quarter - 1) + 1, tz, 3)
    return _open([_month(y, 3 * (quarter - 1) + 1, tz, 3) for y in (base.year - 1, base.year, base.year + 1)], base)


_DATE_WORD = re.compile(rf"(?:{_MONTH}|{_WEEKDAY}|I)$", re.I)


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
    return _weekday_result(_ZH_WEEKDAY[g["zwd"]], "", base)


def _weekday_result(wd: int, pre: str, base: _dt.datetime) -> Result:
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    fwd = _day(d + _dt.timedelta(days=(wd - d.weekday()) % 7 or 7), tz)
    back = _day(d - _dt.timedelta(days=(d.weekday() - wd) % 7 or 7), tz)
    if pre in ("last", "past"):
        return back
    if pre == "coming":
        return fwd
    if pre == "next" and wd > d.weekday():  # later this week, or the week after?
        return _Either((fwd, _day(fwd[0].date() + _dt.timedelta(days=7), tz)))
    if pre == "next":
        return fwd
    return _Open(back, fwd)


def _days_of(year: int, month: int, day: int, tz: _dt.tzinfo) -> list[Interval]:
    out = []
    for y in (year - 1, year, year + 1):
        try:
            out.append(_day(_dt.date(y, month, day), tz))
        except ValueError:  # 29 February, or outside years 1-9999
            continue
    return out


def _rule_month_day(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    month = _MONTH_NUM[m.group("mn")[:3].lower()]
    day = int(m.group("d"))
    if m.group("y"):
        return _day(_dt.date(int(m.group("y")), month, day), tz)
    return _open(_days_of(base.year, month, day, tz), base)


def _rule_month(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    month = _MONTH_NUM[m.group("mn")[:3].lower()]
    return _open([_month(y, month, tz) for y in (base.year - 1, base.year, base.year + 1)], base)


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
    return _days(saturday, 2, tz)


def _rule_relative_period(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    rel = m.group("rel").lower()
    unit = m.group("unit").lower()
    step = -1 if rel in ("last", "past", "previous") else 1 if rel in ("next", "coming") else 0
    d = base.date()
    if unit == "week":
        return _week(d + _dt.timedelta(days=7 * step), tz)
    if unit == "month":
        return _month(d.year, d.month + step, tz)
    if unit == "year":
        return _year(d.year + step, tz)
    if unit in _SEASONS:
        start_month = _SEASONS[unit]
        year = d.year
        this_start = _dt.date(year, start_month, 1) if start_month != 12 else _dt.date(year - 1, 12, 1)
        if step < 0 and this_start >= _dt.date(d.year, d.month, 1):
            year -= 1
        elif step > 0 and this_start <= d:
            year += 1
        if start_month == 12:
            return _month(year - 1 if year == d.year and step <= 0 and d.month < 12 else year, 12, tz, 3)
        return _month(year, start_month, tz, 3)
    return None


def _rule_ago(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    raw = m.group("n").lower()
    n = int(raw) if raw.isdigit() else _NUM_WORDS.get(raw, 1)
    unit = m.group("unit").lower().rstrip("s")
    d = base.date()
    sign = 1 if m.group("dir") or (m.group("post") or "").lower().startswith("from") else -1
    if unit in ("day", "week"):  # "2 weeks ago" is a day, 14 days back, like "14 days ago"
        return _day(d + _dt.timedelta(days=sign * n * (7 if unit == "week" else 1)), tz)
    if unit == "month":
        t = _add_months(d, sign * n)
        return _month(t.year, t.month, tz)
    if unit == "year":
        return _year(d.year + sign * n, tz)
    return None


# "the 3rd" is a day of the month only in date context: at the end of a clause
# ("what about the 5th?"), or after a date preposition, a form of "be" or a clause
# start when not followed by a noun ("the 2nd option", "on the 3rd floor"): the
# next word, if any, is a function word.
_ORD_BEFORE = re.compile(r"(?:^|[:(\-–—]\s*|\b(?:on|by|until|till|til|from|since|before|after|to|through|thru|"
                         r"for|is|was|be|being|it['’]s|that['’]s|due|starting|ending|of)\s+)$", re.I)
_ORD_END = re.compile(r"\s*(?:$|[.;:!?)])")
_ORD_AFTER = re.compile(r"\s*(?:$|[.,;:!?)\-–—]|(?:and|or|but|at|to|through|thru|till|until|when|then|we|i|you|he|"
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
        t = _add_months(_dt.date(d.year, d.month, 1), delta)
        if day <= calendar.monthrange(t.year, t.month)[1]:
            options.append(_day(_dt.date(t.year, t.month, day), tz))
    return _open(options, base)


def _rule_zh_date(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    year = _zh_year(m, base)
    month = _zh_number(m.group("mo")) if m.group("mo") else None
    day = _zh_number(m.group("d")) if m.group("d") else None
    try:
        if month is None:
            return _year(year, tz) if year else None
        if not 1 <= month <= 12:
            return None
        if day is None:
            if year is not None:
                return _month(year, month, tz)
            return _open([_month(y, month, tz) for y in (base.year - 1, base.year, base.year + 1)], base)
        if year is None:
            return _open(_days_of(base.year, month, day, tz), base)
        return _day(_dt.date(year, month, day), tz)
    except ValueError:
        return None


def _rule_zh_relative(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    word = m.group(0)
    if word in _ZH_DAYS:
        return _day(d + _dt.timedelta(days=_ZH_DAYS[word]), tz)
    if word in _ZH_YEARS:
        return _year(d.year + _ZH_YEARS[word], tz)
    rel = m.group("zrel")
    if rel is not None:
        step = {"上": -1, "下": 1, "本": 0, "这": 0}[rel[0]]
        if m.group("zunit") in ("周", "星期", "礼拜"):
            monday = d - _dt.timedelta(days=d.weekday()) + _dt.timedelta(days=7 * step)
            wd = m.group("zwd")
            if wd:
                return _day(monday + _dt.timedelta(days=_ZH_WEEKDAY[wd]), tz)
            return _days(monday, 7, tz)
        return _month(d.year, d.month + step, tz)
    return None


def _rule_zh_ago(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    n = _zh_number(m.group("zn"))
    unit = m.group("zu")
    sign = -1 if m.group("zdir") == "前" else 1
    d = base.date()
    if unit == "天":
        return _day(d + _dt.timedelta(days=sign * n), tz)
    if unit in ("周", "星期", "个星期", "礼拜", "个礼拜"):  # 两周后 is a day, like 14天后
        return _day(d + _dt.timedelta(days=sign * 7 * n), tz)
    if unit == "个月":
        t = _add_months(d, sign * n)
        return _month(t.year, t.month, tz)
    return _year(d.year + sign * n, tz)


def _rule_zh_clock(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    hour = _zh_number(m.group("h"))
    if m.group("part") in ("下午", "晚上") and hour < 12:
        hour += 12
    if hour > 23:
        return None
    minute = 30 if m.group("half") else 0
    d = base.date()
    if m.group("day"):
        d += _dt.timedelta(days=_ZH_DAYS[m.group("day")])
    s = _dt.datetime(d.year, d.month, d.day, hour, minute, tzinfo=tz)
    return s, s + _dt.timedelta(hours=1), Precision.HOUR


def _zh_year(m: re.Match[str], base: _dt.datetime) -> int | None:
    """The year of an optional ``y`` (2024年) or ``ry`` (去年) group."""
    g = m.groupdict()
    if g.get("y"):
        return int(g["y"])
    if g.get("ry"):
        return base.year + _ZH_YEARS[g["ry"]]
    return None


def _season(year: int, start_month: int, tz: _dt.tzinfo) -> Interval:
    """A northern-hemisphere meteorological season: three months from
    ``start_month`` (winter ``year`` starts in December of ``year``)."""
    return _month(year, start_month, tz, 3)


def _seasons(year: int | None, start_month: int, base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    if year is not None:
        return _season(year, start_month, tz)
    return _open([_season(y, start_month, tz) for y in (base.year - 2, base.year - 1, base.year, base.year + 1)],
                 base)


def _rule_zh_season(m: re.Match[str], base: _dt.datetime) -> Result | None:
    return _seasons(_zh_year(m, base), _ZH_SEASONS[m.group("season")], base)


def _rule_season(m: re.Match[str], base: _dt.datetime) -> Result | None:
    year = m.group("y")
    return _seasons(int(year) if year else None, _SEASONS[m.group("season").lower()], base)


def _rule_zh_quarter(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    quarter = _ZH_QUARTER[m.group("q") or m.group("q2")]
    year = _zh_year(m, base)
    if year is not None:
        return _month(year, 3 * (quarter - 1) + 1, tz, 3)
    return _open([_month(y, 3 * (quarter - 1) + 1, tz, 3) for y in (base.year - 1, base.year, base.year + 1)], base)


def _weekend_of(monday: _dt.date, tz: _dt.tzinfo) -> Interval:
    return _days(monday + _dt.timedelta(days=5), 2, tz)


def _rule_zh_weekend(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """上周末 / 这周末 / 下周末: the Saturday and Sunday of that calendar week;
    a bare 周末: this weekend if it is on, else the tense picks the last or next."""
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    monday = d - _dt.timedelta(days=d.weekday())
    rel = m.group("zrel")
    if rel:
        step = {"上": -1, "下": 1, "本": 0, "这": 0}[rel[0]]
        return _weekend_of(monday + _dt.timedelta(days=7 * step), tz)
    return _open([_weekend_of(monday + _dt.timedelta(days=7 * k), tz) for k in (-1, 0, 1)], base)


def _rule_weekend_open(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"on/over the weekend": as a bare 周末."""
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    monday = d - _dt.timedelta(days=d.weekday())
    return _open([_weekend_of(monday + _dt.timedelta(days=7 * k), tz) for k in (-1, 0, 1)], base)


def _rule_day_word(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    """"the day after tomorrow", "the day before yesterday"."""
    tz = base.tzinfo or _dt.timezone.utc
    step = 2 if m.group("dw").lower().startswith("after") else -2
    return _day(base.date() + _dt.timedelta(days=step), tz)


_DAY_WORDS = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}


def _at_hour(iv: Interval, hour: int, minute: int) -> Interval:
    s = iv[0].replace(hour=hour, minute=minute)
    if minute:
        return s, s + _dt.timedelta(minutes=1), Precision.MINUTE
    return s, s + _dt.timedelta(hours=1), Precision.HOUR


def _map(res: Result, f: Callable[[Interval], Interval]) -> Result:
    if isinstance(res, _Open):
        return _Open(f(res.back), f(res.fwd))
    if isinstance(res, _Either):
        return _Either((f(res.options[0]), f(res.options[1])))
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
        return _at_hour(_day(d + _dt.timedelta(days=_DAY_WORDS[word]), tz), hour, minute)
    if wd:
        return _map(_weekday_result(_WEEKDAY_NUM[wd[:3].lower()], "", base), lambda iv: _at_hour(iv, hour, minute))
    days = [_day(d + _dt.timedelta(days=k), tz) for k in (-1, 0, 1)]
    return _open([_at_hour(iv, hour, minute) for iv in days], base)


def _edge(res: Result, edge: str) -> Result:
    """The first or last day of each candidate period ("end of Q2")."""
    def one(iv: Interval) -> Interval:
        s, e, _p = iv
        if e - s <= _dt.timedelta(days=1):
            return iv
        day = (e - _dt.timedelta(days=1)).date() if edge == "end" else s.date()
        return _day(day, s.tzinfo or _dt.timezone.utc)
    return _map(res, one)


def _rule_edge_current(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"the end of the month", "the start of this week": the current period's edge."""
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    unit = m.group("unit").lower()
    period: Interval
    if unit == "week":
        period = _week(d, tz)
    elif unit == "month":
        period = _month(d.year, d.month, tz)
    elif unit == "quarter":
        period = _month(d.year, 3 * ((d.month - 1) // 3) + 1, tz, 3)
    else:
        period = _year(d.year, tz)
    return _edge(period, m.group("edge").lower())


def _rule_month_rel_year(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """"March last year", "in May of next year": the year word qualifies the month."""
    tz = base.tzinfo or _dt.timezone.utc
    step = {"last": -1, "this": 0, "next": 1}[m.group("rel").lower()]
    return _month(base.year + step, _MONTH_NUM[m.group("mn")[:3].lower()], tz)


Rule = Callable[[re.Match[str], _dt.datetime], "Result | None"]

# (pattern, rule or None for dateparser, language for dateparser)
_CLOCK = (r"(?:(?P<h>\d{1,2})(?::(?P<mi>[0-5]\d))?\s*(?P<ap>[ap]\.?m)\b\.?|"
          r"(?<=\bat\s)(?P<H>[01]?\d|2[0-3]):(?P<M>[0-5]\d)\b)")
_DAY_WORD = r"(?:yesterday|today|tonight|tomorrow)"
_PATTERNS: list[tuple[re.Pattern[str], Rule | None, str]] = [
    (re.compile(rf"\b(?:(?P<d1>{_DAY_WORD})\s+(?:at\s+)?|(?:on\s+)?(?P<w1>{_WEEKDAY})\s+(?:at\s+)?)?(?:at\s+)?{_CLOCK}"
                rf"(?:\s+(?P<d2>{_DAY_WORD})\b|\s+(?:on\s+)?(?P<w2>{_WEEKDAY})\b)?", re.I), _rule_clock, "en"),
    (re.compile(r"\b(?P<edge>end|start|beginning)\s+of\s+(?:the|this)\s+(?P<unit>week|month|quarter|year)\b", re.I),
     _rule_edge_current, "en"),
    (re.compile(rf"\b(?P<mn>{_MONTH})\s+(?:of\s+)?(?P<rel>last|this|next)\s+year\b", re.I), _rule_month_rel_year,
     "en"),
    (re.compile(r"\b(?P<season>spring|summer|fall|autumn|winter)\s+(?:of\s+)?(?P<y>(?:19|20)\d{2})\b", re.I),
     _rule_season, "en"),
    (re.compile(r"\b(?:in|during|over)\s+(?:the\s+)?(?P<season>spring|summer|fall|autumn|winter)\b(?P<y>)", re.I),
     _rule_season, "en"),
    (re.compile(r"\b(?:on|over|during|at)\s+the\s+weekend\b", re.I), _rule_weekend_open, "en"),
    (re.compile(r"\b(?:the\s+)?day\s+(?P<dw>after\s+tomorrow|before\s+yesterday)\b", re.I), _rule_day_word, "en"),
    (re.compile(r"\b(?:(?P<qw>first|second|third|fourth|last|next|this|past|previous|coming)\s+quarter|q(?P<q>[1-4]))(?:\s+(?:of\s+)?(?P<qy>(?:19|20)\d{2}))?\b",
                re.I), _rule_quarter, "en"),
    (re.compile(r"\b(?P<rel>last|next|this|past|coming)\s+weekend\b", re.I), _rule_weekend, "en"),
    (re.compile(r"\b(?P<rel>last|next|this|past|previous|coming)\s+(?P<unit>week|month|year|spring|summer|fall|autumn|winter)\b",
                re.I), _rule_relative_period, "en"),
    (re.compile(rf"\b(?:(?P<dir>in)\s+)?(?P<n>{_NUM})\s+(?P<unit>day|week|month|year)s?(?(dir)|\s+(?P<post>ago|from\s+now|from\s+today))\b",
                re.I),
     _rule_ago, "en"),
    (re.compile(r"\b(?:yesterday|today|tonight|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening))\b", re.I),
     None, "en"),
    (re.compile(rf"\b(?:(?P<pre>last|next|this|on|past|coming|by|until|till|before|since|from|after)\s+)?"
                rf"(?P<wd>{_WEEKDAY})\b", re.I), _rule_weekday, "en"),
    (re.compile(r"\b(?:19|20)\d{2}-\d{2}-\d{2}\b"), None, "en"),
    (re.compile(r"\b\d{1,2}/\d{1,2}/(?:19|20)?\d{2}\b"), None, "en"),
    (re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mn>{_MONTH})\b(?:,?\s+(?P<y>(?:19|20)\d{{2}}))?",
                re.I), _rule_month_day, "en"),
    (re.compile(rf"\b(?P<mn>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>(?:19|20)\d{{2}}))?", re.I),
     _rule_month_day, "en"),
    (re.compile(rf"\b{_MONTH},?\s+(?:19|20)\d{{2}}\b", re.I), None, "en"),
    (re.compile(rf"\b(?:in|since|during|until|till|by|before|after|early|late|mid|of)[\s-]+(?P<mn>{_MONTH})\b",
                re.I), _rule_month, "en"),
    # after "to", "from", "through" only a capitalised month ("to march" is a verb)
    (re.compile(r"\b(?i:to|from|through)\s+(?P<mn>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|"
                r"May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b"),
     _rule_month, "en"),
    (re.compile(r"\b(?:in|since|during|until|by|of|from)\s+(?:19|20)\d{2}\b", re.I), None, "en"),
    (re.compile(r"\bthe\s+(?P<day>\d{1,2})(?:st|nd|rd|th)\b", re.I), _rule_ordinal_day, "en"),
    # Chinese
    (re.compile(rf"(?P<day>大前天|大后天|前天|昨天|今天|明天|后天)?(?P<part>上午|下午|早上|晚上|中午)(?P<h>{_ZH_NUM})[点點](?P<half>半)?"),
     _rule_zh_clock, "zh"),
    (re.compile(rf"{_ZH_YEAR_PRE}(?P<mo>{_ZH_NUM})月(?:(?P<d>{_ZH_NUM})[日号號])?"), _rule_zh_date, "zh"),
    (re.compile(rf"{_ZH_YEAR_PRE}(?:第?(?P<q>[一二三四1-4])季度|[Qq](?P<q2>[1-4])\b)"), _rule_zh_quarter, "zh"),
    (re.compile(rf"{_ZH_YEAR_PRE}(?P<season>[春夏秋冬])(?:天|季)"), _rule_zh_season, "zh"),
    (re.compile(r"(?P<y>\d{4})年(?P<mo>)(?P<d>)"), _rule_zh_date, "zh"),
    (re.compile(rf"(?P<zn>{_ZH_NUM})(?P<zu>天|周|个星期|星期|个礼拜|礼拜|个月|年)(?P<zdir>前|后)"), _rule_zh_ago, "zh"),
    (re.compile(r"(?P<zrel>上个?|下个?|本|这个?)?(?:周末|礼拜末)"), _rule_zh_weekend, "zh"),
    (re.compile(r"(?P<zrel>上个?|下个?|本|这个?)(?P<zunit>周|星期|礼拜|月)(?P<zwd>[一二三四五六日天])?"),
     _rule_zh_relative, "zh"),
    (re.compile(r"大前天|大后天|前天|昨天|昨晚|今天|今晚|明天|后天|前年|去年|今年|明年"), _rule_zh_relative, "zh"),
    # a bare 周一 / 星期一 (not 一周一次: the digit before makes it a count)
    (re.compile(r"(?<![上下本这个零一二两三四五六七八九十\d])(?:周|星期|礼拜)(?P<zwd>[一二三四五六日天])"),
     _rule_weekday, "zh"),
]

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
        return _year(d.year, tz)
    if period == "month":
        return _month(d.year, d.month, tz)
    if period == "week":
        return _week(d, tz)
    if period == "quarter":
        return _month(d.year, 3 * ((d.month - 1) // 3) + 1, tz, 3)
    if period == "time":
        s = when.replace(tzinfo=tz, second=0, microsecond=0)
        return s, s + _dt.timedelta(minutes=1), Precision.MINUTE
    return _day(d, tz)


# "end of" before a period ("of" may open the phrase itself: "of March", "of 2025")
_EDGE = re.compile(r"\b(?P<edge>end|start|beginning)\s+(?:of\s+)?(?:the\s+)?$", re.I)


def resolve_mentions(text: str, base: _dt.datetime, *, limit: int = 20) -> list[TimeMention]:
    """The time expressions in ``text``, resolved against ``base`` (an aware
    datetime in the memory's timezone). Overlapping matches keep the first
    pattern that claimed the characters. At most ``limit`` mentions."""
    if base.tzinfo is None:
        raise ValueError("base must be timezone-aware")
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, TimeMention]] = []
    for pattern, rule, language in _PATTERNS:
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
            (start, end, prec), others = _settle(got, text, a, b, base)
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
