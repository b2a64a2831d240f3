"""The sequential reference model of facts: the fact rules of ``docs/concepts/time.md``,
written declaratively and independently of chronomem's write engine.

The benchmark's generator computes its expected answers with it, and the
invariant checker replays recorded histories through it. It keeps, per
(subject, predicate) key, the live *facts* (statements with an identity), and
derives what is believed from them at read time instead of editing stored
intervals as the engine does:

* a fact is ``object`` over its own ``[lo, hi)`` (``MIN_US`` / ``MAX_US`` for an
  unknown start / open end), with the precision each bound was written with;
* many-valued key: a fact holds over its own interval;
* single-valued key: a fact holds from its start until the earliest of its own
  end and the next later start of a fact of another object; a fact of another
  object starting at exactly the same instant and written later replaces it
  (it holds nowhere, but comes back if that one is retracted);
* the believed intervals of an object are the union of what its facts hold,
  with overlapping or touching pieces coalesced;
* ``end`` sets a fact's own end (inside what it holds), ``correct`` rewrites its
  fields (the corrected fact counts as written at the correction; one that
  changes no field changes nothing), ``retract`` removes it; whatever it had cut
  short or replaced then holds again by the rules above, as if the removed
  statement had never been written;
* a value given back that way (by a retraction or a correction) and that now
  overlaps, touches or contains separate statements of its object coalesces
  with them, as a write would: one fact from then on, over the union, ending
  where its last part ends with the end that part was given, so a later cut ends
  the union and does not leave a part standing beyond it (rule 2: an earlier
  value is closed where a new one starts; it does not resume). Which id survives
  follows the engine: a value given back that was still believed (cut short)
  keeps its id, as it is placed again under it; one that held nowhere (replaced
  at its start) is placed again like a write: contained in a statement, it adds
  nothing (that one survives), else the oldest fact's id survives. The folded ids
  are no longer believed.

Identity follows the documented coalescing (a contained re-assertion names
the existing fact; an overlapping or touching one folds the touching facts into
the oldest, whose id survives; the folded ids are no longer believed), because
later ops name facts by the ref of the assert that wrote them.

A predicate's cardinality counts per pair of facts: the later written of the two
decides, so declaring a predicate single-valued does not rewrite what is stored.

Where the declarative reading and the documented behaviour part ways, the model
raises :class:`ModelCorner` (a :class:`ModelError`) instead of guessing, and the
generator never emits such an op. The corners all come from coalescing, which
folds statements into one fact covering the union of what they *hold* (the doc's
rule), whereas the declarative reading keeps each statement's own start and end:

* a single-valued re-assertion that touches a held value while a cut is involved
  in a way the union cannot remember (the part that ends last is cut short and
  folded away; a folded fact is what cut another value; a contained re-assertion
  that is cut short but reaches past its container's own end);
* a coalescing (by assert or correction) whose union, read declaratively, would
  give back a value a part of it had replaced at its start, or would not hold
  where the new part was placed;
* a single-valued correction that absorbs the value that cut it short while its
  own end reaches past that value's (the engine keeps the cut end, with its cause,
  so its union ends where the absorbed value ends), or absorbs a value its old
  version had replaced;
* a retraction or correction giving back two or more values of one object that
  touch each other (which id survives depends on the order the engine gives them
  back in), or a value that touches a statement of its object written under
  another cardinality;
* a value given back whose union with the statements it touches, read by the
  rules above, would hold elsewhere than the parts did or move another value
  (a part had replaced a value at its own start, or a value starts inside the
  union): the union forgets the parts' starts;
* a correction whose new version cuts or replaces a part of a union of values it
  gave back: the docs support both readings (a coalesced statement is cut as one,
  so the whole union goes; a value given back is cut again where it was, so only
  that part does), and the engine gives back and coalesces before it places the
  corrected version.

Every op creates a new state version at its system time; ``known_at`` reads
the state as of the last op with ``system_us <= known_at``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...core.names import normalize_key
from ...core.time import MAX_US, MIN_US, format_us, parse_time
from .scenario import Op, Question, canonical_answer

__all__ = ["FactModel", "ModelCorner", "ModelError", "answer"]

Key = tuple[str, str]


class ModelError(Exception):
    """The rules refuse this op (an empty interval, an end outside what the fact holds, an unknown ref...)."""


class ModelCorner(ModelError):
    """An op whose outcome the declarative model does not decide (see the module docstring)."""


@dataclass(frozen=True)
class _Fact:
    fid: int  # creation order: the oldest fact's id survives a coalescing
    okey: str
    lo: int
    lo_prec: int | None
    hi: int
    hi_prec: int | None
    arrival: int  # when it was (re)written: a later start-alike of another object replaces an earlier one
    one: bool  # (re)written while its predicate was single-valued


@dataclass(frozen=True)
class _Piece:
    """Where one fact holds: ``[lo, hi)`` with the bounds' precisions; ``cut``: ends before its own end."""

    fact: _Fact
    lo: int
    lo_prec: int | None
    hi: int
    hi_prec: int | None

    @property
    def cut(self) -> bool:
        return self.hi != self.fact.hi


