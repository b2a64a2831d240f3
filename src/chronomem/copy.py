"""Copying every namespace between two stores (the documented home of
:func:`copy_store`; the work is in :mod:`chronomem.service.transfer.copy`)."""

from __future__ import annotations

from .service.transfer.copy import CopyResult, copy_store

__all__ = ["CopyResult", "copy_store"]
