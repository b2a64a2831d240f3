"""What the evidence pages show (``/search`` and ``/episode/{id}``), as
JSON-ready dicts: the pages' ``.json`` twins and the answers of
``GET /api/search`` and ``GET /api/episodes/{id}``. The HTML renderers in
:mod:`chronomem.adapters.web.evidence_pages` draw exactly this data."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ...core.basis import status_at
from ...core.paging import HIT_FACTS, page_of, parse_page
from ...core.time import TimeLike, format_us, to_us
from ...errors import InvalidInputError, LimitExceededError, NotFoundError
from ...memory import Memory
from ...service.evidence import VIEWS, Episode, Hit
from .data import param_time

__all__ = ["DEFAULT_K", "MAX_K", "episode_view", "parse_k", "parse_view", "search_view"]

#: hits per search unless ``k`` says otherwise, and the most a request may ask for
DEFAULT_K = 10
MAX_K = 100


def parse_k(value: str | None) -> int:
    """The ``k`` query parameter (default 10, 1 to 100)."""
    if value is None or not value.strip():
        return DEFAULT_K
    try:
        k = int(value)
    except ValueError:
        raise InvalidInputError(f"k must be an integer from 1 to {MAX_K}, not {value!r}") from None
    if k > MAX_K:
        raise LimitExceededError("k", MAX_K, k, unit="")
    if k < 1:
        raise InvalidInputError(f"k must be an integer from 1 to {MAX_K}, not {k}")
    return k


def parse_view(value: str | None) -> str:
    """The ``view`` query parameter (default ``as_world``)."""
    if value is None or not value.strip():
        return "as_world"
    if value not in VIEWS:
        raise InvalidInputError(f"view must be one of {', '.join(VIEWS)}, not {value!r}")
    return value


def _now_text(mem: Memory) -> str:
    return format_us(to_us(mem.now()), 7).replace(".000000", "")


def _episode_dict(ep: Episode) -> dict[str, Any]:
    """``ep.to_dict()`` with its first :data:`HIT_FACTS` ``fact_ids`` (``fact_ids_total``: all)."""
    out = ep.to_dict()
    out["fact_ids_total"] = len(ep.fact_ids)
    out["fact_ids"] = list(ep.fact_ids[:HIT_FACTS])
    return out


def _hit_dict(rank: int, hit: Hit, at: _dt.datetime) -> dict[str, Any]:
    """One hit; each fact note also says where the fact stands at ``at``, the view's basis."""
    ep = hit.episode
    return {
        "rank": rank,
        "episode": _episode_dict(ep),
        "score": hit.score,
        "parts": hit.parts.to_dict(),
        "facts": [
            {"fact": n.fact.to_dict(), "current": n.current, "status_at_basis": status_at(n.fact, at),
             "line": n.line(), "link": n.link,
             "ended_at": n.fact.valid_to_text if not n.current else None,
             "superseded_by": n.superseded_by.to_dict() if n.superseded_by is not None else None}
            for n in hit.facts[:HIT_FACTS]
        ],
        "facts_total": len(hit.facts),
        "history": hit.is_history,
        "superseded": ({"by": ep.superseded_by,
                        "at": ep.superseded_at.isoformat().replace("+00:00", "Z") if ep.superseded_at else None}
                       if ep.superseded_by else None),
    }


def recall_view(mem: Memory, q: str | None, budget_tokens: str | None, at: TimeLike | None,
                *, known_at: TimeLike | None = None) -> dict[str, Any]:
    """``mem.recall`` for ``q`` (what the Claude Code hook adds to a prompt,
    asked of a running server): ``Recall.to_dict()``. ``budget_tokens``
    defaults to 1500 (the recall checks its range)."""
    if q is None or not q.strip():
        raise InvalidInputError("recall needs a question: ?q=...")
    budget = 1500
    if budget_tokens is not None and budget_tokens.strip():
        try:
            budget = int(budget_tokens)
        except ValueError:
            raise InvalidInputError(f"budget_tokens must be an integer, not {budget_tokens!r}") from None
    return mem.recall(q, at=param_time(mem, at, "at"), known_at=param_time(mem, known_at, "known_at"),
                      budget_tokens=budget).to_dict()


def search_view(mem: Memory, q: str | None, view: str | None, at: TimeLike | None, k: str | None,
                *, known_at: TimeLike | None = None, require_query: bool = False) -> dict[str, Any]:
    """Evidence search: the hits of ``mem.search`` with their score parts,
    the facts each supports (current or history) and superseded annotations.
    ``at`` is the view's time, ``known_at`` the system time it is known at
    (both default now). Without ``q`` (and ``require_query`` false) only the
    basis is returned."""
    v = parse_view(view)
    n = parse_k(k)
    at_point = param_time(mem, at, "at")  # read bases: ISO or a time phrase
    known_point = param_time(mem, known_at, "known_at")
    query = q.strip() if q is not None and q.strip() else None
    out: dict[str, Any] = {
        "basis": {"view": v, "at": str(at_point) if at_point is not None else None,
                  "known_at": str(known_point) if known_point is not None else None, "now": _now_text(mem), "k": n},
        "namespace": mem.namespace,
        "query": query,
        "count": None,
        "hits": None,
    }
    if query is None:
        if require_query:
            raise InvalidInputError("search needs a query: ?q=...")
        return out
    hits = mem.search(query, k=n, view=v, at=at_point, known_at=known_point)
    basis_at = at_point.datetime if at_point is not None else mem.now()
    out["hits"] = [_hit_dict(i + 1, h, basis_at) for i, h in enumerate(hits)]
    out["count"] = len(hits)
    return out


def episode_view(mem: Memory, episode_id: str, page: str | None = None,
                 page_size: str | None = None) -> dict[str, Any]:
    """One episode verbatim with its times, mentions, a page of the facts
    citing it (each flagged current or history) and what superseded it."""
    pg = parse_page(page, page_size)
    ep = mem.episode(episode_id)
    now = mem.now()
    facts = []
    citing, paging = page_of(mem.episode_facts(ep.id), pg)
    for f in citing:
        current = f.valid_to is None or now < f.valid_to
        by: dict[str, Any] | None = None
        if not current and f.invalidated_by:
            try:
                by = mem.fact(f.invalidated_by).to_dict()
            except NotFoundError:  # pragma: no cover - the id comes from the store
                by = None
        facts.append({"fact": f.to_dict(), "current": current, "status_at_basis": status_at(f, now),
                      "ended_at": None if current else f.valid_to_text,
                      "superseded_by": by})
    superseded_by: dict[str, Any] | None = None
    if ep.superseded_by:
        try:
            newer = mem.episode(ep.superseded_by)
            superseded_by = {"id": newer.id, "text": newer.text,
                             "occurred_at": newer.to_dict()["occurred_at"]}
        except NotFoundError:  # pragma: no cover - the id comes from the store
            superseded_by = {"id": ep.superseded_by, "text": None, "occurred_at": None}
    return {
        "now": _now_text(mem),
        "namespace": mem.namespace,
        "episode": _episode_dict(ep),
        "facts": facts,
        "facts_page": paging,
        "superseded_by": superseded_by,
    }
