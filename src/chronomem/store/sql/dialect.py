"""What the shared SQL needs to know of a backend's SQL: one :class:`Dialect`
per backend (:data:`SQLITE`, :data:`POSTGRES`), handed to the statement
builders of this package instead of loose strings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

__all__ = ["POSTGRES", "SQLITE", "Dialect"]


@dataclass(frozen=True)
class Dialect:
    """How one backend writes what the shared statements differ in."""

    ph: str
    """The driver's parameter placeholder."""
    false: str
    """An always-false condition."""
    returning: bool
    """An insert reports its new key with ``RETURNING`` (else the driver
    reports it, as SQLite's ``lastrowid``)."""
    insert_order: str
    """The column that orders a table's rows as inserted (SQLite's implicit
    ``rowid``, PostgreSQL's serial ``id``)."""
    array_in: bool
    """A list of values binds as one array parameter (``= ANY(%s)``); else
    as one parameter per value (``IN (?, ?)``), so long lists are cut."""

    def values(self, n: int) -> str:
        """``(ph, ph, ...)`` for a row of ``n`` values."""
        return "(" + ", ".join([self.ph] * n) + ")"

    def ret(self, column: str) -> str:
        """What ends an insert whose caller needs the new ``column``."""
        return f" RETURNING {column}" if self.returning else ""

    def is_in(self, column: str, values: Sequence[Any], params: list[Any], pad: bool = False) -> str:
        """The condition that ``column`` is one of ``values``; appends its
        parameters to ``params``. ``pad``: a list of placeholders is padded
        with NULLs (which match nothing) to a power of two, so a read of
        lists of many lengths has a few statement texts, which the
        connection's statement cache keeps."""
        if len(values) == 1:
            params.append(values[0])
            return f"{column} = {self.ph}"
        if self.array_in:
            params.append(list(values))
            return f"{column} = ANY({self.ph})"
        width = 1 << (len(values) - 1).bit_length() if pad else len(values)
        params.extend(values)
        params.extend([None] * (width - len(values)))
        return f"{column} IN ({','.join([self.ph] * width)})"

    def chunks(self, values: Sequence[Any], size: int) -> list[Sequence[Any]]:
        """``values`` cut into lists one statement can bind (at most ``size``
        where each value is a parameter)."""
        if self.array_in:
            return [values]
        return [values[start:start + size] for start in range(0, len(values), size)]


SQLITE = Dialect(ph="?", false="0", returning=False, insert_order="rowid", array_in=False)
POSTGRES = Dialect(ph="%s", false="false", returning=True, insert_order="id", array_in=True)
