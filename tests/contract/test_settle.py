"""A read "as known at" T is final: it answers the same now and later.

Two ways it could change afterwards, both closed by ``Store.settle``:

* a write stamped at or before T was still open when the read ran (it
  commits later): the read waits for it;
* a writer whose clock lags (another machine) stamps a later write at or
  before T: the read moved the store's clock past T first.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import threading
import time
from typing import Iterator

import pytest

from chronomem import FakeClock, Memory

from ._helpers import MemoryFactory

UTC = _dt.timezone.utc


@contextlib.contextmanager
def _open_write(writer: Memory) -> Iterator[threading.Event]:
    """``writer`` adds Kai -likes-> Coffee in a batch that stays open (its
    transaction begun, its system time taken, nothing committed) until the
    yielded event is set or the block ends."""
    inside = threading.Event()
    release = threading.Event()

    def items() -> Iterator[tuple[str, str, str]]:
        yield ("Kai", "likes", "Coffee")
        inside.set()
        assert release.wait(30)

    t = threading.Thread(target=writer.add_facts, args=(items(),))
    t.start()
    try:
        assert inside.wait(30)
        yield release
    finally:
        release.set()
        t.join(30)


def test_a_known_at_read_waits_for_a_write_stamped_before_it(make_memory: MemoryFactory) -> None:
    writer = make_memory()
    reader = make_memory()
    writer.add_fact("Kai", "likes", "Tea")
    with _open_write(writer) as release:
        known = _dt.datetime.now(UTC)  # after the open write took its system time
        got: list[set[object]] = []
        r = threading.Thread(target=lambda: got.append({f.object for f in reader.facts("Kai", known_at=known)}))
        r.start()
        r.join(0.5)
        assert r.is_alive(), "the read did not wait for the open write"
        release.set()
        r.join(30)
        assert got == [{"Tea", "Coffee"}]
    assert {f.object for f in reader.facts("Kai", known_at=known)} == {"Tea", "Coffee"}


def test_a_known_at_read_is_not_rewritten_by_a_lagging_clock(make_memory: MemoryFactory) -> None:
    behind = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))  # another machine, its clock 5 years slow
    behind.add_fact("Kai", "likes", "Tea")
    ahead = make_memory(clock=FakeClock("2030-01-01T00:00:00Z"))
    t = "2029-06-01T00:00:00Z"
    assert {f.object for f in ahead.facts("Kai", known_at=t)} == {"Tea"}
    coffee = behind.add_fact("Kai", "likes", "Coffee")
    assert coffee.system_from > _dt.datetime(2029, 6, 1, tzinfo=UTC)
    assert {f.object for f in ahead.facts("Kai", known_at=t)} == {"Tea"}
    assert {f.object for f in ahead.facts("Kai")} == {"Tea", "Coffee"}


def test_a_future_known_at_read_does_not_move_the_clock(make_memory: MemoryFactory) -> None:
    mem = make_memory(clock=FakeClock("2025-01-01T00:00:00Z"))
    mem.add_fact("Kai", "likes", "Tea")
    assert {f.object for f in mem.facts("Kai", known_at="2031-01-01")} == {"Tea"}
    later = mem.add_fact("Kai", "likes", "Coffee")
    assert later.system_from < _dt.datetime(2026, 1, 1, tzinfo=UTC)


def test_writes_to_other_groups_do_not_wait_for_an_open_write(make_memory: MemoryFactory) -> None:
    """Shared writes lock only their (subject, predicate) group on PostgreSQL;
    SQLite has one writer, so there the second write waits (and succeeds)."""
    a = make_memory()
    b = make_memory()
    first = a.add_fact("Kai", "likes", "Tea")
    b.add_fact("Ana", "likes", "Tea")
    sid = a.store.entity_id(a.store.namespace_id("default"), "kai")
    pred = a.store.predicate(a.store.namespace_id("default"), "likes")
    assert sid is not None and pred is not None
    inside = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with a.store.write(shared=True) as tx:
            tx.lock_groups([(sid, pred.id)])
            inside.set()
            assert release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert inside.wait(30)
        other = threading.Thread(target=b.add_fact, args=("Ana", "likes", "Coffee"))
        same = threading.Thread(target=b.add_fact, args=("Kai", "likes", "Milk"))
        t0 = time.perf_counter()
        other.start()
        other.join(0.5 if a.store.backend == "sqlite" else 10)
        if a.store.backend == "sqlite":
            assert other.is_alive()  # one writer at a time
        else:
            assert not other.is_alive(), "a write to another group waited for the open write"
            assert time.perf_counter() - t0 < 10
            same.start()
            same.join(0.5)
            assert same.is_alive(), "a write to the locked group did not wait"
        release.set()
        other.join(30)
        if same.ident is not None:
            same.join(30)
    finally:
        release.set()
        t.join(30)
    assert {f.object for f in b.facts("Ana")} == {"Tea", "Coffee"}
    assert first.object == "Tea"


def test_a_known_at_read_does_not_wait_forever_for_a_long_write(
    make_memory: MemoryFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A long bulk load holds the write lock: a read as known at now waits
    ``SETTLE_WAIT`` seconds, then answers (without the load) and says so."""
    from chronomem.store.postgres import store as pg_store
    from chronomem.store.sqlite import store as sqlite_store

    monkeypatch.setattr(sqlite_store, "SETTLE_WAIT", 0.3)
    monkeypatch.setattr(pg_store, "SETTLE_WAIT", 0.3)
    writer = make_memory()
    reader = make_memory()
    writer.add_fact("Kai", "likes", "Tea")
    with _open_write(writer):
        t0 = time.perf_counter()
        with caplog.at_level("WARNING", logger="chronomem.store"):
            got = {f.object for f in reader.facts("Kai", known_at=_dt.datetime.now(UTC))}
        assert time.perf_counter() - t0 < 10
        assert got == {"Tea"}
        assert "may not be final" in caplog.text
    assert {f.object for f in reader.facts("Kai")} == {"Tea", "Coffee"}
