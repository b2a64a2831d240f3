"""Analyses over fact versions: timeline, diff, conflicts, volatility,
graph traversal and confidence decay. Pure functions of :class:`Fact` lists."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections import defaultdict, deque
from typing import AbstractSet, Callable, Iterable, Literal, Mapping, Sequence

from .models import (
    Axis,
    BarStatus,
    Conflict,
    Diff,
    DiffChange,
    Event,
    Fact,
    FactBar,
    Neighbor,
    Path,
    Predicate,
    Volatility,
)
from .time import to_us
from .version import CloseKind

__all__ = ["conflicts", "decay", "diff", "fact_bars", "neighbors", "paths", "timeline", "volatility"]


def _obj(f: Fact) -> str:
    return f.object_text


def _stmt(f: Fact) -> str:
    return f"{f.subject} -{f.predicate}-> {_obj(f)}"


def timeline(versions: Sequence[Fact], start: int | None, end: int | None,
             enders: Mapping[str, Fact] | None = None) -> list[Event]:
    """Events from every version of the facts touching one entity.
    ``enders``: the facts (by id) that superseded them, for those that do not
    touch the entity themselves (``Acme -ceo-> Bob`` in Alice's timeline)."""
    by_id: dict[str, list[Fact]] = defaultdict(list)
    for f in versions:
        by_id[f.id].append(f)
    events: list[Event] = []
    for fid, vs in by_id.items():
        vs.sort(key=lambda f: f.version)
        first = vs[0]
        events.append(Event(first.system_from, "recorded", "system", fid,
                            f"recorded: {_stmt(first)} {first.interval_text}", first))
        for v in vs:
            if v.system_to is None:
                continue
            kind = v.ended_by
            nxt = next((w for w in vs if w.version > v.version), None)
            why = f": {v.ended_reason}" if v.ended_reason else ""
            if kind == CloseKind.CORRECTED and nxt is not None:
                text = f"corrected: {_stmt(v)} {v.interval_text} -> {_stmt(nxt)} {nxt.interval_text}{why}"
            elif kind == CloseKind.RETRACTED:
                text = f"retracted: {_stmt(v)} {v.interval_text}{why}"
            elif kind == CloseKind.COALESCED:
                text = f"coalesced: {_stmt(v)} {v.interval_text} joined with another record"
            elif kind in (CloseKind.SUPERSEDED, CloseKind.INVALIDATED) and nxt is not None:
                continue  # shown as the valid-time 'ended' of the successor
            elif kind == CloseKind.RESTORED and nxt is not None:
                # the value is believed again as the next version says, not as the cut one was
                text = (f"restored: {_stmt(nxt)} {nxt.interval_text}{_restored_after(v, by_id)}"
                        f" (was {v.interval_text})")
            else:
                text = f"{kind or 'closed'}: {_stmt(v)} {v.interval_text}{why}"
            events.append(Event(v.system_to, kind.value if kind else "closed", "system", fid, text, v))
        live = [v for v in vs if v.system_to is None]
        for v in live:
            if v.valid_from is not None:
                events.append(Event(v.valid_from, "started", "valid", fid, f"started: {_stmt(v)}", v,
                                    v.valid_from_precision))
            if v.valid_to is not None:
                events.append(Event(v.valid_to, "ended", "valid", fid,
                                    f"ended: {_stmt(v)} {v.interval_text}{_end_cause(v, by_id, enders or {})}", v,
                                    v.valid_to_precision))
    if start is not None:
        events = [e for e in events if to_us(e.at) >= start]
    if end is not None:
        events = [e for e in events if to_us(e.at) < end]
    order = {"started": 0, "ended": 0, "recorded": 1}
    events.sort(key=lambda e: (e.at, order.get(e.kind, 2), e.fact_id))
    return events


def _end_cause(v: Fact, by_id: Mapping[str, Sequence[Fact]], enders: Mapping[str, Fact]) -> str:
    """What cut a believed version's valid interval short, as the tail of its
    'ended' sentence: ``": superseded by Bob"``, ``": resigned"``,
    ``": invalidated"`` (no reason given); nothing for an end written with the fact."""
    if v.ended_by == CloseKind.SUPERSEDED:
        fid = v.invalidated_by or ""
        by = by_id.get(fid)
        later = by[-1] if by else enders.get(fid)
        return f": superseded by {_obj(later) if later is not None else fid or 'a later value'}"
    if v.ended_by == CloseKind.INVALIDATED:
        return f": {v.ended_reason or 'invalidated'}"
    return ""


def _restored_after(v: Fact, by_id: Mapping[str, Sequence[Fact]]) -> str:
    """What gave a cut version its interval back (``v`` was closed as
    restored): the retraction or correction of the fact that had cut it,
    which closed in the same write. Nothing if that fact is gone (erased)."""
    for w in by_id.get(v.invalidated_by or "", ()):
        if w.system_to == v.system_to and w.ended_by in (CloseKind.RETRACTED, CloseKind.CORRECTED):
            what = "retraction" if w.ended_by == CloseKind.RETRACTED else "correction"
            return f" after the {what} of {_obj(w)} {w.interval_text}"
    return ""


def _believed(versions: Sequence[Fact], known: int | None) -> Fact | None:
    """The version believed at ``known`` (microseconds; ``None``: now)."""
    for v in versions:
        if known is None:
            if v.system_to is None:
                return v
        elif to_us(v.system_from) <= known and (v.system_to is None or known < to_us(v.system_to)):
            return v
    return None


def fact_bars(entity: str, versions: Iterable[Fact], known: int | None, cursor: int) -> list[FactBar]:
    """One timeline bar per fact touching ``entity`` (its name as stored), from
    every version of those facts (``history(entity, direction="both")``), as
    believed at ``known`` and judged at ``cursor`` (both microseconds; ``known``
    ``None``: now). Facts folded into another (coalesced, merged, ...) get no
    bar of their own. Sorted outgoing first, then by predicate, start and id."""
    by_id: dict[str, list[Fact]] = defaultdict(list)
    for v in versions:
        if known is None or to_us(v.system_from) <= known:
            by_id[v.id].append(v)
    for vs in by_id.values():
        vs.sort(key=lambda v: v.version)
    retracted = {fid for fid, vs in by_id.items()
                 if _believed(vs, known) is None and vs[-1].ended_by == CloseKind.RETRACTED}
    bars = [b for vs in by_id.values() if (b := _bar(entity, vs, known, cursor, retracted)) is not None]
    bars.sort(key=lambda b: (b.group.startswith("←"), b.group, to_us(b.start) if b.start is not None else -(2**63),
                             b.fact_id))
    return bars


def _bar(entity: str, visible: list[Fact], known: int | None, cursor: int,
         retracted: AbstractSet[str]) -> FactBar | None:
    """The bar of one fact from its versions recorded by ``known``, oldest first."""
    live = _believed(visible, known)
    # a "corrected" close whose version had been cut by a fact later retracted is a
    # restoration (the retraction gave the value back), not a correction
    corrected = any(v.ended_by == CloseKind.CORRECTED and v.invalidated_by not in retracted
                    and (known is None or (v.system_to is not None and to_us(v.system_to) <= known))
                    for v in visible)
    ended_by: Literal["superseded", "invalidated"] | None = None
    status: BarStatus
    if live is None:
        last = visible[-1]
        if last.ended_by != CloseKind.RETRACTED:
            return None  # folded into another fact (coalesced, merged, ...): drawn there
        shown, status = last, "retracted"
    else:
        shown = live
        start = to_us(live.valid_from) if live.valid_from is not None else None
        end = to_us(live.valid_to) if live.valid_to is not None else None
        # what cut it short: its own end cause while believed now; as believed
        # at an earlier ``known``, the close of the version it replaced
        cause = live.ended_by if live.system_to is None else next(
            (v.ended_by for v in reversed(visible) if v.version < live.version), None)
        if end is not None and cause in (CloseKind.SUPERSEDED, CloseKind.INVALIDATED):
            ended_by = "superseded" if cause == CloseKind.SUPERSEDED else "invalidated"
        if end is not None and end <= cursor:
            status = ended_by or "ended"
        elif start is not None and start > cursor:
            status = "not_yet"
        else:
            status = "valid"
    incoming = shown.subject.casefold() != entity.casefold() and isinstance(shown.object, str) \
        and shown.object.casefold() == entity.casefold()
    group = f"← {shown.predicate}" if incoming else shown.predicate
    label = shown.subject if incoming else _obj(shown)
    # the bar's status is relative to the cursor: the line's "(current)" (true now) is left out
    title = f"{shown.line(mark_current=False)} — {status.replace('_', ' ')}{', corrected' if corrected else ''}"
    if shown.invalidated_by and status == "superseded":
        title += f" (by {shown.invalidated_by})"
    elif status == "invalidated" and shown.ended_reason and shown.system_to is None:
        title += f": {shown.ended_reason}"
    return FactBar(
        fact_id=shown.id, group=group, label=label, start=shown.valid_from, end=shown.valid_to,
        status=status, corrected=corrected, title=title, ended_by=ended_by,
        target=shown.subject if incoming else (None if shown.literal else str(shown.object)),
    )


def diff(before: Sequence[Fact], after: Sequence[Fact], t1: _dt.datetime, t2: _dt.datetime, axis: Axis,
         single: set[str]) -> Diff:
    added: list[Fact] = []
    removed: list[Fact] = []
    changed: list[DiffChange] = []
    unchanged: list[Fact] = []
    if axis == "system":
        a = {f.id: f for f in before}
        b = {f.id: f for f in after}
        for fid, f in b.items():
            old = a.get(fid)
            if old is None:
                added.append(f)
            elif (old.object, old.valid_from, old.valid_to, old.subject, old.predicate) != (
                f.object, f.valid_from, f.valid_to, f.subject, f.predicate
            ):
                changed.append(DiffChange(f.subject, f.predicate, old, f))
            else:
                unchanged.append(f)
        removed = [f for fid, f in a.items() if fid not in b]
    else:
        ga: dict[tuple[str, str], list[Fact]] = defaultdict(list)
        gb: dict[tuple[str, str], list[Fact]] = defaultdict(list)
        for f in before:
            ga[(f.subject, f.predicate)].append(f)
        for f in after:
            gb[(f.subject, f.predicate)].append(f)
        for key in sorted(set(ga) | set(gb)):
            xs, ys = ga.get(key, []), gb.get(key, [])
            if key[1] in single and len(xs) == 1 and len(ys) == 1 and xs[0].object != ys[0].object:
                changed.append(DiffChange(key[0], key[1], xs[0], ys[0]))
                continue
            xo = {(_obj(f)): f for f in xs}
            yo = {(_obj(f)): f for f in ys}
            for o, f in yo.items():
                (unchanged if o in xo else added).append(f)
            removed += [f for o, f in xo.items() if o not in yo]
    return Diff(t1, t2, axis, tuple(added), tuple(removed), tuple(changed), tuple(unchanged))


def conflicts(facts: Iterable[Fact], predicates: Mapping[str, Predicate]) -> list[Conflict]:
    """Overlapping values of one (subject, predicate), by a sweep over valid time."""
    groups: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for f in facts:
        p = predicates.get(f.predicate)
        if p is not None and p.declared and p.cardinality == "many":
            continue
        groups[(f.subject, f.predicate)].append(f)
    out: list[Conflict] = []
    for (subject, predicate), fs in sorted(groups.items()):
        if len(fs) < 2:
            continue
        p = predicates.get(predicate)
        kind = "cardinality" if p is not None and p.cardinality == "one" else "review"
        fs.sort(key=_start_key)
        cluster: list[Fact] = [fs[0]]
        cluster_end = fs[0].valid_to
        for f in fs[1:]:
            start = _start_key(f)
            if cluster_end is None or start < cluster_end:
                cluster.append(f)
                if cluster_end is not None and (f.valid_to is None or f.valid_to > cluster_end):
                    cluster_end = f.valid_to
            else:
                _emit(out, subject, predicate, kind, cluster)
                cluster, cluster_end = [f], f.valid_to
        _emit(out, subject, predicate, kind, cluster)
    return out


_MIN_DT = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)


