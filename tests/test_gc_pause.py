"""Bulk writes pause the cycle collector and always put it back as it was."""

from __future__ import annotations

import gc
import threading
from typing import Any, Iterator

import pytest

from chronomem import InvalidInputError, Memory
from chronomem.service.gcpause import paused_gc


@pytest.fixture(autouse=True)
def _gc_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_pause_and_resume() -> None:
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_resume_at_the_outermost() -> None:
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_still_resumes() -> None:
    with pytest.raises(RuntimeError):
        with paused_gc():
            raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    gc.disable()
    with paused_gc():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_pauses_in_threads_resume_when_the_last_ends() -> None:
    inside, release = threading.Event(), threading.Event()

    def worker() -> None:
        with paused_gc():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    assert inside.wait(5)
    with paused_gc():
        pass
    assert not gc.isenabled()  # the thread's pause is still open
    release.set()
    t.join(5)
    assert gc.isenabled()


def test_add_facts_pauses_during_the_batch_and_resumes_after(make_memory: Any) -> None:
    mem: Memory = make_memory()
    seen: list[bool] = []

    def items() -> Iterator[tuple[str, str, str]]:
        for i in range(3):
            seen.append(gc.isenabled())
            yield ("a", "knows", f"b{i}")

    assert len(mem.add_facts(items())) == 3
    assert seen == [False, False, False] and gc.isenabled()
    with pytest.raises(InvalidInputError):
        mem.add_facts([("a", "knows", "c"), ("", "knows", "d")])
    assert gc.isenabled()
    assert len(mem.facts("a")) == 3  # the failed batch wrote nothing
