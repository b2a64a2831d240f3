"""HTML renderers: one function per page, each drawing the dict that
:mod:`chronomem.adapters.web.data` built for the page's ``.json`` twin."""

from __future__ import annotations

from typing import Any, Mapping

from ...core.paging import DEFAULT_PAGE_SIZE, ENTITY_PAGE_SIZE
from ...core.time import parse_time
from .html import basis_form, entity_url, esc, fact_table, layout, qs
from .svg import Bar, GraphEdge, GraphNode, graph_svg, timeline_svg

__all__ = ["conflicts_page", "diff_form_page", "diff_page", "entity_page", "error_page", "graph_page", "index_page"]


def _bp(data: Mapping[str, Any]) -> dict[str, Any]:
    b = data["basis"]
    return {"as_of": b.get("as_of"), "known_at": b.get("known_at")}


def index_page(data: Mapping[str, Any]) -> str:
    bp = _bp(data)
    s = data["stats"]
    stats = "".join(f"<tr><th>{esc(k)}</th><td>{esc(s[k])}</td></tr>"
                    for k in ("namespace", "entities", "facts", "current", "ended", "retracted", "versions",
                              "predicates"))
    parts = [f'<h2>Stats</h2><table id="stats">{stats}</table>']
    parts.append(
        '<h2>Search</h2><form method="get" action="/" id="search">'
        f'<input name="q" value="{esc(data.get("query") or "")}" placeholder="entity or predicate name"> '
        f'<input type="hidden" name="as_of" value="{esc(bp["as_of"] or "")}"><button>search</button></form>'
    )
    if data.get("results") is not None:
        results = data["results"]
        rp = data.get("results_page") or {"page": 1, "next": None}
        on = f" on page {rp['page']}" if rp["page"] > 1 or rp["next"] is not None else ""
        parts.append(f'<p>{len(results)} fact(s){on} match <b>{esc(data["query"])}</b> '
                     '<span class="muted">(search reads current beliefs)</span></p>')
        parts.append(fact_table(results, bp))
        parts.append(_pager("/", {**_paged(bp, rp), "q": data.get("query")}, rp["page"], None, rp["next"]))
    rows = []
    for ev in data["recent"]:
        f = ev["fact"]
        rows.append(f'<tr><td>{esc(ev["at"])}</td><td><span class="tag">{esc(ev["kind"])}</span></td>'
                    f'<td><a href="{esc(entity_url(str(f["subject"]), "", bp))}">{esc(f["subject"])}</a> '
                    f'-{esc(f["predicate"])}-&gt; {esc(repr(f["object"]) if f.get("literal") else f["object"])} '
                    f'{esc("[" + str(f.get("valid_from") or "…") + ", " + str(f.get("valid_to") or "…") + ")")}</td>'
                    f'<td>{esc(ev.get("recorded_by") or "")}</td><td><code>{esc(f["id"])}</code></td></tr>')
    parts.append('<h2>Recent changes</h2><p class="muted">latest system-time events, newest first</p>')
    parts.append(f'<table id="recent"><tr><th>recorded at</th><th>event</th><th>fact</th><th>by</th><th>id</th></tr>'
                 f'{"".join(rows)}</table>'
                 if rows else '<p class="muted">no facts yet</p>')
    return layout(f"Memory · {data['namespace']}", "".join(parts),
                  json_href="/index.json" + qs({**bp, "q": data.get("query")}),
                  basis_html=basis_form(data["basis"], "/", {"q": data.get("query")}))


_LEGEND = (
    '<p class="legend"><span><i style="background:#3b82f6"></i>valid at cursor</span>'
    '<span><i style="background:#93c5fd"></i>starts later</span><span><i style="background:#9ca3af"></i>ended</span>'
    '<span><i style="background:#c4b5a0"></i>superseded</span>'
    '<span><i style="background:#a3a3a3"></i>invalidated</span>'
    '<span><i style="background:#fee2e2;border-color:#d33"></i>retracted (never true)</span>'
    '<span>● corrected</span><span>▶ still true (open end)</span><span>faded start: start unknown</span>'
    '<span style="color:#dc2626">| cursor</span></p>'
)


