"""Chinese time mentions: the rules for 前天/下周三/去年十月/下午3点/两周后
and their tables (numbers, weekdays, seasons, day and year words). The
registry in :mod:`.timemention` runs them; the periods they build come from
:mod:`.mention_periods`."""

from __future__ import annotations

import datetime as _dt
import re

from ...core.time import Precision
from .mention_periods import (
    Interval,
    Result,
    add_months,
    day_span,
    days_of,
    days_span,
    month_span,
    open_result,
    seasons,
    weekend_of,
    year_span,
)

ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


ZH_SEASONS = {"春": 3, "夏": 6, "秋": 9, "冬": 12}


ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨晚": -1, "今天": 0, "今晚": 0, "明天": 1, "后天": 2, "大后天": 3}


ZH_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1}


ZH_QUARTER = {"一": 1, "二": 2, "三": 3, "四": 4, "1": 1, "2": 2, "3": 3, "4": 4}


def zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (ZH_DIGITS.get(ones, 0) if ones else 0)
    return ZH_DIGITS.get(text, 0)


ZH_NUM = r"(?:\d{1,4}|[零一二两三四五六七八九十]{1,3})"


ZH_YEAR_PRE = r"(?:(?P<y>\d{4})年|(?P<ry>前年|去年|今年|明年))?"


def rule_zh_date(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    year = zh_year(m, base)
    month = zh_number(m.group("mo")) if m.group("mo") else None
    day = zh_number(m.group("d")) if m.group("d") else None
    try:
        if month is None:
            return year_span(year, tz) if year else None
        if not 1 <= month <= 12:
            return None
        if day is None:
            if year is not None:
                return month_span(year, month, tz)
            return open_result([month_span(y, month, tz) for y in (base.year - 1, base.year, base.year + 1)], base)
        if year is None:
            return open_result(days_of(base.year, month, day, tz), base)
        return day_span(_dt.date(year, month, day), tz)
    except ValueError:
        return None


def rule_zh_relative(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    word = m.group(0)
    if word in ZH_DAYS:
        return day_span(d + _dt.timedelta(days=ZH_DAYS[word]), tz)
    if word in ZH_YEARS:
        return year_span(d.year + ZH_YEARS[word], tz)
    rel = m.group("zrel")
    if rel is not None:
        step = {"上": -1, "下": 1, "本": 0, "这": 0}[rel[0]]
        if m.group("zunit") in ("周", "星期", "礼拜"):
            monday = d - _dt.timedelta(days=d.weekday()) + _dt.timedelta(days=7 * step)
            wd = m.group("zwd")
            if wd:
                return day_span(monday + _dt.timedelta(days=ZH_WEEKDAY[wd]), tz)
            return days_span(monday, 7, tz)
        return month_span(d.year, d.month + step, tz)
    return None


def rule_zh_ago(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    n = zh_number(m.group("zn"))
    unit = m.group("zu")
    sign = -1 if m.group("zdir") == "前" else 1
    d = base.date()
    if unit == "天":
        return day_span(d + _dt.timedelta(days=sign * n), tz)
    if unit in ("周", "星期", "个星期", "礼拜", "个礼拜"):  # 两周后 is a day, like 14天后
        return day_span(d + _dt.timedelta(days=sign * 7 * n), tz)
    if unit == "个月":
        t = add_months(d, sign * n)
        return month_span(t.year, t.month, tz)
    return year_span(d.year + sign * n, tz)


def rule_zh_clock(m: re.Match[str], base: _dt.datetime) -> Interval | None:
    tz = base.tzinfo or _dt.timezone.utc
    hour = zh_number(m.group("h"))
    if m.group("part") in ("下午", "晚上") and hour < 12:
        hour += 12
    if hour > 23:
        return None
    minute = 30 if m.group("half") else 0
    d = base.date()
    if m.group("day"):
        d += _dt.timedelta(days=ZH_DAYS[m.group("day")])
    s = _dt.datetime(d.year, d.month, d.day, hour, minute, tzinfo=tz)
    return s, s + _dt.timedelta(hours=1), Precision.HOUR


def zh_year(m: re.Match[str], base: _dt.datetime) -> int | None:
    """The year of an optional ``y`` (2024年) or ``ry`` (去年) group."""
    g = m.groupdict()
    if g.get("y"):
        return int(g["y"])
    if g.get("ry"):
        return base.year + ZH_YEARS[g["ry"]]
    return None


def rule_zh_season(m: re.Match[str], base: _dt.datetime) -> Result | None:
    return seasons(zh_year(m, base), ZH_SEASONS[m.group("season")], base)


def rule_zh_quarter(m: re.Match[str], base: _dt.datetime) -> Result | None:
    tz = base.tzinfo or _dt.timezone.utc
    quarter = ZH_QUARTER[m.group("q") or m.group("q2")]
    year = zh_year(m, base)
    if year is not None:
        return month_span(year, 3 * (quarter - 1) + 1, tz, 3)
    years = (base.year - 1, base.year, base.year + 1)
    return open_result([month_span(y, 3 * (quarter - 1) + 1, tz, 3) for y in years], base)


def rule_zh_weekend(m: re.Match[str], base: _dt.datetime) -> Result | None:
    """上周末 / 这周末 / 下周末: the Saturday and Sunday of that calendar week;
    a bare 周末: this weekend if it is on, else the tense picks the last or next."""
    tz = base.tzinfo or _dt.timezone.utc
    d = base.date()
    monday = d - _dt.timedelta(days=d.weekday())
    rel = m.group("zrel")
    if rel:
        step = {"上": -1, "下": 1, "本": 0, "这": 0}[rel[0]]
        return weekend_of(monday + _dt.timedelta(days=7 * step), tz)
    return open_result([weekend_of(monday + _dt.timedelta(days=7 * k), tz) for k in (-1, 0, 1)], base)
