"""What a ``--db`` value names, the same for every spelling of it."""

from __future__ import annotations

import os

__all__ = ["db_key"]


def db_key(db: str) -> str:
    """A database file's path made absolute and resolved (a hook, a server
    and a background import may each have been given another spelling: a
    relative path, a ``sqlite:///`` URL, a symlink); a server URL or
    ``:memory:`` as it is. Raises :class:`~chronomem.errors.InvalidInputError`
    for what ``chronomem.open`` refuses."""
    from chronomem.store import resolve_url

    _backend, location = resolve_url(db)
    if location == ":memory:" or "://" in location:
        return location
    return os.path.realpath(os.path.expanduser(location))
