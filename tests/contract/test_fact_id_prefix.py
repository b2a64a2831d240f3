"""Shortened fact ids on every backend: ``Store.fact_ids_matching`` (a
prefix or a suffix, one namespace, bounded) and the service's resolution
behind every call that takes a fact id (``FactReads.resolve_id``)."""

from __future__ import annotations

import pytest

from chronomem import FactNotFoundError, FakeClock, Memory
from chronomem.core.ids import MIN_ID_CHARS, short_id
from chronomem.errors import AmbiguousIdError

from ._helpers import MemoryFactory


def _ns(mem: Memory) -> int:
    ns = mem.store.namespace_id(mem.namespace)
    assert ns is not None
    return ns


def test_store_reads_ids_by_prefix_and_suffix(mem: Memory) -> None:
    ids = mem.add_facts([("Kai", "likes", f"tea{i}") for i in range(7)])
    store, ns = mem.store, _ns(mem)
    # one batch, one millisecond: the ids share their start and differ at the end
    assert len({i[:8] for i in ids}) == 1 and len({short_id(i) for i in ids}) == 7
    assert store.fact_ids_matching(ns, ids[0][:8], 100) == sorted(ids)
    assert store.fact_ids_matching(ns, ids[0][:8], 3) == sorted(ids)[:3]  # bounded, in id order
    for fid in ids:
        assert store.fact_ids_matching(ns, short_id(fid), 10) == [fid]  # the suffix
        assert store.fact_ids_matching(ns, fid, 10) == [fid]  # a whole id is its own prefix
    assert store.fact_ids_matching(ns, "ffffffffffff", 10) == []
    assert store.fact_ids_matching(ns, "", 10) == []
    # versions of one fact are one id
    mem.correct(ids[0], object="coffee")
    assert store.fact_ids_matching(ns, short_id(ids[0]), 10) == [ids[0]]


def test_the_read_is_per_namespace(make_memory: MemoryFactory) -> None:
    clock = FakeClock("2025-01-01T00:00:00Z")
    a, b = make_memory("alpha", clock=clock), make_memory("beta", clock=clock)
    fa = a.add_fact("Kai", "likes", "tea").id
    assert b.store.fact_ids_matching(_ns(b), short_id(fa), 10) == []
    with pytest.raises(FactNotFoundError, match="starts or ends with"):
        b.fact(short_id(fa))
    assert a.fact(short_id(fa)).id == fa


def test_every_fact_id_call_takes_a_short_id(mem: Memory) -> None:
    tea, coffee, juice, milk = (mem.add_fact("Kai", "likes", o, "2020", source="chat").id
                                for o in ("tea", "coffee", "juice", "milk"))
    assert mem.fact(short_id(tea)).object == "tea"
    assert mem.fact(tea[-10:].upper()).id == tea  # any 8+ of the end, in either case
    assert [v.version for v in mem.versions(short_id(tea))] == [1]
    assert [p.source for p in mem.evidence(short_id(tea))] == ["chat"]
    assert mem.correct(short_id(tea), object="green tea").id == tea
    assert mem.invalidate_fact(short_id(coffee), "2021").valid_to_text == "2021"
    assert mem.retract(short_id(juice)).id == juice
    assert mem.erase(short_id(milk), confirm=True) == 1
    assert {f.object for f in mem.facts("Kai")} == {"green tea", "coffee"}


def test_ambiguous_and_too_short_ids(mem: Memory) -> None:
    ids = sorted(mem.add_facts([("Kai", "likes", f"tea{i}") for i in range(7)]))
    with pytest.raises(AmbiguousIdError) as caught:
        mem.fact(ids[0][:8])
    err = caught.value
    assert (err.value, err.field, err.more) == (ids[0][:8], "fact_id", True)
    assert err.candidates == tuple(ids[:5])  # bounded: the first five, in id order
    assert all(c in str(err) for c in ids[:5]) and ids[6] not in str(err)
    with pytest.raises(AmbiguousIdError):
        mem.retract(ids[0][:13])  # still the shared timestamp
    assert mem.facts("Kai", as_of="2030") != []  # nothing was retracted
    with pytest.raises(FactNotFoundError, match=f"at least {MIN_ID_CHARS} characters"):
        mem.fact(short_id(ids[0])[-7:])
    with pytest.raises(FactNotFoundError):
        mem.correct("0" * 36, object="x")  # a whole id that is not there: as before