def _pager(base: str, params: Mapping[str, Any], page: int, pages: int | None, next_page: int | None = None) -> str:
    """Links to nearby pages (a window, not one link per page); ``pages``
    ``None``: the count is unknown, only ``next_page`` says another follows."""
    last = max(pages or 1, page, next_page or 0)
    if last <= 1 and page == 1:
        return ""
    near = sorted({1, last, *range(max(1, page - 3), min(last, page + 3) + 1)})
    links, prev = [], 0
    for p in near:
        if p - prev > 1:
            links.append("…")
        links.append(f"<b>{p}</b>" if p == page else f'<a href="{esc(base + qs({**params, "page": p}))}">{p}</a>')
        prev = p
    if next_page is not None:
        links.append(f'<a rel="next" href="{esc(base + qs({**params, "page": next_page}))}">next →</a>')
    of = f" of {pages}" if pages is not None else ""
    return f'<p class="pager">page {" ".join(links)}{of}</p>'


#: tables longer than this start folded, so the timeline stays near the top
FOLD_ROWS = 40


def _fold(rows: int, what: str, table: str) -> str:
    if rows <= FOLD_ROWS:
        return table
    return f"<details><summary>show all {rows} {esc(what)}</summary>{table}</details>"


def _paged(bp: Mapping[str, Any], data: Mapping[str, Any], default: int = DEFAULT_PAGE_SIZE) -> dict[str, Any]:
    """The basis parameters plus ``page_size`` when it is not the default (for page links)."""
    size = data.get("page_size")
    return {**bp, "page_size": size if size != default else None}


def _on_page(data: Mapping[str, Any]) -> str:
    n = len(data["valid_at_basis"])
    if data["page"] == 1 and data.get("valid_next") is None:
        return str(n)
    more = ", more on the next page" if data.get("valid_next") is not None else ""
    return f"{n} on page {data['page']}{more}"


def entity_page(data: Mapping[str, Any]) -> str:
    bp = _bp(data)
    pp = _paged(bp, data, ENTITY_PAGE_SIZE)
    ent = data["entity"]
    name = str(ent["name"])
    tl = data["timeline"]
    bars = [Bar(**b) for b in tl["bars"]]
    cursor_us = parse_time(tl["cursor"], "cursor").us
    props = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in ent.get("properties", {}).items())
    aliases = ", ".join(esc(a) for a in ent.get("aliases", [])) or '<span class="muted">none</span>'
    parts = [
        f'<p>type: <b>{esc(ent.get("type") or "—")}</b> · aliases: {aliases} · '
        f'<a href="{esc(entity_url(name, "/graph", bp))}">graph</a></p>',
        f"<table>{props}</table>" if props else "",
        f'<h2>Facts valid {"at " + esc(bp["as_of"]) if bp["as_of"] else "now"} ({_on_page(data)})</h2>',
        _fold(len(data["valid_at_basis"]), "facts", fact_table(data["valid_at_basis"], bp)),
        f'<h2>Timeline</h2><p class="muted">{tl["total"]} fact(s) over valid time, grouped by predicate; '
        f'cursor at {esc(tl["cursor"])}</p>',
        _LEGEND,
        _pager(entity_url(name), pp, data["page"], data["pages"], data["next"]),
        '<div class="svgwrap">'
        + timeline_svg(bars, cursor_us, cursor_label=f"as_of {tl['cursor'][:10]}",
                       link=lambda b: entity_url(b.target, "", bp) if b.target else None)
        + "</div>",
        f'<h2>History</h2><p class="muted">{data["history_total"]} version(s) on both axes, newest first</p>',
        _fold(len(data["history"]), "versions",
              fact_table(data["history"], bp, columns=("subject", "predicate", "object", "interval", "system",
                                                       "recorded_by", "status", "id"))),
        _pager(entity_url(name), pp, data["page"], data["pages"], data["next"]),
    ]
    return layout(name, "".join(parts), json_href=entity_url(name, ".json", {**pp, "page": data["page"]}),
                  basis_html=basis_form(data["basis"], entity_url(name)))


