"""The scenario generator: random fact histories with answers computed by the reference model.

``generate(seed)`` draws, from ``random.Random(seed)`` alone (no clock, no
environment), scenarios of 10-40 fact ops over a few single- and many-valued
keys, of two kinds, drawn from the one stream (so a fixed seed still gives
byte-identical output):

* *plain* (about 40 %, ids ``gen-<seed>-p-<n>``): only ``define``, ``assert``
  (out of order, exact and overlapping duplicates, explicit ends) and ``end``;
  half of them ask no ``known_at`` question either. A memory without
  corrections, retractions or system time (MemPalace's graph, the naive
  baseline) can replay them and be scored on boundaries, unknown starts, open
  ends, supersession, backfill, duplicates and precision;
* *revised* (ids ``gen-<seed>-r-<n>``): the same plus corrections and
  retractions.

Asserts have random bounds at year / month / day / minute precision (a new
value of a single-valued key mostly starts at one of the next instants after
the key's latest start, so it supersedes the last; the rest land anywhere, so
they are backfilled), and all ops strictly increasing system times. Every candidate op is first applied to
:class:`~.model.FactModel`; one the rules refuse, or one in a corner the model
does not decide (:class:`~.model.ModelCorner`), is dropped and drawn again, so
every op of a generated scenario is one chronomem accepts and the model answers
with certainty. Questions ask values at every boundary (each start, each end,
one microsecond before each end, before everything) and the intervals, now and
(unless the scenario asks none) as known at several past system times, each
tagged with the rule it exercises (see :func:`_splice_rule` for supersession
and backfill). ``python -m chronomem.adapters.benchmark.generate`` rewrites
``data/generated.jsonl`` (the default seed gives byte-identical output).

Each instant a scenario uses is drawn once with one precision, so a bound that
is reached two ways (its own start and another value's cut) renders the same.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core.names import normalize_key
from ...core.time import MAX_US, MIN_US, Precision, format_us, parse_time
from .model import FactModel, ModelError, answer
from .scenario import Op, Question, Scenario, dump_scenarios

__all__ = ["DEFAULT_PATH", "DEFAULT_SCENARIOS", "DEFAULT_SEED", "PLAIN_SHARE", "generate", "main", "write"]

DEFAULT_SEED = 19
DEFAULT_SCENARIOS = 200
#: the share of scenarios drawn "plain" (no correction, no retraction)
PLAIN_SHARE = 0.4
#: the share of plain scenarios that also ask about a past system time (``known_at``)
_PLAIN_REPLAY_SHARE = 0.5
DEFAULT_PATH = Path(__file__).parent / "data" / "generated.jsonl"

_SUBJECTS = ("Acme", "Dana", "Atlas", "Bo", "Globex", "Ines")
_SINGLE = ("ceo", "lives in", "database", "manager")
_MANY = ("works at", "member of", "speaks", "uses")
_OBJECTS = ("Alice", "Bob", "Carla", "Berlin", "Paris", "Kafka", "PostgreSQL", "MySQL", "Club", "French",
            "Rome", "Oslo")
_PRECISIONS = (Precision.YEAR, Precision.MONTH, Precision.DAY, Precision.MINUTE)
_EPOCH = "2025-01-01T00:00:00Z"
_ONE_S = 1_000_000
#: the share of new values of a single-valued key drawn to start after every start written so far
_IN_ORDER = 0.75
_BEFORE_ALL = "1990"  # before every drawn instant (they lie in 2005-2034)


def _pool(rng: random.Random) -> list[str]:
    """The instants a scenario's bounds use, each with one precision, sorted."""
    out: dict[int, str] = {}
    while len(out) < rng.randint(7, 10):
        year = rng.randint(2005, 2034)
        prec = rng.choice(_PRECISIONS)
        text = str(year)
        if prec >= Precision.MONTH:
            text += f"-{rng.randint(1, 12):02d}"
        if prec >= Precision.DAY:
            text += f"-{rng.randint(1, 28):02d}"
        if prec >= Precision.MINUTE:
            text += f"T{rng.randint(0, 23):02d}:{rng.choice((0, 15, 30, 45)):02d}Z"
        us = parse_time(text).us
        out.setdefault(us, text)
    return [out[k] for k in sorted(out)]