@dataclass(frozen=True)
class _State:
    facts: Mapping[Key, tuple[_Fact, ...]]


def _bound(value: Any, *, end: bool) -> tuple[int, int | None]:
    if value is None:
        return (MAX_US if end else MIN_US), None
    tp = parse_time(value, "valid_to" if end else "valid_from")
    return tp.us, int(tp.precision)


def _rival(f: _Fact, g: _Fact) -> bool:
    """Whether ``g`` can cut or replace ``f``: another object, and the later written of the two was
    written while the predicate was single-valued (a declaration does not rewrite what is stored)."""
    return g.okey != f.okey and (g if g.arrival > f.arrival else f).one


def _pieces(facts: tuple[_Fact, ...], single: bool = False) -> list[_Piece]:
    """Where each fact holds (facts that hold nowhere are left out)."""
    if not any(f.one for f in facts):
        return [_Piece(f, f.lo, f.lo_prec, f.hi, f.hi_prec) for f in facts]
    out: list[_Piece] = []
    for f in facts:
        if any(g.lo == f.lo and g.arrival > f.arrival and _rival(f, g) for g in facts):
            continue  # replaced by a later value starting at the same instant
        hi, hi_prec = f.hi, f.hi_prec
        for g in facts:
            if f.lo < g.lo < hi and _rival(f, g):
                hi, hi_prec = g.lo, g.lo_prec
        out.append(_Piece(f, f.lo, f.lo_prec, hi, hi_prec))
    return out


def _held(facts: tuple[_Fact, ...], single: bool) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    for p in _pieces(facts, single):
        out.setdefault(p.fact.fid, []).append((p.lo, p.hi))
    return out


def _union(pieces: list[_Piece]) -> list[tuple[str, int, int | None, int, int | None]]:
    """Per object, the union of its pieces, overlapping or touching ones coalesced."""
    by_obj: dict[str, list[_Piece]] = {}
    for p in pieces:
        by_obj.setdefault(p.fact.okey, []).append(p)
    out: list[tuple[str, int, int | None, int, int | None]] = []
    for okey, ps in by_obj.items():
        ps.sort(key=lambda p: (p.lo, p.hi))
        cur = [ps[0].lo, ps[0].lo_prec, ps[0].hi, ps[0].hi_prec]
        for p in ps[1:]:
            if p.lo <= cur[2]:  # type: ignore[operator]
                if p.hi > cur[2]:  # type: ignore[operator]
                    cur[2], cur[3] = p.hi, p.hi_prec
            else:
                out.append((okey, cur[0], cur[1], cur[2], cur[3]))  # type: ignore[arg-type]
                cur = [p.lo, p.lo_prec, p.hi, p.hi_prec]
        out.append((okey, cur[0], cur[1], cur[2], cur[3]))  # type: ignore[arg-type]
    out.sort(key=lambda t: (t[1], t[3], t[0]))
    return out


