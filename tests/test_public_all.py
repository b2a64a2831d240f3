"""``chronomem.__all__`` is exactly the package's public names, sorted (the
httpx style): a name imported into ``chronomem/__init__.py`` but left out of
``__all__`` (or listed but never imported) fails here."""

from __future__ import annotations

import inspect
import types

import chronomem
from chronomem.service.candidates import FACT_KEYS


def test_all_is_sorted_and_derived_from_the_package() -> None:
    public = [
        name for name, value in vars(chronomem).items()
        if (not name.startswith("_") or name == "__version__") and not isinstance(value, types.ModuleType)
    ]
    assert chronomem.__all__ == sorted(public, key=str.casefold)


def test_a_write_request_has_exactly_add_facts_parameters() -> None:
    """add_facts() items, the import formats and POST /api/facts accept the keys add_fact() takes."""
    assert FACT_KEYS == set(inspect.signature(chronomem.Memory.add_fact).parameters) - {"self"}
