"""PostgreSQL's half of :class:`~chronomem.store.sql.health.HealthMixin`: its
statements (the server keeps its own pages consistent: no file check)."""

from __future__ import annotations

from typing import ClassVar

from ..sql.dialect import POSTGRES
from ..sql.health import HealthMixin, HealthSQL

__all__ = ["PgHealthMixin"]


class PgHealthMixin(HealthMixin):
    health_sql: ClassVar[HealthSQL] = HealthSQL(POSTGRES, "octet_length(v.vector) <> m.dim")
    migrations_folder: ClassVar[str] = "postgres"