class FactModel:
    """Facts as the rules say they are, replayed op by op in system-time order."""

    def __init__(self) -> None:
        self._facts: dict[Key, tuple[_Fact, ...]] = {}
        self._card: dict[str, str] = {}
        self._names: dict[str, str] = {}  # normalized key -> display name first written
        self._refs: dict[str, tuple[Key, int]] = {}  # ref -> (key, fid)
        self._gone: dict[int, str] = {}  # fid -> why it is no longer believed
        self._seq = 0
        self._history: list[tuple[int, _State]] = []
        self._history_us: list[int] = []

    # -- reads -------------------------------------------------------------
    def _state(self, known_at_us: int | None) -> Mapping[Key, tuple[_Fact, ...]]:
        if known_at_us is None:
            return self._facts
        i = bisect_right(self._history_us, known_at_us) - 1
        return self._history[i][1].facts if i >= 0 else {}

    def _key(self, subject: str, predicate: str) -> Key:
        return normalize_key(subject, "subject"), normalize_key(predicate, "predicate")

    def _believed(self, subject: str, predicate: str,
                  known_at_us: int | None) -> list[tuple[str, int, int | None, int, int | None]]:
        key = self._key(subject, predicate)
        facts = self._state(known_at_us).get(key, ())
        return _union(_pieces(facts, self._single(key[1])))

    def values(self, subject: str, predicate: str, as_of_us: int, known_at_us: int | None = None) -> list[str]:
        """The objects believed (as known at ``known_at_us``; ``None``: now) to hold at ``as_of_us``, sorted."""
        return sorted(self._names[o] for o, lo, _lp, hi, _hp in self._believed(subject, predicate, known_at_us)
                      if lo <= as_of_us < hi)

    def intervals(self, subject: str, predicate: str, known_at_us: int | None = None) -> list[tuple[str, int, int]]:
        """Every believed ``(object, valid_from_us, valid_to_us)``, sorted by start (sentinels for no bound)."""
        return [(self._names[o], lo, hi) for o, lo, _lp, hi, _hp in self._believed(subject, predicate, known_at_us)]

    def rendered_intervals(self, subject: str, predicate: str,
                           known_at_us: int | None = None) -> list[list[str | None]]:
        """:meth:`intervals` with each bound rendered at the precision it was written with."""
        return [[self._names[o], None if lo == MIN_US else format_us(lo, lp or 7),
                 None if hi == MAX_US else format_us(hi, hp or 7)]
                for o, lo, lp, hi, hp in self._believed(subject, predicate, known_at_us)]

    def keys(self) -> set[tuple[str, str]]:
        """Every (subject key, predicate key) that has had a fact."""
        return set(self._facts)

    def display(self, name: str) -> str:
        """The display name first written for ``name``'s key."""
        return self._names.get(normalize_key(name), name)

    def ref_fact(self, ref: str) -> tuple[str, int, int] | None:
        """What a ref names now: ``(object, lo, hi)`` of its fact's own interval, or ``None`` if not believed."""
        got = self._refs.get(ref)
        if got is None or got[1] in self._gone:
            return None
        f = self._find(got[0], got[1])
        return None if f is None else (self._names[f.okey], f.lo, f.hi)

    def holds(self, ref: str) -> tuple[int, int] | None:
        """Where the fact a ref names holds now (``None``: nowhere / not believed)."""
        got = self._refs.get(ref)
        if got is None or got[1] in self._gone:
            return None
        key, fid = got
        for p in _pieces(self._facts.get(key, ()), self._single(key[1])):
            if p.fact.fid == fid:
                return p.lo, p.hi
        return None

    # -- writes ------------------------------------------------------------
    def _single(self, pkey: str) -> bool:
        return self._card.get(pkey) == "one"

    def _name(self, name: str, what: str) -> str:
        key = normalize_key(name, what)
        self._names.setdefault(key, name.strip())
        return key

    def _find(self, key: Key, fid: int) -> _Fact | None:
        return next((f for f in self._facts.get(key, ()) if f.fid == fid), None)

    def _live(self, ref: str) -> tuple[Key, _Fact, _Piece]:
        got = self._refs.get(ref)
        if got is None:
            raise ModelError(f"ref {ref!r} names no fact")
        key, fid = got
        if fid in self._gone:
            raise ModelError(f"ref {ref!r}: its fact is no longer believed ({self._gone[fid]})")
        f = self._find(key, fid)
        assert f is not None
        piece = next((p for p in _pieces(self._facts[key], self._single(key[1])) if p.fact.fid == fid), None)
        if piece is None:
            raise ModelError(f"ref {ref!r}: its fact is not believed (replaced by a later value at its start)")
        return key, f, piece

    def apply(self, op: Op, system_us: int) -> None:
        """Apply one op at its system time (ops in increasing system time); raise :class:`ModelError`
        (nothing changes) for an op the rules refuse."""
        if self._history_us and system_us <= self._history_us[-1]:
            raise ModelError(f"system time {system_us} is not after the previous op's")
        handler = getattr(self, f"_op_{op.kind}", None)
        if handler is None:
            raise ModelError(f"the fact model has no op {op.kind!r}")
        saved = (dict(self._facts), dict(self._card), dict(self._names), dict(self._refs), dict(self._gone),
                 self._seq)
        try:
            moved = handler(op.args)
            if op.kind in ("retract", "correct"):
                self._settle(saved[0], moved)
            else:
                self._check_settled()
        except BaseException:
            (self._facts, self._card, self._names, self._refs, self._gone, self._seq) = saved
            raise
        self._history.append((system_us, _State(dict(self._facts))))
        self._history_us.append(system_us)

    def _op_define(self, a: Mapping[str, Any]) -> None:
        pkey = normalize_key(a["predicate"], "predicate")
        if a["cardinality"] not in ("one", "many"):
            raise ModelError(f"cardinality must be 'one' or 'many', not {a['cardinality']!r}")
        self._card[pkey] = a["cardinality"]

    def _op_assert(self, a: Mapping[str, Any]) -> None:
        if a["ref"] in self._refs:
            raise ModelError(f"ref {a['ref']!r} is used twice")
        key = (self._name(a["subject"], "subject"), normalize_key(a["predicate"], "predicate"))
        okey = self._name(a["object"], "object")
        lo, lo_prec = _bound(a.get("valid_from"), end=False)
        hi, hi_prec = _bound(a.get("valid_to"), end=True)
        if hi <= lo:
            raise ModelError("valid_to must be after valid_from (intervals are half-open)")
        self._seq += 1
        single = self._single(key[1])
        new = _Fact(self._seq, okey, lo, lo_prec, hi, hi_prec, self._seq, single)
        facts = self._facts.get(key, ())
        mine = next(p for p in _pieces(facts + (new,), single) if p.fact is new)
        same = [p for p in _pieces(facts, single) if p.fact.okey == okey]
        container = next((p for p in same if p.lo <= mine.lo and mine.hi <= p.hi), None)
        touching = [p for p in same if p.lo <= mine.hi and mine.lo <= p.hi]
        if single and touching:
            # the engine merges *held* intervals and remembers only the survivor's end from
            # before a cut: the declared union agrees with it unless the part that ends last
            # is cut short and is folded away, or a folded fact is what cut another value
            if container is not None:
                if mine.cut and new.hi > container.fact.hi:
                    raise ModelCorner("single-valued re-assertion, cut short, reaching past a held value's end")
            else:
                survivor_fid = min(p.fact.fid for p in touching)
                folded = [p for p in touching if p.fact.fid != survivor_fid]
                cutters = {q.hi for q in _pieces(facts, single) if q.cut}
                last = max(touching, key=lambda p: (p.fact.hi, p.fact.fid == survivor_fid))
                if last.fact.hi >= new.hi and last.cut and last.fact.fid != survivor_fid:
                    raise ModelCorner("single-valued re-assertion folding away a cut value that ends last")
                if any(p.lo in cutters for p in folded):
                    raise ModelCorner("single-valued re-assertion folding away a value that cut another")
        if container is not None:
            self._refs[a["ref"]] = (key, container.fact.fid)
            return
        if not touching:
            self._facts[key] = facts + (new,)
            self._refs[a["ref"]] = (key, new.fid)
            return
        parts = [p.fact for p in touching] + [new]
        survivor = min(touching, key=lambda p: p.fact.fid).fact
        first = min(parts, key=lambda f: f.lo)
        final = max(parts, key=lambda f: f.hi)
        merged = replace(survivor, lo=first.lo, lo_prec=first.lo_prec, hi=final.hi, hi_prec=final.hi_prec,
                         arrival=new.arrival, one=new.one)
        drop = {p.fact.fid for p in touching}
        for fid in drop - {survivor.fid}:
            self._gone[fid] = "coalesced into another fact"
        after = tuple(f for f in facts if f.fid not in drop) + (merged,)
        self._no_resurrection(key, facts, after, survivor.fid, mine)
        self._facts[key] = after
        self._refs[a["ref"]] = (key, survivor.fid)

    def _op_end(self, a: Mapping[str, Any]) -> None:
        key, f, piece = self._live(a["ref"])
        end, end_prec = _bound(a["ended"], end=True)
        if not piece.lo < end < piece.hi:
            raise ModelError(f"ref {a['ref']!r}: ended must lie inside the interval the fact holds")
        self._facts[key] = tuple(replace(g, hi=end, hi_prec=end_prec) if g.fid == f.fid else g
                                 for g in self._facts[key])

    def _op_correct(self, a: Mapping[str, Any]) -> int:
        """Rewrite the fact a ref names; returns its id (the fact the correction moved)."""
        key, f, piece = self._live(a["ref"])
        changes = a["set"]
        okey, lo, lo_prec, hi, hi_prec = f.okey, f.lo, f.lo_prec, f.hi, f.hi_prec
        held_hi = piece.hi
        if "object" in changes:
            okey = self._name(changes["object"], "object")
        if "valid_from" in changes:
            lo, lo_prec = _bound(changes["valid_from"], end=False)
        if "valid_to" in changes:
            hi, hi_prec = _bound(changes["valid_to"], end=True)
            held_hi = hi
        elif okey == f.okey and (lo, lo_prec) == (f.lo, f.lo_prec):
            return f.fid  # every field as it was: nothing is written (the doc's rule), nothing given back
        # the correction rewrites the believed version: its end is where the fact holds until
        if held_hi <= lo:
            raise ModelError("valid_to must be after valid_from (intervals are half-open)")
        self._seq += 1
        single = self._single(key[1])
        new = replace(f, okey=okey, lo=lo, lo_prec=lo_prec, hi=hi, hi_prec=hi_prec, arrival=self._seq, one=single)
        facts = tuple(g for g in self._facts[key] if g.fid != f.fid)
        mine = next((p for p in _pieces(facts + (new,), single) if p.fact is new), None)
        touching = [p for p in _pieces(facts, single) if p.fact.okey == okey and mine is not None
                    and p.lo <= mine.hi and mine.lo <= p.hi]
        if touching and single:
            # as for a re-assertion (see _op_assert), except that the corrected fact survives
            held_with_old = {q.fact.fid for q in _pieces(self._facts[key], single)}
            if any(p.fact.fid not in held_with_old for p in touching):
                # it absorbs a value its old version had replaced at its start: folded into it, or
                # (the engine, after a later retraction of it) given back on its own?
                raise ModelCorner("single-valued correction absorbing a value it had replaced")
            cutters = {q.hi for q in _pieces(facts, single) if q.cut}
            if piece.cut and any(p.lo == piece.hi and new.hi > p.hi for p in touching):
                # it absorbs what had cut it while its own end reaches past that value's: the engine
                # keeps the cut end (with its cause) and its union ends where the absorbed value ends
                raise ModelCorner("single-valued correction absorbing the value that cut it short")
            last = max(touching, key=lambda p: p.fact.hi)
            if last.fact.hi > new.hi and last.cut:
                raise ModelCorner("single-valued correction folding away a cut value that ends last")
            if any(p.lo in cutters for p in touching):
                raise ModelCorner("single-valued correction folding away a value that cut another")
        if touching and mine is not None:
            # the corrected fact keeps its id and absorbs what it touches
            parts = [p.fact for p in touching] + [new]
            first = min(parts, key=lambda g: g.lo)
            final = max(parts, key=lambda g: g.hi)
            new = replace(new, lo=first.lo, lo_prec=first.lo_prec, hi=final.hi, hi_prec=final.hi_prec)
            drop = {p.fact.fid for p in touching}
            for fid in drop:
                self._gone[fid] = "coalesced into a corrected fact"
            facts = tuple(g for g in facts if g.fid not in drop)
        # what the other values would hold had the old version never been: the corrected one
        # may cut them again, never give them more
        self._no_resurrection(key, tuple(g for g in self._facts[key] if g.fid != f.fid), facts + (new,), f.fid,
                              mine)
        self._given_back_apart(key, facts + (new,), f.fid)
        self._facts[key] = facts + (new,)
        return f.fid

    def _given_back_apart(self, key: Key, final: tuple[_Fact, ...], fid: int) -> None:
        """A correction first gives back what its old version had cut short, then places the new
        version. Values given back that touch one of their object are one statement from then on
        (:meth:`_settle`); if the new version then cuts or replaces a part of that union, does it
        take the whole union or only that part? The docs say both (a coalesced statement is cut as
        one; a value given back is cut again where it was): a corner."""
        single = self._single(key[1])
        was = {p.fact.fid: (p.lo, p.hi) for p in _pieces(self._facts[key], single)}
        gave = tuple(g for g in self._facts[key] if g.fid != fid)
        now = {p.fact.fid: (p.lo, p.hi) for p in _pieces(final, single)}
        for group in _groups(_pieces(gave, single)):
            if len(group) < 2 or not any(_grew(p, was) for p in group):
                continue
            if any(now.get(p.fact.fid) != (p.lo, p.hi) for p in group):
                raise ModelCorner("a correction cuts a union of values it gave back")

    def _no_resurrection(self, key: Key, before: tuple[_Fact, ...], after: tuple[_Fact, ...], mine: int,
                         placed: _Piece | None) -> None:
        """A write may only cut other values (those its fact does not absorb). The engine folds
        coalesced statements into one interval and forgets the starts the parts had; if that
        union, read declaratively, would give back a value one part had replaced at its start
        (or shift a cut), the declarative reading and the documented one part ways: a corner."""
        single = self._single(key[1])
        was = _held(before, single)
        now = _held(after, single)
        if placed is not None and not any(a <= placed.lo and placed.hi <= b for a, b in now.get(mine, ())):
            # the union no longer holds where the written statement was placed (it had replaced a
            # value at its own start, which the union's earlier start does not)
            raise ModelCorner("a coalescing union would not hold where its new part was placed")
        for fid, spans in now.items():
            if fid == mine:
                continue
            for lo, hi in spans:
                if not any(a <= lo and hi <= b for a, b in was.get(fid, ())):
                    raise ModelCorner("a coalescing union would give back a value a part of it had replaced")

    def _op_retract(self, a: Mapping[str, Any]) -> None:
        key, f, _piece = self._live(a["ref"])
        self._gone[f.fid] = "retracted"
        self._facts[key] = tuple(g for g in self._facts[key] if g.fid != f.fid)

    def _op_episode(self, a: Mapping[str, Any]) -> None:
        """Episodes are not facts: the fact model ignores them."""

    def _op_supersede(self, a: Mapping[str, Any]) -> None:
        """Episode supersession is not about facts: the fact model ignores it."""

    def _settle(self, before: Mapping[Key, tuple[_Fact, ...]], moved: int | None) -> None:
        """Coalesce what a retraction or correction gave back with the statements of the same object
        it now overlaps, touches or contains: they are one statement from then on (the doc's rule for
        a write, applied to the restored value as if its taker had never been written, so a later cut
        ends the union). The value given back keeps its id (the engine places it again under its own
        id), the union ends where its last part ends, with the end that part was given."""
        for key in list(self._facts):
            single = self._single(key[1])
            was = {p.fact.fid: (p.lo, p.hi) for p in _pieces(before.get(key, ()), single)}
            while True:
                group = next((g for g in _groups(_pieces(self._facts[key], single)) if len(g) > 1), None)
                if group is None:
                    break
                self._fold(key, group, was, moved)

    def _fold(self, key: Key, group: list[_Piece], was: Mapping[int, tuple[int, int]], moved: int | None) -> None:
        """Fold one group of touching pieces of one object into the one whose held interval grew."""
        if any(p.fact.fid == moved for p in group):
            raise ModelCorner("a corrected fact touches a value of its object it did not absorb")
        grown = [p for p in group if _grew(p, was)]
        if len(grown) != 1:
            # none: they touched before (no rule made them); several: which id the engine keeps
            # depends on the order it gives them back in
            raise ModelCorner(f"{len(grown)} values of one object given back touch each other")
        if len({p.fact.one for p in group}) > 1:
            raise ModelCorner("a value given back touches one of its object written under another cardinality")
        back = grown[0]
        first = min(group, key=lambda p: p.lo)
        end = max(p.hi for p in group)
        last = max((p for p in group if p.hi == end), key=lambda p: p.fact.hi)
        if back.fact.fid in was:
            # it held somewhere (cut short, still believed): placed again under its own id
            survivor = back.fact
        else:
            # it held nowhere (replaced at its start: no believed version): placed again like a
            # write, it is a no-op in a statement containing it, else the oldest fact's id survives
            container = next((p for p in group if p is not back and p.lo <= back.lo and back.hi <= p.hi), None)
            if container is not None:
                survivor, last = container.fact, container
            else:
                survivor = min((p.fact for p in group), key=lambda f: f.fid)
        merged = replace(survivor, lo=first.fact.lo, lo_prec=first.fact.lo_prec, hi=last.fact.hi,
                         hi_prec=last.fact.hi_prec, arrival=max(p.fact.arrival for p in group))
        drop = {p.fact.fid for p in group}
        facts = self._facts[key]
        after = tuple(f for f in facts if f.fid not in drop) + (merged,)
        single = self._single(key[1])
        now = {p.fact.fid: (p.lo, p.hi) for p in _pieces(after, single)}
        held = {p.fact.fid: (p.lo, p.hi) for p in _pieces(facts, single)}
        if now.get(merged.fid) != (first.lo, end) or any(
                now.get(f.fid) != held.get(f.fid) for f in after if f.fid != merged.fid):
            # the union, read by the rules, would hold elsewhere or move another value: a value
            # a part had replaced at its start, or a cut inside the union, would start to count
            raise ModelCorner("a value given back would coalesce into a union the rules read otherwise")
        for fid in drop - {merged.fid}:
            self._gone[fid] = "coalesced into a value given back"
        self._facts[key] = after

    def _check_settled(self) -> None:
        """After a write, no two facts of one object hold touching intervals (they would be one)."""
        for key, facts in self._facts.items():
            if any(len(g) > 1 for g in _groups(_pieces(facts, self._single(key[1])))):
                raise ModelCorner("two facts of one object touch after a write")


