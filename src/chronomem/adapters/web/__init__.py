"""The web view and JSON API of ``chronomem serve`` (extra ``chronomem[web]``).

:func:`create_app` builds the ASGI app; :mod:`chronomem.adapters.web.server` runs it.
"""

from __future__ import annotations

from .app import AccessGuard, create_app

__all__ = ["AccessGuard", "create_app"]
