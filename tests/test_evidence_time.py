"""Time mentions: dateparser plus our rule layer, resolved against a base time."""

from __future__ import annotations

import datetime as _dt

import pytest

from chronomem.core.time import Precision
from chronomem.service.evidence.timemention import resolve_mentions

BASE = _dt.datetime(2023, 5, 8, 13, 56, tzinfo=_dt.timezone.utc)  # a Monday

CASES = [
    ("I went to a support group yesterday", "yesterday", "2023-05-07", "2023-05-08", Precision.DAY),
    ("We ran a charity race last Saturday", "last Saturday", "2023-05-06", "2023-05-07", Precision.DAY),
    ("we met 2 weeks ago", "2 weeks ago", "2023-04-24", "2023-04-25", Precision.DAY),  # the day, like 14 days
    ("in March I painted", "in March", "2023-03-01", "2023-04-01", Precision.MONTH),
    ("born on 7 May 2023", "7 May 2023", "2023-05-07", "2023-05-08", Precision.DAY),
    ("since 2022", "since 2022", "2022-01-01", "2023-01-01", Precision.YEAR),
    ("the review is on the 10th", "the 10th", "2023-05-10", "2023-05-11", Precision.DAY),
    ("a few days ago", "a few days ago", "2023-05-05", "2023-05-06", Precision.DAY),
    ("last weekend we camped", "last weekend", "2023-05-06", "2023-05-08", Precision.DAY),
    ("Q3 2024 numbers", "Q3 2024", "2024-07-01", "2024-10-01", Precision.MONTH),
    ("the first quarter of 2022", "first quarter of 2022", "2022-01-01", "2022-04-01", Precision.MONTH),
    ("next month", "next month", "2023-06-01", "2023-07-01", Precision.MONTH),
    ("last summer", "last summer", "2022-06-01", "2022-09-01", Precision.MONTH),
    ("我们10月12日见", "10月12日", "2023-10-12", "2023-10-13", Precision.DAY),
    ("上周二去了北京", "上周二", "2023-05-02", "2023-05-03", Precision.DAY),
    ("三天前", "三天前", "2023-05-05", "2023-05-06", Precision.DAY),
    ("去年", "去年", "2022-01-01", "2023-01-01", Precision.YEAR),
    ("2021年3月", "2021年3月", "2021-03-01", "2021-04-01", Precision.MONTH),
]


@pytest.mark.parametrize("text,phrase,start,end,prec", CASES)
def test_resolves(text: str, phrase: str, start: str, end: str, prec: Precision) -> None:
    got = resolve_mentions(text, BASE)
    assert len(got) == 1, got
    m = got[0]
    assert (m.phrase, m.start.date().isoformat(), m.end.date().isoformat(), m.precision) == (
        phrase, start, end, prec)


def test_clock_hour_in_chinese() -> None:
    (m,) = resolve_mentions("下午3点开会", BASE)
    assert m.start == _dt.datetime(2023, 5, 8, 15, tzinfo=_dt.timezone.utc)
    assert m.precision == Precision.HOUR


def test_no_false_positives_on_plain_words() -> None:
    assert resolve_mentions("I have 5 kids and may go swimming", BASE) == []


def test_several_mentions_in_order_and_base_timezone() -> None:
    tz = _dt.timezone(_dt.timedelta(hours=8))
    got = resolve_mentions("yesterday and tomorrow", BASE.astimezone(tz))
    assert [m.phrase for m in got] == ["yesterday", "tomorrow"]
    assert got[0].start.utcoffset() == _dt.timedelta(hours=8)
    with pytest.raises(ValueError):
        resolve_mentions("yesterday", BASE.replace(tzinfo=None))
