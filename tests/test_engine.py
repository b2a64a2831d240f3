"""Unit tests of the write engine (:mod:`chronomem.core.engine`): the placement
rules on plain :class:`Row` objects, without a store."""

from __future__ import annotations

from typing import Iterable

import pytest

from chronomem.core.engine import GroupState, TxWork
from chronomem.core.time import MAX_US, MIN_US
from chronomem.store.protocol import Row

NOW = 1_000_000
S, P = 1, 2  # subject and predicate ids
YEAR = 1  # Precision.YEAR


def row(fact_id: str, obj: int, vf: int, vt: int, *, rowid: int | None = None, version: int = 1,
        source: str | None = None) -> Row:
    return Row(rowid, fact_id, version, 1, S, P, obj, None, vf, YEAR if vf != MIN_US else 0, vt,
               YEAR if vt != MAX_US else 0, 0 if rowid is not None else NOW, MAX_US, 1.0, source)


def work(stored: Iterable[Row] = ()) -> TxWork:
    rows = list(stored)

    def loader(subject_id: int, predicate_id: int) -> list[Row]:
        assert (subject_id, predicate_id) == (S, P)
        return [r.copy() for r in rows]

    return TxWork(NOW, loader)


def believed(w: TxWork) -> list[tuple[str, int, int, int]]:
    """(fact_id, object, vf, vt) of the working set after the writes."""
    return sorted((r.fact_id, int(r.object_id or 0), r.valid_from, r.valid_to) for r in w.group(S, P).rows())


def test_insert_into_an_empty_group() -> None:
    w = work()
    cand = row("f1", 10, 100, 200)
    got, status = w.place(cand, single=False)
    assert status == "inserted" and got is cand
    assert got.system_from == NOW and got.system_to == MAX_US and got.rowid is None
    assert w.result_rows() == [cand]
    assert w.closes == []


def test_contained_interval_returns_the_existing_row() -> None:
    stored = row("f1", 10, 100, 300, rowid=1, source="a")
    w = work([stored])
    got, status = w.place(row("f2", 10, 150, 200, source="b"), single=False)
    assert status == "existing" and got.fact_id == "f1"
    assert w.result_rows() == [] and w.closes == []
    assert w.sources == [("f1", "b", None)]


def test_same_source_is_not_cited_twice() -> None:
    w = work([row("f1", 10, 100, 300, rowid=1, source="a")])
    w.place(row("f2", 10, 100, 300, source="a"), single=False)
    assert w.sources == []


@pytest.mark.parametrize(("lo", "hi", "union"), [(250, 400, (100, 400)), (50, 150, (50, 300)),
                                                  (300, 400, (100, 400)), (0, 100, (0, 300)),
                                                  (MIN_US, 150, (MIN_US, 300)), (200, MAX_US, (100, MAX_US))])
def test_overlapping_or_touching_coalesces_into_the_union(lo: int, hi: int, union: tuple[int, int]) -> None:
    w = work([row("f1", 10, 100, 300, rowid=1)])
    got, status = w.place(row("f9", 10, lo, hi), single=False)
    assert status == "coalesced"
    assert got.fact_id == "f1" and got.version == 2
    assert (got.valid_from, got.valid_to) == union
    assert w.closes == [(1, "coalesced", "f1")]
    assert believed(w) == [("f1", 10, *union)]


def test_disjoint_interval_is_a_separate_fact() -> None:
    w = work([row("f1", 10, 100, 200, rowid=1)])
    got, status = w.place(row("f2", 10, 300, 400), single=False)
    assert status == "inserted" and got.fact_id == "f2"
    assert believed(w) == [("f1", 10, 100, 200), ("f2", 10, 300, 400)]


def test_bridging_interval_joins_two_facts_under_the_smallest_id() -> None:
    w = work([row("f1", 10, 100, 200, rowid=1), row("f2", 10, 300, 400, rowid=2)])
    got, status = w.place(row("f3", 10, 150, 350), single=False)
    assert status == "coalesced" and got.fact_id == "f1"
    assert believed(w) == [("f1", 10, 100, 400)]
    assert sorted(w.closes) == [(1, "coalesced", "f1"), (2, "coalesced", "f1")]


def test_many_valued_leaves_other_objects_alone() -> None:
    w = work([row("f1", 10, 100, MAX_US, rowid=1)])
    w.place(row("f2", 20, 200, MAX_US), single=False)
    assert believed(w) == [("f1", 10, 100, MAX_US), ("f2", 20, 200, MAX_US)]
    assert w.closes == []


