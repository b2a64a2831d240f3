"""The history format of the invariant checker: one JSONL file per process, Jepsen-style.

Each operation writes an ``invoke`` line before it calls chronomem (with its id,
its function and its full arguments) and, after, one completion line: ``ok``
(with what the store returned), ``fail`` (a chronomem error that says the op was
refused: definitely not applied) or ``info`` (any other error: it may or may not
have been applied). A process killed between the two lines leaves the operation
*indeterminate*; the checker looks for its effect in the store. A process that
writes a ``start`` line first and, if it runs to its end, a last ``done`` line, so a
history without one is a killed process. Lines are written and flushed at once: the kill is of the process, not
of the machine, so the kernel keeps what was written.

Times: ``t`` is ``time.monotonic_ns()`` (one clock for every process of the
machine, so it orders lines across files); system times are integer
microseconds (``*_us``); valid times stay as written (ISO strings).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ....errors import InvalidInputError

__all__ = [
    "COMPLETIONS",
    "FUNCTIONS",
    "HistoryWriter",
    "Operation",
    "Record",
    "history_files",
    "join_operations",
    "load_histories",
    "read_history",
]

#: the functions a history records: writes (``define`` by the controller) and reads
FUNCTIONS = ("define", "assert", "end", "correct", "retract", "read", "scan")
#: the lines that complete an ``invoke``
COMPLETIONS = ("ok", "fail", "info")
_TYPES = ("start", "invoke", *COMPLETIONS, "done")
_KEY = ("subject", "predicate")
#: function -> the arguments its invoke must carry, and what its ``ok`` value must
_ARGS: dict[str, tuple[str, ...]] = {
    "define": ("predicate", "cardinality"),
    "assert": (*_KEY, "object"),
    "end": (*_KEY, "fact_id", "ref", "ended"),
    "correct": (*_KEY, "fact_id", "ref", "set"),
    "retract": (*_KEY, "fact_id", "ref"),
    "read": (*_KEY, "as_of", "known_at_us"),
    "scan": (*_KEY, "known_at_us"),
}
_VALUES: dict[str, tuple[str, type]] = {"read": ("values", list), "scan": ("intervals", list)}


@dataclass(frozen=True)
class Record:
    """One history line."""

    type: str
    process: str
    t: int
    op: str = ""
    f: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)
    value: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""

    def to_json(self) -> str:
        out: dict[str, Any] = {"type": self.type, "process": self.process, "t": self.t}
        if self.op:
            out["op"] = self.op
        if self.f:
            out["f"] = self.f
        if self.args:
            out["args"] = dict(self.args)
        if self.value:
            out["value"] = dict(self.value)
        if self.error:
            out["error"] = self.error
        return json.dumps(out, sort_keys=True, separators=(",", ":"))


class HistoryWriter:
    """Appends a process's records to its file, one flushed line each."""

    def __init__(self, path: str | Path, process: str) -> None:
        self.process = process
        self._fh: IO[str] = Path(path).open("a", encoding="utf-8")

    def write(self, record: Record) -> None:
        self._fh.write(record.to_json() + "\n")
        self._fh.flush()

    def invoke(self, op: str, f: str, args: Mapping[str, Any]) -> None:
        self.write(Record("invoke", self.process, time.monotonic_ns(), op, f, args))

    def ok(self, op: str, f: str, value: Mapping[str, Any]) -> None:
        self.write(Record("ok", self.process, time.monotonic_ns(), op, f, value=value))

    def fail(self, op: str, f: str, error: str) -> None:
        self.write(Record("fail", self.process, time.monotonic_ns(), op, f, error=error))

    def info(self, op: str, f: str, error: str) -> None:
        self.write(Record("info", self.process, time.monotonic_ns(), op, f, error=error))

    def start(self) -> None:
        self.write(Record("start", self.process, time.monotonic_ns()))

    def done(self) -> None:
        self.write(Record("done", self.process, time.monotonic_ns()))

    def close(self) -> None:
        self._fh.close()


