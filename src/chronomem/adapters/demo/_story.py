"""The demo story: load it from ``story.jsonl``, record it, and ask it questions.

The story is package data, one JSON object per line, recorded in file order on
the real clock. Each write step remembers the system time the store gave it, so
the known-at questions can ask what the store believed just before that step.
Nothing here hard-codes an answer: every answer is a read of the store.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from ...core.models import Diff, Event, Fact
from ...core.time import Precision, format_us, to_us
from ...errors import InvalidInputError
from ...memory import Memory

__all__ = [
    "AS_OF_QUESTIONS",
    "DIFF_RANGE",
    "KNOWN_AT_QUESTIONS",
    "TIMELINE_ENTITY",
    "Answer",
    "AsOfQuestion",
    "DemoRun",
    "KnownAtQuestion",
    "Recorded",
    "Step",
    "load_story",
    "run_story",
]

_OPS = ("define", "add", "correct", "retract", "invalidate")
_ONE_US = _dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class Step:
    """One line of the story file."""

    op: str
    key: str
    say: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Recorded:
    """A write step after it ran: the version it produced and its system time."""

    step: Step
    fact: Fact
    system_time: _dt.datetime


@dataclass(frozen=True)
class AsOfQuestion:
    """A valid-time question; ``as_of=None`` means now."""

    text: str
    subject: str
    predicate: str
    as_of: str | None


@dataclass(frozen=True)
class KnownAtQuestion:
    """A system-time question: asked just before ``step`` was recorded, and now."""

    text: str
    subject: str
    predicate: str
    as_of: str | None
    step: str
    label: str


AS_OF_QUESTIONS: tuple[AsOfQuestion, ...] = (
    AsOfQuestion("Who was CEO of Acme Corp in 2016-06?", "Acme Corp", "ceo", "2016-06"),
    AsOfQuestion("Who was CEO of Acme Corp in 2021-06?", "Acme Corp", "ceo", "2021-06"),
    AsOfQuestion("Who is CEO of Acme Corp now?", "Acme Corp", "ceo", None),
    AsOfQuestion("Which queue did the Payments team use in 2020?", "Payments team", "message queue", "2020"),
    AsOfQuestion("Which queue does the Payments team use now?", "Payments team", "message queue", None),
    AsOfQuestion("Where did Dana Lee live in 2020-01?", "Dana Lee", "lives in", "2020-01"),
    AsOfQuestion("Where does Dana Lee live now?", "Dana Lee", "lives in", None),
    AsOfQuestion("Where did Dana Lee work in 2024-12?", "Dana Lee", "works at", "2024-12"),
)

KNOWN_AT_QUESTIONS: tuple[KnownAtQuestion, ...] = (
    KnownAtQuestion("Who was CEO of Acme Corp in 2021-06?", "Acme Corp", "ceo", "2021-06", "carla",
                    "before the archived filing was recorded"),
    KnownAtQuestion("Which queue does the Payments team use now?", "Payments team", "message queue", None,
                    "queue-fix", "before the correction"),
    KnownAtQuestion("Where does Dana Lee live now?", "Dana Lee", "lives in", None, "paris-retracted",
                    "before the retraction"),
)

TIMELINE_ENTITY = "Acme Corp"
DIFF_RANGE = ("2020-01", "2024-12")


def load_story() -> list[Step]:
    """Read ``story.jsonl`` from the package."""
    text = resources.files(__package__).joinpath("story.jsonl").read_text(encoding="utf-8")
    steps: list[Step] = []
    keys: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"demo story line {number} is not JSON: {exc}") from None
        if not isinstance(item, dict) or item.get("op") not in _OPS:
            raise InvalidInputError(f"demo story line {number} needs an 'op' among {', '.join(_OPS)}")
        op = str(item.pop("op"))
        key = str(item.pop("key", f"{op}-{number}"))
        if key in keys:
            raise InvalidInputError(f"demo story line {number} repeats the key {key!r}")
        keys.add(key)
        steps.append(Step(op, key, str(item.pop("say", "")), item))
    return steps


def _record(mem: Memory, step: Step, done: dict[str, Recorded]) -> Recorded | None:
    d = step.data
    if step.op == "define":
        mem.define_predicate(d["predicate"], d.get("cardinality", "many"), description=d.get("description"))
        return None
    if step.op == "add":
        fact = mem.add_fact(d["subject"], d["predicate"], d["object"], d.get("valid_from"), d.get("valid_to"),
                            source=d.get("source"))
        return Recorded(step, fact, fact.system_from)
    if step.op == "invalidate":
        fact = mem.invalidate(d["subject"], d["predicate"], d["object"], d.get("ended"), reason=d.get("reason"))
        return Recorded(step, fact, fact.system_from)
    target = done[d["target"]].fact.id
    if step.op == "correct":
        fact = mem.correct(target, **d["changes"])
        return Recorded(step, fact, fact.system_from)
    fact = mem.retract(target, reason=d.get("reason"))
    assert fact.system_to is not None  # a retracted version is closed
    return Recorded(step, fact, fact.system_to)


@dataclass(frozen=True)
class Answer:
    """The facts one question returned."""

    question: str
    as_of: _dt.datetime
    as_of_text: str
    facts: tuple[Fact, ...]
    known_at: _dt.datetime | None = None
    known_at_label: str = "now"

    @property
    def objects(self) -> list[str]:
        return [str(f.object) for f in self.facts]

    def to_dict(self, tz: _dt.tzinfo) -> dict[str, Any]:
        return {
            "question": self.question,
            "as_of": self.as_of_text,
            "known_at": None if self.known_at is None else render_system(self.known_at, tz),
            "known_at_label": self.known_at_label,
            "answer": self.objects,
            "facts": [f.to_dict() | {"interval": interval(f, tz)} for f in self.facts],
        }


@dataclass
class DemoRun:
    """Everything the demo recorded and read back."""

    mem: Memory
    moved_from: str | None
    recorded: dict[str, Recorded] = field(default_factory=dict)
    predicates: list[str] = field(default_factory=list)
    as_of: list[Answer] = field(default_factory=list)
    known_at: list[Answer] = field(default_factory=list)
    timeline: list[Event] = field(default_factory=list)
    diff: Diff | None = None

    def to_dict(self) -> dict[str, Any]:
        tz = self.mem.tz
        return {
            "store": self.mem.url,
            "namespace": self.mem.namespace,
            "moved_from_namespace": self.moved_from,
            "predicates": self.predicates,
            "steps": [
                {
                    "key": r.step.key,
                    "op": r.step.op,
                    "say": r.step.say,
                    "system_time": render_system(r.system_time, tz),
                    "fact": r.fact.to_dict() | {"interval": interval(r.fact, tz)},
                }
                for r in self.recorded.values()
            ],
            "as_of_questions": [a.to_dict(tz) for a in self.as_of],
            "known_at_questions": [a.to_dict(tz) for a in self.known_at],
            "timeline": {
                "entity": TIMELINE_ENTITY,
                "events": [
                    {"at": render_event_time(e, tz), "kind": e.kind, "axis": e.axis, "fact_id": e.fact_id,
                     "text": e.text}
                    for e in self.timeline
                ],
            },
            "diff": None if self.diff is None else self.diff.to_dict(),
        }


def render_valid(when: _dt.datetime | None, precision: Precision | None, tz: _dt.tzinfo) -> str | None:
    """A valid-time bound at its precision, in the memory's timezone."""
    if when is None or precision is None:
        return None
    return format_us(to_us(when), precision, tz)


