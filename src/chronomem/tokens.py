"""Access tokens for ``chronomem serve`` (public surface; the logic is
:mod:`chronomem.service.tokens`). Reach the store's tokens with
``mem.tokens`` (:class:`Tokens`); see ``docs/web.md#tokens``."""

from __future__ import annotations

from .service.tokens import (
    ALL_NAMESPACES,
    PREFIX,
    SCOPES,
    TOUCH_EVERY,
    CreatedToken,
    Principal,
    TokenInfo,
    Tokens,
    hash_token,
)

__all__ = ["ALL_NAMESPACES", "PREFIX", "SCOPES", "TOUCH_EVERY", "CreatedToken", "Principal", "TokenInfo", "Tokens",
           "hash_token"]