_SLIDER_JS = """
<script>
(function(){
  var s=document.getElementById('slider'), out=document.getElementById('slider-date');
  function day(v){return new Date(v*86400000).toISOString().slice(0,10);}
  s.addEventListener('input',function(){out.textContent=day(s.value);});
  s.addEventListener('change',function(){
    var u=new URL(location.href); u.searchParams.set('as_of',day(s.value));
    fetch(u.toString()).then(function(r){return r.text();}).then(function(t){
      var d=new DOMParser().parseFromString(t,'text/html');
      ['graph','graph-info','basis'].forEach(function(id){
        var n=d.getElementById(id), o=document.getElementById(id); if(n&&o){o.replaceWith(n);}});
      history.replaceState(null,'',u.toString()); document.body.dataset.asOf=day(s.value);
    });
  });
})();
</script>
"""


def graph_page(data: Mapping[str, Any]) -> str:
    bp = _bp(data)
    name = str(data["entity"]["name"])
    nodes = [GraphNode(**n) for n in data["nodes"]]
    edges = [GraphEdge(**e) for e in data["edges"]]
    sl = data["slider"]
    hops_links = " ".join(
        f"<b>{h}</b>" if h == data["hops"]
        else f'<a href="{esc(entity_url(name, "/graph", {**bp, "hops": h}))}">{h}</a>'
        for h in (1, 2)
    )
    parts = [
        f'<p><a href="{esc(entity_url(name, "", bp))}">← {esc(name)}</a> · hops: {hops_links}</p>',
        f'<p><label>valid time: <input type="range" id="slider" min="{sl["min_day"]}" max="{sl["max_day"]}" '
        f'value="{sl["value_day"]}" step="1" style="width:600px"></label> '
        f'<b id="slider-date">{esc(data["as_of"][:10])}</b></p>',
        f'<p id="graph-info" class="muted">{len(data["edges"])} edge(s), {data["neighbors_total"]} entit(ies) within '
        f'{data["hops"]} hop(s), every edge valid at {esc(data["as_of"])}</p>',
        '<div class="svgwrap">'
        + graph_svg(name, nodes, edges, link=lambda n: entity_url(n, "/graph", {**bp, "hops": data["hops"]}),
                    caption=f"neighbourhood of {name} at {data['as_of']}")
        + "</div>",
        '<noscript><p>Without JavaScript, set as_of in the basis form above.</p></noscript>',
        _SLIDER_JS,
    ]
    return layout(f"{name} · graph", "".join(parts),
                  json_href=entity_url(name, "/graph.json", {**bp, "hops": data["hops"]}),
                  basis_html=basis_form(data["basis"], entity_url(name, "/graph"), {"hops": data["hops"]}))


def _diff_form(t1: str = "", t2: str = "", axis: str = "valid", subject: str = "", predicate: str = "") -> str:
    opts = "".join(f'<option{" selected" if a == axis else ""}>{a}</option>' for a in ("valid", "system"))
    return (
        '<form method="get" action="/diff" id="diff-form">'
        f't1 <input name="t1" value="{esc(t1)}" placeholder="2020"> t2 <input name="t2" value="{esc(t2)}" '
        f'placeholder="2024"> axis <select name="axis">{opts}</select> subject <input name="subject" '
        f'value="{esc(subject)}"> predicate <input name="predicate" value="{esc(predicate)}"> '
        "<button>compare</button></form>"
    )


def diff_form_page(basis: Mapping[str, Any], message: str | None = None) -> str:
    err = f'<p class="err">{esc(message)}</p>' if message else ""
    return layout("Diff", err + _diff_form(), basis_html=basis_form(basis, "/diff"))


