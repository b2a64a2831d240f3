"""The offline checker: the recorded histories against the final store and the sequential model.

It reads the final store through the public API only (``history`` per key, and
``facts(..., known_at=...)``), decides for every write whether it took effect and when
(acked: the ack's system time, which the store must hold; indeterminate: the time its
tag is found at, or not applied), and then checks, per (subject, predicate) key:

* every acked write is in the store (``lost-write``), every stored version is explained
  by an applied write at its system times (``phantom-write``);
* writes' system times strictly increase in real-time order, and a ``now()`` basis is
  never before a write acked before it was taken (``order``);
* the sequential model (:class:`~chronomem.adapters.benchmark.model.FactModel`, one per
  key, fed the applied writes in system-time order) answers every recorded read as it
  was answered (``read-mismatch``) and agrees with the store's believed intervals at
  every system time where the key changed (``state-mismatch``);
* every recorded read, asked again now, answers the same (``known-at-changed``);
* a single-valued key never holds two values at one instant, at any of those system
  times, at any recorded basis, and now (``double-value``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import chronomem

from ....core.models import Fact
from ....core.names import normalize_key
from ....core.time import MAX_US, MIN_US, to_us
from ....errors import InvalidInputError, NotFoundError
from ....memory import Memory
from ..scenario import Op
from .effects import WRITES, effect_time, fact_key, stamp, valid_us
from .history import Operation, history_files, join_operations, load_histories, read_history
from .report import InvariantReport

__all__ = ["ModelLike", "check"]

Key = tuple[str, str]


class ModelLike(Protocol):
    """What the checker needs of the sequential model (``model.FactModel``)."""

    def apply(self, op: Op, system_us: int) -> None: ...
    def values(self, subject: str, predicate: str, as_of_us: int, known_at_us: int | None = None) -> list[str]: ...
    def intervals(self, subject: str, predicate: str,
                  known_at_us: int | None = None) -> list[tuple[str, int, int]]: ...


def _default_model() -> ModelLike:
    from ..model import FactModel  # the reference model; imported here so a stand-in can replace it

    return FactModel()


@dataclass
class _Key:
    key: Key
    single: bool
    versions: list[Fact]
    writes: list[Operation] = field(default_factory=list)
    reads: list[Operation] = field(default_factory=list)
    applied: list[tuple[int, Operation]] = field(default_factory=list)  # (system µs, op)
    lost: set[str] = field(default_factory=set)  # acked, not in the store: their ack times are not commit times


def _intervals(facts: Iterable[Fact]) -> list[tuple[str, int, int]]:
    return sorted((fact_key(f) for f in facts), key=lambda t: (t[1], t[2], t[0]))


def _recorded(op: Operation) -> Any:
    if op.f == "read":
        return sorted(str(v) for v in op.value.get("values", []))
    return sorted(((str(i[0]), valid_us(i[1]), valid_us(i[2], end=True)) for i in op.value.get("intervals", [])),
                  key=lambda t: (t[1], t[2], t[0]))


def _ask(mem: Memory, op: Operation) -> Any:
    a = op.args
    got = mem.facts(a["subject"], a["predicate"], as_of=a.get("as_of"), known_at=stamp(int(a["known_at_us"])))
    return sorted(f.object_text for f in got) if op.f == "read" else _intervals(got)


def _model_answer(model: ModelLike, op: Operation) -> Any:
    a = op.args
    k = int(a["known_at_us"])
    if op.f == "read":
        return sorted(model.values(a["subject"], a["predicate"], valid_us(a["as_of"]), k))
    return sorted(((str(o), lo, hi) for o, lo, hi in model.intervals(a["subject"], a["predicate"], k)),
                  key=lambda t: (t[1], t[2], t[0]))


def _model_op(op: Operation, at: int) -> Op:
    a = op.args
    if op.f == "define":
        return Op("define", stamp(at), {"predicate": a["predicate"], "cardinality": a["cardinality"]})
    if op.f == "assert":
        args = {"ref": op.id, "subject": a["subject"], "predicate": a["predicate"], "object": a["object"]}
        args.update({k: a[k] for k in ("valid_from", "valid_to") if a.get(k) is not None})
        return Op("assert", stamp(at), args)
    if op.f == "end":
        return Op("end", stamp(at), {"ref": a["ref"], "ended": a["ended"]})
    if op.f == "correct":
        return Op("correct", stamp(at), {"ref": a["ref"], "set": dict(a["set"])})
    return Op("retract", stamp(at), {"ref": a["ref"]})


def _unchanged(op: Operation) -> bool:
    """A correct acknowledged with the fact as it already was, which it asked for: a no-op.
    (One acknowledged with another value than it asked for is a lost write.)"""
    if op.f != "correct" or len(op.args.get("set", {})) != 1:
        return False
    ((name, wanted),) = op.args["set"].items()
    got = op.value.get(name)
    if name == "object":
        return bool(got == wanted)
    return valid_us(got, end=name == "valid_to") == valid_us(wanted, end=name == "valid_to")


def _brief(op: Operation) -> dict[str, Any]:
    out: dict[str, Any] = {"op": op.id, "f": op.f, "status": op.status, "args": dict(op.args)}
    if op.value:
        out["value"] = dict(op.value)
    if op.error:
        out["error"] = op.error
    return out


def _cardinality(mem: Memory, predicate: str) -> bool:
    try:
        return mem.predicate(predicate).cardinality == "one"
    except NotFoundError:
        return False


class _Checker:
    def __init__(self, mem: Memory, ops: list[Operation], report: InvariantReport,
                 make_model: Callable[[], ModelLike]) -> None:
        self.mem, self.report, self.make_model = mem, report, make_model
        self.defines = [o for o in ops if o.f == "define" and o.status == "ok"]
        self.ops = [o for o in ops if o.f != "define"]
        self.keys: dict[Key, _Key] = {}
        for op in self.ops:
            k = (normalize_key(op.args["subject"], "subject"), normalize_key(op.args["predicate"], "predicate"))
            if k not in self.keys:
                s, p = op.args["subject"], op.args["predicate"]
                self.keys[k] = _Key((s, p), _cardinality(mem, p), list(mem.history(s, p)))
            (self.keys[k].writes if op.f in WRITES else self.keys[k].reads).append(op)

    # -- which writes took effect, and when ------------------------------------
    def resolve(self) -> None:
        r = self.report
        for op in self.ops:
            r.invoked += 1
            r.ok += op.status == "ok"
            r.failed += op.status == "fail"
            r.info += op.status == "info"
        for k in self.keys.values():
            for op in k.writes:
                found = effect_time(op, k.versions)
                if op.status == "ok":
                    acked = int(op.value["system_us"])
                    if found is None and _unchanged(op):
                        r.noop += 1  # a correction to what the fact already said: nothing to write
                        continue
                    if found is None:
                        k.lost.add(op.id)
                        r.add("lost-write", "an acknowledged write is not in the store's history"
                              + (" (acknowledged with the fact as it was, not as asked)" if op.f == "correct" else ""),
                              key=list(k.key), ack_system=stamp(acked), **_brief(op))
                    elif found != acked:
                        k.lost.add(op.id)
                        r.add("lost-write", "an acknowledged write is stored at another system time",
                              key=list(k.key), ack_system=stamp(acked), stored_system=stamp(found),
                              **_brief(op))
                    k.applied.append((acked, op))
                elif op.status == "fail":
                    if found is not None:
                        r.add("phantom-write", "a write refused with an error took effect", key=list(k.key),
                              stored_system=stamp(found), **_brief(op))
                elif found is not None:
                    r.indeterminate_applied += 1
                    k.applied.append((found, op))
                else:
                    r.indeterminate_not_applied += 1
            for op in k.reads:
                if op.status in ("indeterminate", "info"):
                    r.indeterminate_not_applied += 1
            k.applied.sort(key=lambda t: (t[0], t[1].t_invoke))
            r.writes_applied += len(k.applied)

    def phantoms(self) -> None:
        for k in self.keys.values():
            times = {t for t, _ in k.applied}
            # the objects each applied assert's fact may hold: its own, and those corrects gave it
            objects: dict[str, set[str]] = {op.id: {str(op.args.get("object"))} for _, op in k.applied
                                            if op.f == "assert"}
            for _, op in k.applied:
                if op.f == "correct" and "object" in op.args.get("set", {}) and op.args.get("ref") in objects:
                    objects[str(op.args["ref"])].add(str(op.args["set"]["object"]))
            unexplained: dict[int, Fact] = {}
            for v in k.versions:
                if v.object_text not in objects.get(v.source or "", set()):
                    self.report.add("phantom-write", "a stored version names no applied assert of its object",
                                    key=list(k.key), version=v.to_dict())
                    continue
                for t in (to_us(v.system_from), None if v.system_to is None else to_us(v.system_to)):
                    if t is not None and t not in times:
                        unexplained.setdefault(t, v)
            for t, v in sorted(unexplained.items()):
                self.report.add("phantom-write", "a stored version starts or ends at a system time no applied "
                                "write of its key has", key=list(k.key), system=stamp(t), version=v.to_dict())

    def order(self) -> None:
        r = self.report
        for k in self.keys.values():
            seen: dict[int, Operation] = {}
            committed = [(t, op) for t, op in k.applied if op.id not in k.lost]
            for t, op in committed:
                if t in seen:
                    r.add("order", "two writes of one key share a system time", key=list(k.key),
                          system=stamp(t), first=seen[t].id, second=op.id)
                seen.setdefault(t, op)
            acked = [(t, op) for t, op in committed if op.t_complete is not None and op.status == "ok"]
            for ta, a in acked:
                for tb, b in committed:
                    if a.t_complete is not None and a.t_complete < b.t_invoke and tb <= ta:
                        r.add("order", "a write that began after another's ack has an earlier or equal system time",
                              key=list(k.key), earlier=a.id, earlier_system=stamp(ta), later=b.id,
                              later_system=stamp(tb))
        # a now() basis includes every write acknowledged before it was taken (on any key)
        done = sorted((op.t_complete, t, op) for k in self.keys.values() for t, op in k.applied
                      if op.status == "ok" and op.t_complete is not None and op.id not in k.lost)
        for k in self.keys.values():
            for rd in k.reads:
                if rd.args.get("basis") != "now" or rd.status != "ok":
                    continue
                basis, taken = int(rd.args["known_at_us"]), int(rd.args.get("t_basis", rd.t_invoke))
                for t_done, t, op in done:
                    if t_done >= taken:
                        break
                    if t > basis:
                        r.add("order", "a now() basis is before a write acknowledged before it was taken",
                              read=rd.id, basis=stamp(basis), write=op.id, write_system=stamp(t))
                        break

    # -- the model ----------------------------------------------------------
    def model(self, k: _Key) -> ModelLike:
        model = self.make_model()
        pkey = normalize_key(k.key[1], "predicate")
        steps = [(int(d.value["system_us"]), d) for d in self.defines
                 if normalize_key(d.args["predicate"], "predicate") == pkey] + k.applied
        steps.sort(key=lambda t: (t[0], t[1].t_invoke))
        last: int | None = None
        for t, op in steps:
            if last is not None and t <= last:
                continue  # a shared system time: reported as an order anomaly
            try:
                model.apply(_model_op(op, t), t)
            except Exception as exc:  # noqa: BLE001 - the model refuses: ModelError, or a model bug
                self.report.add("refused-by-model", "the store applied a write the model refuses",
                                key=list(k.key), system=stamp(t), reason=f"{type(exc).__name__}: {exc}",
                                **_brief(op))
                continue
            last = t
        return model

    def reads(self, k: _Key, model: ModelLike) -> None:
        r = self.report
        for op in k.reads:
            if op.status != "ok":
                continue
            r.reads_checked += 1
            recorded = _recorded(op)
            expected = _model_answer(model, op)
            if recorded != expected:
                r.add("read-mismatch", "a read's answer differs from the model's at its basis",
                      key=list(k.key), answered=_show(recorded), model=_show(expected), **_brief(op))
            again = _ask(self.mem, op)
            if again != recorded:
                r.add("known-at-changed", "an as-known-at read answers differently after the workload",
                      key=list(k.key), answered=_show(recorded), now=_show(again), **_brief(op))

    def states(self, k: _Key, model: ModelLike) -> None:
        r = self.report
        times = {to_us(v.system_from) for v in k.versions}
        times |= {to_us(v.system_to) for v in k.versions if v.system_to is not None}
        times |= {int(op.args["known_at_us"]) for op in k.reads if op.status == "ok"}
        times.add(to_us(self.mem.now()))
        pairs: set[frozenset[str]] = set()
        mismatched = False
        s, p = k.key
        for t in sorted(times):
            facts = self.mem.facts(s, p, known_at=stamp(t))
            r.states_checked += 1
            got = _intervals(facts)
            if k.single:
                for pair in _overlaps(facts):
                    ids = frozenset(f.id for f in pair)
                    if ids not in pairs:
                        pairs.add(ids)
                        r.add("double-value", "a single-valued key holds two values at one instant",
                              key=list(k.key), known_at=stamp(t), facts=[f.line() for f in pair])
            expected = sorted(model.intervals(s, p, t), key=lambda x: (x[1], x[2], x[0]))
            if not mismatched and got != [(str(o), lo, hi) for o, lo, hi in expected]:
                mismatched = True  # once per key: the first system time they part
                r.add("state-mismatch", "the store's believed intervals differ from the model's",
                      key=list(k.key), known_at=stamp(t), store=_show(got), model=_show(expected))

    def run(self) -> None:
        self.resolve()
        self.phantoms()
        self.order()
        for k in self.keys.values():
            model = self.model(k)
            self.reads(k, model)
            self.states(k, model)


def _overlaps(facts: Sequence[Fact]) -> list[tuple[Fact, Fact]]:
    spans = sorted(((valid_us(f.valid_from), valid_us(f.valid_to, end=True), f) for f in facts),
                   key=lambda t: (t[0], t[1]))
    out: list[tuple[Fact, Fact]] = []
    for i, (_lo, hi, f) in enumerate(spans):
        for lo2, _hi2, g in spans[i + 1:]:
            if lo2 >= hi:
                break
            if g.object_text != f.object_text:
                out.append((f, g))
    return out


def _show(answer: Any) -> Any:
    """An answer with its instants rendered (for a human reading an example)."""
    if answer and isinstance(answer[0], tuple):
        return [[o, _t(lo), _t(hi)] for o, lo, hi in answer]
    return answer


def _t(us: int) -> str | None:
    return None if us in (MIN_US, MAX_US) else stamp(us)


def check(target: str | Path, histories: Iterable[str | Path], *, namespace: str = "inv",
          model: Callable[[], ModelLike] | None = None) -> InvariantReport:
    """Check the recorded ``histories`` (files, or folders of ``*.jsonl``) against the final
    store at ``target``; ``model`` makes a fresh sequential model (default: ``FactModel``)."""
    begin = time.monotonic()
    if "://" not in str(target) and not Path(target).is_file():
        raise InvalidInputError(f"target {str(target)!r}: no SQLite store there to check")
    files = history_files(histories)
    records = load_histories(files)
    ops, _done, _seen = join_operations(records)
    # a process is a file: one killed before its first line left an empty file
    finished = {f for f in files for r in read_history(f)[-1:] if r.type == "done"}
    workers = [f for f in files if f.name != "controller.jsonl"]
    report = InvariantReport(str(target), processes=len(workers), killed=len([f for f in workers if f not in finished]))
    mem = chronomem.open(str(target), namespace, embedder=None)
    try:
        _Checker(mem, ops, report, model or _default_model).run()
    finally:
        mem.close()
    report.seconds = time.monotonic() - begin
    return report
