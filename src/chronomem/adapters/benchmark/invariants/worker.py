"""One process of the invariant workload: a seeded mix of writes and reads, every one logged.

Run as ``python -m chronomem.adapters.benchmark.invariants.worker --target ... --history ...``
(the controller, :mod:`.workload`, starts several and SIGKILLs some). It opens the shared
store with the real wall clock and, over a small shared keyspace, asserts facts (each with
a unique object, so its effect is identifiable in the store afterwards), ends, corrects and
retracts facts it wrote itself (with the op id as ``reason``, for the same purpose), and reads with
an explicit ``known_at`` basis (the store's ``now()`` taken before the read, or the system
time of one of its own acks, or just before one), recording the basis with the answer.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import chronomem

from ....core.time import MAX_US, MIN_US, parse_time, to_us
from ....errors import ChronomemError, ConflictError, InvalidInputError, NotFoundError, StoreLockedError
from ....memory import Memory
from .effects import stamp
from .history import HistoryWriter

__all__ = ["WorkerConfig", "classify_error", "main", "run_worker"]

#: function -> weight in the mix (end and retract need a fact of one's own)
MIX = {"assert": 38, "read": 26, "scan": 8, "end": 12, "correct": 8, "retract": 8}
YEARS = range(2000, 2012)


@dataclass(frozen=True)
class WorkerConfig:
    target: str
    namespace: str
    history: str
    process: str
    seed: int
    ops: int
    subjects: tuple[str, ...]
    one: str
    many: str
    revise_one: bool = True


@dataclass
class _Mine:
    """A fact this process asserted and has not retracted, as its last ack described it."""

    ref: str
    fact_id: str
    subject: str
    predicate: str
    valid_from: int
    valid_to: int


def classify_error(exc: BaseException) -> str:
    """``fail`` when chronomem refused the op before writing anything (bad input, not
    found, a conflict, a locked store); ``info`` for anything else (it may have committed)."""
    if isinstance(exc, (InvalidInputError, NotFoundError, ConflictError, StoreLockedError)):
        return "fail"
    return "info"


def _time(rng: random.Random) -> str:
    """A valid time at year or day precision, over a dozen years (so values interleave and collide)."""
    year = rng.choice(YEARS)
    if rng.random() < 0.5:
        return str(year)
    return f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _us(text: str | None, *, end: bool = False) -> int:
    if text is None:
        return MAX_US if end else MIN_US
    return parse_time(text, "time").us


class _Worker:
    def __init__(self, cfg: WorkerConfig, mem: Memory, log: HistoryWriter) -> None:
        self.cfg, self.mem, self.log = cfg, mem, log
        self.rng = random.Random(f"{cfg.seed}:{cfg.process}")
        self.mine: list[_Mine] = []
        self.acks: list[int] = []
        self.n = 0

    def _call(self, op: str, f: str, args: dict[str, Any], fn: Any) -> Any:
        self.log.invoke(op, f, args)
        try:
            value, result = fn()
        except ChronomemError as exc:
            kind = classify_error(exc)
            (self.log.fail if kind == "fail" else self.log.info)(op, f, f"{type(exc).__name__}: {exc}")
            return None
        except Exception as exc:  # noqa: BLE001 - anything else: the op may or may not have been applied
            self.log.info(op, f, f"{type(exc).__name__}: {exc}")
            return None
        self.log.ok(op, f, value)
        return result

    def step(self) -> None:
        self.n += 1
        op = f"{self.cfg.process}.{self.n}"
        kinds = [k for k in MIX if self.mine or k not in ("end", "correct", "retract")]
        f = self.rng.choices(kinds, weights=[MIX[k] for k in kinds])[0]
        getattr(self, f"_{f}")(op)

    def _assert(self, op: str) -> None:
        rng, cfg = self.rng, self.cfg
        subject = rng.choice(cfg.subjects)
        predicate = cfg.one if rng.random() < 0.6 else cfg.many
        valid_from = None if rng.random() < 0.08 else _time(rng)
        valid_to = None
        if rng.random() < 0.3:
            candidate = _time(rng)
            if _us(candidate) > _us(valid_from):
                valid_to = candidate
        obj = f"o{cfg.process}n{self.n}"  # unique: the op's effect is findable in the store
        args = {"subject": subject, "predicate": predicate, "object": obj, "valid_from": valid_from,
                "valid_to": valid_to, "source": op}

        def call() -> tuple[dict[str, Any], Any]:
            fact = self.mem.add_fact(subject, predicate, obj, valid_from, valid_to, source=op)
            return ({"fact_id": fact.id, "system_us": to_us(fact.system_from), "object": fact.object_text,
                     "valid_from": fact.valid_from_text, "valid_to": fact.valid_to_text}, fact)

        fact = self._call(op, "assert", args, call)
        if fact is not None:
            self.acks.append(to_us(fact.system_from))
            self.mine.append(_Mine(op, fact.id, subject, predicate, _us(fact.valid_from_text),
                                   _us(fact.valid_to_text, end=True)))

    def _end(self, op: str) -> None:
        target = self.rng.choice(self.mine)
        ended = _time(self.rng)
        for _ in range(12):  # prefer an end inside the interval as last acked (it may have changed since)
            if target.valid_from < _us(ended) < target.valid_to:
                break
            ended = _time(self.rng)
        args = {"subject": target.subject, "predicate": target.predicate, "fact_id": target.fact_id,
                "ref": target.ref, "ended": ended, "reason": op}

        def call() -> tuple[dict[str, Any], Any]:
            fact = self.mem.invalidate_fact(target.fact_id, ended, reason=op)
            return ({"fact_id": fact.id, "system_us": to_us(fact.system_from), "valid_to": fact.valid_to_text}, fact)

        fact = self._call(op, "end", args, call)
        if fact is not None:
            self.acks.append(to_us(fact.system_from))
            target.valid_to = _us(fact.valid_to_text, end=True)

    def _revisable(self) -> list[_Mine]:
        return [m for m in self.mine if self.cfg.revise_one or m.predicate != self.cfg.one]

    def _correct(self, op: str) -> None:
        """The record was wrong: a new start, a new end, or a new (unique) object."""
        rng = self.rng
        mine = self._revisable()
        if not mine:
            return self._read(op)
        target = rng.choice(mine)
        what = rng.choice(("valid_from", "valid_to", "object"))
        value: str | None = f"o{self.cfg.process}n{self.n}"
        for _ in range(12):  # prefer a bound that leaves a non-empty interval, as last acked
            if what == "object":
                break
            value = _time(rng)
            if (what == "valid_from" and _us(value) < target.valid_to) or (
                    what == "valid_to" and _us(value, end=True) > target.valid_from):
                break
        args = {"subject": target.subject, "predicate": target.predicate, "fact_id": target.fact_id,
                "ref": target.ref, "set": {what: value}, "reason": op}

        def call() -> tuple[dict[str, Any], Any]:
            fact = self.mem.correct(target.fact_id, reason=op, **{what: value})
            return ({"fact_id": fact.id, "system_us": to_us(fact.system_from), "object": fact.object_text,
                     "valid_from": fact.valid_from_text, "valid_to": fact.valid_to_text}, fact)

        fact = self._call(op, "correct", args, call)
        if fact is not None:
            self.acks.append(to_us(fact.system_from))
            target.valid_from = _us(fact.valid_from_text)
            target.valid_to = _us(fact.valid_to_text, end=True)

    def _retract(self, op: str) -> None:
        mine = self._revisable()
        if not mine:
            return self._read(op)
        target = self.rng.choice(mine)
        args = {"subject": target.subject, "predicate": target.predicate, "fact_id": target.fact_id,
                "ref": target.ref, "reason": op}

        def call() -> tuple[dict[str, Any], Any]:
            fact = self.mem.retract(target.fact_id, reason=op)
            assert fact.system_to is not None
            return ({"fact_id": fact.id, "system_us": to_us(fact.system_to)}, fact)

        fact = self._call(op, "retract", args, call)
        if fact is not None:
            assert fact.system_to is not None
            self.acks.append(to_us(fact.system_to))
        if fact is not None or self.rng.random() < 0.5:
            self.mine.remove(target)

    def _basis(self) -> tuple[str, int, int]:
        """(kind, known_at µs, monotonic ns when it was taken)."""
        roll = self.rng.random()
        if self.acks and roll < 0.3:
            return "ack", self.rng.choice(self.acks), time.monotonic_ns()
        if self.acks and roll < 0.45:
            return "before-ack", self.rng.choice(self.acks) - 1, time.monotonic_ns()
        t = time.monotonic_ns()
        return "now", to_us(self.mem.now()), t

    def _read(self, op: str, scan: bool = False) -> None:
        rng, cfg = self.rng, self.cfg
        subject = rng.choice(cfg.subjects)
        predicate = cfg.one if rng.random() < 0.6 else cfg.many
        as_of = None if scan else _time(rng)
        basis, known_at, t_basis = self._basis()
        args = {"subject": subject, "predicate": predicate, "as_of": as_of, "known_at_us": known_at,
                "basis": basis, "t_basis": t_basis}

        def call() -> tuple[dict[str, Any], Any]:
            got = self.mem.facts(subject, predicate, as_of=as_of, known_at=stamp(known_at))
            if scan:
                return {"intervals": [[f.object_text, f.valid_from_text, f.valid_to_text] for f in got]}, got
            return {"values": sorted(f.object_text for f in got)}, got

        self._call(op, "scan" if scan else "read", args, call)

    def _scan(self, op: str) -> None:
        self._read(op, scan=True)


def run_worker(cfg: WorkerConfig) -> None:
    """Run ``cfg.ops`` operations, logging each to ``cfg.history``, then a ``done`` line."""
    log = HistoryWriter(cfg.history, cfg.process)
    log.start()
    try:
        mem = chronomem.open(cfg.target, cfg.namespace, embedder=None)
        try:
            worker = _Worker(cfg, mem, log)
            for _ in range(cfg.ops):
                worker.step()
        finally:
            mem.close()
        log.done()
    finally:
        log.close()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m chronomem.adapters.benchmark.invariants.worker",
                                description="one process of the chronomem invariant workload")
    p.add_argument("--target", required=True)
    p.add_argument("--namespace", default="inv")
    p.add_argument("--history", required=True)
    p.add_argument("--process", required=True)
    p.add_argument("--seed", type=int, default=19)
    p.add_argument("--ops", type=int, default=200)
    p.add_argument("--subjects", required=True, help="comma-separated subject names")
    p.add_argument("--one", required=True, help="the single-valued predicate")
    p.add_argument("--many", required=True, help="the many-valued predicate")
    p.add_argument("--no-revise-one", dest="revise_one", action="store_false",
                   help="correct and retract facts of the many-valued predicate only")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    subjects = tuple(s for s in a.subjects.split(",") if s)
    if not subjects or a.ops < 0:
        print("error: --subjects needs at least one name and --ops must be >= 0", file=sys.stderr)
        return 2
    run_worker(WorkerConfig(a.target, a.namespace, a.history, a.process, a.seed, a.ops, subjects, a.one, a.many,
                            a.revise_one))
    return 0


if __name__ == "__main__":  # pragma: no cover - run as a subprocess
    sys.exit(main())
