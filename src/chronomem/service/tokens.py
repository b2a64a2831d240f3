"""Access tokens for ``chronomem serve``: create, list, revoke, authenticate.

A token is ``cm_`` plus 43 characters of ``secrets.token_urlsafe(32)`` (256
random bits), shown once by :meth:`Tokens.create` and never stored: the
store keeps its SHA-256 (``tokens.token_hash``, migration 0011), its name,
scopes, namespaces and times. :meth:`Tokens.authenticate` hashes what a
request carries, finds the row by that hash (a unique index) and compares
the hashes again with :func:`hmac.compare_digest`. Looking up by the hash
rather than by the token means a lookup's timing can tell an attacker about
a SHA-256 value at most, which says nothing about any token; the
constant-time compare guards the one comparison made in Python.

Scopes are levels: ``read`` (every read), ``write`` (read and every write),
``admin`` (write and managing tokens over the API). A token names one or more
namespaces; ``"*"`` (every namespace) only with ``admin``, said explicitly.
``last_used_at`` is written at most once a minute per token (:data:`TOUCH_EVERY`),
so reads do not turn into a write each. Nothing is cached: a revoke or an
expiry takes effect on the next request.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..core.limits import MAX_NAMESPACE_CHARS, check_text
from ..core.time import TimeLike, from_us
from ..errors import AuthenticationError, ConflictError, ForbiddenError, InvalidInputError, NotFoundError
from ..store.protocol import TokenRecord
from .scope import Scope

__all__ = ["ALL_NAMESPACES", "PREFIX", "SCOPES", "TOUCH_EVERY", "CreatedToken", "Principal", "TokenInfo", "Tokens",
           "hash_token"]

#: the scopes, lowest first; each includes the ones before it
SCOPES = ("read", "write", "admin")
#: what every token starts with, so a leaked one is recognisable (secret scanners, logs)
PREFIX = "cm_"
#: a token for every namespace (admin only)
ALL_NAMESPACES = "*"
#: ``last_used_at`` is updated at most this often per token (microseconds)
TOUCH_EVERY = 60_000_000

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_SHAPE = re.compile(r"cm_[A-Za-z0-9_-]{43}")


def hash_token(token: str) -> str:
    """The SHA-256 (hex) a token is stored and looked up by."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _levels(scopes: Iterable[str]) -> tuple[str, ...]:
    """Every scope that ``scopes`` grant (``write`` grants ``read`` too), in level order."""
    top = max((SCOPES.index(s) for s in scopes), default=-1)
    return SCOPES[:top + 1]


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: a token's ``name``, the ``namespaces`` it may
    use (``("*",)``: all) and its ``scopes`` (every level it grants)."""

    name: str
    namespaces: tuple[str, ...]
    scopes: tuple[str, ...]

    def has(self, scope: str) -> bool:
        return scope in self.scopes

    def allows(self, namespace: str) -> bool:
        return ALL_NAMESPACES in self.namespaces or namespace in self.namespaces

    def require(self, scope: str, what: str) -> None:
        """Raise :class:`ForbiddenError` unless this principal has ``scope``."""
        if not self.has(scope):
            raise ForbiddenError(f"{what} needs the {scope!r} scope; the token {self.name!r} has "
                                 f"{', '.join(self.scopes) or 'none'}")

    def require_namespace(self, namespace: str) -> None:
        if not self.allows(namespace):
            raise ForbiddenError(f"the token {self.name!r} may not use namespace {namespace!r} "
                                 f"(it may use: {', '.join(self.namespaces)})")

    def manages(self, namespaces: Sequence[str]) -> bool:
        """Whether this (admin) principal may create, list or revoke a token for ``namespaces``."""
        if not self.has("admin"):
            return False
        if ALL_NAMESPACES in self.namespaces:
            return True
        return ALL_NAMESPACES not in namespaces and all(ns in self.namespaces for ns in namespaces)


@dataclass(frozen=True)
class TokenInfo:
    """What :meth:`Tokens.list` shows of a token (never the token)."""

    name: str
    namespaces: tuple[str, ...]
    scopes: tuple[str, ...]
    created_at: _dt.datetime
    last_used_at: _dt.datetime | None
    expires_at: _dt.datetime | None
    revoked_at: _dt.datetime | None
    status: str  # "active", "expired" or "revoked" (when listed)

    def to_dict(self) -> dict[str, Any]:
        def iso(v: _dt.datetime | None) -> str | None:
            return None if v is None else v.isoformat().replace("+00:00", "Z")

        return {"name": self.name, "namespaces": list(self.namespaces), "scopes": list(self.scopes),
                "status": self.status, "created_at": iso(self.created_at), "last_used_at": iso(self.last_used_at),
                "expires_at": iso(self.expires_at), "revoked_at": iso(self.revoked_at)}


@dataclass(frozen=True)
class CreatedToken:
    """A new token: ``token`` is the secret, shown this once."""

    token: str
    info: TokenInfo

    def to_dict(self) -> dict[str, Any]:
        d = self.info.to_dict()
        return {"token": self.token, "name": d["name"], "namespace": d["namespaces"][0],
                "namespaces": d["namespaces"], "scopes": d["scopes"], "expires_at": d["expires_at"]}


def _info(rec: TokenRecord, now: int) -> TokenInfo:
    status = ("revoked" if rec.revoked_at is not None
              else "expired" if rec.expires_at is not None and rec.expires_at <= now else "active")
    return TokenInfo(rec.name, tuple(json.loads(rec.namespaces)), tuple(json.loads(rec.scopes)),
                     from_us(rec.created_at), None if rec.last_used_at is None else from_us(rec.last_used_at),
                     None if rec.expires_at is None else from_us(rec.expires_at),
                     None if rec.revoked_at is None else from_us(rec.revoked_at), status)


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInputError(f"name must be 1-64 letters, digits or . _ @ - (starting with a letter or digit), "
                                f"not {name!r}")
    return name


def _check_scopes(scope: object) -> tuple[str, ...]:
    given = [scope] if isinstance(scope, str) else scope
    if not isinstance(given, (list, tuple)) or not given or not all(isinstance(s, str) for s in given):
        raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)} (or a list of them), not {scope!r}")
    bad = [s for s in given if s not in SCOPES]
    if bad:
        raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}, not {bad[0]!r}")
    return _levels(given)


def _check_namespaces(namespace: object, scopes: Sequence[str]) -> tuple[str, ...]:
    given = [namespace] if isinstance(namespace, str) else namespace
    if not isinstance(given, (list, tuple)) or not given:
        raise InvalidInputError(f"namespace must be a namespace name or a list of them, not {namespace!r}")
    out: list[str] = []
    for ns in given:
        if not isinstance(ns, str) or not ns.strip():
            raise InvalidInputError(f"namespace must be a non-empty string, not {ns!r}")
        check_text(ns, "namespace", MAX_NAMESPACE_CHARS)
        if ns not in out:
            out.append(ns)
    if ALL_NAMESPACES in out:
        if "admin" not in scopes:
            raise InvalidInputError("namespace '*' (every namespace) is only for a token with the admin scope")
        out = [ALL_NAMESPACES]
    return tuple(out)


class Tokens:
    """The store's access tokens (store-wide, whatever namespace ``scope`` is on);
    times are read with ``scope``'s clock and timezone."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    @property
    def _store(self) -> Any:
        return self._scope.store

    def create(self, name: str, namespace: str | Sequence[str], scope: str | Sequence[str] = "read", *,
               expires: TimeLike | None = None) -> CreatedToken:
        """A new token ``name`` for ``namespace`` (one or several) with
        ``scope`` (``read``, ``write`` or ``admin``; each includes the lower
        ones). ``expires`` takes an ISO time or a phrase (``"in 30 days"``,
        ``"next month"``) and must be in the future. Returns the token, which
        is stored nowhere and cannot be shown again."""
        _check_name(name)
        scopes = _check_scopes(scope)
        namespaces = _check_namespaces(namespace, scopes)
        now = self._scope.now_us()
        expires_at = None
        if expires is not None:
            expires_at = self._scope.resolve_time(expires, "expires", now=from_us(now)).point.us
            if expires_at <= now:
                raise InvalidInputError(f"expires must be in the future, not {expires!r}")
        token = PREFIX + secrets.token_urlsafe(32)
        with self._store.write() as tx:
            if tx.token_by_name(name) is not None:
                raise ConflictError(f"a token named {name!r} exists (revoked tokens keep their name); "
                                    "choose another name")
            tx.insert_token(name, hash_token(token), json.dumps(list(scopes)), json.dumps(list(namespaces)),
                            now, expires_at)
        rec = self._store.token_by_name(name)
        assert rec is not None
        return CreatedToken(token, _info(rec, now))

    def list(self) -> list[TokenInfo]:
        """Every token, revoked and expired ones included, by name."""
        now = self._scope.now_us()
        return [_info(rec, now) for rec in self._store.tokens()]

    def get(self, name: str) -> TokenInfo:
        rec = self._store.token_by_name(_check_name(name))
        if rec is None:
            raise NotFoundError(f"no token named {name!r}")
        return _info(rec, self._scope.now_us())

    def revoke(self, name: str) -> TokenInfo:
        """Revoke ``name`` at once (the row stays, ``revoked_at`` set);
        revoking a revoked token changes nothing."""
        _check_name(name)
        with self._store.write() as tx:
            if tx.token_by_name(name) is None:
                raise NotFoundError(f"no token named {name!r}")
            tx.revoke_token(name, self._scope.now_us())
        return self.get(name)

    def any_active(self) -> bool:
        """Whether some token is neither revoked nor expired: then a server
        asks every request for one."""
        return bool(self._store.live_tokens_exist(self._scope.now_us()))

    def authenticate(self, token: str) -> Principal:
        """The principal of ``token``; :class:`AuthenticationError` when it is
        unknown, revoked or expired (the message says which, never the token)."""
        if not isinstance(token, str) or not _SHAPE.fullmatch(token):
            raise AuthenticationError("the bearer token is not a chronomem token")
        digest = hash_token(token)
        rec = self._store.token_by_hash(digest)
        if rec is None or not hmac.compare_digest(rec.token_hash, digest):
            raise AuthenticationError("the bearer token is unknown")
        now = self._scope.now_us()
        if rec.revoked_at is not None:
            raise AuthenticationError(f"the token {rec.name!r} was revoked")
        if rec.expires_at is not None and rec.expires_at <= now:
            raise AuthenticationError(f"the token {rec.name!r} expired")
        if rec.last_used_at is None or rec.last_used_at <= now - TOUCH_EVERY:
            with self._store.write(shared=True) as tx:
                tx.touch_token(rec.id, now, now - TOUCH_EVERY)
        return Principal(rec.name, tuple(json.loads(rec.namespaces)), tuple(json.loads(rec.scopes)))
