"""HTML renderers of the evidence pages (``/search``, ``/episode/{id}``),
each drawing the dict :mod:`chronomem.adapters.web.evidence` built for its ``.json``
twin."""

from __future__ import annotations

from typing import Any, Mapping, Sequence
from urllib.parse import quote

from ...core.paging import DEFAULT_PAGE_SIZE
from ...service.evidence import VIEWS
from .html import entity_url, esc, layout, qs

__all__ = ["episode_page", "episode_url", "search_page"]

#: characters of an episode's text shown in a search hit before it is folded
SNIPPET = 400

_VIEW_HELP = {
    "as_world": "what had been said by <i>at</i> and was not superseded by then",
    "as_recorded": "everything stored by <i>at</i>, superseded or not",
    "raw": "every episode, whenever recorded",
}


def episode_url(episode_id: str, suffix: str = "") -> str:
    return f"/episode/{quote(episode_id, safe='')}{suffix}"


def _fmt(value: object) -> str:
    return esc(value) if value else '<span class="muted">—</span>'


def _search_form(data: Mapping[str, Any]) -> str:
    b = data["basis"]
    opts = "".join(f'<option{" selected" if v == b["view"] else ""}>{esc(v)}</option>' for v in VIEWS)
    return (
        '<form method="get" action="/search" id="search-form">'
        f'<input name="q" value="{esc(data.get("query") or "")}" placeholder="what was said about ..." size="40"> '
        f'view <select name="view">{opts}</select> '
        f'at <input name="at" value="{esc(b.get("at") or "")}" placeholder="now"> '
        f'known at <input name="known_at" value="{esc(b.get("known_at") or "")}" placeholder="now"> '
        f'k <input name="k" value="{esc(b["k"])}" size="3"> <button>search</button></form>'
    )


def _basis_bar(data: Mapping[str, Any]) -> str:
    b = data["basis"]
    at = f"<b>{esc(b['at'])}</b>" if b.get("at") else f"<b>now</b> ({esc(b['now'])})"
    known = f" as known at <b>{esc(b['known_at'])}</b>" if b.get("known_at") else ""
    return (f'<div class="basis" id="basis">Basis: view <b>{esc(b["view"])}</b> at {at}{known} · '
            f'<span class="muted">{_VIEW_HELP[b["view"]]}</span> · top {esc(b["k"])}</div>')


def _fact_rows(notes: Sequence[Mapping[str, Any]], at: str | None = None) -> str:
    """The facts an episode supports, each tagged at the basis ``at`` (``None``: now)."""
    if not notes:
        return '<p class="muted">supports no fact</p>'
    rows = []
    for n in notes:
        f = n["fact"]
        obj = (f"<code>{esc(repr(f['object']))}</code>" if f.get("literal")
               else f'<a href="{esc(entity_url(str(f["object"])))}">{esc(f["object"])}</a>')
        # a note's "current" means "not ended at the basis": say which basis, and when it starts later
        if n.get("status_at_basis") == "not_yet":
            state = f'<span class="tag not_yet">starts {esc(f.get("valid_from"))}</span>'
        elif n["current"]:
            state = f'<span class="tag current">{esc(f"valid at {at}" if at else "current")}</span>'
        else:
            state = '<span class="tag">history</span>'
        extra = ""
        if not n["current"]:
            extra = f' <span class="muted">ended {esc(n.get("ended_at") or f.get("valid_to") or "?")}</span>'
            by = n.get("superseded_by")
            if by:
                by_obj = (f"<code>{esc(repr(by['object']))}</code>" if by.get("literal")
                          else f'<a href="{esc(entity_url(str(by["object"])))}">{esc(by["object"])}</a>')
                extra += (f' · superseded by <a href="{esc(entity_url(str(by["subject"])))}">{esc(by["subject"])}</a>'
                          f' -{esc(by["predicate"])}-&gt; {by_obj}')
        span = f"[{f.get('valid_from') or '…'}, {f.get('valid_to') or '…'})"
        rows.append(
            f'<li class="fact">{state} <a href="{esc(entity_url(str(f["subject"])))}">{esc(f["subject"])}</a> '
            f'-{esc(f["predicate"])}-&gt; {obj} {esc(span)} <code>{esc(f.get("id"))}</code>{extra}</li>'
        )
    return f'<ul class="facts">{"".join(rows)}</ul>'


def _parts(p: Mapping[str, Any]) -> str:
    def num(v: object, fmt: str = "{:.4g}") -> str:
        return esc(fmt.format(v)) if isinstance(v, (int, float)) else '<span class="muted">—</span>'

    return (f'<table class="parts"><tr><th>fused</th><th>lexical rank</th><th>BM25</th><th>dense rank</th>'
            f'<th>dense</th><th>time</th></tr><tr><td>{num(p.get("fused"))}</td>'
            f'<td>{num(p.get("bm25_rank"), "{}")}</td>'
            f'<td>{num(p.get("bm25"))}</td><td>{num(p.get("dense_rank"), "{}")}</td><td>{num(p.get("dense"))}</td>'
            f'<td>{num(p.get("time"))}</td></tr></table>')


def _meta_line(ep: Mapping[str, Any]) -> str:
    bits = [f'occurred {_fmt(ep.get("occurred_at"))}', f'recorded {_fmt(ep.get("recorded_at"))}']
    for key in ("speaker", "session", "source"):
        if ep.get(key):
            bits.append(f"{key} <b>{esc(ep[key])}</b>")
    return " · ".join(bits)