def test_single_valued_truncates_the_earlier_value() -> None:
    w = work([row("f1", 10, 100, MAX_US, rowid=1)])
    got, status = w.place(row("f2", 20, 200, MAX_US), single=True)
    assert status == "inserted"
    assert believed(w) == [("f1", 10, 100, 200), ("f2", 20, 200, MAX_US)]
    assert w.closes == [(1, "superseded", "f2")]
    old = next(r for r in w.result_rows() if r.fact_id == "f1")
    assert old.version == 2 and (old.end_kind, old.invalidated_by, old.end_reason) == ("superseded", "f2", None)


def test_single_valued_replaces_a_value_starting_at_the_same_instant() -> None:
    w = work([row("f1", 10, 100, MAX_US, rowid=1)])
    w.place(row("f2", 20, 100, MAX_US), single=True)
    assert believed(w) == [("f2", 20, 100, MAX_US)]
    assert w.closes == [(1, "superseded", "f2")]


def test_single_valued_splices_an_out_of_order_arrival() -> None:
    w = work([row("f1", 10, 300, MAX_US, rowid=1)])
    got, _ = w.place(row("f2", 20, 100, MAX_US), single=True)
    assert (got.valid_from, got.valid_to, got.invalidated_by, got.end_kind) == (100, 300, "f1", "superseded")
    assert believed(w) == [("f1", 10, 300, MAX_US), ("f2", 20, 100, 300)]
    assert w.closes == []


def test_single_valued_bounded_value_inside_an_open_one() -> None:
    w = work([row("f1", 10, 100, MAX_US, rowid=1)])
    w.place(row("f2", 20, 200, 300), single=True)
    # the old value ends where the new one starts; nothing resumes after it
    assert believed(w) == [("f1", 10, 100, 200), ("f2", 20, 200, 300)]


def test_rows_created_and_replaced_in_one_transaction_are_never_written() -> None:
    w = work()
    w.place(row("f1", 10, 100, 200), single=False)
    w.place(row("f2", 10, 150, 300), single=False)
    w.place(row("f3", 10, 300, 400), single=False)
    rows = w.result_rows()
    assert [(r.fact_id, r.valid_from, r.valid_to) for r in rows] == [("f1", 100, 400)]
    assert w.closes == []


def test_truncate_and_retract() -> None:
    stored = row("f1", 10, 100, MAX_US, rowid=7)
    w = work([stored])
    live = w.find_believed("f1", S, P)
    assert live is not None
    nxt = w.truncate(live, 500, YEAR, reason="left")
    # the reason is the end's reason; invalidated_by names only a superseding fact
    assert (nxt.valid_from, nxt.valid_to, nxt.version) == (100, 500, 2)
    assert (nxt.end_kind, nxt.invalidated_by, nxt.end_reason) == ("invalidated", None, "left")
    assert w.closes == [(7, "invalidated", "left")]
    w.retract(nxt, "wrong")
    assert believed(w) == []
    assert w.result_rows() == []  # the truncated version was never written
    assert w.closed_fact_ids == {"f1"}


def test_correction_keeps_the_fact_id() -> None:
    stored = row("f1", 10, 100, MAX_US, rowid=3)
    w = work([stored])
    live = w.find_believed("f1", S, P)
    assert live is not None
    cand = row("f1", 20, 100, MAX_US, version=2)
    got, status = w.place(cand, single=True, keep=live)
    assert got.fact_id == "f1" and status == "inserted"
    assert w.closes == [(3, "corrected", None)]
    assert believed(w) == [("f1", 20, 100, MAX_US)]


def test_group_state_keeps_rows_sorted_by_valid_from() -> None:
    a, b, c = row("a", 1, 300, 400), row("b", 1, 100, 200), row("c", 2, 0, 50)
    g = GroupState([a, b, c])
    assert [r.fact_id for r in g.by_obj[(1, None)]] == ["b", "a"]
    d = row("d", 1, 200, 300)
    g.add(d)
    assert [r.fact_id for r in g.by_obj[(1, None)]] == ["b", "d", "a"]
    g.remove(c)
    assert (2, None) not in g.by_obj
    assert sorted(r.fact_id for r in g.rows()) == ["a", "b", "d"]