def _with_interval(f: Mapping[str, Any]) -> str:
    """A changed fact's object and valid interval (a change may be the interval alone)."""
    return f"{f['object']} [{f.get('valid_from') or '…'}, {f.get('valid_to') or '…'})"


def diff_page(data: Mapping[str, Any]) -> str:
    bp = _bp(data)
    keep = {k: data.get(k) for k in ("t1", "t2", "axis", "subject", "predicate")}
    parts = [_diff_form(data["t1"], data["t2"], data["axis"], data.get("subject") or "", data.get("predicate") or "")]
    parts.append(f'<p>Comparing <b>{esc(data["t1"])}</b> → <b>{esc(data["t2"])}</b> on the <b>{esc(data["axis"])}</b> '
                 f'axis; {data["unchanged_count"]} fact(s) unchanged.</p>')
    tot = data["totals"]
    parts.append(f'<h2>Added ({tot["added"]})</h2>' + fact_table(data["added"], bp))
    parts.append(f'<h2>Removed ({tot["removed"]})</h2>' + fact_table(data["removed"], bp))
    rows = []
    for c in data["changed"]:
        old, new = c["old"], c["new"]
        rows.append(f'<tr><td><a href="{esc(entity_url(str(c["subject"]), "", bp))}">{esc(c["subject"])}</a></td>'
                    f'<td>{esc(c["predicate"])}</td><td>{esc(_with_interval(old))}</td>'
                    f'<td>{esc(_with_interval(new))}</td></tr>')
    parts.append(f'<h2>Changed ({tot["changed"]})</h2>')
    # the columns are the two compared times, not "was"/"now"
    parts.append(f'<table id="changed"><tr><th>subject</th><th>predicate</th><th>at {esc(data["t1"])}</th>'
                 f'<th>at {esc(data["t2"])}</th></tr>'
                 f'{"".join(rows)}</table>'
                 if rows else '<p class="muted">none</p>')
    pages = max(1, *(-(-n // data["page_size"]) for n in tot.values()))
    parts.append(_pager("/diff", {**keep, **_paged(bp, data)}, data["page"], pages, data["next"]))
    return layout("Diff", "".join(parts), json_href="/diff.json" + qs({**keep, **_paged(bp, data),
                                                                       "page": data["page"]}),
                  basis_html=basis_form(data["basis"], "/diff", keep))


def conflicts_page(data: Mapping[str, Any]) -> str:
    bp = _bp(data)
    on = f" on page {data['page']}" if data["page"] > 1 or data["next"] is not None else ""
    parts = [f'<p>{data["count"]} conflict(s){on}: <b>cardinality</b> = two values of a single-valued predicate '
             'at once (an error to fix); <b>review</b> = several values of an undeclared predicate at once.</p>']
    for c in data["conflicts"]:
        span = f'[{c.get("overlap_from") or "…"}, {c.get("overlap_to") or "…"})'
        parts.append(
            f'<h2 class="conflict"><span class="tag">{esc(c["kind"])}</span> '
            f'<a href="{esc(entity_url(str(c["subject"]), "", bp))}">{esc(c["subject"])}</a> · {esc(c["predicate"])} '
            f'<span class="muted">overlap {esc(span)}</span></h2>'
        )
        parts.append(fact_table(c["facts"], bp))
        if c["facts_total"] > len(c["facts"]):
            parts.append(f'<p class="muted">and {c["facts_total"] - len(c["facts"])} more fact(s) at once</p>')
    parts.append(_pager("/conflicts", _paged(bp, data), data["page"], None, data["next"]))
    return layout("Conflicts", "".join(parts), json_href="/conflicts.json" + qs({**_paged(bp, data),
                                                                                 "page": data["page"]}),
                  basis_html=basis_form(data["basis"], "/conflicts"))


def error_page(status: int, kind: str, message: str) -> str:
    return layout(f"{status} · {kind}", f'<p class="err" id="error">{esc(message)}</p><p><a href="/">home</a></p>')