def _start_key(f: Fact) -> _dt.datetime:
    return f.valid_from or _MIN_DT


def _emit(out: list[Conflict], subject: str, predicate: str, kind: str, cluster: list[Fact]) -> None:
    if len(cluster) < 2 or len({_obj(f) for f in cluster}) < 2:
        return
    starts = [f.valid_from for f in cluster]
    ends = [f.valid_to for f in cluster]
    known_starts = [s for s in starts if s is not None]
    overlap_from = max(known_starts) if known_starts else None
    known_ends = [e for e in ends if e is not None]
    overlap_to = min(known_ends) if known_ends else None
    out.append(Conflict(subject, predicate, kind, tuple(cluster), overlap_from, overlap_to))  # type: ignore[arg-type]


def volatility(facts: Iterable[Fact], top: int) -> list[Volatility]:
    groups: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for f in facts:
        groups[(f.subject, f.predicate)].append(f)
    out = []
    for (s, p), fs in groups.items():
        durations = [
            (f.valid_to - f.valid_from).total_seconds() / 86400.0
            for f in fs if f.valid_from is not None and f.valid_to is not None
        ]
        values = len({_obj(f) for f in fs})
        out.append(Volatility(s, p, max(len(fs) - 1, 0), values,
                              sum(durations) / len(durations) if durations else None))
    out.sort(key=lambda v: (-v.changes, v.subject, v.predicate))
    return out[:top]


