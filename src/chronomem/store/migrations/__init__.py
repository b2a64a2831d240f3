"""Numbered SQL migrations, one folder per backend, same names in each.

A migration whose rows SQL cannot convert names a Python step on a line of
its own (``-- step: NAME``): the runner applies the SQL before that line,
runs the backend's step of that name, then the SQL after it, all in the
migration's one transaction (:func:`split_steps`). The steps' shared logic
is here (:func:`requantize_vectors`); the backends supply their SQL.
"""

from __future__ import annotations

import logging
from importlib import resources
from typing import Callable

from ...core.quantize import quantize
from ...errors import InvalidInputError

__all__ = ["STEP_MARKER", "load_migrations", "requantize_vectors", "split_steps"]

log = logging.getLogger("chronomem.store")

STEP_MARKER = "-- step: "

# rows converted per read in a step: bounds the step's memory on a large store
STEP_CHUNK = 5_000

# (model_id, episode_rowid, ns_id, float32 bytes) -> the same with (int8 bytes, scale)
VectorRow = tuple[int, int, int, bytes]
Int8Row = tuple[int, int, int, bytes, float]


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


def split_steps(sql: str) -> list[tuple[str | None, str]]:
    """A migration's pieces in order: ``(None, sql)`` and ``(step name, "")``."""
    parts: list[tuple[str | None, str]] = []
    buf: list[str] = []
    for line in sql.splitlines():
        if line.startswith(STEP_MARKER):
            parts.append((None, "\n".join(buf)))
            parts.append((line[len(STEP_MARKER):].strip(), ""))
            buf = []
        else:
            buf.append(line)
    parts.append((None, "\n".join(buf)))
    return [p for p in parts if p[0] is not None or p[1].strip()]


def requantize_vectors(read: Callable[[int, int, int], list[VectorRow]],
                       write: Callable[[list[Int8Row]], None]) -> int:
    """Migration 0009's step ``int8_vectors``: every float32 vector as int8
    bytes and a scale, in primary-key order, ``STEP_CHUNK`` rows at a time.
    ``read(after_model_id, after_rowid, limit)`` gives the next rows,
    ``write`` stores their conversion; returns how many were converted."""
    done = 0
    after = (-1, -1)
    while True:
        rows = read(after[0], after[1], STEP_CHUNK)
        if not rows:
            return done
        try:
            packed = quantize([blob for *_key, blob in rows])
            write([(m, r, ns, q, scale) for (m, r, ns, _blob), (q, scale) in zip(rows, packed, strict=True)])
            done += len(rows)
        except InvalidInputError:  # a torn or non-finite row among them: convert the others
            kept: list[Int8Row] = []
            for m, r, ns, blob in rows:
                try:
                    ((q, scale),) = quantize([blob])
                except InvalidInputError as exc:
                    # a vector is derived data: dropped, `doctor --repair` embeds the episode again
                    log.warning("migration 0009: the vector of episode rowid %d (model %d) is dropped: %s",
                                r, m, exc)
                    continue
                kept.append((m, r, ns, q, scale))
            write(kept)
            done += len(kept)
        after = (rows[-1][0], rows[-1][1])
