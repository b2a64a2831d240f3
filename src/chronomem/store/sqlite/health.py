"""SQLite's half of :class:`~chronomem.store.sql.health.HealthMixin`: its
statements and the file's own checks (``integrity_check``, ``foreign_key_check``)."""

from __future__ import annotations

from typing import ClassVar

from ..sql.dialect import SQLITE
from ..sql.health import HealthMixin, HealthSQL
from . import lexstats

__all__ = ["SQLiteHealthMixin"]


class SQLiteHealthMixin(HealthMixin):
    health_sql: ClassVar[HealthSQL] = HealthSQL(SQLITE, "length(v.vector) <> m.dim")
    migrations_folder: ClassVar[str] = "sqlite"

    def _integrity(self) -> tuple[str, ...] | None:
        checks, keys = self._fetch(("PRAGMA integrity_check", ()), ("PRAGMA foreign_key_check", ()))
        found = [str(r[0]) for r in checks if str(r[0]) != "ok"]
        found += [f"foreign key: row {r[1]} of {r[0]} names a missing row of {r[2]}" for r in keys]
        return tuple(found)

    def _lexical_counts(self, ns_id: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
        kept_rows, rows = self._fetch((lexstats.KEPT, (ns_id,)),
                                      (lexstats.INDEX_ROWS + " WHERE e.ns_id = ?", (ns_id,)))
        kept = lexstats.kept(kept_rows)
        counted = lexstats.totals(rows).get(ns_id, (0, 0))
        return None if kept == counted else (kept, counted)

    def recount_lexical(self) -> int:
        with self.write() as tx:
            return lexstats.recount(tx.con)

