"""The SQLite write transaction (:class:`SQLiteTx`) and the background WAL
checkpointer, split out of :mod:`chronomem.store.sqlite`."""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING, Any, Sequence

from ..timeutil import MAX_US
from .base import FACT_COLUMNS, PredicateRecord, Row
from .sqlite_episodes import EpisodeTxMixin

if TYPE_CHECKING:  # pragma: no cover
    from .sqlite import SQLiteStore

__all__ = ["SQLiteTx"]

log = logging.getLogger("chronomem.store.sqlite")

_RAW_COLS = ", ".join(FACT_COLUMNS)
_INSERT_FACT = (
    "INSERT INTO facts (fact_id, version, ns_id, subject_id, predicate_id, object_id, object_lit, "
    "valid_from, valid_from_prec, valid_to, valid_to_prec, system_from, system_to, confidence, "
    "source, episode_id, properties, invalidated_by, close_kind, closed_by) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


class SQLiteTx(EpisodeTxMixin):
    """Write primitives bound to an open ``BEGIN IMMEDIATE`` transaction."""

    def __init__(self, store: SQLiteStore, now: int) -> None:
        self.store = store
        self.con = store._con
        self.now = now
        self._new_entities: set[int] = set()
        self._names_bumped = False

    def _names_changed(self) -> None:
        """Keys or predicates changed: drop this process's name caches and
        bump ``meta.names_version`` so other connections drop theirs."""
        self.store.drop_name_caches()
        if not self._names_bumped:
            self.con.execute(
                "INSERT INTO meta (key, value) VALUES ('names_version', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )
            self._names_bumped = True

    # -- shared writes (one writer at a time here: nothing to lock) -------
    def reserve_names(self, ns_id: int, entities: Sequence[object], predicates: Sequence[object]) -> None:
        return None

    def lock_groups(self, groups: Sequence[tuple[int, int]]) -> None:
        return None

    # -- entities -------------------------------------------------------
    def entity_id(self, ns_id: int, key: str) -> int | None:
        return self.store._entity_id(ns_id, key)

    def create_entity(self, ns_id: int, key: str, name: str, type: str | None, properties: str | None) -> int:
        cur = self.con.execute(
            "INSERT INTO entities (ns_id, key, name, type, properties, created_at) VALUES (?,?,?,?,?,?)",
            (ns_id, key, name, type, properties, self.now),
        )
        eid = int(cur.lastrowid or 0)
        self.con.execute("INSERT INTO entity_keys (ns_id, key, entity_id) VALUES (?,?,?)", (ns_id, key, eid))
        self.store._names[eid] = name
        self.store._entity_cache[(ns_id, key)] = eid
        self._new_entities.add(eid)
        return eid

    def is_new_entity(self, entity_id: int) -> bool:
        return entity_id in self._new_entities

    def update_entity(self, entity_id: int, type: str | None, properties: str | None) -> None:
        self.con.execute(
            "UPDATE entities SET type = COALESCE(?, type), properties = COALESCE(?, properties) WHERE id = ?",
            (type, properties, entity_id),
        )

    def add_entity_key(self, ns_id: int, key: str, entity_id: int, alias_name: str | None) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO entity_keys (ns_id, key, entity_id, alias_name) VALUES (?,?,?,?)",
            (ns_id, key, entity_id, alias_name),
        )
        self._names_changed()
        self.store._entity_cache[(ns_id, key)] = entity_id

    def move_entity_keys(self, from_id: int, to_id: int) -> list[str]:
        keys = [k for (k,) in self.con.execute("SELECT key FROM entity_keys WHERE entity_id = ?", (from_id,))]
        self.con.execute("UPDATE entity_keys SET entity_id = ? WHERE entity_id = ?", (to_id, from_id))
        self._names_changed()
        return keys

    def set_entity_keys(self, ns_id: int, keys: Sequence[str], entity_id: int) -> None:
        self.con.executemany(
            "UPDATE entity_keys SET entity_id = ? WHERE ns_id = ? AND key = ?",
            [(entity_id, ns_id, k) for k in keys],
        )
        self._names_changed()

    # -- predicates -----------------------------------------------------
    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None:
        cached = self.store._pred_cache.get((ns_id, key))
        return cached if cached is not None else self.store.predicate(ns_id, key)

    def create_predicate(self, ns_id: int, key: str, name: str) -> PredicateRecord:  # noqa: D102
        cur = self.con.execute(
            "INSERT INTO predicates (ns_id, key, name) VALUES (?,?,?)", (ns_id, key, name)
        )
        pid = int(cur.lastrowid or 0)
        self.con.execute("INSERT INTO predicate_keys (ns_id, key, predicate_id) VALUES (?,?,?)", (ns_id, key, pid))
        rec = PredicateRecord(pid, ns_id, key, name, "many", None, None, False)
        self.store._pred_cache[(ns_id, key)] = rec
        return rec

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
        if existing is None:
            pid = self.create_predicate(ns_id, key, name).id
        else:
            pid = existing.id
        self.con.execute(
            "UPDATE predicates SET cardinality = ?, inverse = ?, description = ?, declared = 1 WHERE id = ?",
            (cardinality, inverse, description, pid),
        )
        for akey, aname in aliases:
            self.con.execute(
                "INSERT OR REPLACE INTO predicate_keys (ns_id, key, predicate_id, alias_name) VALUES (?,?,?,?)",
                (ns_id, akey, pid, aname),
            )
        self._names_changed()
        rec = self.store.predicate(ns_id, key)
        assert rec is not None
        return rec

    # -- fact versions --------------------------------------------------
    def believed_rows(self, subject_id: int, predicate_id: int) -> list[Row]:
        cur = self.con.execute(
            f"SELECT {_RAW_COLS} FROM facts WHERE subject_id = ? AND system_to = {MAX_US} AND predicate_id = ?",
            (subject_id, predicate_id),
        )
        return [Row(*r) for r in cur]

    def rows_of_fact(self, fact_id: str) -> list[Row]:
        cur = self.con.execute(f"SELECT {_RAW_COLS} FROM facts WHERE fact_id = ? ORDER BY version", (fact_id,))
        return [Row(*r) for r in cur]

    def rows_closed_by(self, ns_id: int, closed_by: str) -> list[Row]:
        cur = self.con.execute(
            f"SELECT {_RAW_COLS} FROM facts WHERE closed_by = ? AND ns_id = ? ORDER BY rowid", (closed_by, ns_id)
        )
        return [Row(*r) for r in cur]

    def believed_rows_touching_entity(self, entity_id: int) -> list[Row]:
        cur = self.con.execute(
            f"SELECT {_RAW_COLS} FROM facts WHERE subject_id = ? AND system_to = {MAX_US} "
            f"UNION SELECT {_RAW_COLS} FROM facts WHERE object_id = ? AND system_to = {MAX_US} ORDER BY 1",
            (entity_id, entity_id),
        )
        return [Row(*r) for r in cur]

    def insert_rows(self, rows: Sequence[Row]) -> None:
        self.con.executemany(
            _INSERT_FACT,
            [
                (
                    r.fact_id, r.version, r.ns_id, r.subject_id, r.predicate_id, r.object_id, r.object_lit,
                    r.vf, r.vf_prec, r.vt, r.vt_prec, r.sf, r.st, r.confidence, r.source, r.episode_id,
                    r.properties, r.invalidated_by, r.close_kind, r.closed_by,
                )
                for r in rows
            ],
        )

    def close_rows(self, closes: Sequence[tuple[int, str, str | None]]) -> None:
        self.con.executemany(
            f"UPDATE facts SET system_to = ?, close_kind = ?, closed_by = ? WHERE rowid = ? AND system_to = {MAX_US}",
            [(self.now, kind, by, rowid) for rowid, kind, by in closes],
        )

    def add_sources(self, items: Sequence[tuple[str, str | None, str | None]]) -> None:
        self.con.executemany(
            "INSERT INTO fact_sources (fact_id, source, episode_id, recorded_at) VALUES (?,?,?,?)",
            [(fid, src, ep, self.now) for fid, src, ep in items],
        )

    # -- raw restore (JSONL import) --------------------------------------
    def insert_entity(
        self, ns_id: int, key: str, name: str, type: str | None, properties: str | None, created_at: int
    ) -> int:
        """Insert an entity row as exported (no key row: add keys with :meth:`add_entity_key`)."""
        cur = self.con.execute(
            "INSERT INTO entities (ns_id, key, name, type, properties, created_at) VALUES (?,?,?,?,?,?)",
            (ns_id, key, name, type, properties, created_at),
        )
        eid = int(cur.lastrowid or 0)
        self._new_entities.add(eid)
        return eid

    def insert_sources(self, items: Sequence[tuple[str, str | None, str | None, int]]) -> None:
        """Insert evidence rows with their original ``recorded_at``."""
        self.con.executemany(
            "INSERT INTO fact_sources (fact_id, source, episode_id, recorded_at) VALUES (?,?,?,?)", list(items)
        )

    def note_system_time(self, us: int) -> None:
        """Make later transactions start after ``us`` (imported system times)."""
        if us > self.store.last_system_time():
            self.con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_system_time', ?)", (str(us),))
            self.store._last_sys = us

    def record_operation(self, op_id: str, ns_id: int, kind: str, payload: str) -> None:
        self.con.execute(
            "INSERT INTO operations (id, ns_id, kind, at, payload) VALUES (?,?,?,?,?)",
            (op_id, ns_id, kind, self.now, payload),
        )

    def operation(self, op_id: str) -> tuple[str, str, int | None] | None:
        row = self.con.execute("SELECT kind, payload, undone_at FROM operations WHERE id = ?", (op_id,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def mark_operation_undone(self, op_id: str) -> None:
        self.con.execute("UPDATE operations SET undone_at = ? WHERE id = ?", (self.now, op_id))

    def insert_operation(self, op_id: str, ns_id: int, kind: str, at: int, payload: str, undone_at: int | None) -> None:
        """Insert an operation as exported, with its original times."""
        self.con.execute(
            "INSERT INTO operations (id, ns_id, kind, at, payload, undone_at) VALUES (?,?,?,?,?,?)",
            (op_id, ns_id, kind, at, payload, undone_at),
        )

    def erase_fact(self, fact_id: str) -> int:
        n = self.con.execute("DELETE FROM facts WHERE fact_id = ?", (fact_id,)).rowcount
        self.con.execute("DELETE FROM fact_sources WHERE fact_id = ?", (fact_id,))
        return int(n)

    def erase_entity(self, entity_id: int) -> int:
        ids = [
            fid
            for (fid,) in self.con.execute(
                "SELECT DISTINCT fact_id FROM facts WHERE subject_id = ? OR object_id = ?", (entity_id, entity_id)
            )
        ]
        n = 0
        for fid in ids:
            n += self.erase_fact(fid)
        self.con.execute("DELETE FROM entity_keys WHERE entity_id = ?", (entity_id,))
        self.con.execute("DELETE FROM entities WHERE id = ?", (entity_id,))
        self._names_changed()
        self.store._names.pop(entity_id, None)
        return n

    def log_erasure(self, ns_id: int, kind: str, versions: int, reason: str | None) -> None:
        self.con.execute(
            "INSERT INTO erasures (ns_id, kind, erased_at, versions, reason) VALUES (?,?,?,?,?)",
            (ns_id, kind, self.now, versions, reason),
        )


class _Checkpointer:
    """Copies the WAL into the database file from a background thread.

    Runs ``PRAGMA wal_checkpoint(PASSIVE)`` (never blocks writers) whenever
    the WAL has grown, at most every ``interval`` seconds, and ``TRUNCATE``
    on stop. Commits therefore never pay for the checkpoint's fsync.
    """

    def __init__(self, path: str, busy_ms: int, interval: float = 0.5, min_pages: int = 256) -> None:
        self._path = path
        self._busy_ms = busy_ms
        self._interval = interval
        self._min_pages = min_pages
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chronomem-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            con = sqlite3.connect(self._path, timeout=self._busy_ms / 1000, isolation_level=None,
                                  check_same_thread=False)
        except sqlite3.Error as exc:  # pragma: no cover
            log.warning("checkpoint thread could not open %s: %s", self._path, exc)
            return
        try:
            while not self._stop.wait(self._interval):
                try:
                    busy, log_pages, done = con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if log_pages >= self._min_pages * 64:
                        con.execute("PRAGMA wal_checkpoint(RESTART)")
                except sqlite3.Error as exc:
                    log.debug("checkpoint skipped: %s", exc)
            try:
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:  # pragma: no cover
                log.debug("final checkpoint skipped: %s", exc)
        finally:
            con.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _in(column: str, values: Sequence[Any]) -> str:
    if len(values) == 1:
        return f"{column} = ?"
    return f"{column} IN ({','.join('?' * len(values))})"


def _split_sql(script: str) -> list[str]:
    statements: list[str] = []
    buf: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") or not stripped:
            continue
        buf.append(line)
        if stripped.endswith(";"):
            stmt = "\n".join(buf).strip().rstrip(";")
            if sqlite3.complete_statement(stmt + ";"):
                statements.append(stmt)
                buf = []
    if buf:
        statements.append("\n".join(buf))
    return statements
