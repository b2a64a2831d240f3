"""Memory.view and Memory.acting_as: one store, several namespaces and writers."""

from __future__ import annotations

import threading

import pytest

import chronomem
from chronomem import InvalidInputError


def test_view_shares_the_store_and_closing_it_closes_nothing(tmp_path):
    mem = chronomem.open(tmp_path / "m.db")
    other = mem.view("team-b")
    assert other.store is mem.store and other.namespace == "team-b"
    other.add_fact("alice", "works_at", "acme")
    other.close()  # a view closes nothing: the parent still writes
    mem.add_fact("bob", "works_at", "initech")
    assert [f.object for f in mem.facts("bob")] == ["initech"]
    assert mem.facts("alice") == []  # namespaces stay apart
    assert [f.object for f in mem.view("team-b").facts("alice")] == ["acme"]
    mem.close()


def test_agent_defaults_and_acting_as_nests_and_stays_in_its_thread():
    mem = chronomem.open(":memory:", agent="builder")
    view = mem.view("x")
    assert mem.agent == "builder" and view.agent == "builder"
    assert mem.view(agent="other").agent == "other"
    assert mem._scope.recorded_by() == "builder"
    seen: list[str] = []
    with mem.acting_as("tok-a"):
        assert view._scope.recorded_by() == "tok-a"
        with mem.acting_as("tok-b"):
            assert mem._scope.recorded_by() == "tok-b"
        assert mem._scope.recorded_by() == "tok-a"
        t = threading.Thread(target=lambda: seen.append(mem._scope.recorded_by()))
        t.start()
        t.join()
    assert seen == ["builder"]  # another thread is not inside this block
    assert mem._scope.recorded_by() == "builder"
    mem.close()


@pytest.mark.parametrize("bad", ["", "   ", 3, "x" * 201])
def test_bad_agent_names_are_refused(bad):
    with pytest.raises(InvalidInputError, match="agent"):
        chronomem.open(":memory:", agent=bad)
    mem = chronomem.open(":memory:")
    with pytest.raises(InvalidInputError, match="agent"):
        with mem.acting_as(bad):
            pass
    mem.close()
