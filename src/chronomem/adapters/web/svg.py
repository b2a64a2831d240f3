"""Server-side SVG drawings for the web view: the fact timeline and the
neighbourhood graph. Pure functions of small layout records; every piece of
text is escaped. No JavaScript is needed to display either drawing."""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from html import escape
from typing import Callable, Sequence

from ...core.time import from_us, to_us

__all__ = ["Bar", "GraphEdge", "GraphNode", "graph_svg", "pack_lanes", "time_ticks", "timeline_svg"]

_UTC = _dt.timezone.utc
_DAY_US = 86_400_000_000
_YEAR_US = 365 * _DAY_US

#: bar statuses, each drawn with its own CSS class
STATUSES = ("valid", "ended", "not_yet", "superseded", "invalidated", "retracted")


def esc(text: object) -> str:
    """Escape text for SVG/HTML content and attribute values."""
    return escape(str(text), quote=True)


@dataclass(frozen=True)
class Bar:
    """One fact drawn over valid time.

    ``start_us``/``end_us`` are microseconds since the epoch; ``None`` means an
    unknown start / an open end (drawn faded / with an arrow). ``status`` is one
    of :data:`STATUSES`; ``corrected`` adds a marker.
    """

    fact_id: str
    group: str
    label: str
    start_us: int | None
    end_us: int | None
    status: str = "valid"
    corrected: bool = False
    title: str = ""
    ended_by: str | None = None  # "superseded" / "invalidated": how a known end came about
    target: str | None = None  # the other entity of the fact (for a link), None for a literal


def pack_lanes(bars: Sequence[Bar]) -> list[list[Bar]]:
    """Greedy interval packing: bars that do not overlap share a lane.
    Bars are taken in start order; a bar goes to the first lane whose last bar
    ends at or before its start (half-open intervals)."""
    lanes: list[list[Bar]] = []
    ends: list[float] = []
    lo, hi = -math.inf, math.inf
    for bar in sorted(bars, key=lambda b: (lo if b.start_us is None else b.start_us, b.fact_id)):
        start = lo if bar.start_us is None else bar.start_us
        for i, end in enumerate(ends):
            if end <= start:
                lanes[i].append(bar)
                ends[i] = hi if bar.end_us is None else bar.end_us
                break
        else:
            lanes.append([bar])
            ends.append(hi if bar.end_us is None else bar.end_us)
    return lanes


def _span(points: Sequence[int]) -> tuple[int, int]:
    if not points:
        now = to_us(_dt.datetime.now(_UTC))
        return now - _YEAR_US, now + _YEAR_US
    lo, hi = min(points), max(points)
    if hi - lo < 30 * _DAY_US:
        mid = (lo + hi) // 2
        lo, hi = mid - 15 * _DAY_US, mid + 15 * _DAY_US
    pad = (hi - lo) // 20
    return lo - pad, hi + pad


