"""Tiny HTML building blocks for the web view: escaping, links, tables and
the page layout (navigation, the time-basis form, the link to the JSON twin).
Everything user-supplied goes through :func:`esc`."""

from __future__ import annotations

from html import escape
from typing import Any, Iterable, Mapping, Sequence
from urllib.parse import quote, urlencode

from ...core.basis import BASIS_STATUSES, status_label

__all__ = ["basis_form", "entity_url", "esc", "fact_table", "layout", "qs"]


def esc(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def qs(params: Mapping[str, Any]) -> str:
    """A query string of the non-empty params (with the leading ``?``)."""
    kept = {k: str(v) for k, v in params.items() if v not in (None, "")}
    return ("?" + urlencode(kept)) if kept else ""


def entity_url(name: str, suffix: str = "", params: Mapping[str, Any] | None = None) -> str:
    return f"/entity/{quote(name, safe='')}{suffix}{qs(params or {})}"


_CSS = (
    "\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1f2937;background:#fafafa}\n"
    "header{background:#1e293b;color:#fff;padding:8px 16px;display:flex;gap:18px;align-items:center}\n"
    "header a{color:#e2e8f0;text-decoration:none}header .brand{font-weight:bold;color:#fbbf24}\n"
    "main{padding:12px 20px;max-width:1200px}\n"
    "h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:18px 0 6px}\n"
    "table{border-collapse:collapse;background:#fff}"
    "td,th{border:1px solid #e5e7eb;padding:3px 7px;text-align:left;vertical-align:top}\n"
    "th{background:#f1f5f9}.muted{color:#6b7280}"
    ".basis{background:#fff7ed;border:1px solid #fed7aa;padding:6px 10px;margin:8px 0}\n"
    ".basis form{display:inline}.basis input{width:12em}"
    ".tag{display:inline-block;padding:0 6px;border-radius:8px;background:#e5e7eb;font-size:12px}\n"
    ".tag.current,.tag.valid{background:#dbeafe}.tag.retracted{background:#fee2e2}"
    ".err{background:#fee2e2;border:1px solid #fca5a5;padding:8px}\n"
    ".legend span{margin-right:12px}"
    ".legend i{display:inline-block;width:18px;height:9px;margin-right:4px;border:1px solid #555}\n"
    ".svgwrap{overflow-x:auto;background:#fff;border:1px solid #e5e7eb;padding:4px}\n"
    "code{font-size:12px}\n"
)


def layout(title: str, body: str, *, json_href: str | None = None, basis_html: str = "") -> str:
    """A whole HTML page."""
    twin = f' · <a href="{esc(json_href)}">JSON</a>' if json_href else ""
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)} · chronomem</title><meta name=\"viewport\" content=\"width=device-width\">"
        f"<style>{_CSS}</style></head><body><header><a class=\"brand\" href=\"/\">chronomem</a>"
        "<a href=\"/\">Home</a><a href=\"/search\">Evidence</a><a href=\"/conflicts\">Conflicts</a>"
        "<a href=\"/diff\">Diff</a>"
        "<form action=\"/\" method=\"get\" style=\"margin-left:auto\"><input name=\"q\" placeholder=\"search facts\">"
        "</form></header><main>"
        f"<h1>{esc(title)}</h1>{basis_html}{body}<p class=\"muted\">read-only view{twin}</p></main></body></html>"
    )


def basis_form(basis: Mapping[str, Any], action: str, keep: Mapping[str, Any] | None = None,
               note: str = "") -> str:
    """Shows the time basis a page used, with a form to change it."""
    as_of = basis.get("as_of")
    known = basis.get("known_at")
    valid_txt = f"as of <b>{esc(as_of)}</b>" if as_of else f"<b>now</b> ({esc(basis.get('now'))})"
    sys_txt = f"known at <b>{esc(known)}</b>" if known else "<b>now</b> (current beliefs)"
    hidden = "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
                     for k, v in (keep or {}).items() if v not in (None, ""))
    return (
        f'<div class="basis" id="basis">Basis: valid time {valid_txt} · system time {sys_txt}{esc(note)} '
        f'<form method="get" action="{esc(action)}">{hidden}'
        f'<input name="as_of" placeholder="as_of e.g. 2024-03" value="{esc(as_of or "")}"> '
        f'<input name="known_at" placeholder="known_at" value="{esc(known or "")}"> '
        '<button type="submit">apply</button></form></div>'
    )


def _obj_html(fact: Mapping[str, Any], basis_params: Mapping[str, Any]) -> str:
    obj = fact.get("object")
    if fact.get("literal"):
        return f"<code>{esc(repr(obj))}</code>"
    return f'<a href="{esc(entity_url(str(obj), "", basis_params))}">{esc(obj)}</a>'


_HEADS = {"recorded_by": "by"}


def fact_table(facts: Sequence[Mapping[str, Any]], basis_params: Mapping[str, Any], *,
               columns: Iterable[str] = ("subject", "predicate", "object", "interval", "status", "id")) -> str:
    """A table of fact dicts (``Fact.to_dict()``)."""
    cols = list(columns)
    if not facts:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{esc(_HEADS.get(c, c))}</th>" for c in cols)
    rows = []
    for f in facts:
        cells = []
        for c in cols:
            if c == "subject":
                cells.append(f'<a href="{esc(entity_url(str(f["subject"]), "", basis_params))}">'
                             f'{esc(f["subject"])}</a>')
            elif c == "object":
                cells.append(_obj_html(f, basis_params))
            elif c == "interval":
                cells.append(esc(f"[{f.get('valid_from') or '…'}, {f.get('valid_to') or '…'})"))
            elif c == "status":
                cells.append(_status(f, basis_params.get("as_of")))
            elif c == "system":
                cells.append(esc(f"[{f.get('system_from')}, {f.get('system_to') or '…'})"))
            elif c == "recorded_by":  # who wrote the version (empty: not recorded)
                cells.append(esc(f.get("recorded_by") or ""))
            elif c == "id":
                cell = f"<code>{esc(f.get('id'))}</code> v{esc(f.get('version'))}"
                if f.get("episode_id"):
                    ep = str(f["episode_id"])
                    cell += f' <a class="evidence" href="/episode/{esc(quote(ep, safe=""))}">evidence</a>'
                cells.append(cell)
            else:
                cells.append(esc(f.get(c)))
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _status(f: Mapping[str, Any], as_of: str | None) -> str:
    """The fact's status at the page's basis (``status_at_basis`` of the twin):
    a version no longer believed at ``known_at`` shows how it was closed."""
    if f.get("system_to") and not f.get("believed_at_basis"):
        kind = f.get("ended_by") or "closed"
        return f'<span class="tag {esc(kind)}">{esc(kind)}</span>'
    status = f.get("status_at_basis")
    if status not in BASIS_STATUSES:  # a fact dict built without a basis
        return ""
    text = status_label(status, basis=as_of, valid_from=f.get("valid_from"), valid_to=f.get("valid_to"))
    return f'<span class="tag {esc(status)}">{esc(text)}</span>'