class _Draft:
    """One scenario being drawn: the model, the ops accepted so far and what they exercised."""

    def __init__(self, rng: random.Random, index: int, *, plain: bool) -> None:
        self.rng = rng
        self.plain = plain
        self.model = FactModel()
        self.ops: list[Op] = []
        self.op_us: list[int] = []
        self.now = parse_time(_EPOCH).us + index * 86_400 * _ONE_S
        self.pool = _pool(rng)
        self.keys: list[tuple[str, str, bool, tuple[str, ...]]] = []
        self.refs: list[tuple[str, int]] = []  # (ref, key index)
        self.features: dict[int, set[str]] = {}
        self.last_start: dict[int, int] = {}
        self.starts: dict[str, int] = {}  # ref -> the start its assert stated

    def time(self, rng: random.Random, *, open_ok: bool) -> str | None:
        if open_ok and rng.random() < 0.25:
            return None
        return rng.choice(self.pool)

    def push(self, kind: str, args: dict[str, Any], key: int | None, feature: str | None = None) -> bool:
        self.now += self.rng.randint(1, 3600) * _ONE_S
        op = Op(kind, format_us(self.now, Precision.SECOND), args)
        try:
            self.model.apply(op, self.now)
        except ModelError:
            return False
        self.ops.append(op)
        self.op_us.append(self.now)
        if key is not None and feature is not None:
            self.features.setdefault(key, set()).add(feature)
        return True


def _interval(d: _Draft) -> tuple[str | None, str | None] | None:
    lo, hi = d.time(d.rng, open_ok=True), d.time(d.rng, open_ok=True)
    if lo is not None and hi is not None:
        if lo == hi:
            return None
        if parse_time(lo).us > parse_time(hi).us:
            lo, hi = hi, lo
    return lo, hi


def _next_interval(d: _Draft, k: int) -> tuple[str | None, str | None] | None:
    """An interval starting after every start written on key ``k`` so far (the world moving on:
    a new value supersedes the last), mostly open-ended; ``None`` when the pool has no later instant."""
    rng = d.rng
    last = d.last_start.get(k, MIN_US)
    later = [t for t in d.pool if parse_time(t).us > last]
    if not later:
        return None
    lo = rng.choice(later[:2])  # the next instants: a key's history goes through several values
    ends = [t for t in d.pool if parse_time(t).us > parse_time(lo).us]
    return lo, (rng.choice(ends) if ends and rng.random() < 0.3 else None)


def _assert(d: _Draft, n: int) -> bool:
    rng = d.rng
    k = rng.randrange(len(d.keys))
    subject, predicate, single, objects = d.keys[k]
    ref = f"f{n}"
    duplicate = [r for r, kk in d.refs if kk == k and d.model.ref_fact(r) is not None]
    if duplicate and rng.random() < 0.25:  # an exact or overlapping re-assertion of a held value
        obj, lo_us, hi_us = d.model.ref_fact(rng.choice(duplicate)) or ("", MIN_US, MAX_US)
        bounds = [None if lo_us == MIN_US else _text(d, lo_us), None if hi_us == MAX_US else _text(d, hi_us)]
        if rng.random() < 0.6:
            bounds[rng.randrange(2)] = d.time(rng, open_ok=True)
        lo, hi = bounds
        if lo is not None and hi is not None and parse_time(lo).us >= parse_time(hi).us:
            return False
        feature = "duplicates"
    else:
        drawn = _next_interval(d, k) if single and rng.random() < _IN_ORDER else None
        drawn = drawn or _interval(d)
        if drawn is None:
            return False
        lo, hi = drawn
        obj = rng.choice(objects)
        if rng.random() < 0.08:
            obj = obj.lower()  # the same entity by its normalized key
        feature = None
    args: dict[str, Any] = {"ref": ref, "subject": subject, "predicate": predicate, "object": obj}
    if lo is not None or rng.random() < 0.3:
        args["valid_from"] = lo
    if hi is not None or rng.random() < 0.3:
        args["valid_to"] = hi
    start = MIN_US if lo is None else parse_time(lo).us
    if single and feature is None:
        feature = "backfill" if start < d.last_start.get(k, MIN_US) else "supersession"
    if not d.push("assert", args, k, feature):
        return False
    d.starts[ref] = start
    d.last_start[k] = max(d.last_start.get(k, MIN_US), start)
    d.refs.append((ref, k))
    return True


