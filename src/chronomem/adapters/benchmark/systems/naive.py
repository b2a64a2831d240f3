"""The naive baseline: what most applications keep, the latest value per key and no time.

A dict maps ``(subject, predicate)`` to its values: one for a predicate the
scenario declared single-valued (a new value replaces it), a set for the rest.
Keys are the strings as written (no name normalization). Valid times are
ignored on writes and ``as_of`` on reads: ``values`` always answers the current
content, which is right exactly when the question asks about a time when
nothing had changed since; that gap is what the baseline is for.

* ``assert`` sets (single-valued) or adds the value; ``end`` and ``retract``
  remove it; ``correct`` replaces it in place when it changes the object and the
  value is still held (a correction of times only changes nothing: there are no
  times).
* ``episode`` keeps the text in a list; ``supersede`` drops the old episode.
* ``values`` -> the current values; ``intervals`` -> each with ``None, None``
  bounds; ``evidence`` in the ``raw`` view -> episodes whose text holds every
  query word (case-insensitive, whole words). Any ``known_at``, the other
  evidence views and ``mentions`` are :class:`Unsupported`.
"""

from __future__ import annotations

import re
from typing import Any

import chronomem

from ..scenario import Op, Question, Scenario
from .base import System, Unsupported

__all__ = ["NaiveSystem"]

_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


class NaiveSystem(System):
    """A dict of the latest values, a list of episode texts; nothing else."""

    name = "naive"

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], list[str]] = {}
        self._single: set[str] = set()
        self._refs: dict[str, tuple[tuple[str, str], str]] = {}
        self._episodes: dict[str, str] = {}

    def version(self) -> str:
        return f"naive latest-value dict (chronomem {chronomem.__version__})"

    def start(self, scenario: Scenario) -> None:
        self._values, self._single, self._refs, self._episodes = {}, set(), {}, {}

    def apply(self, op: Op) -> None:
        a = op.args
        if op.kind == "define":
            (self._single.add if a["cardinality"] == "one" else self._single.discard)(a["predicate"])
        elif op.kind == "assert":
            key = (a["subject"], a["predicate"])
            self._refs[a["ref"]] = (key, a["object"])
            self._put(key, a["object"])
        elif op.kind in ("end", "retract"):
            key, obj = self._refs[a["ref"]]
            self._drop(key, obj)
        elif op.kind == "correct":
            new = a["set"].get("object")
            key, obj = self._refs[a["ref"]]
            if new is not None:
                held = self._values.get(key, [])
                if obj in held:  # the record still held is rewritten; a replaced one is gone already
                    if new in held:
                        held.remove(obj)
                    else:
                        held[held.index(obj)] = new
                self._refs[a["ref"]] = (key, new)
        elif op.kind == "episode":
            self._episodes[a["ref"]] = a["text"]
        elif op.kind == "supersede":
            self._episodes.pop(a["old"], None)
        else:  # pragma: no cover - the loader admits only the kinds above
            raise AssertionError(op.kind)

    def _put(self, key: tuple[str, str], obj: str) -> None:
        if key[1] in self._single:
            self._values[key] = [obj]
        elif obj not in self._values.setdefault(key, []):
            self._values[key].append(obj)

    def _drop(self, key: tuple[str, str], obj: str) -> None:
        held = self._values.get(key, [])
        if obj in held:
            held.remove(obj)

    def ask(self, question: Question) -> Any:
        q = question.args
        if q.get("known_at") is not None:
            raise Unsupported("the naive baseline keeps no system time (known_at)")
        if question.ask == "values":
            return list(self._values.get((q["subject"], q["predicate"]), []))
        if question.ask == "intervals":
            return [[v, None, None] for v in self._values.get((q["subject"], q["predicate"]), [])]
        if question.ask == "evidence":
            if q["view"] != "raw":
                raise Unsupported(f"the naive baseline has no {q['view']!r} view (no times on episodes)")
            wanted = _words(q["query"])
            return [ref for ref, text in self._episodes.items() if wanted <= _words(text)]
        raise Unsupported("the naive baseline does not read time mentions")