def _grew(p: _Piece, was: Mapping[int, tuple[int, int]]) -> bool:
    """Whether a piece holds where its fact did not (``was``: fact id -> where it held before)."""
    got = was.get(p.fact.fid)
    return got is None or not (got[0] <= p.lo and p.hi <= got[1])


def _groups(pieces: list[_Piece]) -> list[list[_Piece]]:
    """Per object, the pieces chained by overlapping or touching (each chain is one statement)."""
    by_obj: dict[str, list[_Piece]] = {}
    for p in pieces:
        by_obj.setdefault(p.fact.okey, []).append(p)
    out: list[list[_Piece]] = []
    for ps in by_obj.values():
        ps.sort(key=lambda p: (p.lo, p.hi))
        cur, reach = [ps[0]], ps[0].hi
        for p in ps[1:]:
            if p.lo <= reach:
                cur.append(p)
                reach = max(reach, p.hi)
            else:
                out.append(cur)
                cur, reach = [p], p.hi
        out.append(cur)
    return out


def _us(value: Any) -> int | None:
    return None if value is None else parse_time(value, "time").us


def answer(model: FactModel, question: Question) -> list[Any]:
    """The model's answer to a ``values`` or ``intervals`` question, in the canonical form."""
    q = question.args
    known_at = _us(q.get("known_at"))
    if question.ask == "values":
        as_of = _us(q["as_of"])
        assert as_of is not None
        return canonical_answer("values", model.values(q["subject"], q["predicate"], as_of, known_at))  # type: ignore[no-any-return]
    if question.ask == "intervals":
        return canonical_answer("intervals",  # type: ignore[no-any-return]
                                model.rendered_intervals(q["subject"], q["predicate"], known_at))
    raise ModelError(f"the fact model answers 'values' and 'intervals' questions, not {question.ask!r}")