def time_ticks(lo: int, hi: int, max_ticks: int = 10) -> list[tuple[int, str]]:
    """Calendar-aligned tick marks (years, months or days) inside ``[lo, hi]``."""
    start, end = from_us(lo), from_us(hi)
    span_days = (hi - lo) / _DAY_US
    ticks: list[tuple[int, str]] = []
    if span_days > 3 * 365:
        step = max(1, math.ceil((end.year - start.year + 1) / max_ticks))
        for nice in (1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000):
            if nice >= step:
                step = nice
                break
        year = (start.year // step + 1) * step
        while year <= end.year:
            t = to_us(_dt.datetime(year, 1, 1, tzinfo=_UTC))
            if lo <= t <= hi:
                ticks.append((t, f"{year:04d}"))
            year += step
    elif span_days > 60:
        months = int(span_days / 30.4) + 1
        step = max(1, math.ceil(months / max_ticks))
        for nice in (1, 2, 3, 6, 12):
            if nice >= step:
                step = nice
                break
        y, m = start.year, start.month
        while True:
            m += 1
            if m > 12:
                y, m = y + 1, 1
            t = to_us(_dt.datetime(y, m, 1, tzinfo=_UTC))
            if t > hi:
                break
            if (m - 1) % step == 0:
                ticks.append((t, f"{y:04d}-{m:02d}"))
    else:
        step = max(1, math.ceil(span_days / max_ticks))
        day = _dt.datetime(start.year, start.month, start.day, tzinfo=_UTC) + _dt.timedelta(days=1)
        while to_us(day) <= hi:
            ticks.append((to_us(day), day.strftime("%Y-%m-%d")))
            day += _dt.timedelta(days=step)
    return ticks


_TIMELINE_DEFS = (
    "<defs>"
    '<linearGradient id="g-open-start" x1="0" x2="1"><stop offset="0" stop-color="white" stop-opacity="0"/>'
    '<stop offset="0.3" stop-color="white" stop-opacity="1"/></linearGradient>'
    '<linearGradient id="g-open-end" x1="0" x2="1"><stop offset="0.7" stop-color="white" stop-opacity="1"/>'
    '<stop offset="1" stop-color="white" stop-opacity="0.25"/></linearGradient>'
    '<linearGradient id="g-open-both" x1="0" x2="1"><stop offset="0" stop-color="white" stop-opacity="0"/>'
    '<stop offset="0.2" stop-color="white" stop-opacity="1"/><stop offset="0.8" stop-color="white" stop-opacity="1"/>'
    '<stop offset="1" stop-color="white" stop-opacity="0.25"/></linearGradient>'
    '<mask id="m-open-start" maskContentUnits="objectBoundingBox">'
    '<rect width="1" height="1" fill="url(#g-open-start)"/></mask>'
    '<mask id="m-open-end" maskContentUnits="objectBoundingBox">'
    '<rect width="1" height="1" fill="url(#g-open-end)"/></mask>'
    '<mask id="m-open-both" maskContentUnits="objectBoundingBox">'
    '<rect width="1" height="1" fill="url(#g-open-both)"/></mask>'
    '<pattern id="p-retracted" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
    '<rect width="6" height="6" fill="#fde8e8"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#d33" stroke-width="2"/></pattern>'
    "</defs>"
)

_TIMELINE_STYLE = (
    "<style>"
    ".tl text{font:11px sans-serif;fill:#222}.tl .axis text{fill:#555}.tl .grid{stroke:#e5e5e5}"
    ".tl .glabel{font-weight:bold}.tl .gsep{stroke:#bbb}"
    ".bar{stroke-width:1}.bar.valid{fill:#3b82f6;stroke:#1d4ed8}.bar.not_yet{fill:#93c5fd;stroke:#3b82f6}"
    ".bar.ended{fill:#9ca3af;stroke:#6b7280}.bar.superseded{fill:#c4b5a0;stroke:#8a6d3b}"
    ".bar.invalidated{fill:#a3a3a3;stroke:#525252}"
    ".bar.retracted{fill:url(#p-retracted);stroke:#d33;stroke-dasharray:3 2}"
    ".endcap{stroke:#111;stroke-width:3}.arrow{fill:#1d4ed8}.strike{stroke:#d33;stroke-width:1.5}"
    ".tl .blabel{fill:#fff;font-size:10px}.tl .blabel.dark{fill:#222}.corr{fill:#f59e0b;stroke:#92400e}"
    ".cursor{stroke:#dc2626;stroke-width:2}.tl .cursor-label{fill:#dc2626;font-weight:bold}"
    "</style>"
)


def timeline_svg(bars: Sequence[Bar], cursor_us: int | None, *, width: int = 980, gutter: int = 170,
                 row: int = 18, cursor_label: str = "as_of", link: Callable[[Bar], str | None] | None = None) -> str:
    """A timeline: one horizontal bar per fact over valid time, grouped by
    ``Bar.group`` (non-overlapping bars of a group share a lane), with a
    calendar axis and a vertical cursor at ``cursor_us``."""
    groups: dict[str, list[Bar]] = {}
    for bar in bars:
        groups.setdefault(bar.group, []).append(bar)
    points = [p for b in bars for p in (b.start_us, b.end_us) if p is not None]
    if cursor_us is not None:
        points.append(cursor_us)
    lo, hi = _span(points)
    plot_w = width - gutter - 20
    top = 30

    def x(us: int) -> float:
        return gutter + (us - lo) / (hi - lo) * plot_w

    packed = [(name, pack_lanes(gbars)) for name, gbars in groups.items()]
    n_lanes = sum(len(lanes) for _name, lanes in packed)
    height = top + max(1, n_lanes) * row + len(packed) * 6 + 24
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tl" id="timeline" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="timeline of {len(bars)} facts">',
        _TIMELINE_DEFS,
        _TIMELINE_STYLE,
        '<g class="axis">',
    ]
    for t, label in time_ticks(lo, hi):
        xt = x(t)
        out.append(f'<line class="grid" x1="{xt:.1f}" y1="{top - 6}" x2="{xt:.1f}" y2="{height - 18}"/>')
        out.append(f'<text x="{xt:.1f}" y="{top - 10}" text-anchor="middle">{esc(label)}</text>')
    out.append("</g>")
    y = top
    for name, lanes in packed:
        out.append(f'<g class="group" data-group="{esc(name)}">')
        out.append(f'<line class="gsep" x1="0" y1="{y:.1f}" x2="{width}" y2="{y:.1f}"/>')
        out.append(f'<text class="glabel" x="4" y="{y + row - 5:.1f}">{esc(_clip(name, 26))}</text>')
        y += 3
        for lane in lanes:
            for bar in lane:
                out.append(_bar_svg(bar, x, y, row, gutter, width - 20, link))
            y += row
        y += 3
        out.append("</g>")
    if cursor_us is not None:
        xc = x(cursor_us)
        out.append(f'<line class="cursor" x1="{xc:.1f}" y1="{top - 4}" x2="{xc:.1f}" y2="{height - 14}"/>')
        out.append(f'<text class="cursor-label" x="{xc:.1f}" y="{height - 3}" text-anchor="middle">'
                   f'{esc(cursor_label)}</text>')
    out.append("</svg>")
    return "".join(out)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _bar_svg(bar: Bar, x: Callable[[int], float], y: float, row: int, left: float, right: float,
             link: Callable[[Bar], str | None] | None) -> str:
    h = row - 6
    x0 = left if bar.start_us is None else max(left, x(bar.start_us))
    x1 = right if bar.end_us is None else min(right, x(bar.end_us))
    x1 = max(x1, x0 + 2)
    w = x1 - x0
    mask = ""
    if bar.start_us is None and bar.end_us is None:
        mask = ' mask="url(#m-open-both)"'
    elif bar.start_us is None:
        mask = ' mask="url(#m-open-start)"'
    elif bar.end_us is None:
        mask = ' mask="url(#m-open-end)"'
    title = esc(bar.title or bar.label)
    parts = [f'<g class="fact" data-fact-id="{esc(bar.fact_id)}"><title>{title}</title>']
    parts.append(
        f'<rect class="bar {esc(bar.status)}" data-fact-id="{esc(bar.fact_id)}" x="{x0:.1f}" y="{y + 3:.1f}" '
        f'width="{w:.1f}" height="{h}" rx="2"{mask}/>'
    )
    if bar.end_us is None:
        parts.append(f'<polygon class="arrow" points="{x1:.1f},{y + 3:.1f} {x1 + 7:.1f},{y + 3 + h / 2:.1f} '
                     f'{x1:.1f},{y + 3 + h:.1f}"/>')
    elif bar.status != "retracted" and (bar.ended_by or bar.status in ("superseded", "invalidated", "ended")):
        why = esc(bar.ended_by or "ended")
        parts.append(f'<line class="endcap" x1="{x1:.1f}" y1="{y + 2:.1f}" x2="{x1:.1f}" y2="{y + 4 + h:.1f}">'
                     f"<title>{why}</title></line>")
    if bar.status == "retracted":
        parts.append(f'<line class="strike" x1="{x0:.1f}" y1="{y + 3 + h / 2:.1f}" '
                     f'x2="{x1:.1f}" y2="{y + 3 + h / 2:.1f}"/>')
    if bar.corrected:
        parts.append(f'<circle class="corr" cx="{x0 + 4:.1f}" cy="{y + 3 + h / 2:.1f}" r="3.5">'
                     f'<title>corrected</title></circle>')
    room = int((w - 10) / 6)
    if room >= 3:
        dark = " dark" if bar.status in ("retracted", "not_yet", "superseded") else ""
        # an unknown start is drawn faded: put the label where the bar is opaque
        lx = x0 + (min(w * 0.3, 90.0) if bar.start_us is None else (10 if bar.corrected else 4))
        room = int((x1 - lx - 6) / 6)
        if room >= 3:
            parts.append(f'<text class="blabel{dark}" x="{lx:.1f}" y="{y + row - 5:.1f}">'
                         f"{esc(_clip(bar.label, room))}</text>")
    parts.append("</g>")
    body = "".join(parts)
    href = link(bar) if link is not None else None
    if href:
        return f'<a href="{esc(href)}">{body}</a>'
    return body


