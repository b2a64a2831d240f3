"""Name caches across connections.

Each process caches name keys -> entity ids. Another connection's alias,
merge or erasure must reach them (both backends keep a ``names_version`` in
``meta``); an ordinary write must not throw them away (SQLite used to drop
them on every foreign commit); and a process that keeps missing loads a
namespace's keys at once.
"""

from __future__ import annotations

from typing import Any

import pytest

import chronomem
from chronomem import FakeClock
from chronomem.store.sqlite import store as sqlite_store


def _objects(mem: chronomem.Memory, name: str) -> set[Any]:
    return {f.object for f in mem.facts(name)}


def test_a_merge_by_another_connection_reaches_a_warm_cache(make_memory: Any) -> None:
    writer = make_memory()
    reader = make_memory()
    writer.add_fact("Bobby", "likes", "Tea")
    writer.add_fact("Robert", "likes", "Coffee")
    assert _objects(reader, "Bobby") == {"Tea"}  # "bobby" -> Bobby's id, cached
    writer.merge("Robert", "Bobby")
    assert _objects(reader, "Bobby") == {"Tea", "Coffee"}  # the name now means Robert
    writer.alias("Robert", "Rob")
    assert _objects(reader, "Rob") == {"Tea", "Coffee"}


def test_an_erased_and_recreated_name_is_not_read_from_a_stale_cache(make_memory: Any) -> None:
    writer = make_memory()
    reader = make_memory()
    writer.add_fact("Zed", "likes", "Tea")
    assert _objects(reader, "Zed") == {"Tea"}
    writer.erase(entity="Zed", confirm=True)
    writer.add_fact("Zed", "likes", "Milk")  # a new entity under the old name
    assert _objects(reader, "Zed") == {"Milk"}


def test_a_warm_writer_writes_on_the_entity_a_merge_elsewhere_left_its_name_to(make_memory: Any) -> None:
    """A PostgreSQL add_fact sends BEGIN with its group's lock, after it
    resolved its names from the cache: a merge by another connection since
    must still reach it (the names are resolved again under the lock)."""
    writer = make_memory()
    other = make_memory()
    writer.add_fact("Bobby", "likes", "Tea")  # "bobby" -> Bobby's id, cached by the writer
    writer.add_fact("Robert", "likes", "Cake", valid_from="2020-01-01", valid_to="2021-01-01")
    other.merge("Robert", "Bobby")  # "bobby" names Robert now
    # every name cached: the group's lock is this write's first round trip
    cake = writer.add_fact("Bobby", "likes", "Cake", valid_from="2023-01-01")
    assert cake.subject == "Robert"
    assert sorted(f.object for f in other.facts("Robert")) == ["Cake", "Cake", "Tea"]


def test_a_warm_writer_follows_a_cardinality_declared_elsewhere(make_memory: Any) -> None:
    writer = make_memory()
    other = make_memory()
    # "carl" and "status" (many-valued) cached by the writer
    writer.add_fact("Carl", "status", "new", valid_from="2019-01-01", valid_to="2019-02-01", literal=True)
    other.define_predicate("status", cardinality="one")
    other.add_fact("Carl", "status", "away", valid_from="2020-01-01", literal=True)
    # every name cached: the group's lock is this write's first round trip
    busy = writer.add_fact("Carl", "status", "busy", valid_from="2021-01-01", literal=True)  # cuts "away" short
    assert sorted((f.object, f.valid_to) for f in other.facts("Carl", "status") if f.object != "new") == [
        ("away", busy.valid_from), ("busy", None)]
    # invalidate resolves its names before its transaction: a merge elsewhere meanwhile reaches it too
    writer.add_fact("Dora", "status", "away", valid_from="2020-01-01", literal=True)  # "dora" cached
    other.add_fact("Eve", "likes", "Tea")
    other.merge("Eve", "Dora")  # "dora" names Eve now
    writer.invalidate("Dora", "status", "away", ended="2021-01-01", literal=True)
    assert [(f.subject, f.valid_to) for f in other.facts("Eve", "status")] == [("Eve", busy.valid_from)]


def test_a_write_after_names_moved_is_stamped_at_its_own_clock_time(make_memory: Any) -> None:
    # a write after one that moved the names version resolves its names
    # again under the lock: the same groups, so its time stands (a second
    # tick gave clock + 1 us)
    clock = FakeClock("2025-01-01T00:00:00Z")
    mem = make_memory(clock=clock)
    mem.define_predicate("holds", cardinality="one")
    first = mem.add_fact("Acme", "holds", "A")
    mem.retract(first.id)
    with pytest.raises(chronomem.FactNotFoundError):  # rolled back: its own transaction's names version unseen
        mem.invalidate("Acme", "holds", "A", ended="2000")
    at = clock.peek()
    again = mem.add_fact("Acme", "holds", "A")
    assert again.system_from == at
    assert [f.id for f in mem.facts("Acme", "holds", known_at=at)] == [again.id]


def test_an_erased_entity_id_is_never_given_to_a_new_entity(make_memory: Any) -> None:
    """Display names are cached by entity id in every process. When the
    entity with the highest id is erased, the next new entity must not get
    its id, or another connection shows the erased name on its facts (and
    the erasure leaks)."""
    writer = make_memory()
    reader = make_memory()
    writer.add_fact("Alice", "knows", "Bob")
    assert _objects(reader, "Alice") == {"Bob"}  # the reader caches Bob's name by id
    writer.erase(entity="Bob", confirm=True)
    writer.add_fact("Alice", "knows", "Carol")
    assert _objects(reader, "Alice") == {"Carol"}
    assert _objects(writer, "Alice") == {"Carol"}
    ids = {e.id for e in writer.entities()}
    writer.erase(entity="Carol", confirm=True)
    writer.add_fact("Alice", "knows", "Dan")
    dan = writer.entity("Dan").id
    assert dan not in ids and dan > max(ids)
    assert _objects(reader, "Alice") == {"Dan"}


