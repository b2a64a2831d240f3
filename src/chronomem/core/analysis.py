"""Analyses over fact versions: timeline, diff, conflicts, volatility,
graph traversal and confidence decay. Pure functions of :class:`Fact` lists."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections import defaultdict, deque
from operator import itemgetter
from typing import AbstractSet, Any, Callable, Iterable, Literal, Mapping, Sequence

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
from .time import MAX_US, MIN_US, to_us
from .version import CLOSE_KINDS, CloseKind

__all__ = ["bar_order", "bar_page", "conflict_rows", "conflicts", "decay", "diff", "diff_rows", "fact_bars",
           "neighbors", "paths", "pick_events",
           "timeline", "timeline_keys", "volatility"]

#: a ``KEY_COLUMNS`` tuple's (fact_id, version)
_BY_VERSION = itemgetter(0, 1)
_SKIPPED = (CloseKind.SUPERSEDED, CloseKind.INVALIDATED)
#: an event's rank among events at the same instant (timeline's sort)
_ORDER = {"started": 0, "ended": 0, "recorded": 1}

#: one event's place in :func:`timeline`'s order: (at in µs, kind rank, fact id, its index among the fact's events)
EventKey = tuple[int, int, str, int]


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
                            f"recorded: {_stmt(first)} {first.interval_text}", first,
                            recorded_by=first.recorded_by))
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
            # the change wrote the next version (a retraction or coalescing writes none of this fact)
            by = nxt.recorded_by if nxt is not None else None
            events.append(Event(v.system_to, kind.value if kind else "closed", "system", fid, text, v,
                                recorded_by=by))
        live = [v for v in vs if v.system_to is None]
        for v in live:
            if v.valid_from is not None:
                events.append(Event(v.valid_from, "started", "valid", fid, f"started: {_stmt(v)}", v,
                                    v.valid_from_precision, v.recorded_by))
            if v.valid_to is not None:
                events.append(Event(v.valid_to, "ended", "valid", fid,
                                    f"ended: {_stmt(v)} {v.interval_text}{_end_cause(v, by_id, enders or {})}", v,
                                    v.valid_to_precision, v.recorded_by))
    if start is not None:
        events = [e for e in events if to_us(e.at) >= start]
    if end is not None:
        events = [e for e in events if to_us(e.at) < end]
    events.sort(key=lambda e: (e.at, _ORDER.get(e.kind, 2), e.fact_id))
    return events


def timeline_keys(rows: Sequence[Sequence[Any]], start: int | None, end: int | None) -> list[EventKey]:
    """The keys of the events :func:`timeline` makes from the same versions,
    in its order, made from ``rows`` (``KEY_COLUMNS`` tuples of a
    ``keys_only`` read) without building a fact or a sentence: a page of keys
    says which facts' events to build (:func:`pick_events`). Mirrors
    :func:`timeline`'s choice of events; a fact's own keys are numbered in
    version order, which breaks ties as its stable sort does."""
    keys: list[EventKey] = []
    add = keys.append
    kinds = CLOSE_KINDS
    ordered = sorted(rows, key=_BY_VERSION)
    last = len(ordered) - 1
    prev, n = None, 0
    for i, (fid, _v, vf, vt, sf, st, _inv, ck, ek, *_ids) in enumerate(ordered):
        if fid != prev:  # its first version: 'recorded'
            prev, n = fid, 0
            add((sf, 1, fid, 0))
        n += 1  # ties only within one kind rank, where timeline() makes events in version order
        if st != MAX_US:  # closed: why
            kind = kinds[ck] if ck is not None else kinds[ek] if ek else None
            if kind in _SKIPPED and i < last and ordered[i + 1][0] == fid:
                continue  # shown as the successor's valid-time 'ended'
            add((st, 2, fid, n))
            continue
        if vf != MIN_US:  # believed: its valid interval
            add((vf, 0, fid, n))
        if vt != MAX_US:
            add((vt, 0, fid, n + 1))
        n += 1
    if start is not None:
        keys = [k for k in keys if k[0] >= start]
    if end is not None:
        keys = [k for k in keys if k[0] < end]
    keys.sort()
    return keys


def pick_events(keys: Sequence[EventKey], page: Sequence[EventKey],
                events: Sequence[Event]) -> list[Event] | None:
    """The events of ``page`` (a slice of ``keys``, :func:`timeline_keys`) out
    of ``events``, :func:`timeline` run on (at least) every version of the
    page's facts. A fact's keys in ``keys`` and its events come in the same
    order (ties broken by the order :func:`timeline` makes them), one for one;
    ``None`` if they do not match (``events`` come from another snapshot)."""
    want = {k[2] for k in page}
    own: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.fact_id in want:
            own[e.fact_id].append(e)
    mine: dict[str, list[EventKey]] = defaultdict(list)
    for k in keys:
        if k[2] in want:
            mine[k[2]].append(k)
    at: dict[EventKey, Event] = {}
    for fid, ks in mine.items():
        if len(ks) != len(own[fid]):
            return None  # the two reads saw different versions (a write between them)
        at.update(zip(ks, own[fid], strict=True))
    return [at[k] for k in page]


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
    return bar_page(entity, versions, known, cursor, 0, None)[0]


def bar_page(entity: str, versions: Iterable[Fact], known: int | None, cursor: int, offset: int,
             limit: int | None, retracted: AbstractSet[str] | None = None) -> tuple[list[FactBar], dict[str, int]]:
    """Bars ``offset`` to ``offset + limit`` (``None``: all) of
    :func:`fact_bars` and every bar's status counted. Only the page's bars
    get their title (the costly part: a sentence per bar). ``retracted``:
    the facts retracted as believed at ``known`` (default: found among
    ``versions``; given when ``versions`` are only some facts')."""
    by_id: dict[str, list[Fact]] = defaultdict(list)
    for v in versions:
        if known is None or to_us(v.system_from) <= known:
            by_id[v.id].append(v)
    for vs in by_id.values():
        vs.sort(key=lambda v: v.version)
    if retracted is None:
        retracted = {fid for fid, vs in by_id.items()
                     if _believed(vs, known) is None and vs[-1].ended_by == CloseKind.RETRACTED}
    bars = [b for vs in by_id.values() if (b := _bar(entity, vs, known, cursor, retracted)) is not None]
    bars.sort(key=lambda b: (b[0].group.startswith("←"), b[0].group,
                             to_us(b[0].start) if b[0].start is not None else -(2**63), b[0].fact_id))
    statuses: dict[str, int] = defaultdict(int)
    for bar, _shown, _in in bars:
        statuses[bar.status] += 1
    shown = bars[offset:] if limit is None else bars[offset: offset + limit]
    return [dataclasses.replace(b, title=_title(f, b), label=f.subject if incoming else _obj(f))
            for b, f, incoming in shown], dict(statuses)


def _kind(r: Sequence[Any]) -> CloseKind | None:
    """A ``KEY_COLUMNS`` row's :attr:`Fact.ended_by` (as the codec makes it)."""
    ck, ek = r[7], r[8]
    return CLOSE_KINDS[ck] if ck is not None else CLOSE_KINDS[ek] if ek else None


def _believed_row(vs: Sequence[Sequence[Any]], known: int | None) -> Sequence[Any] | None:
    for v in vs:
        if (v[5] == MAX_US) if known is None else (v[4] <= known < v[5]):
            return v
    return None


def bar_order(rows: Sequence[Sequence[Any]], entity_id: int, predicate_names: Mapping[int, str],
              known: int | None, cursor: int) -> tuple[list[tuple[str, str, str]], dict[str, int], set[str]]:
    """:func:`bar_page`'s order, statuses and retracted facts from ``rows``
    (``KEY_COLUMNS`` tuples of the entity's versions, ``entity_id`` its id)
    without building a fact: ``[(fact id, status, group)]`` in bar order, every
    status counted, and the ids of the facts retracted as believed at
    ``known``. Mirrors :func:`_bar`'s status (a bar is incoming when its
    subject is another entity: the read has it because its object is this one)."""
    ordered = sorted(rows, key=_BY_VERSION)
    if known is not None:
        ordered = [r for r in ordered if r[4] <= known]
    retracted: set[str] = set()
    keyed: list[tuple[bool, str, int, str, str]] = []
    n_rows = len(ordered)
    i = 0
    while i < n_rows:  # one fact's versions, oldest first, per turn
        r = ordered[i]
        fid = r[0]
        j = i + 1
        while j < n_rows and ordered[j][0] == fid:
            j += 1
        if j == i + 1:  # the common case: one version
            live = r if ((r[5] == MAX_US) if known is None else (r[4] <= known < r[5])) else None
        else:
            live = _believed_row(ordered[i:j], known)
        if live is None:
            if _kind(ordered[j - 1]) != CloseKind.RETRACTED:
                i = j
                continue  # folded into another fact: drawn there
            retracted.add(fid)
            shown, status = ordered[j - 1], "retracted"
        else:
            shown = live
            vf, vt = live[2], live[3]
            if vt != MAX_US and vt <= cursor:
                cause = _kind(live) if live[5] == MAX_US else next(
                    (_kind(v) for v in reversed(ordered[i:j]) if v[1] < live[1]), None)
                status = "superseded" if cause == CloseKind.SUPERSEDED else "invalidated" \
                    if cause == CloseKind.INVALIDATED else "ended"
            elif vf != MIN_US and vf > cursor:
                status = "not_yet"
            else:
                status = "valid"
        pred = predicate_names.get(shown[10], "")
        group = f"← {pred}" if shown[9] != entity_id else pred  # incoming: another entity's subject
        keyed.append((group.startswith("←"), group, shown[2] if shown[2] != MIN_US else -(2**63), fid, status))
        i = j
    keyed.sort()  # fact ids are unique: the status never decides
    statuses: dict[str, int] = defaultdict(int)
    for k in keyed:
        statuses[k[4]] += 1
    return [(k[3], k[4], k[1]) for k in keyed], dict(statuses), retracted


def _bar(entity: str, visible: list[Fact], known: int | None, cursor: int,
         retracted: AbstractSet[str]) -> tuple[FactBar, Fact, bool] | None:
    """The bar of one fact from its versions recorded by ``known``, oldest
    first (title and label left empty: the page's are filled in by
    :func:`bar_page`), the version it shows and whether it is incoming."""
    live = _believed(visible, known)
    # a "corrected" close whose version had been cut by a fact later retracted is a
    # restoration (the retraction gave the value back), not a correction
    corrected = False
    for v in visible:  # a loop, not any(): this runs once per fact of a busy entity
        if v.ended_by == CloseKind.CORRECTED and v.invalidated_by not in retracted \
                and (known is None or (v.system_to is not None and to_us(v.system_to) <= known)):
            corrected = True
            break
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
    return FactBar(
        fact_id=shown.id, group=group, label="", start=shown.valid_from, end=shown.valid_to,
        status=status, corrected=corrected, title="", ended_by=ended_by,
        target=shown.subject if incoming else (None if shown.literal else str(shown.object)),
    ), shown, incoming


def _title(shown: Fact, b: FactBar) -> str:
    """The hover text of bar ``b`` showing version ``shown``."""
    status = b.status
    # the bar's status is relative to the cursor: the line's "(current)" (true now) is left out
    title = f"{shown.line(mark_current=False)} — {status.replace('_', ' ')}{', corrected' if b.corrected else ''}"
    if shown.invalidated_by and status == "superseded":
        title += f" (by {shown.invalidated_by})"
    elif status == "invalidated" and shown.ended_reason and shown.system_to is None:
        title += f": {shown.ended_reason}"
    return title


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


# -- conflicts and diff on ``KEY_OBJECT_COLUMNS`` rows (no fact built) --------------
# a row: (rowid, valid_from, valid_to, subject_id, predicate_id, object_id, object_lit)
#: a row's (object_id, object_lit): equal ones have equal objects
_RAW_OBJ = itemgetter(5, 6)
#: a read's order: (valid_from, rowid)
_READ_ORDER = itemgetter(1, 0)
_MIN_DT_US = to_us(_dt.datetime.min.replace(tzinfo=_dt.timezone.utc))

RawRow = Sequence[Any]
#: (subject, predicate, kind, the cluster's rows in :func:`conflicts`' order, overlap_from µs, overlap_to µs)
ConflictRows = tuple[str, str, str, list[RawRow], int | None, int | None]


def _grouped(rows: Iterable[RawRow], subjects: Mapping[int, str], predicates: Mapping[int, str],
             order: Callable[[RawRow], Any] = _READ_ORDER) -> dict[tuple[str, str], list[RawRow]]:
    """Rows by (subject, predicate) name, each group sorted by ``order``
    (a read's; grouped on ids first: sorting groups costs less than sorting all)."""
    by_ids: dict[tuple[int, int], list[RawRow]] = defaultdict(list)
    for r in rows:
        by_ids[(r[3], r[4])].append(r)
    groups: dict[tuple[str, str], list[RawRow]] = {}
    for (sid, pid), rs in by_ids.items():
        key = (subjects.get(sid, ""), predicates.get(pid, ""))
        if key in groups:  # two ids under one name
            groups[key] += rs
        else:
            groups[key] = rs
    for rs in groups.values():
        rs.sort(key=order)
    return groups


def _conflict_order(r: RawRow) -> tuple[int, int, int]:
    """conflicts()' stable sort on the start (an unknown one: datetime.min) of facts in a read's order."""
    return (r[1] if r[1] != MIN_US else _MIN_DT_US, r[1], r[0])


def conflict_rows(rows: Iterable[RawRow], subjects: Mapping[int, str], predicate_names: Mapping[int, str],
                  predicates: Mapping[str, Predicate], text: Callable[[RawRow], str]) -> list[ConflictRows]:
    """:func:`conflicts` on ``KEY_OBJECT_COLUMNS`` rows of the same read (one
    row per fact): the same conflicts in the same order, each as its rows.
    ``text(row)`` is the row's :attr:`Fact.object_text`; it is asked only
    where two rows' raw objects differ (equal raw objects, equal texts)."""
    out: list[ConflictRows] = []
    groups = _grouped(rows, subjects, predicate_names, _conflict_order)
    for (subject, predicate), rs in sorted(groups.items()):
        p = predicates.get(predicate)
        if len(rs) < 2 or (p is not None and p.declared and p.cardinality == "many"):
            continue
        kind = "cardinality" if p is not None and p.cardinality == "one" else "review"
        cluster = [rs[0]]
        end = rs[0][2]
        for r in rs[1:]:
            start = r[1] if r[1] != MIN_US else _MIN_DT_US
            if end == MAX_US or start < end:
                cluster.append(r)
                if end != MAX_US and (r[2] == MAX_US or r[2] > end):
                    end = r[2]
            else:
                _emit_rows(out, subject, predicate, kind, cluster, text)
                cluster, end = [r], r[2]
        _emit_rows(out, subject, predicate, kind, cluster, text)
    return out


def _emit_rows(out: list[ConflictRows], subject: str, predicate: str, kind: str, cluster: list[RawRow],
               text: Callable[[RawRow], str]) -> None:
    if len(cluster) < 2:
        return
    first = _RAW_OBJ(cluster[0])
    first_text: str | None = None
    for r in cluster[1:]:  # two different object texts make a conflict
        if _RAW_OBJ(r) != first:
            first_text = text(cluster[0]) if first_text is None else first_text
            if text(r) != first_text:
                break
    else:
        return
    starts = [r[1] for r in cluster if r[1] != MIN_US]
    ends = [r[2] for r in cluster if r[2] != MAX_US]
    out.append((subject, predicate, kind, cluster, max(starts) if starts else None, min(ends) if ends else None))


#: :func:`diff_rows`' answer: added, removed and changed (old, new) rows, and how many are unchanged
DiffRows = tuple[list[RawRow], list[RawRow], list[tuple[RawRow, RawRow]], int]


def diff_rows(before: Sequence[RawRow], after: Sequence[RawRow], single: set[str], subjects: Mapping[int, str],
              predicate_names: Mapping[int, str], text: Callable[[RawRow], str],
              value: Callable[[RawRow], Any]) -> DiffRows:
    """:func:`diff` on the valid axis on ``KEY_OBJECT_COLUMNS`` rows of the
    same reads: the same lists in the same order, as rows (the system axis
    pairs versions by fact id, which these rows leave out). ``text(row)`` / ``value(row)`` are the
    row's :attr:`Fact.object_text` / :attr:`Fact.object` (asked only where
    raw objects differ, or to tell values apart by text)."""
    added: list[RawRow] = []
    removed: list[RawRow] = []
    changed: list[tuple[RawRow, RawRow]] = []
    unchanged = 0

    def same_object(x: RawRow, y: RawRow) -> bool:
        return _RAW_OBJ(x) == _RAW_OBJ(y) or bool(value(x) == value(y))

    ga = _grouped(before, subjects, predicate_names)
    gb = _grouped(after, subjects, predicate_names)
    for key in sorted(set(ga) | set(gb)):
        xs, ys = ga.get(key, []), gb.get(key, [])
        if key[1] in single and len(xs) == 1 and len(ys) == 1 and not same_object(xs[0], ys[0]):
            changed.append((xs[0], ys[0]))
            continue
        xo = {text(r): r for r in xs}
        yo = {text(r): r for r in ys}
        for o, r in yo.items():
            if o in xo:
                unchanged += 1
            else:
                added.append(r)
        removed += [r for o, r in xo.items() if o not in yo]
    return added, removed, changed, unchanged


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

