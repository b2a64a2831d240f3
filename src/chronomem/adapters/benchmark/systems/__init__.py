"""The systems the benchmark can run, by ``--systems`` name (each adapter loads on first use)."""

from __future__ import annotations

import importlib
import os

from ....errors import InvalidInputError
from .base import System, Unsupported

__all__ = ["PG_URL_ENV", "SYSTEMS", "System", "Unsupported", "make_system"]

#: the PostgreSQL database ``chronomem-postgres`` uses when ``--pg`` is not given
PG_URL_ENV = "CHRONOMEM_BENCH_PG_URL"

#: name -> (module, class, what it is)
SYSTEMS: dict[str, tuple[str, str, str]] = {
    "chronomem": ("chronomem_system", "ChronomemSystem", "chronomem on SQLite (a file per scenario)"),
    "chronomem-postgres": ("chronomem_system", "ChronomemSystem", "chronomem on PostgreSQL (a schema per scenario)"),
    "mempalace": ("mempalace_system", "MempalaceSystem",
                  "MemPalace's KnowledgeGraph (pip install --no-deps mempalace==3.11.0)"),
    "naive": ("naive", "NaiveSystem", "the latest value per key, no time (what most applications keep)"),
}


def _external(spec: str) -> System:
    """``module:Class`` — an adapter in a file of its own, on ``sys.path`` (``docs/benchmark.md``)."""
    module, _, cls = spec.partition(":")
    if not module or not cls.isidentifier():
        raise InvalidInputError(f"a system given as module:Class needs both parts, not {spec!r}")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise InvalidInputError(f"cannot import system module {module!r}: {exc}") from None
    factory = getattr(mod, cls, None)
    if not (isinstance(factory, type) and issubclass(factory, System)):
        raise InvalidInputError(f"{spec!r} is not a System subclass (chronomem.adapters.benchmark.systems.base)")
    system = factory()
    if not system.name:
        system.name = spec
    return system


def make_system(name: str, *, pg_url: str | None = None) -> System:
    """Build the system ``name``: a key of :data:`SYSTEMS`, or ``module:Class`` for an adapter of
    one's own; ``chronomem-postgres`` needs ``pg_url`` or the ``CHRONOMEM_BENCH_PG_URL`` variable."""
    if ":" in name:
        return _external(name)
    if name not in SYSTEMS:
        raise InvalidInputError(f"unknown system {name!r} for systems (known: {', '.join(SYSTEMS)})")
    module, cls, _ = SYSTEMS[name]
    mod = importlib.import_module(f"{__name__}.{module}")
    if name == "chronomem-postgres":
        url = pg_url or os.environ.get(PG_URL_ENV)
        if not url:
            raise InvalidInputError(f"system 'chronomem-postgres' needs --pg URL (or {PG_URL_ENV})")
        if not url.startswith(("postgresql://", "postgres://")):
            raise InvalidInputError(f"--pg must be a postgresql:// URL, not {url!r}")
        system: System = getattr(mod, cls)(url)
        return system
    built: System = getattr(mod, cls)()
    return built
