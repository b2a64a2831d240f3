"""What each web page shows, as JSON-ready dicts (the pages' ``.json``
twins). The HTML renderers in :mod:`chronomem.adapters.web.pages` draw exactly this
data, so a page and its twin never disagree."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import threading
from typing import Any

from ...core.basis import believed_at, fact_dict_at
from ...core.models import Fact, FactBar
from ...core.paging import (
    CONFLICT_FACTS,
    ENTITY_PAGE_SIZE,
    MAX_MULTI_PAGE_SIZE,
    MAX_PAGE_SIZE,
    parse_page,
)
from ...core.time import TimeLike, TimePoint, format_us, to_us
from ...errors import InvalidInputError
from ...memory import Memory
from ..mcp.process import process_memory
from .svg import Bar, GraphEdge, GraphNode

__all__ = [
    "Basis",
    "conflicts_view",
    "diff_view",
    "entity_view",
    "graph_view",
    "index_view",
    "param_time",
    "parse_basis",
]

#: facts, timeline bars and history rows per page of the entity view (default)
PAGE_BARS = PAGE_HISTORY = ENTITY_PAGE_SIZE
#: nodes drawn per ring of the graph before the rest are aggregated
MAX_RING1 = 30
MAX_RING2 = 40
RECENT = 20


@dataclasses.dataclass(frozen=True)
class Basis:
    """The time basis a page used: valid time ``as_of`` and system time
    ``known_at`` (``None``: not pinned)."""

    as_of: TimePoint | None
    known_at: TimePoint | None
    now: _dt.datetime

    @property
    def cursor_us(self) -> int:
        return self.as_of.us if self.as_of is not None else to_us(self.now)

    @property
    def valid_at(self) -> _dt.datetime:
        """The valid-time instant facts are judged at: ``as_of``, else now."""
        return self.as_of.datetime if self.as_of is not None else self.now

    def fact(self, f: Fact, *, believed_now: bool = False) -> dict[str, Any]:
        """``f.to_dict()`` with its status at this basis: ``status_at_basis``
        (``valid``/``ended``/``not_yet`` at ``as_of`` or now) and
        ``believed_at_basis`` (the version was the belief at ``known_at``, or
        now with ``believed_now`` or an unpinned ``known_at``)."""
        out = fact_dict_at(f, self.valid_at)
        known = None if believed_now or self.known_at is None else self.known_at.datetime
        out["believed_at_basis"] = believed_at(f, known)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "as_of": str(self.as_of) if self.as_of is not None else None,
            "known_at": str(self.known_at) if self.known_at is not None else None,
            "now": format_us(to_us(self.now), 7).replace(".000000", ""),
        }


def param_time(mem: Memory, value: TimeLike | None, field: str) -> TimePoint | None:
    """A read-basis parameter (``as_of``, ``known_at``, ``at``, ``t1``...):
    ISO or a time phrase, read by :meth:`Memory.resolve_time` (an already
    resolved :class:`TimePoint` passes through); empty: not given."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return mem.resolve_time(value, field).point


def parse_basis(mem: Memory, as_of: TimeLike | None, known_at: TimeLike | None) -> Basis:
    """Read the ``as_of``/``known_at`` query parameters (raises InvalidTimeError)."""
    return Basis(param_time(mem, as_of, "as_of"), param_time(mem, known_at, "known_at"), mem.now())


def _obj_text(f: Fact) -> str:
    return f.object_text


# -- recent changes -------------------------------------------------------
class _RecentCache:
    """The last system-time events of a namespace, recomputed only after a write."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, str, int] | None = None
        self._value: list[dict[str, Any]] = []

    def get(self, mem: Memory, limit: int) -> list[dict[str, Any]]:
        key = (id(mem.store), mem.namespace, mem.store.last_system_time())
        with self._lock:
            if self._key == key and len(self._value) >= limit:
                return self._value[:limit]
        value = _recent_changes(mem, limit)
        with self._lock:
            self._key, self._value = key, value
        return value


def _recent_changes(mem: Memory, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` latest system-time events (a version recorded or closed), newest first."""
    return [
        {"at": format_us(to_us(e.at), 6), "kind": e.kind, "fact": e.fact.to_dict() if e.fact else None,
         "text": e.fact.line() if e.fact else e.text, "recorded_by": e.recorded_by}
        for e in mem.recent_changes(limit)
    ]


_RECENT = _RecentCache()


