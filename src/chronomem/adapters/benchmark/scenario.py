"""The scenario file format of the temporal benchmark (``docs/benchmark.md``).

A scenario file is JSONL: one scenario per line, ``{"id", "title", "ops",
"questions"}``. ``ops`` run in order, each at its system time ``at``
(strictly increasing within a scenario); ``questions`` are asked after the
last op, each with an exact expected answer and the rule it checks. Times are
ISO-8601 values (``"2024"``, ``"2024-03"``, ``"2024-03-05T10:30Z"``), read as
UTC; a partial date names the instant its period starts.

Loading validates everything before a system sees it: a bad file raises
:class:`~chronomem.errors.ScenarioFormatError` naming the file, the line and
the field. Dumping writes the canonical form (sorted keys, compact), so a
generator with a fixed seed writes byte-identical files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.time import MAX_US, MIN_US, TimePoint, format_us, parse_time
from ...errors import InvalidInputError, ScenarioFormatError

__all__ = [
    "ASKS",
    "OPS",
    "RULES",
    "VIEWS",
    "Op",
    "Question",
    "Scenario",
    "canonical_answer",
    "dump_scenarios",
    "instant",
    "load_scenarios",
    "norm_time",
    "parse_scenarios",
]

#: rule tag -> what it checks (docs/benchmark.md explains each with an example)
RULES: dict[str, str] = {
    "valid-boundary": "valid time is half-open: a fact holds at its start and not at its end",
    "unknown-start": "a fact with no start holds at every instant before its end",
    "open-end": "a fact with no end holds at every later instant",
    "supersession": "a new value of a single-valued predicate ends the old one where it starts",
    "backfill": "a value that arrives out of order is spliced between the values around it",
    "correction-vs-change": "a correction rewrites the record (the old belief stays readable), a change ends the value",
    "retraction": "a retracted fact was never true; the value it had cut short holds again",
    "duplicates": "re-asserting a held value adds nothing; an overlapping one extends it",
    "known-at-replay": "what the memory believed at a past system time, about any valid time",
    "evidence-views": "as-world (had occurred) and as-recorded (had been stored) views of evidence",
    "evidence-supersession": "a note superseded by a later one drops out of the as-world view from then on",
    "relative-time": "a relative phrase is resolved against when it was said and its tense",
    "partial-precision": "a partial date keeps its precision and names its whole period's start",
    "intervals-as-of": "real interval data: the values valid at an instant",
    "intervals-known-at": "real interval data loaded in batches: the values believed after each batch",
}

#: op name -> (required fields, optional fields), besides "op" and "at"
OPS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "define": (frozenset({"predicate", "cardinality"}), frozenset()),
    "assert": (frozenset({"ref", "subject", "predicate", "object"}), frozenset({"valid_from", "valid_to"})),
    "end": (frozenset({"ref", "ended"}), frozenset()),
    "correct": (frozenset({"ref", "set"}), frozenset()),
    "retract": (frozenset({"ref"}), frozenset()),
    "episode": (frozenset({"ref", "text"}), frozenset({"occurred_at", "recorded_at"})),
    "supersede": (frozenset({"old", "new"}), frozenset()),
}

#: question kind -> (required fields, optional fields), besides "ask", "rule", "expect", "why"
ASKS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "values": (frozenset({"subject", "predicate", "as_of"}), frozenset({"known_at"})),
    "intervals": (frozenset({"subject", "predicate"}), frozenset({"known_at"})),
    "evidence": (frozenset({"query", "view", "at"}), frozenset({"known_at"})),
    "mentions": (frozenset({"episode"}), frozenset()),
}

VIEWS = ("raw", "as_recorded", "as_world")
_CORRECTABLE = frozenset({"object", "valid_from", "valid_to"})
_TIME_FIELDS = ("at", "valid_from", "valid_to", "ended", "occurred_at", "recorded_at", "as_of", "known_at")


def instant(value: str | None, *, end: bool = False) -> int:
    """The microsecond instant a scenario time names (``None``: unknown start, or open end)."""
    if value is None:
        return MAX_US if end else MIN_US
    return parse_time(value, "time").us


def norm_time(value: Any) -> str | None:
    """One written form for a time at its own precision (``"2024-03"``, ``"2024-03-05T10:30Z"``),
    so answers written differently (``"2024-03-01T00:00:00Z"`` at month precision) compare equal."""
    if value is None:
        return None
    tp = value if isinstance(value, TimePoint) else parse_time(value, "time")
    return format_us(tp.us, tp.precision)


@dataclass(frozen=True)
class Op:
    """One write: ``kind`` is a key of :data:`OPS`, ``at`` its system time, ``args`` its fields."""

    kind: str
    at: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        return self.args.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.kind, "at": self.at, **self.args}


@dataclass(frozen=True)
class Question:
    """One question: ``ask`` is a key of :data:`ASKS`; ``expect`` the exact answer, in the
    canonical form :func:`canonical_answer` gives; ``why`` justifies it (hand-written scenarios)."""

    ask: str
    rule: str
    args: Mapping[str, Any]
    expect: Any
    why: str | None = None

    def get(self, name: str, default: Any = None) -> Any:
        return self.args.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ask": self.ask, "rule": self.rule, **self.args, "expect": self.expect}
        if self.why is not None:
            out["why"] = self.why
        return out


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    ops: tuple[Op, ...]
    questions: tuple[Question, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "ops": [o.to_dict() for o in self.ops],
                "questions": [q.to_dict() for q in self.questions]}

    @property
    def rules(self) -> set[str]:
        return {q.rule for q in self.questions}


def canonical_answer(ask: str, value: Any) -> Any:
    """The comparable form of an answer (expected or given): sorted, times at their precision.

    ``values``: sorted list of objects; ``intervals``: sorted ``[object, from, to]`` triples
    (``None`` = unknown start / open end); ``evidence``: sorted episode refs; ``mentions``:
    sorted ``[start, end]`` pairs."""
    if not isinstance(value, list):
        raise InvalidInputError(f"an answer to {ask!r} must be a list, not {type(value).__name__}")
    if ask in ("values", "evidence"):
        if not all(isinstance(v, str) for v in value):
            raise InvalidInputError(f"an answer to {ask!r} must be a list of strings")
        return sorted(value)
    if ask == "intervals":
        out: list[list[str | None]] = []
        for item in value:
            if not (isinstance(item, (list, tuple)) and len(item) == 3 and isinstance(item[0], str)):
                raise InvalidInputError("an 'intervals' answer is a list of [object, valid_from, valid_to]")
            out.append([item[0], norm_time(item[1]), norm_time(item[2])])
        return sorted(out, key=lambda t: (instant(t[1]), instant(t[2], end=True), t[0]))
    if ask == "mentions":
        pairs: list[list[str | None]] = []
        for item in value:
            if not (isinstance(item, (list, tuple)) and len(item) == 2):
                raise InvalidInputError("a 'mentions' answer is a list of [start, end]")
            pairs.append([norm_time(item[0]), norm_time(item[1])])
        return sorted(pairs, key=lambda t: (instant(t[0]), instant(t[1], end=True)))
    raise InvalidInputError(f"unknown question kind {ask!r}")


class _Where:
    def __init__(self, source: str, line: int) -> None:
        self.source, self.line = source, line

    def fail(self, where: str, message: str) -> ScenarioFormatError:
        return ScenarioFormatError(f"{self.source}, line {self.line}: {where}: {message}")


def _fields(obj: Any, where: str, loc: _Where, required: frozenset[str], optional: frozenset[str],
            fixed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise loc.fail(where, f"must be an object, not {type(obj).__name__}")
    missing = required - obj.keys()
    if missing:
        raise loc.fail(where, f"missing field(s) {', '.join(sorted(missing))}")
    unknown = obj.keys() - required - optional - fixed
    if unknown:
        raise loc.fail(where, f"unknown field(s) {', '.join(sorted(unknown))}")
    for name in _TIME_FIELDS:
        if name in obj and obj[name] is not None:
            if not isinstance(obj[name], str):
                raise loc.fail(f"{where}.{name}", f"a time must be an ISO-8601 string, not {obj[name]!r}")
            try:
                parse_time(obj[name], name)
            except InvalidInputError as exc:
                raise loc.fail(f"{where}.{name}", str(exc)) from None
    return {k: v for k, v in obj.items() if k not in fixed}


def _op(obj: Any, where: str, loc: _Where) -> Op:
    kind = obj.get("op") if isinstance(obj, dict) else None
    if kind not in OPS:
        raise loc.fail(f"{where}.op", f"must be one of {', '.join(OPS)}, not {kind!r}")
    required, optional = OPS[kind]
    args = _fields(obj, where, loc, required | {"at"}, optional, frozenset({"op"}))
    at = args.pop("at")
    if at is None:
        raise loc.fail(f"{where}.at", "every op needs its system time")
    if kind == "define" and args["cardinality"] not in ("one", "many"):
        raise loc.fail(f"{where}.cardinality", "must be 'one' or 'many'")
    if kind == "correct":
        changes = args["set"]
        if not isinstance(changes, dict) or not changes or set(changes) - _CORRECTABLE:
            raise loc.fail(f"{where}.set", f"must set one or more of {', '.join(sorted(_CORRECTABLE))}")
        _fields(changes, f"{where}.set", loc, frozenset(), _CORRECTABLE, frozenset())
    for name in ("ref", "subject", "predicate", "object", "text", "old", "new"):
        if name in args and not (isinstance(args[name], str) and args[name].strip()):
            raise loc.fail(f"{where}.{name}", "must be a non-empty string")
    return Op(kind, at, args)


def _question(obj: Any, where: str, loc: _Where) -> Question:
    ask = obj.get("ask") if isinstance(obj, dict) else None
    if ask not in ASKS:
        raise loc.fail(f"{where}.ask", f"must be one of {', '.join(ASKS)}, not {ask!r}")
    required, optional = ASKS[ask]
    args = _fields(obj, where, loc, required | {"rule", "expect"}, optional | {"why"}, frozenset({"ask"}))
    rule, expect, why = args.pop("rule"), args.pop("expect"), args.pop("why", None)
    if rule not in RULES:
        raise loc.fail(f"{where}.rule", f"unknown rule {rule!r} (rules: {', '.join(RULES)})")
    if ask == "evidence" and args["view"] not in VIEWS:
        raise loc.fail(f"{where}.view", f"must be one of {', '.join(VIEWS)}")
    if ask == "values" and args["as_of"] is None:
        raise loc.fail(f"{where}.as_of", "a 'values' question names its instant")
    try:
        canonical_answer(ask, expect)
    except InvalidInputError as exc:
        raise loc.fail(f"{where}.expect", str(exc)) from None
    if why is not None and not isinstance(why, str):
        raise loc.fail(f"{where}.why", "must be a string")
    return Question(ask, rule, args, expect, why)


def _scenario(obj: Any, loc: _Where) -> Scenario:
    if not isinstance(obj, dict):
        raise loc.fail("scenario", "must be a JSON object")
    data = _fields(obj, "scenario", loc, frozenset({"id", "ops", "questions"}), frozenset({"title"}), frozenset())
    if not (isinstance(data["id"], str) and data["id"]):
        raise loc.fail("id", "must be a non-empty string")
    for name in ("ops", "questions"):
        if not isinstance(data[name], list):
            raise loc.fail(name, "must be a list")
    ops = tuple(_op(o, f"ops[{i}]", loc) for i, o in enumerate(data["ops"]))
    last = None
    for i, op in enumerate(ops):
        t = instant(op.at)
        if last is not None and t <= last:
            raise loc.fail(f"ops[{i}].at", "system times must strictly increase within a scenario")
        last = t
    refs: set[str] = set()
    for i, op in enumerate(ops):
        if op.kind in ("assert", "episode"):
            if op.get("ref") in refs:
                raise loc.fail(f"ops[{i}].ref", f"ref {op.get('ref')!r} is used twice")
            refs.add(op.get("ref"))
        for name in (("ref",) if op.kind in ("end", "correct", "retract") else ("old", "new")
                     if op.kind == "supersede" else ()):
            if op.get(name) not in refs:
                raise loc.fail(f"ops[{i}].{name}", f"names no earlier op: {op.get(name)!r}")
    questions = tuple(_question(q, f"questions[{i}]", loc) for i, q in enumerate(data["questions"]))
    for i, q in enumerate(questions):
        names = q.expect if q.ask == "evidence" else [q.get("episode")] if q.ask == "mentions" else []
        for name in names:
            if name not in refs:
                raise loc.fail(f"questions[{i}]", f"names no episode of the scenario: {name!r}")
    title = data.get("title", "")
    if not isinstance(title, str):
        raise loc.fail("title", "must be a string")
    return Scenario(data["id"], title, ops, questions)


def parse_scenarios(lines: Iterable[str], source: str = "<scenarios>") -> Iterator[Scenario]:
    """Read scenarios from JSONL lines (blank lines and ``//`` comment lines are skipped)."""
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("//"):
            continue
        loc = _Where(source, number)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise loc.fail("json", exc.msg) from None
        scenario = _scenario(obj, loc)
        if scenario.id in seen:
            raise loc.fail("id", f"scenario id {scenario.id!r} is used twice")
        seen.add(scenario.id)
        yield scenario


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read and validate a scenario file."""
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as fh:
            return list(parse_scenarios(fh, str(p)))
    except OSError as exc:
        raise ScenarioFormatError(f"cannot read scenario file {str(p)!r}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ScenarioFormatError(f"{str(p)!r} is not UTF-8 text") from None


def dump_scenarios(scenarios: Iterable[Scenario], path: str | Path) -> int:
    """Write scenarios in the canonical form (one line each, sorted keys); returns how many."""
    n = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as fh:
        for s in scenarios:
            fh.write(json.dumps(s.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n")
            n += 1
    return n
