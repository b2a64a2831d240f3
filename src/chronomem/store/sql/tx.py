"""The write-transaction SQL both backends run, written once here.

:class:`TxSQL` composes every shared statement for one
:class:`~chronomem.store.sql.dialect.Dialect`; :class:`BaseTx` holds the write primitives whose logic is the same
on both backends and runs them through three small hooks
(:meth:`BaseTx._execute`, :meth:`BaseTx._executemany`,
:meth:`BaseTx._insert_id`). What really differs — bulk paths, locking, how a
names change is published, ``RETURNING`` against ``lastrowid`` — stays in
the backend's subclass (:mod:`chronomem.store.sqlite.tx`, :mod:`chronomem.store.postgres.tx`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Iterator, Protocol, Sequence

from ...core.time import MAX_US
from ..names import NameCache
from ..protocol import FACT_COLUMNS, Capabilities, PredicateRecord, Row
from .dialect import Dialect

__all__ = ["BaseTx", "INSERT_COLS", "RAW_COLS", "TxSQL", "fact_values"]

# every stored column of a fact version, in Row order
RAW_COLS = ", ".join(FACT_COLUMNS)
# the columns an insert of a fact version sets (all but the generated rowid)
INSERT_COLS = FACT_COLUMNS[1:]


def fact_values(r: Row) -> tuple[Any, ...]:
    """The values of ``INSERT_COLS`` for ``r``."""
    return (
        r.fact_id, r.version, r.ns_id, r.subject_id, r.predicate_id, r.object_id, r.object_lit,
        r.valid_from, r.valid_from_prec, r.valid_to, r.valid_to_prec, r.system_from, r.system_to,
        r.confidence, r.source, r.episode_id, r.properties, r.invalidated_by, r.close_kind, r.closed_by,
        r.end_kind, r.end_reason, r.stated_to, r.stated_to_prec, r.recorded_by,
    )


def _upsert(table: str, cols: Sequence[str], key: Sequence[str], values: str) -> str:
    """Insert a row, or on a conflict of ``key`` set its other columns."""
    sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols if c not in key)
    return (f"INSERT INTO {table} ({', '.join(cols)}) VALUES {values} "
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {sets}")


class TxSQL:
    """The shared write statements in dialect ``d`` (only strings as
    attributes: a test prepares each of them)."""

    def __init__(self, d: Dialect) -> None:
        ph, values = d.ph, d.values

        facts = f"SELECT {RAW_COLS} FROM facts WHERE"
        believed = f"system_to = {MAX_US}"
        # the believed versions of one (subject, predicate) group
        self.believed = f"{facts} subject_id = {ph} AND {believed} AND predicate_id = {ph}"
        self.rows_of_fact = f"{facts} fact_id = {ph} ORDER BY version"
        self.rows_closed_by = f"{facts} closed_by = {ph} AND ns_id = {ph} ORDER BY rowid"
        self.touching_entity = (
            f"{facts} subject_id = {ph} AND {believed} UNION {facts} object_id = {ph} AND {believed} ORDER BY 1"
        )
        # only a version of this very transaction (TxWork.deletes)
        self.delete_fact = f"DELETE FROM facts WHERE rowid = {ph}"
        self.reopen_fact = (f"UPDATE facts SET system_to = {MAX_US}, close_kind = NULL, closed_by = NULL "
                            f"WHERE rowid = {ph}")
        self.insert_fact = f"INSERT INTO facts ({', '.join(INSERT_COLS)}) VALUES {values(len(INSERT_COLS))}"
        self.sources_head = "INSERT INTO fact_sources (fact_id, source, episode_id, recorded_at) VALUES "
        self.source_values = values(4)
        self.insert_source = self.sources_head + self.source_values

        self.insert_entity = (
            f"INSERT INTO entities (ns_id, key, name, type, properties, created_at) VALUES {values(6)}{d.ret('id')}"
        )
        self.insert_entity_key = f"INSERT INTO entity_keys (ns_id, key, entity_id) VALUES {values(3)}"
        self.update_entity = (
            f"UPDATE entities SET type = COALESCE({ph}, type), properties = COALESCE({ph}, properties) WHERE id = {ph}"
        )
        name_key = ("ns_id", "key")
        self.upsert_entity_key = _upsert("entity_keys", ("ns_id", "key", "entity_id", "alias_name"), name_key,
                                         values(4))
        self.insert_predicate = f"INSERT INTO predicates (ns_id, key, name) VALUES {values(3)}"
        self.insert_predicate_key = f"INSERT INTO predicate_keys (ns_id, key, predicate_id) VALUES {values(3)}"
        self.define_predicate = (
            f"UPDATE predicates SET cardinality = {ph}, inverse = {ph}, description = {ph}, declared = 1 "
            f"WHERE id = {ph}"
        )
        self.upsert_predicate_key = _upsert(
            "predicate_keys", ("ns_id", "key", "predicate_id", "alias_name"), name_key, values(4)
        )

        self.record_operation = f"INSERT INTO operations (id, ns_id, kind, at, payload) VALUES {values(5)}"
        self.insert_operation = f"INSERT INTO operations (id, ns_id, kind, at, payload, undone_at) VALUES {values(6)}"
        self.operation = f"SELECT kind, payload, undone_at FROM operations WHERE id = {ph}"
        self.undo_operation = f"UPDATE operations SET undone_at = {ph} WHERE id = {ph}"

        self.facts_of_entity = f"SELECT DISTINCT fact_id FROM facts WHERE subject_id = {ph} OR object_id = {ph}"
        self.erase_fact = f"DELETE FROM facts WHERE fact_id = {ph}"
        self.erase_sources = f"DELETE FROM fact_sources WHERE fact_id = {ph}"
        self.erase_entity_keys = f"DELETE FROM entity_keys WHERE entity_id = {ph}"
        self.erase_entity = f"DELETE FROM entities WHERE id = {ph}"
        # coalescing (no believed version left: folded in for good): the facts
        # folded into a fact, and the fact one was folded into
        folded = (f"f.close_kind = 'coalesced' AND NOT EXISTS "
                  f"(SELECT 1 FROM facts g WHERE g.fact_id = f.fact_id AND g.{believed})")
        self.folded_into = f"SELECT DISTINCT f.fact_id FROM facts f WHERE f.closed_by = {ph} AND {folded}"
        self.coalesced_into = (
            f"SELECT f.closed_by FROM facts f WHERE f.fact_id = {ph} AND {folded} ORDER BY f.version DESC LIMIT 1"
        )
        self.entity_merges = (
            "SELECT id, payload, undone_at FROM operations WHERE kind = 'merge' "
            f"AND ns_id = (SELECT ns_id FROM entities WHERE id = {ph}) ORDER BY at, id"
        )
        self.set_payload = f"UPDATE operations SET payload = {ph} WHERE id = {ph}"
        self.log_erasure = f"INSERT INTO erasures (ns_id, kind, erased_at, versions, reason) VALUES {values(5)}"


class Cursor(Protocol):
    """What the shared primitives use of a driver's cursor."""

    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...


