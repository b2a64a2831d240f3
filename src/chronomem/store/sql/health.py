"""The store's half of ``chronomem doctor``: the checks only SQL can make
(the backend's own consistency check, migrations, lexical index rows and
vectors against their episodes) and the one repair of derived rows the
services cannot ask for otherwise (dropping index rows and vectors whose
episode is erased or gone). Times and JSON are checked by the service over
the ordinary reads (:mod:`chronomem.service.doctor`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol, Sequence

from ..migrations import load_migrations
from ..protocol import StoreHealth
from .dialect import Dialect

__all__ = ["HealthMixin", "HealthSQL"]

# an episode that still owns its derived rows: present and not erased
_LIVE = "SELECT 1 FROM episodes e WHERE e.rowid = {col} AND e.erased_at IS NULL"


class HealthSQL:
    """The statements of :class:`HealthMixin` for one dialect; ``vector_len``
    is the SQL that compares a stored vector's length with ``m.dim``."""

    def __init__(self, d: Dialect, vector_len_mismatch: str) -> None:
        ph = d.ph
        self.lexical_missing = (
            f"SELECT e.rowid FROM episodes e WHERE e.ns_id = {ph} AND e.erased_at IS NULL "
            "AND NOT EXISTS (SELECT 1 FROM episodes_fts f WHERE f.rowid = e.rowid) ORDER BY e.rowid"
        )
        self.lexical_orphans = (
            f"SELECT f.rowid FROM episodes_fts f WHERE NOT EXISTS ({_LIVE.format(col='f.rowid')}) ORDER BY f.rowid"
        )
        live_vector = _LIVE.format(col="v.episode_rowid") + " AND e.ns_id = v.ns_id"
        self.vector_orphans = (
            "SELECT m.name, v.episode_rowid FROM episode_vectors v JOIN embedding_models m ON m.id = v.model_id "
            f"WHERE NOT EXISTS ({live_vector}) ORDER BY m.name, v.episode_rowid"
        )
        self.vector_bad_dim = (
            "SELECT m.name, v.episode_rowid FROM episode_vectors v JOIN embedding_models m ON m.id = v.model_id "
            f"WHERE v.ns_id = {ph} AND {vector_len_mismatch} ORDER BY m.name, v.episode_rowid"
        )
        self.delete_vector_orphans = f"DELETE FROM episode_vectors AS v WHERE NOT EXISTS ({live_vector})"


class _PruneTx(Protocol):
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
    def delete_episode_index(self, rowid: int) -> None: ...
    def compact_episode_index(self) -> None: ...
    def bump_episode_generation(self) -> None: ...


class HealthMixin(ABC):
    """``health`` and ``prune_derived`` of :class:`~chronomem.store.protocol.EpisodeStore`,
    mixed into both stores."""

    health_sql: ClassVar[HealthSQL]
    migrations_folder: ClassVar[str]

    @abstractmethod
    def _fetch(self, *queries: tuple[str, Sequence[Any]]) -> list[list[tuple[Any, ...]]]: ...

    @abstractmethod
    def schema_version(self) -> int: ...

    @abstractmethod
    def write(self, *, shared: bool = False) -> AbstractContextManager[Any]: ...

    def _integrity(self) -> tuple[str, ...] | None:
        """The backend's own check: its complaints, ``None`` if it has none."""
        return None

    def _lexical_counts(self, ns_id: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """The namespace's kept BM25 statistics and a recount, when they
        differ (a backend that keeps none: ``None``)."""
        return None

    def recount_lexical(self) -> int:
        """Count every namespace's kept BM25 statistics again; the index rows
        counted (0: this backend keeps none, PostgreSQL counts in SQL)."""
        return 0

    def health(self, ns_id: int) -> StoreHealth:
        q = self.health_sql
        missing, orphans, vec_orphans, bad_dim = self._fetch(
            (q.lexical_missing, (ns_id,)), (q.lexical_orphans, ()), (q.vector_orphans, ()),
            (q.vector_bad_dim, (ns_id,)),
        )
        return StoreHealth(
            integrity=self._integrity(),
            schema_version=self.schema_version(),
            latest_schema=max(n for n, _name, _sql in load_migrations(self.migrations_folder)),
            lexical_missing=tuple(int(r[0]) for r in missing),
            lexical_orphans=tuple(int(r[0]) for r in orphans),
            vector_orphans=tuple((str(r[0]), int(r[1])) for r in vec_orphans),
            vector_bad_dim=tuple((str(r[0]), int(r[1])) for r in bad_dim),
            lexical_counts=self._lexical_counts(ns_id),
        )

    def prune_derived(self) -> tuple[int, int]:
        q = self.health_sql
        with self.write() as tx:
            ptx: _PruneTx = tx
            rowids = [int(r[0]) for r in ptx._execute(q.lexical_orphans).fetchall()]
            for rowid in rowids:
                ptx.delete_episode_index(rowid)
            vectors = int(ptx._execute(q.delete_vector_orphans).rowcount or 0)
            if rowids:
                ptx.compact_episode_index()  # drop the deleted terms the index still keeps
            if vectors:
                ptx.bump_episode_generation()  # vector caches reload
        return len(rowids), vectors
