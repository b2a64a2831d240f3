"""MemPalace's temporal knowledge graph under the benchmark.

What is measured is ``mempalace.knowledge_graph.KnowledgeGraph`` (a SQLite
file per scenario, in a temporary folder), driven only through its public
methods, the way its docstrings and agent instructions recommend:

* ``assert`` -> ``add_triple(subject, predicate, object, valid_from, valid_to)``.
  For a predicate the scenario declared single-valued (``define ... one``) and
  an open-ended new value with a start, each open value of the key that started
  at or before that start is replaced with ``supersede(subject, predicate, old,
  new, at=valid_from)`` ("the primitive for a value change"). Where ``supersede``
  does not fit, the value is added with ``add_triple`` as stated, and nothing is
  spliced for it: no open value; a bounded new interval (``supersede`` opens an
  open successor); an open value that starts later (``supersede`` refuses that
  boundary as inverted: a backfill); or no start (an unknown start is no
  boundary; ``supersede``'s default, the wall clock's now, would turn the
  moment of writing into a valid time the scenario never stated).
* ``end`` -> ``invalidate(subject, predicate, object, ended)``.
* ``correct`` -> :class:`Unsupported`. The graph has no system time and no
  primitive that replaces a wrong record: ``rewrite`` closes the original at an
  instant and opens a successor (its docstring: "an as-of query before the
  boundary still returns the original wording"), which records a *change*, the
  very thing a correction must not be confused with; and nothing keeps the old
  belief readable as known at. Scoring ``rewrite`` as a correction would measure
  our misuse of it, not MemPalace.
* ``retract`` -> :class:`Unsupported`: no public method removes a triple
  (``apply_row`` is replication's INSERT OR REPLACE).
* ``episode``, ``supersede`` (of evidence): not stored. The graph keeps no
  evidence; MemPalace's verbatim store (drawers) needs chromadb, which is not
  installed here (the package is installed with ``--no-deps``). They are skipped
  rather than refused because no fact question reads them: the scenario's fact
  questions are still scored, and every ``evidence`` / ``mentions`` question is
  :class:`Unsupported`.

Questions: ``values`` is ``query_entity(subject, as_of=..., direction="outgoing")``
kept to the predicate, compared after MemPalace's own normalization (lower case,
spaces -> ``_``); ``intervals`` is the same without ``as_of``, each triple with
``valid_from`` / ``valid_to`` as stored (``None`` unknown / open). Answers are
MemPalace's, unfiltered otherwise (its entity-name fallback included). Any
``known_at`` is :class:`Unsupported` (no system time); so are ``evidence`` and
``mentions``.

Times. MemPalace accepts only ``YYYY-MM-DD`` and ``YYYY-MM-DDTHH:MM:SSZ``
(``+00:00`` is rewritten to ``Z``): no partial dates, no fractions, no other
offset (``config.sanitize_iso_temporal``). A date-only value compares as
``T00:00:00Z`` as a start or ``as_of``, but as ``T23:59:59Z`` as a ``valid_to``
(a whole final day). So each scenario time becomes the same UTC instant: a start
or ``as_of`` of year, month or day precision as ``YYYY-MM-DD`` (``"2024"`` ->
``"2024-01-01"``), anything else, and every end (``valid_to``, ``ended``), as
``YYYY-MM-DDTHH:MM:SSZ`` (``"2024"`` -> ``"2024-01-01T00:00:00Z"``: the
date-only form would move the end to 23:59:59 that day). A written time with a
fraction of a second has no form that keeps its instant: :class:`Unsupported`.
An ``as_of`` with one (``...T23:59:59.999999Z``, "just before the boundary") is
read at its whole second: every stored bound is a whole second, so
``from <= t < to`` gives the same answer at ``t`` and at ``floor(t)``. Precision
is not kept (MemPalace stores none), so an ``intervals`` answer says
``2024-01-01`` where the scenario wrote ``2024``, and is scored as given.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol, cast

from ....core.time import Precision, from_us, parse_time
from ....errors import MissingExtraError
from ..scenario import Op, Question, Scenario
from .base import System, Unsupported

__all__ = ["INSTALL_HINT", "MempalaceSystem", "mempalace_time"]

INSTALL_HINT = "pip install --no-deps mempalace==3.11.0"


class _KnowledgeGraph(Protocol):
    """The part of ``mempalace.knowledge_graph.KnowledgeGraph`` the adapter calls."""

    def __init__(self, db_path: str | None = None) -> None: ...

    def add_triple(self, subject: str, predicate: str, obj: str, valid_from: str | None = None,
                   valid_to: str | None = None) -> str: ...

    def invalidate(self, subject: str, predicate: str, obj: str, ended: str | None = None) -> None: ...

    def supersede(self, subject: str, predicate: str, old_obj: str, new_obj: str, at: str | None = None) -> str: ...

    def query_entity(self, name: str, as_of: str | None = None,
                     direction: str = "outgoing") -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def _missing() -> MissingExtraError:
    return MissingExtraError("mempalace", "mempalace",
                             hint=f"{INSTALL_HINT} (its KnowledgeGraph needs only the stdlib)")


def _load() -> tuple[type[_KnowledgeGraph], str]:
    """The KnowledgeGraph class and the installed version, or :class:`MissingExtraError`.

    Importing ``mempalace`` removes the ``PYTHONPATH`` entries from ``sys.path``
    (a guard against loading chromadb's compiled parts for another ABI); the
    KnowledgeGraph needs none, and the benchmark's ``module:Class`` adapters may
    live there, so ``sys.path`` is put back as it was."""
    saved = list(sys.path)
    try:
        module = importlib.import_module("mempalace.knowledge_graph")
        version = importlib.metadata.version("mempalace")
    except (ImportError, importlib.metadata.PackageNotFoundError):
        raise _missing() from None
    finally:
        sys.path[:] = saved
    return cast("type[_KnowledgeGraph]", module.KnowledgeGraph), version


def mempalace_time(value: str, field: str, *, end: bool = False, read: bool = False) -> str:
    """The form MemPalace accepts for the instant a scenario time names (see the module docstring).

    ``end`` is for ``valid_to`` / ``ended``: always a full UTC datetime, since a
    date-only end would mean the end of that day to MemPalace. ``read`` (an
    ``as_of``) takes a fraction of a second down to its second, which changes no
    answer when every stored bound is a whole second."""
    tp = parse_time(value, field)
    us = tp.us
    if us % 1_000_000:
        if not read:
            raise Unsupported(f"{field}={value!r}: MemPalace takes whole seconds only")
        us -= us % 1_000_000
    dt = from_us(us)
    day = f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}"
    if not end and tp.precision <= Precision.DAY:
        return day
    return f"{day}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}Z"


def _start(value: str | None, field: str) -> str | None:
    return None if value is None else mempalace_time(value, field)


def _end(value: str | None, field: str) -> str | None:
    return None if value is None else mempalace_time(value, field, end=True)


def _key(name: str) -> str:
    """MemPalace's entity id of a name (``KnowledgeGraph._entity_id``)."""
    return name.lower().replace(" ", "_").replace("'", "")


def _pred(name: str) -> str:
    """MemPalace's stored form of a predicate."""
    return name.lower().replace(" ", "_")


class MempalaceSystem(System):
    """MemPalace's KnowledgeGraph, a fresh SQLite file per scenario."""

    name = "mempalace"

    def __init__(self) -> None:
        self._cls, self._version = _load()
        self._dir = Path(tempfile.mkdtemp(prefix="chronomem-bench-mempalace-"))
        self._kg: _KnowledgeGraph | None = None
        self._n = 0
        self._single: set[str] = set()
        self._refs: dict[str, tuple[str, str, str]] = {}

    def version(self) -> str:
        return f"mempalace {self._version} (KnowledgeGraph)"

    def start(self, scenario: Scenario) -> None:
        self._n += 1
        self._kg = self._cls(str(self._dir / f"s{self._n}.sqlite3"))
        self._single = set()
        self._refs = {}

    @property
    def kg(self) -> _KnowledgeGraph:
        assert self._kg is not None, "start() first"
        return self._kg

    def apply(self, op: Op) -> None:
        a = op.args
        if op.kind == "define":
            (self._single.add if a["cardinality"] == "one" else self._single.discard)(_pred(a["predicate"]))
        elif op.kind == "assert":
            self._assert(op)
        elif op.kind == "end":
            s, p, o = self._refs[a["ref"]]
            self.kg.invalidate(s, p, o, ended=_end(a["ended"], "ended"))
        elif op.kind == "correct":
            raise Unsupported("the KnowledgeGraph has no correction (rewrite records a change; no system time)")
        elif op.kind == "retract":
            raise Unsupported("the KnowledgeGraph has no primitive that removes a triple")
        elif op.kind in ("episode", "supersede"):
            pass  # no evidence store: nothing a fact question reads; evidence questions are Unsupported
        else:  # pragma: no cover - the loader admits only the kinds above
            raise AssertionError(op.kind)

    def _assert(self, op: Op) -> None:
        a = op.args
        s, p, o = a["subject"], a["predicate"], a["object"]
        self._refs[a["ref"]] = (s, p, o)
        valid_from = _start(a.get("valid_from"), "valid_from")
        valid_to = _end(a.get("valid_to"), "valid_to")
        if _pred(p) in self._single and valid_from is not None and valid_to is None:
            olds = self._open_values(s, p, parse_time(valid_from, "valid_from").us, new=o)
            if olds:
                for old in olds:
                    self.kg.supersede(s, p, old, o, at=valid_from)
                return
        self.kg.add_triple(s, p, o, valid_from=valid_from, valid_to=valid_to)

    def _open_values(self, subject: str, predicate: str, at_us: int, *, new: str) -> list[str]:
        """Objects of the key's open triples that started at or before ``at_us`` (other than ``new``)."""
        out: list[str] = []
        pred = _pred(predicate)
        for row in self.kg.query_entity(subject, direction="outgoing"):
            # the subject check drops query_entity's fallback to a similarly named entity
            if (_key(row["subject"]) != _key(subject) or row["predicate"] != pred or row["valid_to"] is not None
                    or _key(row["object"]) == _key(new)):
                continue
            start = row["valid_from"]
            if start is None or parse_time(start, "valid_from").us <= at_us:
                out.append(row["object"])
        return out

    def ask(self, question: Question) -> Any:
        q = question.args
        if q.get("known_at") is not None:
            raise Unsupported("the KnowledgeGraph has no system time (known_at)")
        if question.ask == "values":
            as_of = mempalace_time(q["as_of"], "as_of", read=True)
            rows = self.kg.query_entity(q["subject"], as_of=as_of, direction="outgoing")
            return [r["object"] for r in rows if r["predicate"] == _pred(q["predicate"])]
        if question.ask == "intervals":
            rows = self.kg.query_entity(q["subject"], direction="outgoing")
            pred = _pred(q["predicate"])
            return [[r["object"], r["valid_from"], r["valid_to"]] for r in rows if r["predicate"] == pred]
        raise Unsupported(f"the KnowledgeGraph has no {question.ask!r} (it keeps no evidence)")

    def finish(self) -> None:
        if self._kg is not None:
            self._kg.close()
            self._kg = None

    def close(self) -> None:
        self.finish()
        shutil.rmtree(self._dir, ignore_errors=True)
