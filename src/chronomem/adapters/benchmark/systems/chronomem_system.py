"""chronomem under the benchmark, on SQLite (a fresh file per scenario) or PostgreSQL
(a fresh schema per scenario, dropped afterwards).

Each op is written through the public API at its own system time (a
:class:`~chronomem.FakeClock` set to ``op.at``), so ``known_at`` in a question is
read exactly as the scenario states it. Evidence is searched lexically (no
embedder): the questions ask which episodes a view holds, not how they rank.
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import chronomem

from ....core.time import FakeClock, format_us, from_us, parse_time, to_us
from ....memory import Memory
from ..scenario import Op, Question, Scenario
from .base import System

__all__ = ["ChronomemSystem"]

_AFTER_US = 1_000_000  # questions are asked 1 s after the last op


class ChronomemSystem(System):
    """``url=None``: SQLite files in a temporary folder; ``url="postgresql://..."``: PostgreSQL."""

    def __init__(self, url: str | None = None, *, name: str | None = None) -> None:
        self.url = url
        self.name = name or ("chronomem-postgres" if url else "chronomem")
        self._dir = Path(tempfile.mkdtemp(prefix="chronomem-bench-")) if url is None else None
        self._mem: Memory | None = None
        self._clock: FakeClock | None = None
        self._schema: str | None = None
        self._refs: dict[str, str] = {}
        self._n = 0
        self._last_us = 0
        self._asking = False

    def version(self) -> str:
        return f"chronomem {chronomem.__version__} on {'PostgreSQL' if self.url else 'SQLite'}"

    def _target(self) -> str:
        self._n += 1
        if self.url is None:
            assert self._dir is not None
            return str(self._dir / f"s{self._n}.db")
        self._schema = f"cmbench_{uuid.uuid4().hex[:12]}"
        return f"{self.url}{'&' if '?' in self.url else '?'}schema={self._schema}"

    def start(self, scenario: Scenario) -> None:
        first = scenario.ops[0].at if scenario.ops else "2000"
        # the store is opened (and may stamp its set-up) 1 s before the first op, so that op
        # is written at exactly its own time and a known_at equal to it sees it
        self._clock = FakeClock(from_us(parse_time(first).us - 1_000_000), tick=0)
        self._last_us = parse_time(first).us
        self._asking = False
        self._mem = chronomem.open(self._target(), "bench", clock=self._clock, embedder=None)
        self._refs = {}

    @property
    def mem(self) -> Memory:
        assert self._mem is not None, "start() first"
        return self._mem

    def _tick(self, at: str) -> None:
        assert self._clock is not None
        self._last_us = parse_time(at).us
        self._clock.set(from_us(self._last_us))  # to the microsecond

    def apply(self, op: Op) -> None:
        self._tick(op.at)
        mem, a = self.mem, op.args
        if op.kind == "define":
            mem.define_predicate(a["predicate"], a["cardinality"])
        elif op.kind == "assert":
            f = mem.add_fact(a["subject"], a["predicate"], a["object"], a.get("valid_from"), a.get("valid_to"))
            self._refs[a["ref"]] = f.id
        elif op.kind == "end":
            mem.invalidate_fact(self._refs[a["ref"]], a["ended"])
        elif op.kind == "correct":
            mem.correct(self._refs[a["ref"]], **a["set"])
        elif op.kind == "retract":
            mem.retract(self._refs[a["ref"]])
        elif op.kind == "episode":
            ep = mem.add_episode(a["text"], occurred_at=a.get("occurred_at"), recorded_at=a.get("recorded_at"))
            self._refs[a["ref"]] = ep.id
        elif op.kind == "supersede":
            mem.supersede_episode(self._refs[a["old"]], self._refs[a["new"]])
        else:  # pragma: no cover - the loader admits only the kinds above
            raise AssertionError(op.kind)

    def ask(self, question: Question) -> Any:
        mem, q = self.mem, question.args
        if not self._asking:  # "now" for the questions: just after the last op
            self._asking = True
            assert self._clock is not None
            self._clock.set(from_us(self._last_us + _AFTER_US))
        known_at = q.get("known_at")
        if question.ask == "values":
            return [f.object_text for f in mem.facts(q["subject"], q["predicate"], as_of=q["as_of"],
                                                      known_at=known_at)]
        if question.ask == "intervals":
            return [[f.object_text, f.valid_from_text, f.valid_to_text]
                    for f in mem.facts(q["subject"], q["predicate"], known_at=known_at)]
        if question.ask == "evidence":
            names = {v: k for k, v in self._refs.items()}
            hits = mem.search(q["query"], k=100, view=q["view"], at=q["at"], known_at=known_at)
            return [names.get(h.episode.id, h.episode.id) for h in hits]
        if question.ask == "mentions":
            ep = mem.episode(self._refs[q["episode"]])
            return [[_at(m.start, m.precision), _at(m.end, m.precision)] for m in ep.mentions if m.certain]
        raise AssertionError(question.ask)  # pragma: no cover

    def finish(self) -> None:
        if self._mem is not None:
            self._mem.close()
            self._mem = None
        if self._schema is not None and self.url is not None:
            psycopg = importlib.import_module("psycopg")
            with psycopg.connect(self.url, autocommit=True) as con:
                con.execute(f'DROP SCHEMA IF EXISTS "{self._schema}" CASCADE')
            self._schema = None

    def close(self) -> None:
        self.finish()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def _at(value: Any, precision: Any) -> str:
    return format_us(to_us(value), precision)