def _text(d: _Draft, us: int) -> str:
    return next(t for t in d.pool if parse_time(t).us == us)


def _end(d: _Draft) -> bool:
    live = [(r, k) for r, k in d.refs if d.model.holds(r) is not None]
    if not live:
        return False
    ref, k = d.rng.choice(live)
    lo, hi = d.model.holds(ref) or (MIN_US, MAX_US)
    inside = [t for t in d.pool if lo < parse_time(t).us < hi]
    if not inside:
        return False
    # a change with no correction to tell it from only moves a boundary: plain scenarios leave it untagged
    feature = None if d.plain else "correction-vs-change"
    return d.push("end", {"ref": ref, "ended": d.rng.choice(inside)}, k, feature)


def _correct(d: _Draft) -> bool:
    live = [(r, k) for r, k in d.refs if d.model.holds(r) is not None]
    if not live:
        return False
    rng = d.rng
    ref, k = rng.choice(live)
    what = rng.choice(("object", "object", "valid_from", "valid_from", "valid_to"))
    value: str | None
    if what == "object":
        value = rng.choice(d.keys[k][3])
    else:
        value = d.time(rng, open_ok=True)
    return d.push("correct", {"ref": ref, "set": {what: value}}, k, "correction-vs-change")


def _retract(d: _Draft) -> bool:
    live = [(r, k) for r, k in d.refs if d.model.holds(r) is not None]
    if not live:
        return False
    ref, k = d.rng.choice(live)
    return d.push("retract", {"ref": ref}, k, "retraction")


def _draw_ops(d: _Draft) -> None:
    rng = d.rng
    subjects = rng.sample(_SUBJECTS, rng.randint(1, 2))
    n_keys = rng.randint(1, 3)
    for _ in range(n_keys):
        single = rng.random() < 0.55
        predicate = rng.choice(_SINGLE if single else _MANY)
        subject = rng.choice(subjects)
        if any(s == subject and p == predicate for s, p, _x, _o in d.keys):
            continue
        d.keys.append((subject, predicate, single, tuple(rng.sample(_OBJECTS, 3))))
        if single or rng.random() < 0.3:
            d.push("define", {"predicate": predicate, "cardinality": "one" if single else "many"}, None)
    target = rng.randint(10, 40)
    n = 0
    while len(d.ops) < target and n < 400:
        n += 1
        if d.plain:
            kind = rng.choices(("assert", "end"), (78, 22))[0]
        else:
            kind = rng.choices(("assert", "end", "correct", "retract"), (60, 12, 16, 12))[0]
        if len(d.refs) < 2:
            kind = "assert"
        if kind == "assert":
            _assert(d, n)
        elif kind == "end":
            _end(d)
        elif kind == "correct":
            _correct(d)
        else:
            _retract(d)


