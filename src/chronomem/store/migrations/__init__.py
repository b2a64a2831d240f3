"""Numbered SQL migrations, one folder per backend, same names in each."""

from __future__ import annotations

from importlib import resources

__all__ = ["load_migrations"]


def load_migrations(backend: str) -> list[tuple[int, str, str]]:
    """Return ``(number, name, sql)`` for every migration of ``backend``, in order."""
    folder = resources.files(__package__).joinpath(backend)
    out: list[tuple[int, str, str]] = []
    for item in folder.iterdir():
        if item.name.endswith(".sql"):
            number = int(item.name.split("_", 1)[0])
            out.append((number, item.name[:-4], item.read_text(encoding="utf-8")))
    out.sort()
    return out