def index_view(mem: Memory, basis: Basis, q: str | None, limit: int = RECENT, page: str | None = None,
               page_size: str | None = None) -> dict[str, Any]:
    """Stats, recent changes and (with ``q``) a page of fact search results."""
    pg = parse_page(page, page_size)
    out: dict[str, Any] = {
        "basis": basis.to_dict(),
        "namespace": mem.namespace,
        # only the served namespace: the others' names are not this server's to show
        "stats": {**mem.stats().to_dict(), "namespaces": [mem.namespace]},
        "process": process_memory(),  # the server's current and peak RSS in bytes
        "recent": _RECENT.get(mem, limit),
        "query": q or None,
        "results": None,
    }
    if q is not None and q.strip():
        shown, nxt = pg.take(mem.search_facts(q, as_of=basis.as_of, limit=pg.fetch))
        out["results"] = [basis.fact(f, believed_now=True) for f in shown]
        out["results_page"] = pg.echo(nxt)
        # search_facts reads what the store believes now: say so when known_at was pinned
        out["search_known_at"] = "now"
    return out


# -- entity page ----------------------------------------------------------
def _bar(b: FactBar) -> Bar:
    return Bar(
        fact_id=b.fact_id, group=b.group, label=b.label,
        start_us=to_us(b.start) if b.start is not None else None,
        end_us=to_us(b.end) if b.end is not None else None,
        status=b.status, corrected=b.corrected, title=b.title, ended_by=b.ended_by, target=b.target,
    )