def _bad(source: str, line: int, where: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{source}, line {line}: {where}: {message}")


def _record(obj: Any, source: str, line: int) -> Record:
    if not isinstance(obj, dict):
        raise _bad(source, line, "record", "must be a JSON object")
    kind = obj.get("type")
    if kind not in _TYPES:
        raise _bad(source, line, "type", f"must be one of {', '.join(_TYPES)}, not {kind!r}")
    process, t = obj.get("process"), obj.get("t")
    if not (isinstance(process, str) and process):
        raise _bad(source, line, "process", "must be a non-empty string")
    if not isinstance(t, int) or isinstance(t, bool):
        raise _bad(source, line, "t", "must be an integer (monotonic nanoseconds)")
    op, f = obj.get("op", ""), obj.get("f", "")
    if kind not in ("start", "done"):
        if not (isinstance(op, str) and op):
            raise _bad(source, line, "op", "must be a non-empty string")
        if f not in FUNCTIONS:
            raise _bad(source, line, "f", f"must be one of {', '.join(FUNCTIONS)}, not {f!r}")
    args, value, error = obj.get("args", {}), obj.get("value", {}), obj.get("error", "")
    for name, item in (("args", args), ("value", value)):
        if not isinstance(item, dict):
            raise _bad(source, line, name, "must be an object")
    if not isinstance(error, str):
        raise _bad(source, line, "error", "must be a string")
    return Record(kind, process, t, op, f, args, value, error)


def read_history(path: str | Path) -> list[Record]:
    """The records of one history file. A last line cut short by a kill (no newline, not
    JSON) is dropped: it was never completely written; any other bad line is an
    :class:`~chronomem.errors.InvalidInputError` naming the file, the line and the field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read history file {str(p)!r}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"history file {str(p)!r} is not UTF-8 text") from None
    lines = text.split("\n")
    out: list[Record] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # the torn last line of a killed process
                break
            raise _bad(str(p), number, "json", exc.msg) from None
        out.append(_record(obj, str(p), number))
    return out


def history_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files ``paths`` name (a folder stands for its ``*.jsonl`` files)."""
    out: list[Path] = []
    for path in paths:
        p = Path(path)
        out.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    return out


def load_histories(paths: Iterable[str | Path]) -> list[Record]:
    """Every record of every file (a folder stands for its ``*.jsonl`` files)."""
    out: list[Record] = []
    for file in history_files(paths):
        out.extend(read_history(file))
    return out


@dataclass
class Operation:
    """An invoke joined with its completion. ``status`` is ``ok``, ``fail``, ``info`` or
    ``indeterminate`` (no completion: the process was killed during the call)."""

    id: str
    process: str
    f: str
    args: Mapping[str, Any]
    t_invoke: int
    status: str = "indeterminate"
    value: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""
    t_complete: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.args.get("subject", "")), str(self.args.get("predicate", "")))

    @property
    def determinate(self) -> bool:
        return self.status in ("ok", "fail")


def join_operations(records: Sequence[Record]) -> tuple[list[Operation], set[str], set[str]]:
    """The operations (in invoke order), the processes that finished (wrote ``done``) and
    every process seen. Ids must be unique; a completion must follow its invoke."""
    ops: dict[str, Operation] = {}
    done: set[str] = set()
    processes: set[str] = set()
    for rec in records:
        processes.add(rec.process)
        if rec.type == "start":
            continue
        if rec.type == "done":
            done.add(rec.process)
        elif rec.type == "invoke":
            if rec.op in ops:
                raise InvalidInputError(f"history: op id {rec.op!r} is invoked twice")
            missing = [name for name in _ARGS[rec.f] if name not in rec.args]
            if missing:
                raise InvalidInputError(f"history: op {rec.op!r} ({rec.f}): args lack {', '.join(missing)}")
            if "known_at_us" in rec.args and not isinstance(rec.args["known_at_us"], int):
                raise InvalidInputError(f"history: op {rec.op!r}: args.known_at_us must be an integer (µs)")
            ops[rec.op] = Operation(rec.op, rec.process, rec.f, rec.args, rec.t)
        else:
            op = ops.get(rec.op)
            if op is None:
                raise InvalidInputError(f"history: {rec.type} of op {rec.op!r} that was never invoked")
            if op.status != "indeterminate":
                raise InvalidInputError(f"history: op {rec.op!r} is completed twice")
            if rec.type == "ok":
                name, kind = _VALUES.get(op.f, ("system_us", int))
                if not isinstance(rec.value.get(name), kind):
                    raise InvalidInputError(f"history: ok of op {rec.op!r} ({op.f}): value.{name} must be "
                                            f"{'a list' if kind is list else 'an integer (µs)'}")
            op.status, op.value, op.error, op.t_complete = rec.type, rec.value, rec.error, rec.t
    return sorted(ops.values(), key=lambda o: (o.t_invoke, o.id)), done, processes