def _edges(f: Fact, here: str) -> str | None:
    if f.literal:
        return None
    other = f.object if f.subject == here else f.subject
    return str(other)


def neighbors(fetch: Callable[[str], list[Fact]], start: str, hops: int) -> list[Neighbor]:
    seen = {start.casefold()}
    out: list[Neighbor] = []
    frontier: list[tuple[str, tuple[Fact, ...]]] = [(start, ())]
    for depth in range(1, hops + 1):
        nxt: list[tuple[str, tuple[Fact, ...]]] = []
        for name, via in frontier:
            for f in fetch(name):
                other = _edges(f, name)
                if other is None or other.casefold() in seen:
                    continue
                seen.add(other.casefold())
                out.append(Neighbor(other, depth, via + (f,)))
                nxt.append((other, via + (f,)))
        frontier = nxt
    return out


def paths(fetch: Callable[[str], list[Fact]], source: str, target: str, max_hops: int, limit: int) -> list[Path]:
    found: list[Path] = []
    cache: dict[str, list[Fact]] = {}
    queue: deque[tuple[str, tuple[str, ...], tuple[Fact, ...]]] = deque([(source, (source,), ())])
    while queue and len(found) < limit:
        here, names, via = queue.popleft()
        if len(via) >= max_hops:
            continue
        if here not in cache:
            cache[here] = fetch(here)
        for f in cache[here]:
            other = _edges(f, here)
            if other is None or other in names:
                continue
            if other.casefold() == target.casefold():
                found.append(Path(names + (other,), via + (f,)))
            else:
                queue.append((other, names + (other,), via + (f,)))
    return found


def decay(facts: Sequence[Fact], half_life_days: float, at: _dt.datetime) -> list[Fact]:
    out = []
    for f in facts:
        age_days = max((at - f.system_from).total_seconds() / 86400.0, 0.0)
        out.append(dataclasses.replace(f, confidence=f.confidence * 0.5 ** (age_days / half_life_days)))
    return out

