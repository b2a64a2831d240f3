"""SQLite's half of :class:`~chronomem.store.sql.health.HealthMixin`: its
statements and the file's own checks (``integrity_check``, ``foreign_key_check``)."""

from __future__ import annotations

from typing import ClassVar

from ..sql.dialect import SQLITE
from ..sql.health import HealthMixin, HealthSQL

__all__ = ["SQLiteHealthMixin"]


class SQLiteHealthMixin(HealthMixin):
    health_sql: ClassVar[HealthSQL] = HealthSQL(SQLITE, "length(v.vector) <> m.dim")
    migrations_folder: ClassVar[str] = "sqlite"

    def _integrity(self) -> tuple[str, ...] | None:
        checks, keys = self._fetch(("PRAGMA integrity_check", ()), ("PRAGMA foreign_key_check", ()))
        found = [str(r[0]) for r in checks if str(r[0]) != "ok"]
        found += [f"foreign key: row {r[1]} of {r[0]} names a missing row of {r[2]}" for r in keys]
        return tuple(found)