class TxStore(Protocol):
    """What the shared primitives use of the store: the type of
    :attr:`BaseTx.store`, so a transaction module need not import its store
    class (each backend's transaction extends it with what it uses besides).
    The store's name caches reach the transaction apart (:attr:`BaseTx.names`).
    """

    @property
    def capabilities(self) -> Capabilities: ...
    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None: ...


class BaseTx(ABC):
    """The write primitives both backends run alike (see the module docstring)."""

    sql: ClassVar[TxSQL]
    store: TxStore
    names: NameCache
    """The store's name caches: a transaction adds the names it creates and
    forgets the entities it erases, so later reads find them without a
    round trip (the store drops the keys when names change)."""
    now: int
    _new_entities: set[int]

    @property
    def capabilities(self) -> Capabilities:
        """The store's (``Store.capabilities``)."""
        return self.store.capabilities

    # -- hooks ----------------------------------------------------------
    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement in the transaction."""

    @abstractmethod
    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each of ``rows``."""

    @abstractmethod
    def _insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an insert of ``TxSQL`` that ends with the dialect's ``RETURNING``; the new id."""

    @abstractmethod
    def _names_changed(self) -> None:
        """Name keys or predicates changed: drop the name caches and tell
        other connections to drop theirs."""

    @abstractmethod
    def create_predicate(self, ns_id: int, key: str, name: str) -> PredicateRecord: ...

    @abstractmethod
    def _defined_predicate(self, ns_id: int, key: str, predicate_id: int) -> PredicateRecord:
        """The record of a predicate :meth:`define_predicate` just changed."""

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Row]:
        return [Row(*r) for r in self._execute(sql, params)]

    # -- entities -------------------------------------------------------
    def _entity_created(self, ns_id: int, key: str, name: str, entity_id: int) -> int:
        """Cache a new entity's key and name; ``entity_id``."""
        self.names.add_entity(ns_id, key, name, entity_id)
        self._new_entities.add(entity_id)
        return entity_id

    def is_new_entity(self, entity_id: int) -> bool:
        return entity_id in self._new_entities

    def delete_rows(self, rowids: Sequence[int]) -> None:
        self._executemany(self.sql.delete_fact, [(rowid,) for rowid in rowids])

    def reopen_rows(self, rowids: Sequence[int]) -> None:
        self._executemany(self.sql.reopen_fact, [(rowid,) for rowid in rowids])

    def update_entity(self, entity_id: int, type: str | None, properties: str | None) -> None:
        self._execute(self.sql.update_entity, (type, properties, entity_id))

    def add_entity_key(self, ns_id: int, key: str, entity_id: int, alias_name: str | None) -> None:
        self._execute(self.sql.upsert_entity_key, (ns_id, key, entity_id, alias_name))
        self._names_changed()
        self.names.add_entity_key(ns_id, key, entity_id)

    # -- predicates -----------------------------------------------------
    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None:
        cached = self.names.predicate(ns_id, key)
        return cached if cached is not None else self.store.predicate(ns_id, key)

    def define_predicate(
        self,
        ns_id: int,
        key: str,
        name: str,
        cardinality: str,
        inverse: str | None,
        description: str | None,
        aliases: Sequence[tuple[str, str]],
    ) -> PredicateRecord:
        existing = self.store.predicate(ns_id, key)
        pid = self.create_predicate(ns_id, key, name).id if existing is None else existing.id
        self._execute(self.sql.define_predicate, (cardinality, inverse, description, pid))
        for akey, aname in aliases:
            self._execute(self.sql.upsert_predicate_key, (ns_id, akey, pid, aname))
        self._names_changed()
        return self._defined_predicate(ns_id, key, pid)

    # -- fact versions --------------------------------------------------
    def rows_of_fact(self, fact_id: str) -> list[Row]:
        return self._rows(self.sql.rows_of_fact, (fact_id,))

    def rows_closed_by(self, ns_id: int, closed_by: str) -> list[Row]:
        return self._rows(self.sql.rows_closed_by, (closed_by, ns_id))

    def believed_rows_touching_entity(self, entity_id: int) -> list[Row]:
        return self._rows(self.sql.touching_entity, (entity_id, entity_id))

    # -- raw restore (JSONL import, copy) ---------------------------------
    def insert_entity(
        self, ns_id: int, key: str, name: str, type: str | None, properties: str | None, created_at: int
    ) -> int:
        """Insert an entity row as exported (no key row: add keys with :meth:`add_entity_key`)."""
        eid = self._insert_id(self.sql.insert_entity, (ns_id, key, name, type, properties, created_at))
        self._new_entities.add(eid)
        return eid

    def insert_sources(self, items: Sequence[tuple[str, str | None, str | None, int]]) -> None:
        """Insert evidence rows with their original ``recorded_at``."""
        if items:
            self._executemany(self.sql.insert_source, list(items))

    # -- operations and erasure -------------------------------------------
    def record_operation(self, op_id: str, ns_id: int, kind: str, payload: str) -> None:
        self._execute(self.sql.record_operation, (op_id, ns_id, kind, self.now, payload))

    def operation(self, op_id: str) -> tuple[str, str, int | None] | None:
        row = self._execute(self.sql.operation, (op_id,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def mark_operation_undone(self, op_id: str) -> None:
        self._execute(self.sql.undo_operation, (self.now, op_id))

    def insert_operation(self, op_id: str, ns_id: int, kind: str, at: int, payload: str, undone_at: int | None) -> None:
        """Insert an operation as exported, with its original times."""
        self._execute(self.sql.insert_operation, (op_id, ns_id, kind, at, payload, undone_at))

    def coalesced_family(self, fact_id: str) -> list[str]:
        """One statement's facts, the one coalescing kept first: the fact
        ``fact_id`` was folded into (through any chain; else ``fact_id``),
        then every fact folded into that one, directly or through another.
        A folded fact has no believed version, but its closed versions still
        state the statement and its sources were copied to the kept one."""
        root, seen = fact_id, {fact_id}
        while True:
            row = self._execute(self.sql.coalesced_into, (root,)).fetchone()
            if row is None or row[0] is None or str(row[0]) in seen:
                break
            root = str(row[0])
            seen.add(root)
        out, todo = [root], [root]
        while todo:
            for (fid,) in list(self._execute(self.sql.folded_into, (todo.pop(),))):
                if str(fid) not in out:
                    out.append(str(fid))
                    todo.append(str(fid))
        return out

    def erase_fact(self, fact_id: str) -> int:
        """Delete every version of one fact and its extra evidence."""
        n = self._execute(self.sql.erase_fact, (fact_id,)).rowcount
        self._execute(self.sql.erase_sources, (fact_id,))
        return int(n)

    def erase_entity(self, entity_id: int) -> int:
        """Delete an entity, every fact that mentions it and its name keys,
        and so every entity merged into it by a merge still in force: that
        row still holds the folded name, type and properties, and its facts
        and names are this entity's now. A merge whose folded entity is
        erased keeps its record (``unmerge``, exports) without the name keys
        it moved: they were the erased names. Returns the versions deleted."""
        merges = [(str(op), json.loads(payload), undone)
                  for op, payload, undone in self._execute(self.sql.entity_merges, (entity_id,))]
        erased, todo = {entity_id}, [entity_id]
        while todo:
            keep = todo.pop()
            for _op, data, undone in merges:
                fold = int(data["fold"])
                if undone is None and int(data["keep"]) == keep and fold not in erased:
                    erased.add(fold)
                    todo.append(fold)
        n = 0
        for eid in sorted(erased):
            for fid in [str(f) for (f,) in self._execute(self.sql.facts_of_entity, (eid, eid))]:
                n += self.erase_fact(fid)
            self._execute(self.sql.erase_entity_keys, (eid,))
            self._execute(self.sql.erase_entity, (eid,))
            self.names.forget_entity(eid)
        for op, data, _undone in merges:
            if int(data["fold"]) in erased and data.get("keys"):
                self._execute(self.sql.set_payload, (json.dumps({**data, "keys": []}), op))
        self._names_changed()
        return n

    def log_erasure(self, ns_id: int, kind: str, versions: int, reason: str | None) -> None:
        self._execute(self.sql.log_erasure, (ns_id, kind, self.now, versions, reason))