def _known_ats(d: _Draft) -> list[str]:
    """Past system times to replay: before the first op, at and between ops, after all."""
    rng = d.rng
    picks = {d.op_us[0] - _ONE_S}
    for _ in range(3):
        i = rng.randrange(len(d.op_us))
        picks.add(d.op_us[i])
        if i + 1 < len(d.op_us):
            picks.add((d.op_us[i] + d.op_us[i + 1]) // 2)
    picks.add(d.op_us[-1] + _ONE_S // 2)
    return [format_us(us, Precision.MICROSECOND if us % _ONE_S else Precision.SECOND) for us in sorted(picks)]


def _value_rule(d: _Draft, k: int, as_of: int, believed: list[tuple[str, int, int]], minus_one: bool) -> str:
    """The rule a ``values`` question (as known now) exercises most: what holds there, and
    otherwise one of the things the key's history did (drawn, so each gets its share)."""
    feats = d.features.get(k, set())
    starts = sorted({lo for _o, lo, _h in believed if lo != MIN_US})
    ends = sorted({hi for _o, _l, hi in believed if hi != MAX_US})
    holding = [(lo, hi) for _o, lo, hi in believed if lo <= as_of < hi]
    if any(lo == MIN_US for lo, _h in holding) and (not starts or as_of < starts[0]):
        return "unknown-start"
    splice = _splice_rule(d, k, as_of)
    if splice is not None:
        return splice
    if holding and all(hi == MAX_US for _l, hi in holding) and (not ends or as_of >= ends[-1]):
        return "open-end"
    if minus_one or as_of in ends:
        return "valid-boundary"
    partial = any(p.us == as_of and p.precision <= Precision.DAY for p in map(parse_time, d.pool))
    if partial and d.rng.random() < 0.5:
        return "partial-precision"
    # supersession and backfill are not drawn: _splice_rule above tags the questions they decide
    order = ("retraction", "correction-vs-change", "duplicates")
    present = [r for r in order if r in feats for _ in range(3 if r == "duplicates" else 1)]
    return d.rng.choice(present) if present else ("partial-precision" if partial else "valid-boundary")


def _splice_rule(d: _Draft, k: int, as_of: int) -> str | None:
    """``supersession`` or ``backfill`` for a ``values`` question (as known now) whose answer on a
    single-valued key is decided by which of two values wins at ``as_of``, else ``None``.

    The tagging rule, read off the key's history as the model holds it: the facts still
    believed on the key, each with the own interval the model now gives it (after ends,
    corrections, coalescing), the write order of its first assert and the start that assert
    stated. A fact *covers* ``as_of`` when its own interval contains it; a fact of another
    object starting after a covering fact's start, at or before ``as_of``, *cuts* it. When
    the covering and cutting facts name two objects or more, the answer depends on the
    single-valued rule (a later start ends an earlier value where it starts): the latest
    starting of them (the later written on a tie) *decides* ``as_of`` (it holds there, or its
    cut left nothing), over the latest starting one of another object before it, which it
    *beats*. The question is ``backfill`` if the beaten fact was written after the deciding one,
    or the deciding one arrived out of order (its assert stated a start before the start of
    an earlier written fact of another object: it was spliced in before that one); otherwise
    ``supersession`` (the answer depends on a value written after the one it ends)."""
    if not d.keys[k][2]:
        return None
    rows: list[tuple[str, int, int, int, int]] = []  # (object key, lo, hi, write order, stated start)
    for n, (ref, kk) in enumerate(d.refs):
        got = d.model.ref_fact(ref) if kk == k else None
        if got is not None:
            rows.append((normalize_key(got[0]), got[1], got[2], n, d.starts[ref]))
    facts: dict[tuple[str, int, int], tuple[str, int, int, int, int]] = {}
    for row in rows:  # in write order: a fact named by several asserts is its first one
        facts.setdefault(row[:3], row)
    covering = [f for f in facts.values() if f[1] <= as_of < f[2]]
    cands = covering + [g for f in covering for g in facts.values() if g[0] != f[0] and f[1] < g[1] <= as_of]
    if len({f[0] for f in cands}) < 2:
        return None
    order = sorted(set(cands), key=lambda f: (f[1], f[3]))
    decider = order[-1]
    beaten = next(f for f in reversed(order) if f[0] != decider[0])
    late = any(r[0] != decider[0] and r[3] < decider[3] and r[4] > decider[4] for r in rows)
    return "backfill" if beaten[3] > decider[3] or late else "supersession"


def _questions(d: _Draft, *, replay: bool) -> list[Question]:
    """Values at every boundary and the intervals, as known now and (``replay``) at past system times."""
    rng = d.rng
    out: list[Question] = []
    known = _known_ats(d) if replay else []
    for k, (subject, predicate, _single, _objects) in enumerate(d.keys):
        believed = d.model.intervals(subject, predicate)
        if not believed and k not in d.features:
            continue
        bounds = sorted({us for _o, lo, hi in believed for us in (lo, hi) if us not in (MIN_US, MAX_US)})
        ends = {hi for _o, _lo, hi in believed}
        as_ofs: list[tuple[str, int, bool]] = [(_BEFORE_ALL, parse_time(_BEFORE_ALL).us, False)]
        for us in bounds:
            as_ofs.append((_text(d, us), us, False))
            if us in ends:  # the last instant a value holds
                as_ofs.append((format_us(us - 1, Precision.MICROSECOND), us - 1, True))
        for text, us, minus_one in as_ofs:
            q = Question("values", "valid-boundary", {"subject": subject, "predicate": predicate, "as_of": text}, [])
            rule = _value_rule(d, k, us, believed, minus_one)
            out.append(Question("values", rule, dict(q.args), answer(d.model, q)))
        for known_at in rng.sample(known, min(2, len(known))):
            args = {"subject": subject, "predicate": predicate, "known_at": known_at}
            q = Question("intervals", "known-at-replay", args, [])
            out.append(Question("intervals", _replay_rule(d, k, known_at), args, answer(d.model, q)))
            for text, _us, _m in rng.sample(as_ofs, 1):
                vargs = {**args, "as_of": text}
                vq = Question("values", "known-at-replay", vargs, [])
                out.append(Question("values", _replay_rule(d, k, known_at), vargs, answer(d.model, vq)))
        args = {"subject": subject, "predicate": predicate}
        q = Question("intervals", "valid-boundary", args, [])
        feats = d.features.get(k, set())
        rule = next((r for r in ("retraction", "correction-vs-change", "backfill", "duplicates", "supersession")
                     if r in feats), "partial-precision")
        out.append(Question("intervals", rule, args, answer(d.model, q)))
    return out


def _replay_rule(d: _Draft, k: int, known_at: str) -> str:
    """``correction-vs-change`` when a correction of this key came after ``known_at`` (the old
    belief read back), else ``known-at-replay``."""
    t = parse_time(known_at).us
    subject, predicate = d.keys[k][0], d.keys[k][1]
    for op, us in zip(d.ops, d.op_us, strict=True):
        if us > t and op.kind == "correct":
            got = op.get("ref")
            if any(r == got and kk == k for r, kk in d.refs):
                return "correction-vs-change"
    del subject, predicate
    return "known-at-replay"


def generate(seed: int = DEFAULT_SEED, scenarios: int = DEFAULT_SCENARIOS) -> list[Scenario]:
    """``scenarios`` scenarios drawn from ``random.Random(seed)``: the same seed, the same scenarios.

    Each draws its kind first (plain with :data:`PLAIN_SHARE`, then whether a plain one asks
    ``known_at`` questions); its id says the kind (``p`` plain, ``r`` revised) and its index."""
    rng = random.Random(seed)
    out: list[Scenario] = []
    for i in range(scenarios):
        plain = rng.random() < PLAIN_SHARE
        replay = not plain or rng.random() < _PLAIN_REPLAY_SHARE
        d = _Draft(rng, i, plain=plain)
        _draw_ops(d)
        if not d.refs:
            continue
        questions = _questions(d, replay=replay)
        kind = "plain" if plain else "revised"
        title = f"generated {kind} fact history {i} (seed {seed}{'' if replay else ', no known_at'})"
        out.append(Scenario(f"gen-{seed}-{kind[0]}-{i:03d}", title, tuple(d.ops), tuple(questions)))
    return out


def write(path: str | Path = DEFAULT_PATH, seed: int = DEFAULT_SEED, scenarios: int = DEFAULT_SCENARIOS) -> int:
    """Write the generated scenarios in the canonical form; returns how many."""
    return dump_scenarios(generate(seed, scenarios), path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write the generated benchmark scenarios")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--scenarios", type=int, default=DEFAULT_SCENARIOS)
    parser.add_argument("--out", default=str(DEFAULT_PATH))
    args = parser.parse_args(argv)
    n = write(args.out, args.seed, args.scenarios)
    print(f"wrote {n} scenarios to {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
