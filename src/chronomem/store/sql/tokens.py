"""Access tokens (migration 0011): the statements both backends run alike.

A store mixes in :class:`TokenReadsMixin` (reads through its ``_fetch``) and
its write transaction :class:`TokenTxMixin` (through ``_execute``), each
with ``token_sql = TokenSQL(its dialect)``. Only a token's SHA-256 is ever
stored (``token_hash``); this module never sees the token itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Sequence

from ..protocol import TokenRecord
from .dialect import Dialect

__all__ = ["TokenReadsMixin", "TokenSQL", "TokenTxMixin"]

_COLS = "id, name, token_hash, scopes, namespaces, created_at, last_used_at, expires_at, revoked_at"


def _rec(r: Sequence[Any]) -> TokenRecord:
    return TokenRecord(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5]),
                       None if r[6] is None else int(r[6]), None if r[7] is None else int(r[7]),
                       None if r[8] is None else int(r[8]))


class TokenSQL:
    """The token statements in dialect ``d``."""

    def __init__(self, d: Dialect) -> None:
        ph = d.ph
        self.all = f"SELECT {_COLS} FROM tokens ORDER BY name"
        self.by_hash = f"SELECT {_COLS} FROM tokens WHERE token_hash = {ph}"
        self.by_name = f"SELECT {_COLS} FROM tokens WHERE name = {ph}"
        self.live = (f"SELECT 1 FROM tokens WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > {ph}) "
                     "LIMIT 1")
        self.insert = (
            "INSERT INTO tokens (name, token_hash, scopes, namespaces, created_at, expires_at) "
            f"VALUES {d.values(6)}{d.ret('id')}"
        )
        self.revoke = f"UPDATE tokens SET revoked_at = {ph} WHERE name = {ph} AND revoked_at IS NULL"
        # only moves forward, so two servers touching at once leave the later time
        self.touch = (f"UPDATE tokens SET last_used_at = {ph} WHERE id = {ph} "
                      f"AND (last_used_at IS NULL OR last_used_at <= {ph})")


class TokenReadsMixin(ABC):
    """A store's token reads."""

    token_sql: ClassVar[TokenSQL]

    @abstractmethod
    def _fetch(self, *queries: tuple[str, Sequence[Any]]) -> list[list[tuple[Any, ...]]]: ...

    def tokens(self) -> list[TokenRecord]:
        (rows,) = self._fetch((self.token_sql.all, ()))
        return [_rec(r) for r in rows]

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        (rows,) = self._fetch((self.token_sql.by_hash, (token_hash,)))
        return _rec(rows[0]) if rows else None

    def token_by_name(self, name: str) -> TokenRecord | None:
        (rows,) = self._fetch((self.token_sql.by_name, (name,)))
        return _rec(rows[0]) if rows else None

    def live_tokens_exist(self, now: int) -> bool:
        (rows,) = self._fetch((self.token_sql.live, (now,)))
        return bool(rows)


class TokenTxMixin(ABC):
    """A write transaction's token writes."""

    token_sql: ClassVar[TokenSQL]

    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    @abstractmethod
    def _insert_id(self, sql: str, params: Sequence[Any]) -> int: ...

    def token_by_name(self, name: str) -> TokenRecord | None:
        row = self._execute(self.token_sql.by_name, (name,)).fetchone()
        return _rec(row) if row else None

    def insert_token(self, name: str, token_hash: str, scopes: str, namespaces: str, created_at: int,
                     expires_at: int | None) -> int:
        return self._insert_id(self.token_sql.insert, (name, token_hash, scopes, namespaces, created_at, expires_at))

    def revoke_token(self, name: str, at: int) -> bool:
        return bool(self._execute(self.token_sql.revoke, (at, name)).rowcount)

    def touch_token(self, token_id: int, at: int, before: int) -> None:
        self._execute(self.token_sql.touch, (at, token_id, before))
