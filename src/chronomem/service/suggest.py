""""Did you mean": the names of a namespace close to one no entity has,
for the error every read that takes an entity raises."""

from __future__ import annotations

import difflib
from typing import cast

from ..core.names import normalize_key
from ..errors import EntityNotFoundError, InvalidInputError
from ..store.protocol import EpisodeStore, Store

__all__ = ["entity_suggestions", "unknown_entity"]

#: "did you mean": how many names one probe of the name keys reads, and how many are offered
_PROBE_NAMES = 200
_SUGGESTIONS = 3


def entity_suggestions(store: Store, ns_id: int, name: str, limit: int = _SUGGESTIONS) -> list[str]:
    """Names of the namespace close to ``name`` (a typo's "did you mean"),
    closest first, at most ``limit``. Bounded: two probes of the name keys
    (those sharing the key's first two characters, and those containing its
    last three, which catches a wrong first letter), at most 200 names each."""
    try:
        key = normalize_key(name, "entity")
    except InvalidInputError:
        return []
    names: list[str] = []
    if store.capabilities.entity_prefix_search:  # an index range on the keys
        names += cast(EpisodeStore, store).entity_names_with_prefix(ns_id, key[:2], _PROBE_NAMES)
    else:
        names += [r.name for r in store.entities_by_key_substring(ns_id, key[:2], _PROBE_NAMES)]
    if len(key) >= 3:
        names += [r.name for r in store.entities_by_key_substring(ns_id, key[-3:], _PROBE_NAMES)]
    by_key: dict[str, str] = {}
    for n in names:
        try:
            by_key.setdefault(normalize_key(n, "entity"), n)
        except InvalidInputError:  # pragma: no cover - stored names are valid
            continue
    by_key.pop(key, None)
    return [by_key[k] for k in difflib.get_close_matches(key, list(by_key), n=limit, cutoff=0.6)]


def unknown_entity(store: Store, ns_id: int, namespace: str, name: str) -> EntityNotFoundError:
    """The error for a name no entity of the namespace has, with the close
    names it may have meant (:func:`entity_suggestions`)."""
    msg = f"no entity named {name!r} in namespace {namespace!r}"
    close = entity_suggestions(store, ns_id, name)
    if close:
        msg += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    return EntityNotFoundError(msg)
