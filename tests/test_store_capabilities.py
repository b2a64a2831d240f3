"""Every backend declares its ``Store.capabilities`` (and the protocol's
``clock`` and ``schema_version``), on each backend of ``tests/conftest.py``."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

import chronomem
from chronomem.core.time import FakeClock
from chronomem.store import Capabilities, missing_local_file, open_store, resolve_url
from chronomem.store.postgres.store import PostgresStore
from chronomem.store.protocol import Store
from chronomem.store.sqlite.store import SQLiteStore

EXPECTED = {
    "sqlite": (SQLiteStore, Capabilities(episodes=True, entity_prefix_search=True, local_path=None,
                                         flush_in_parts=True)),
    "postgres": (PostgresStore, Capabilities(episodes=True, entity_prefix_search=True, local_path=None,
                                             read_replica=True, flush_in_parts=True)),
}


def test_each_backend_declares_its_capabilities(backend: str, store_url: str) -> None:
    cls, expected = EXPECTED[backend]
    clock = FakeClock()
    store: Store = open_store(store_url, clock=clock)
    try:
        assert isinstance(store, cls)
        caps = store.capabilities
        assert isinstance(caps, Capabilities)
        if backend == "sqlite":  # a file store names its file, for the caches beside it
            expected = dataclasses.replace(expected, local_path=store_url)
            assert caps.local_path is not None and os.path.exists(caps.local_path)
        assert caps == expected
        assert store.clock is clock
        assert store.schema_version() >= 1
        with store.write() as tx:
            assert tx.capabilities == caps
    finally:
        store.close()


def test_a_memory_without_its_own_clock_reads_the_stores(store_url: str) -> None:
    clock = FakeClock("2030-01-01T00:00:00Z")
    store = open_store(store_url, clock=clock)
    mem = chronomem.Memory(store, "default")
    try:
        assert mem.now().year == 2030
    finally:
        mem.close()


def test_capabilities_are_frozen() -> None:
    caps = Capabilities(episodes=True, entity_prefix_search=False)
    assert caps.local_path is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.episodes = False  # type: ignore[misc]


def test_an_in_memory_sqlite_store_has_no_local_path() -> None:
    store = open_store(":memory:")
    try:
        assert store.capabilities == Capabilities(episodes=True, entity_prefix_search=True, local_path=None,
                                                  flush_in_parts=True)
    finally:
        store.close()


def test_the_dispatcher_names_a_missing_local_file(tmp_path: Path) -> None:
    target = tmp_path / "none.db"
    assert missing_local_file(target) == str(target)
    assert missing_local_file(f"sqlite:///{target}") == str(target)
    assert missing_local_file(":memory:") is None
    assert missing_local_file("sqlite://") is None
    assert missing_local_file("postgresql://u@h/db") is None
    target.write_bytes(b"")
    assert missing_local_file(target) is None
    with pytest.raises(chronomem.InvalidInputError, match="unsupported store URL"):
        missing_local_file("mysql://x")
    assert resolve_url(":memory:") == ("sqlite", ":memory:")