def _more(n: int) -> str:
    return f'<p class="muted">and {n} more fact(s) (see the episode page)</p>' if n > 0 else ""


def search_page(data: Mapping[str, Any]) -> str:
    b = data["basis"]
    params = {"q": data.get("query"), "view": b["view"], "at": b.get("at"), "known_at": b.get("known_at"),
              "k": b["k"]}
    at = b.get("at")
    parts = [_search_form(data)]
    hits = data.get("hits")
    if hits is None:
        parts.append('<p class="muted">Search the evidence (conversation turns, notes, decisions) by words and '
                     'meaning. Each hit shows why it ranks where it does and the facts it supports.</p>')
    elif not hits:
        parts.append(f'<p id="no-hits">no evidence matches <b>{esc(data["query"])}</b> in this view</p>')
    else:
        parts.append(f'<p>{len(hits)} hit(s) for <b>{esc(data["query"])}</b></p>')
    for h in hits or []:
        ep = h["episode"]
        text = str(ep.get("text") or "")
        shown = esc(text if len(text) <= SNIPPET else text[:SNIPPET] + "…")
        notes = []
        if h.get("superseded"):
            s = h["superseded"]
            notes.append(f'<span class="tag retracted">superseded</span> by <a href="{esc(episode_url(s["by"]))}">'
                         f'<code>{esc(s["by"])}</code></a> at {esc(s.get("at"))}')
        if h.get("history"):
            notes.append('<span class="tag">history</span> every fact it supports has ended')
        if ep.get("erased_at"):
            notes.append(f'<span class="tag retracted">erased</span> {esc(ep["erased_at"])}')
        parts.append(
            f'<div class="hit" id="hit-{esc(h["rank"])}"><h2>{esc(h["rank"])}. '
            f'<a href="{esc(episode_url(str(ep["id"])))}"><code>{esc(ep["id"])}</code></a> '
            f'<span class="muted">score {esc(format(h["score"], ".4g"))}</span></h2>'
            f'<p class="muted">{_meta_line(ep)}</p>'
            + (f'<p class="note">{" · ".join(notes)}</p>' if notes else "")
            + f'<blockquote class="text">{shown}</blockquote>{_parts(h["parts"])}{_fact_rows(h["facts"], at)}'
            + _more(h.get("facts_total", 0) - len(h["facts"])) + '</div>'
        )
    return layout("Evidence search", "".join(parts), json_href="/search.json" + qs(params), basis_html=_basis_bar(data))


def _pager(base: str, fp: Mapping[str, Any]) -> str:
    """Previous / next links of a paged list (nothing on a single page)."""
    size = {"page_size": fp["page_size"]} if fp["page_size"] != DEFAULT_PAGE_SIZE else {}
    links = []
    if fp["page"] > 1:
        links.append(f'<a rel="prev" href="{esc(base + qs({**size, "page": fp["page"] - 1}))}">← previous</a>')
    if fp["next"] is not None:
        links.append(f'<a rel="next" href="{esc(base + qs({**size, "page": fp["next"]}))}">next →</a>')
    return f'<p class="pager">page {esc(fp["page"])} {" ".join(links)}</p>' if links else ""


def episode_page(data: Mapping[str, Any]) -> str:
    ep = data["episode"]
    eid = str(ep["id"])
    parts = [f'<p class="muted">{_meta_line(ep)}</p>']
    if ep.get("erased_at"):
        parts.append(f'<p class="err">This episode was erased at {esc(ep["erased_at"])}; only its id and times '
                     'remain.</p>')
    sup = data.get("superseded_by")
    if sup:
        parts.append(f'<p class="note" id="superseded"><span class="tag retracted">superseded</span> by '
                     f'<a href="{esc(episode_url(str(sup["id"])))}"><code>{esc(sup["id"])}</code></a>'
                     f' at {esc(ep.get("superseded_at"))}: {esc(sup.get("text") or "")}</p>')
    parts.append(f'<h2>Text</h2><pre class="text" id="text" style="white-space:pre-wrap">{esc(ep.get("text"))}</pre>')
    mentions = ep.get("mentions") or []
    rows = "".join(f'<tr><td>{esc(m["phrase"])}</td><td>{esc(m["start"])}</td><td>{esc(m["end"])}</td>'
                   f'<td>{esc(m["precision"])}</td></tr>' for m in mentions)
    parts.append('<h2>Time mentions</h2>' + (
        f'<table id="mentions"><tr><th>phrase</th><th>from</th><th>to</th><th>precision</th></tr>{rows}</table>'
        if rows else '<p class="muted">none</p>'))
    meta = ep.get("metadata") or {}
    if meta:
        mrows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in meta.items())
        parts.append(f"<h2>Metadata</h2><table>{mrows}</table>")
    fp = data.get("facts_page") or {"page": 1, "page_size": len(data["facts"]), "next": None,
                                     "total": len(data["facts"])}
    parts.append(f'<h2>Facts citing it ({fp["total"]})</h2>'
                 f'<p class="muted">current: not ended at {esc(data["now"])}; history: ended</p>')
    parts.append(_fact_rows(data["facts"]))
    parts.append(_pager(episode_url(eid), fp))
    return layout(f"Episode {eid}", "".join(parts), json_href=episode_url(eid, ".json"))