@dataclass(frozen=True)
class GraphNode:
    name: str
    hops: int
    parent: str | None = None
    more: int = 0  # >0: an aggregate node standing for this many hidden entities


@dataclass(frozen=True)
class GraphEdge:
    fact_id: str
    source: str
    target: str
    label: str


_GRAPH_STYLE = (
    "<style>"
    ".graph text{font:11px sans-serif;fill:#222}.edge{stroke:#94a3b8;stroke-width:1.3}"
    ".graph .elabel{fill:#475569;font-size:10px}.node circle{stroke:#1e293b;stroke-width:1}"
    ".node.h0 circle{fill:#f59e0b}.node.h1 circle{fill:#60a5fa}.node.h2 circle{fill:#c7d2fe}"
    ".node.more circle{fill:#e5e7eb;stroke-dasharray:2 2}"
    "</style>"
)


def graph_svg(center: str, nodes: Sequence[GraphNode], edges: Sequence[GraphEdge], *, size: int = 720,
              link: Callable[[str], str] | None = None, caption: str = "") -> str:
    """A radial layout: ``center`` in the middle, 1-hop entities on an inner
    ring and 2-hop entities on an outer ring next to their parent. Edges are
    labelled with their predicate."""
    cx = cy = size / 2
    r1, r2 = size * 0.24, size * 0.43
    pos: dict[str, tuple[float, float]] = {center: (cx, cy)}
    angle: dict[str, float] = {center: 0.0}
    ring1 = [n for n in nodes if n.hops == 1]
    ring2 = [n for n in nodes if n.hops >= 2]
    for i, n in enumerate(ring1):
        a = 2 * math.pi * i / max(1, len(ring1)) - math.pi / 2
        angle[n.name] = a
        pos[n.name] = (cx + r1 * math.cos(a), cy + r1 * math.sin(a))
    ring2 = sorted(ring2, key=lambda n: (angle.get(n.parent or "", 0.0), n.name))
    for i, n in enumerate(ring2):
        a = 2 * math.pi * i / max(1, len(ring2)) - math.pi / 2 + (math.pi / max(1, len(ring2)))
        if n.parent in angle and len(ring2) <= len(ring1):
            a = angle[n.parent] + 0.15 * ((i % 3) - 1)
        angle[n.name] = a
        pos[n.name] = (cx + r2 * math.cos(a), cy + r2 * math.sin(a))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" id="graph" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" role="img" aria-label="{esc(caption or "neighbourhood of " + center)}">',
        _GRAPH_STYLE,
    ]
    pairs: dict[frozenset[str], list[GraphEdge]] = {}
    for e in edges:
        if e.source in pos and e.target in pos:
            pairs.setdefault(frozenset((e.source, e.target)), []).append(e)
    for group in pairs.values():  # several facts between two entities share one line
        first = group[0]
        (x1, y1), (x2, y2) = pos[first.source], pos[first.target]
        titles = "\n".join(f"{e.source} -{e.label}-> {e.target}" for e in group)
        label = ", ".join(dict.fromkeys(e.label for e in group))
        ids = " ".join(e.fact_id for e in group)
        out.append(f'<g class="edge-g" data-fact-id="{esc(ids)}"><title>{esc(titles)}</title>'
                   f'<line class="edge" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'
                   f'<text class="elabel" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 3:.1f}" text-anchor="middle">'
                   f"{esc(_clip(label, 28))}</text></g>")
    drawn = [GraphNode(center, 0)] + list(nodes)
    for n in drawn:
        x0, y0 = pos[n.name]
        cls = "more" if n.more else f"h{min(n.hops, 2)}"
        r = 11 if n.hops == 0 else 8
        label = f"+{n.more} more" if n.more else _clip(n.name, 24)
        body = (f'<g class="node {cls}" data-name="{esc(n.name)}"><title>{esc(n.name)}</title>'
                f'<circle cx="{x0:.1f}" cy="{y0:.1f}" r="{r}"/>'
                f'<text x="{x0:.1f}" y="{y0 + r + 12:.1f}" text-anchor="middle">{esc(label)}</text></g>')
        if link is not None and not n.more and n.hops > 0:
            body = f'<a href="{esc(link(n.name))}">{body}</a>'
        out.append(body)
    out.append("</svg>")
    return "".join(out)