def test_migration_0004_keeps_entities_and_moves_ids_past_every_used_one(tmp_path: Any) -> None:
    """A file from before 0004 (entities without AUTOINCREMENT) keeps its
    entities, keys and facts, and new ids start past the highest in use."""
    import sqlite3

    path = tmp_path / "old.db"
    with chronomem.open(path) as m:
        m.add_fact("Alice", "knows", "Bob")
        m.alias("Bob", "Bobby")
    con = sqlite3.connect(path)
    # turn the file back into a 0003 store: entities without AUTOINCREMENT
    con.executescript(
        "BEGIN; CREATE TABLE e3 AS SELECT * FROM entities; DROP TABLE entities; "
        "CREATE TABLE entities (id INTEGER PRIMARY KEY, ns_id INTEGER NOT NULL REFERENCES namespaces(id), "
        "key TEXT NOT NULL, name TEXT NOT NULL, type TEXT, properties TEXT, created_at INTEGER NOT NULL, "
        "UNIQUE (ns_id, key)); INSERT INTO entities SELECT * FROM e3; DROP TABLE e3; "
        "DELETE FROM sqlite_sequence; DELETE FROM schema_migrations WHERE version = 4; COMMIT;"
    )
    con.close()
    with chronomem.open(path) as m:
        assert m.store.schema_version() >= 4
        assert _objects(m, "Alice") == {"Bob"}
        assert _objects(m, "Alice") == {f.object for f in m.facts("alice")}
        assert m.entity("Bobby").name == "Bob"
        before = {e.id for e in m.entities()}
        m.erase(entity="Bob", confirm=True)
        m.add_fact("Alice", "knows", "Carol")
        assert m.entity("Carol").id > max(before)
    con = sqlite3.connect(path)
    sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'entities'").fetchone()[0]
    con.close()
    assert "AUTOINCREMENT" in sql


def test_ordinary_writes_of_another_connection_keep_the_sqlite_caches(tmp_path: Any) -> None:
    path = tmp_path / "m.db"
    writer = chronomem.open(path)
    reader = chronomem.open(path)
    try:
        writer.add_fact("Kai", "likes", "Tea")
        assert _objects(reader, "Kai") == {"Tea"}
        assert reader.entity("Kai").name == "Kai"  # facts() resolves in its SQL; entity() uses the cache
        store = _sqlite(reader)
        cached = dict(store._entity_cache)
        assert cached
        writer.add_fact("Ana", "likes", "Tea")
        assert _objects(reader, "Ana") == {"Tea"}  # a name added meanwhile is found
        assert reader.entity("Ana").name == "Ana"
        assert cached.items() <= store._entity_cache.items()
        kai = next(k for k in cached if k[1] == "kai")
        writer.alias("Kai", "K")  # a name change drops them
        reader.entity("Ana")
        assert kai not in store._entity_cache
        assert _objects(reader, "K") == {"Tea"}
    finally:
        writer.close()
        reader.close()


def _three_hundred_names(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A store with 300 facts E{i} -knows-> F{i}; warm-up after 10 misses."""
    path = tmp_path / "m.db"
    with chronomem.open(path) as m:
        m.add_facts([(f"E{i}", "knows", f"F{i}") for i in range(300)])
    monkeypatch.setattr(sqlite_store, "_WARM_AFTER", 10)
    return path


def _sqlite(m: chronomem.Memory) -> sqlite_store.SQLiteStore:
    store = m.store
    assert isinstance(store, sqlite_store.SQLiteStore)
    return store


def test_many_misses_load_the_namespace_keys_at_once(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _three_hundred_names(tmp_path, monkeypatch)
    with chronomem.open(path) as m:
        store = _sqlite(m)
        for i in range(10):
            assert _objects(m, f"E{i}") == {f"F{i}"}
            assert m.entity(f"E{i}").name == f"E{i}"
        assert len(store._entity_cache) >= 600  # every key of the namespace
        assert _objects(m, "E299") == {"F299"}
        assert len(store._names) >= 600  # and every display name
    monkeypatch.setattr(sqlite_store, "_WARM_MAX", 100)  # too many to load
    with chronomem.open(path) as m:
        store = _sqlite(m)
        for i in range(20):
            assert _objects(m, f"E{i}") == {f"F{i}"}
            assert m.entity(f"E{i}").name == f"E{i}"
        assert len(store._entity_cache) < 100


def test_writes_never_load_the_namespace_keys(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _three_hundred_names(tmp_path, monkeypatch)
    with chronomem.open(path) as m:
        store = _sqlite(m)
        for i in range(40):
            f = m.add_fact(f"E{i}", "knows", f"F{i + 1}")
            assert (f.subject, f.object) == (f"E{i}", f"F{i + 1}")  # names came with the key lookups
        assert len(store._entity_cache) < 100


def test_a_small_store_loads_every_display_name_at_the_first_miss(tmp_path: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.db"
    with chronomem.open(path) as m:
        m.add_facts([(f"E{i}", "knows", f"F{i}") for i in range(300)])
    with chronomem.open(path) as m:
        store = _sqlite(m)
        assert _objects(m, "E1") == {"F1"}
        assert len(store._names) == 600  # all of them, at the first read
        assert _objects(m, "E299") == {"F299"}
    monkeypatch.setattr(sqlite_store, "_WARM_SMALL", 100)  # "small" now means fewer than it has
    with chronomem.open(path) as m:
        store = _sqlite(m)
        assert _objects(m, "E1") == {"F1"}
        assert len(store._names) == 2  # only the names that read needed