def entity_view(mem: Memory, name: str, basis: Basis, page: str | None = None,
                page_size: str | None = None) -> dict[str, Any]:
    """The entity: aliases, type, properties; a page of the facts valid at
    the basis, of the timeline bars (one per fact) and of the version history
    (all three paged by one ``page`` / ``page_size``; past the end: empty)."""
    entity = mem.entity(name)
    pg = parse_page(page, page_size, default_size=ENTITY_PAGE_SIZE, max_size=MAX_MULTI_PAGE_SIZE)
    at: TimePoint | _dt.datetime = basis.as_of if basis.as_of is not None else basis.now
    # read one row past the page to know whether another follows, never the whole list
    valid, valid_next = pg.after(mem.facts(entity.name, as_of=at, known_at=basis.known_at, direction="both",
                                           limit=pg.size + 1, offset=pg.offset))
    # bars and history from one read of the versions; only this page of each is built
    tl = mem.entity_timeline(entity.name, as_of=at, known_at=basis.known_at, limit=pg.size, offset=pg.offset)
    more = pg.offset + pg.size
    nexts = [n for n in (valid_next, pg.number + 1 if tl.bars_total > more else None,
                         pg.number + 1 if tl.history_total > more else None) if n is not None]
    return {
        "basis": basis.to_dict(),
        "entity": entity.to_dict(),
        # the facts valid at as_of (or now), as believed at known_at: this page of them
        "valid_at_basis": [basis.fact(f) for f in valid],
        "valid_next": valid_next,
        "timeline": {
            "cursor": str(basis.as_of) if basis.as_of is not None else format_us(basis.cursor_us, 6),
            "total": tl.bars_total,
            "statuses": dict(sorted(tl.statuses.items())),
            "bars": [dataclasses.asdict(_bar(b)) for b in tl.bars],
        },
        "history": [basis.fact(f) for f in tl.history],
        "history_total": tl.history_total,
        "page": pg.number,
        "pages": max(1, -(-tl.bars_total // pg.size), -(-tl.history_total // pg.size)),
        "page_size": pg.size,
        "next": min(nexts) if nexts else None,
    }


# -- graph page -----------------------------------------------------------
def graph_view(mem: Memory, name: str, basis: Basis, hops: str | None = None) -> dict[str, Any]:
    """Entities within 1-2 hops with every edge valid at ``as_of`` (default now)."""
    entity = mem.entity(name)
    try:
        n_hops = int(hops) if hops not in (None, "") else 1
    except (TypeError, ValueError):
        raise InvalidInputError(f"hops must be 1 or 2, not {hops!r}") from None
    if n_hops not in (1, 2):
        raise InvalidInputError(f"hops must be 1 or 2, not {hops!r}")
    at: TimePoint | _dt.datetime = basis.as_of if basis.as_of is not None else basis.now
    found = mem.neighbors(entity.name, n_hops, at, known_at=basis.known_at)
    ring1 = [n for n in found if n.hops == 1]
    ring2 = [n for n in found if n.hops == 2]
    nodes: list[GraphNode] = [GraphNode(n.entity, 1) for n in ring1[:MAX_RING1]]
    shown = {entity.name} | {n.name for n in nodes}
    if len(ring1) > MAX_RING1:
        nodes.append(GraphNode(f"+{len(ring1) - MAX_RING1} more (1 hop)", 1, more=len(ring1) - MAX_RING1))
    kept2 = [n for n in ring2 if _parent(n.via, n.entity) in shown][:MAX_RING2]
    for n in kept2:
        nodes.append(GraphNode(n.entity, 2, parent=_parent(n.via, n.entity)))
        shown.add(n.entity)
    hidden2 = len(ring2) - len(kept2)
    if hidden2 > 0:
        nodes.append(GraphNode(f"+{hidden2} more (2 hops)", 2, more=hidden2))
    # every fact valid at `at` between two drawn entities is an edge (not only the
    # first one that reached each neighbour); such a fact touches an entity whose
    # edges the traversal followed: the centre and, with 2 hops, the drawn ring 1
    followed = [entity.name] + ([n.entity for n in ring1[:MAX_RING1]] if n_hops == 2 else [])
    edges: dict[str, GraphEdge] = {}
    for name_ in followed:
        for f in mem.edges(name_, at, known_at=basis.known_at):  # no literal-valued fact is read
            src, dst = f.subject, _obj_text(f)
            if not f.literal and src in shown and dst in shown:
                edges[f.id] = GraphEdge(f.id, src, dst, f.predicate)
    edges_total = len(edges)
    span = mem.valid_span(entity.name, known_at=basis.known_at)  # of every fact touching it, from a narrow read
    points = [*(span or ()), to_us(basis.now)]
    lo_day, hi_day = min(points) // 86_400_000_000 - 30, max(points) // 86_400_000_000 + 30
    return {
        "basis": basis.to_dict(),
        "entity": entity.to_dict(),
        "as_of": str(at) if isinstance(at, TimePoint) else format_us(to_us(at), 6),
        "hops": n_hops,
        "nodes": [dataclasses.asdict(n) for n in nodes],
        # a drawing of at most ~70 nodes: more edges than a page between them are not drawn
        "edges": [dataclasses.asdict(e) for e in list(edges.values())[:MAX_PAGE_SIZE]],
        "edges_total": edges_total,
        "neighbors_total": len(found),
        "slider": {"min_day": lo_day, "max_day": hi_day, "value_day": basis.cursor_us // 86_400_000_000},
    }


def _parent(via: tuple[Fact, ...], name: str) -> str | None:
    f = via[-1]
    return f.subject if _obj_text(f) == name else (_obj_text(f) if f.subject == name else None)


# -- diff and conflicts ---------------------------------------------------
def diff_view(mem: Memory, basis: Basis, t1: TimeLike | None, t2: TimeLike | None, axis: str | None,
              subject: str | None = None, predicate: str | None = None, page: str | None = None,
              page_size: str | None = None) -> dict[str, Any]:
    """Added, removed and changed facts between ``t1`` and ``t2`` (one
    ``page`` of each list). On the valid axis the reads are pinned at
    ``known_at``; on the system axis at ``as_of``."""
    pg = parse_page(page, page_size, max_size=MAX_MULTI_PAGE_SIZE)
    ax = axis or "valid"
    if ax not in ("valid", "system"):
        raise InvalidInputError(f"axis must be 'valid' or 'system', not {ax!r}")
    if not t1 or not t2:
        raise InvalidInputError("diff needs both t1 and t2 (e.g. ?t1=2020&t2=2024)")
    a, b = mem.resolve_time(t1, "t1").point, mem.resolve_time(t2, "t2").point
    subj = subject or None
    pred = predicate or None
    # the library cuts the page (only its facts are built); the totals count every item
    if ax == "valid":
        d = mem.diff(a, b, subj, pred, ax, known_at=basis.known_at, limit=pg.size, offset=pg.offset)
    else:
        d = mem.diff(a, b, subj, pred, ax, as_of=basis.as_of, limit=pg.size, offset=pg.offset)
    more = any(t > pg.offset + pg.size for t in (d.added_total, d.removed_total, d.changed_total))
    return {
        "basis": basis.to_dict(),
        "t1": str(a), "t2": str(b), "axis": ax, "subject": subj, "predicate": pred,
        "added": [basis.fact(f) for f in d.added],
        "removed": [basis.fact(f) for f in d.removed],
        "changed": [c.to_dict() for c in d.changed],
        "totals": {"added": d.added_total, "removed": d.removed_total, "changed": d.changed_total},
        "unchanged_count": d.unchanged_total,
        **pg.echo(pg.number + 1 if more else None),
    }


def conflicts_view(mem: Memory, basis: Basis, page: str | None = None,
                   page_size: str | None = None) -> dict[str, Any]:
    """Facts of one (subject, predicate) valid at the same time (``as_of``:
    at that instant; unpinned: anywhere in history), as believed at
    ``known_at``: a page of conflicts, each listing its first
    :data:`~chronomem.core.paging.CONFLICT_FACTS` facts (``facts_total``: all)."""
    pg = parse_page(page, page_size)
    found = mem.conflicts(basis.as_of, known_at=basis.known_at, limit=pg.size + 1, offset=pg.offset,
                          facts_per_conflict=CONFLICT_FACTS)
    shown, nxt = pg.after(found)
    # the head without its facts (each is made once, at the basis)
    conflicts = [{**dataclasses.replace(c, facts=()).to_dict(), "facts": [basis.fact(f) for f in c.facts],
                  "facts_total": c.facts_total} for c in shown]
    return {"basis": basis.to_dict(), "conflicts": conflicts, "count": len(conflicts), **pg.echo(nxt)}
