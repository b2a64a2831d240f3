"""The controller of the invariant workload: N writer/reader processes on one store, some SIGKILLed.

It declares the keyspace's single-valued predicate (logging the ``define`` in its own
history), starts ``processes`` real subprocesses (:mod:`.worker`), and, at seeded random
moments (once a random share of all ops is invoked, as a random live victim has just
invoked a write, after up to 1.5 ms more), SIGKILLs ``kills`` of them and starts for each a
replacement, with a new process name and history file, for the ops the victim had not
invoked, so the totals still complete.

``revise_one=False`` corrects and retracts only the many-valued predicate's facts, to
tell a finding on the single-valued key apart: that is where this workload found
chronomem's restore bugs (a value cut on its own out-of-order arrival was never restored;
a restore brought back a cut made by a value already retracted), since fixed.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import chronomem

from ....core.time import to_us
from ....errors import InvalidInputError, StoreError
from .history import HistoryWriter

__all__ = ["ONE", "MANY", "WorkloadResult", "run_workload"]

ONE = "holds"  # declared single-valued before the workers start
MANY = "tagged"  # many-valued (the default)
_WORKER = "chronomem.adapters.benchmark.invariants.worker"


@dataclass
class WorkloadResult:
    target: str
    namespace: str
    out_dir: Path
    histories: list[Path] = field(default_factory=list)
    started: int = 0
    killed: int = 0
    crashed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "namespace": self.namespace, "out_dir": str(self.out_dir),
                "histories": [str(p) for p in self.histories], "started": self.started, "killed": self.killed,
                "crashed": list(self.crashed), "seconds": round(self.seconds, 3)}


@dataclass
class _Slot:
    """One of the N concurrent places: its current process and how many ops it still owes."""

    index: int
    owed: int
    generation: int = 0
    proc: subprocess.Popen[bytes] | None = None
    history: Path | None = None
    name: str = ""
    ops: int = 0
    stderr: IO[bytes] | None = None


def _invoked(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(1 for line in fh if b'"type":"invoke"' in line)
    except OSError:
        return 0


def _headroom(ops: int) -> int:
    """Ops a process must still owe when it is chosen to be killed, so that a replacement
    runs them: it goes on while the workload waits for one of its writes and sleeps (6 ops
    in those ~1.5 ms were seen)."""
    return max(3, ops // 5)


def _await_write(path: Path, until: float) -> None:
    """Wait (until ``until``) for the last line of ``path`` to be the invoke of a write."""
    writes = (b'"f":"assert"', b'"f":"end"', b'"f":"correct"', b'"f":"retract"')
    while time.monotonic() < until:
        try:
            lines = path.read_bytes().splitlines()
        except OSError:
            lines = []
        if lines and b'"type":"invoke"' in lines[-1] and any(w in lines[-1] for w in writes):
            return
        time.sleep(0.0005)


def _finished(path: Path) -> bool:
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return False
    return bool(lines) and b'"type":"done"' in lines[-1]


def _define(target: str, namespace: str, out: Path) -> Path:
    path = out / "controller.jsonl"
    log = HistoryWriter(path, "controller")
    try:
        mem = chronomem.open(target, namespace, embedder=None)
        try:
            log.invoke("controller.1", "define", {"predicate": ONE, "cardinality": "one"})
            mem.define_predicate(ONE, "one")
            log.ok("controller.1", "define", {"system_us": to_us(mem.now())})
        finally:
            mem.close()
        log.done()
    finally:
        log.close()
    return path


def run_workload(target: str, *, processes: int = 4, ops_per_process: int = 200, kills: int = 2, seed: int = 19,
                 out_dir: str | Path, namespace: str = "inv", subjects: int = 6,
                 revise_one: bool = True, timeout: float = 600.0) -> WorkloadResult:
    """Run the workload on ``target`` (a SQLite path or a PostgreSQL URL with a fresh
    ``?schema=``), writing one history per process into ``out_dir`` (which must hold none yet).
    ``revise_one=False`` corrects and retracts facts of the many-valued predicate only (see
    the module docstring)."""
    for name, value, low in (("processes", processes, 1), ("ops_per_process", ops_per_process, 1),
                             ("kills", kills, 0), ("subjects", subjects, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InvalidInputError(f"{name} must be an integer >= {low}, not {value!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("*.jsonl")):
        raise InvalidInputError(f"out_dir {str(out)!r} already holds histories: use an empty folder")
    begin = time.monotonic()
    result = WorkloadResult(target, namespace, out)
    result.histories.append(_define(target, namespace, out))
    rng = random.Random(seed)
    names = ",".join(f"s{i}" for i in range(subjects))
    slots = [_Slot(i, ops_per_process) for i in range(processes)]

    finished: list[tuple[str, subprocess.Popen[bytes]]] = []  # every process but the killed ones

    def start(slot: _Slot) -> None:
        if slot.stderr is not None:
            slot.stderr.close()
        slot.name = f"p{slot.index}g{slot.generation}"
        slot.history = out / f"{slot.name}.jsonl"
        slot.ops = slot.owed
        result.histories.append(slot.history)
        slot.history.touch()  # a process killed before its first line leaves an empty history
        slot.stderr = (out / f"{slot.name}.stderr").open("wb")
        cmd = [sys.executable, "-m", _WORKER, "--target", target, "--namespace", namespace,
               "--history", str(slot.history), "--process", slot.name, "--seed", str(seed),
               "--ops", str(slot.owed), "--subjects", names, "--one", ONE, "--many", MANY]
        if not revise_one:
            cmd.append("--no-revise-one")
        slot.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slot.stderr)
        result.started += 1

    for slot in slots:
        start(slot)
    # the kill plan: at these shares of all ops invoked, a random live process, once its last
    # line is the invoke of a write (or 50 ms passed), after a few ms more
    plan = sorted((rng.uniform(0.1, 0.8), rng.uniform(0.0, 0.0015)) for _ in range(kills))
    total = processes * ops_per_process
    deadline = begin + timeout
    try:
        while plan:
            for slot in slots:  # reap the ones that finished
                if slot.proc is not None and slot.proc.poll() is not None:
                    finished.append((slot.name, slot.proc))
                    slot.proc = None
            live = [s for s in slots if s.proc is not None]
            if not live:
                break
            share, delay = plan[0]
            invoked = sum(_invoked(p) for p in result.histories[1:])  # every process's, finished or killed
            # past its start-up, and not about to finish
            ready = [s for s in live if s.history is not None and 0 < _invoked(s.history) < s.ops - _headroom(s.ops)]
            if invoked >= share * total and ready:
                slot = ready[rng.randrange(len(ready))]
                assert slot.proc is not None and slot.history is not None
                _await_write(slot.history, time.monotonic() + 0.05)  # most kills then land inside a write
                if _invoked(slot.history) >= slot.ops - _headroom(slot.ops):
                    continue  # it ran on to its last ops meanwhile: a kill would leave nothing owed; try another
                time.sleep(delay)
                if slot.proc.poll() is None:
                    slot.proc.send_signal(signal.SIGKILL)
                slot.proc.wait()
                if _finished(slot.history):  # it had written its last line: not a kill; try another
                    slot.proc = None
                    continue
                result.killed += 1
                slot.proc = None
                plan.pop(0)
                done = _invoked(slot.history)
                slot.owed = max(0, slot.ops - done)
                slot.generation += 1
                if slot.owed:
                    start(slot)
                continue
            if time.monotonic() > deadline:
                raise StoreError(f"the invariant workload did not finish within {timeout:.0f} s")
            time.sleep(0.003)
        finished.extend((s.name, s.proc) for s in slots if s.proc is not None)
        for name, proc in finished:
            left = max(0.1, deadline - time.monotonic())
            try:
                code = proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                raise StoreError(f"the invariant workload did not finish within {timeout:.0f} s") from None
            if code != 0:
                result.crashed.append(f"{name} exited with {code}: "
                                      f"{(out / f'{name}.stderr').read_text(errors='replace')[-2000:]}")
    finally:
        for slot in slots:
            if slot.proc is not None and slot.proc.poll() is None:
                slot.proc.send_signal(signal.SIGKILL)
                slot.proc.wait()
            if slot.stderr is not None:
                slot.stderr.close()
    result.seconds = time.monotonic() - begin
    return result