def interval(f: Fact, tz: _dt.tzinfo) -> str:
    """``[2020-09, 2022-01)``, ``…`` for an unknown start or an open end."""
    lo = render_valid(f.valid_from, f.valid_from_precision, tz) or "…"
    hi = render_valid(f.valid_to, f.valid_to_precision, tz) or "…"
    return f"[{lo}, {hi})"


def render_system(when: _dt.datetime, tz: _dt.tzinfo) -> str:
    return format_us(to_us(when), Precision.MICROSECOND, tz)


def render_event_time(e: Event, tz: _dt.tzinfo) -> str:
    if e.axis == "valid":
        return render_valid(e.at, e.precision or Precision.MICROSECOND, tz) or ""
    return render_system(e.at, tz)


def _fresh_namespace(mem: Memory) -> tuple[Memory, str | None]:
    """Record into ``mem``'s namespace if it is empty, else into a new ``demo-<time>`` one."""
    if mem.stats().entities == 0:
        return mem, None
    taken = set(mem.store.namespaces())
    base = f"demo-{mem.now():%Y%m%dT%H%M%S}"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return Memory(mem.store, name, timezone=mem.tz), mem.namespace


def run_story(mem: Memory) -> DemoRun:
    """Record the story (in a fresh namespace if ``mem``'s holds data) and ask the questions."""
    target, moved_from = _fresh_namespace(mem)
    run = DemoRun(target, moved_from)
    for step in load_story():
        if step.op == "define":
            run.predicates.append(f"{step.data['predicate']} ({step.data.get('cardinality', 'many')})")
        rec = _record(target, step, run.recorded)
        if rec is not None:
            run.recorded[step.key] = rec
    now = target.now()
    for q in AS_OF_QUESTIONS:
        when = now if q.as_of is None else target.parse_time(q.as_of, "as_of").datetime
        facts = target.facts(q.subject, q.predicate, as_of=when)
        run.as_of.append(Answer(q.text, when, q.as_of or "now", tuple(facts)))
    for k in KNOWN_AT_QUESTIONS:
        when = now if k.as_of is None else target.parse_time(k.as_of, "as_of").datetime
        before = run.recorded[k.step].system_time - _ONE_US
        for known_at, label in ((before, k.label), (None, "now")):
            facts = target.facts(k.subject, k.predicate, as_of=when, known_at=known_at)
            run.known_at.append(Answer(k.text, when, k.as_of or "now", tuple(facts), known_at, label))
    run.timeline = target.timeline(TIMELINE_ENTITY)
    run.diff = target.diff(*DIFF_RANGE)
    return run
