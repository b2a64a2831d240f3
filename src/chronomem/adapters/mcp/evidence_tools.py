"""The evidence tools: ``remember``, ``recall`` and ``search``.

``remember`` stores one episode (the evidence text, verbatim) and the facts
extracted from it, each citing the episode; ``recall`` is the one read an agent
makes before answering; ``search`` is the hybrid episode search with its score
parts. Like :mod:`.fact_tools`, every tool parses its arguments (times may be
relative phrases), calls the ``Memory`` method it wraps and renders the result;
:data:`WRAPS` and :data:`EXTRAS` let a test check the schemas against the
method signatures.
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from ...core.names import normalize_key
from ...core.paging import HIT_FACTS
from ...errors import ChronomemError, InvalidInputError, InvalidIntervalError, InvalidTimeError, LimitExceededError
from ...memory import Memory
from ...service.evidence import MAX_EPISODE_CHARS, Episode, Hit
from .fact_tools import (
    _TIME_HELP,
    KnownAt,
    Literal_,
    ObjectValue,
    Predicate,
    Properties,
    Subject,
    Supersede,
    _Call,
    make_tool,
)
from .results import compact_fact

__all__ = ["EXTRAS", "WRAPS", "RememberFact", "compact_episode", "hit_render", "register"]

log = logging.getLogger("chronomem.mcp")

#: tool name -> (Memory method, method parameters the tool does not expose).
#: ``remember`` wraps ``add_episode`` with its ``facts`` (one transaction; the
#: server clock sets ``recorded_at``); ``search`` keeps the default search
#: configuration.
WRAPS: dict[str, tuple[str, frozenset[str]]] = {
    "remember": ("add_episode", frozenset({"recorded_at"})),
    "recall": ("recall", frozenset()),
    "search": ("search", frozenset({"config"})),
}

#: tool name -> tool parameters that are not parameters of the wrapped method.
EXTRAS: dict[str, frozenset[str]] = {}

_TEXT_PREVIEW = 160


def _th(desc: str) -> str:
    return f"{desc} {_TIME_HELP}"


class RememberFact(BaseModel):
    """One fact extracted from the episode; it cites the episode automatically."""

    model_config = ConfigDict(extra="forbid")

    subject: Subject
    predicate: Predicate
    object: ObjectValue
    valid_from: Annotated[str | None, Field(
        description=_th("When the fact started being true (omit if unknown)."), examples=["2024-03"])] = None
    valid_to: Annotated[str | None, Field(
        description=_th("Exclusive end (omit while still true)."), examples=["2025-01-15"])] = None
    confidence: Annotated[float, Field(description="How sure the source is, 0..1.", ge=0.0, le=1.0,
                                       examples=[0.8])] = 1.0
    properties: Properties = None
    supersede: Supersede = None
    literal: Literal_ = False


EpisodeText = Annotated[str, Field(
    description=f"The evidence, verbatim: a conversation turn, a note, a decision and its reasons (at most "
                f"{MAX_EPISODE_CHARS} characters; split longer material into several calls).",
    examples=["Dana: we moved the design review to Friday the 12th because Bob is out on the 10th."])]
OccurredAt = Annotated[str | None, Field(
    description=_th("When it was said or happened (omit if unknown). Time phrases in the text are resolved "
                    "against it."), examples=["yesterday"])]
EpSource = Annotated[str | None, Field(description="Where the evidence came from (a URL, a file, 'user said'); "
                                                   "also the source of its facts.", examples=["standup notes"])]
EpSession = Annotated[str | None, Field(description="Conversation or thread id, to group turns.",
                                        examples=["planning-2026-11"])]
Speaker = Annotated[str | None, Field(description="Who said it.", examples=["Dana"])]
Metadata = Annotated[dict[str, Any] | None, Field(description="Extra JSON data stored with the episode "
                                                              "('title', 'tags' and 'summary' are searchable).",
                                                  examples=[{"title": "design review"}])]
Facts = Annotated[list[RememberFact], Field(
    description="Facts stated by this evidence, each recorded like `fact_add` with episode_id set to the new "
                "episode. Every fact is checked before anything is written: one bad fact stores nothing.",
    examples=[[{"subject": "design review", "predicate": "scheduled_on", "object": "2026-12-12",
                "literal": True, "valid_from": "today"}]])]
Question = Annotated[str, Field(description="The question you are about to answer, in plain words; entity "
                                            "names in it select their facts.",
                                examples=["Who leads the platform team and what did we decide about Postgres?"])]
At = Annotated[str | None, Field(description=_th("Answer as of this time: facts valid then and evidence said "
                                                 "by then (default now)."), examples=["last March"])]
Budget = Annotated[int, Field(description="Token budget of the packed text (about 4 characters per token).",
                              ge=1, le=100_000, examples=[1500])]
Query = Annotated[str, Field(description="What to look for, in words (keywords or a question).",
                             examples=["design review date"])]
K = Annotated[int, Field(description="At most this many hits.", ge=1, le=1000, examples=[10])]
ViewArg = Annotated[Literal["as_world", "as_recorded", "raw"], Field(
    description="'as_world': what was said or happened by `at` and still held then (skips evidence a later "
                "episode superseded by `at`, or whose facts had all ended by `at`); 'as_recorded': everything the "
                "memory had stored by `at`, superseded or not (audit); 'raw': every episode.",
    examples=["as_world"])]
SearchAt = Annotated[str | None, Field(description=_th("The time the view is taken at (default now)."),
                                       examples=["2026-06"])]
SearchSession = Annotated[str | None, Field(description="Only episodes of this session.",
                                            examples=["planning-2026-11"])]
Since = Annotated[str | None, Field(description=_th("Only episodes that occurred at or after this time."),
                                    examples=["last month"])]
Until = Annotated[str | None, Field(description=_th("Only episodes that occurred before this time."),
                                    examples=["today"])]


def _iso(dt: _dt.datetime | None) -> str | None:
    return None if dt is None else dt.isoformat().replace("+00:00", "Z")


def _preview(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= _TEXT_PREVIEW else one[:_TEXT_PREVIEW - 1] + "…"


def compact_episode(ep: Episode, tz: _dt.tzinfo) -> dict[str, Any]:
    """The fields an agent needs to cite and date an episode; optional ones only when set."""
    out: dict[str, Any] = {"id": ep.id, "text": ep.text, "occurred_at": _iso(ep.occurred_at),
                           "recorded_at": _iso(ep.recorded_at)}
    for key in ("speaker", "session", "source"):
        if getattr(ep, key):
            out[key] = getattr(ep, key)
    if ep.metadata:
        out["metadata"] = dict(ep.metadata)
    if ep.mentions:
        out["mentions"] = [{"phrase": m.phrase, "start": m.start.astimezone(tz).date().isoformat(),
                            "end": m.end.astimezone(tz).date().isoformat(),
                            **({} if m.certain else {"certain": False})} for m in ep.mentions]
    if ep.fact_ids:
        out["fact_ids"] = list(ep.fact_ids[:HIT_FACTS])
        if len(ep.fact_ids) > HIT_FACTS:
            out["fact_ids_total"] = len(ep.fact_ids)
    if ep.superseded_by:
        out["superseded_by"] = ep.superseded_by
        out["superseded_at"] = _iso(ep.superseded_at)
    return out


def _when(ep: Episode, tz: _dt.tzinfo) -> str:
    dt = ep.occurred_at or ep.recorded_at
    return dt.astimezone(tz).date().isoformat()


def _score_text(hit: Hit) -> str:
    p = hit.parts
    bits = [f"score {hit.score:.4f}"]
    if p.bm25_rank is not None:
        bits.append(f"bm25 #{p.bm25_rank}")
    if p.dense_rank is not None:
        bits.append(f"dense #{p.dense_rank}")
    if p.time:
        bits.append(f"time +{p.time:.4f}")
    return ", ".join(bits)


def hit_render(i: int, hit: Hit, tz: _dt.tzinfo) -> tuple[list[str], dict[str, Any]]:
    """One search hit: a line (plus one per supported fact) and its compact dict."""
    ep = hit.episode
    who = f"{ep.speaker}: " if ep.speaker else ""
    lines = [f"{i}. [{_when(ep, tz)}] {who}{_preview(ep.text)} ({_score_text(hit)}) [{ep.id}]"]
    if ep.superseded_by:
        lines.append(f"   SUPERSEDED by episode [{ep.superseded_by}] at {_iso(ep.superseded_at)}")
    facts: list[dict[str, Any]] = []
    for note in hit.facts[:HIT_FACTS]:
        # "cited": the fact names this episode as evidence; "mentioned": the episode names the fact
        lines.append(f"   {'supports' if note.link == 'cited' else 'mentions'}: {note.line()}")
        fd: dict[str, Any] = {"id": note.fact.id, "line": note.fact.line(), "current": note.current,
                              "link": note.link}
        if note.ended_at is not None:
            fd["ended_at"] = note.fact.valid_to_text
        if note.superseded_by is not None:
            fd["superseded_by"] = note.superseded_by.id
            fd["superseded_by_line"] = note.superseded_by.line()
        facts.append(fd)
    if len(hit.facts) > HIT_FACTS:
        lines.append(f"   … and {len(hit.facts) - HIT_FACTS} more fact(s)")
    data = compact_episode(ep, tz)
    data["score"] = hit.score
    data["parts"] = {k: v for k, v in hit.parts.to_dict().items() if v is not None}
    data["facts"] = facts
    data["facts_total"] = len(hit.facts)
    data["history"] = hit.is_history
    return lines, data


def _check_facts(mem: Memory, call: _Call, facts: list[RememberFact]) -> list[dict[str, Any]]:
    """Validate every fact before anything is written (the checks ``add_facts``
    makes) and return the ``add_facts`` items with the times resolved."""
    items: list[dict[str, Any]] = []
    for i, f in enumerate(facts):
        try:
            normalize_key(f.subject, "subject")
            normalize_key(f.predicate, "predicate")
            if isinstance(f.object, str) and not f.literal:
                normalize_key(f.object, "object")
            vf = call.time(f"facts[{i}].valid_from", f.valid_from)
            vt = call.time(f"facts[{i}].valid_to", f.valid_to)
            if vf is not None and vt is not None and vt.us <= vf.us:
                raise InvalidIntervalError(f"valid_to ({f.valid_to}) must be after valid_from ({f.valid_from})")
            if f.supersede is False:
                try:
                    single = mem.predicate(f.predicate).cardinality == "one"
                except ChronomemError:
                    single = False
                if single:
                    raise InvalidInputError(f"predicate {f.predicate!r} is single-valued; supersede=false would "
                                            "leave two values valid at once")
        except InvalidTimeError:
            raise  # already names facts[i].valid_from / valid_to
        except InvalidInputError as exc:
            exc.args = (f"facts[{i}]: {exc}",)
            raise
        items.append({"subject": f.subject, "predicate": f.predicate, "object": f.object, "valid_from": vf,
                      "valid_to": vt, "confidence": f.confidence, "properties": f.properties,
                      "supersede": f.supersede, "literal": f.literal})
    return items


def register(server: MCPServer[Any], mem: Memory) -> None:
    """Register the evidence tools on ``server``, bound to ``mem``."""
    tool = make_tool(server)

    @tool("remember", "Remember evidence (and its facts)", read_only=False)
    def remember(
        text: EpisodeText,
        facts: Facts = [],  # noqa: B006 - pydantic copies defaults
        occurred_at: OccurredAt = None,
        source: EpSource = None,
        session: EpSession = None,
        speaker: Speaker = None,
        metadata: Metadata = None,
    ) -> CallToolResult:
        """Store a piece of evidence verbatim (a conversation turn, a note, a decision with its reasons) and,
        in the same call, the stable facts it states; each fact cites the new episode id.

        Use it instead of fact_add when the wording matters or may be needed later to justify an answer.
        Every fact is validated before anything is written. Returns the episode id [bracketed] and one
        line per recorded fact."""
        call = _Call(mem)
        if not text.strip():
            raise InvalidInputError("episode text must be a non-empty string")
        if len(text) > MAX_EPISODE_CHARS:
            raise LimitExceededError("text", MAX_EPISODE_CHARS, len(text),
                                     why=f"it has {len(text)} characters, more than the limit of "
                                         f"{MAX_EPISODE_CHARS} (split it into several remember calls)")
        occurred = call.time("occurred_at", occurred_at)
        items = _check_facts(mem, call, facts)
        # one transaction: the episode and its facts are written together or not at all
        ep = mem.add_episode(text, occurred_at=occurred, source=source, session=session, speaker=speaker,
                             metadata=metadata, facts=items)
        recorded = mem.episode_facts(ep.id) if items else []
        when = f" (occurred {_when(ep, mem.tz)})" if ep.occurred_at else ""
        lines = [f"remembered episode{when}: {_preview(ep.text)} [{ep.id}]"]
        lines += [f"recorded: {f.line()}" for f in recorded]
        return call.result(lines, {"episode": compact_episode(ep, mem.tz),
                                   "facts": [compact_fact(f) for f in recorded]})

    @tool("recall", "Recall what the memory knows", read_only=True, idempotent=True)
    def recall(question: Question, at: At = None, known_at: KnownAt = None,
               budget_tokens: Budget = 1500) -> CallToolResult:
        """Everything the memory knows for a question, packed for your prompt: the facts about the entities it
        names (valid at `at`, default now), what used to be true about them (marked "Earlier", with what ended
        it), then the evidence episodes that best match, each with a citation id in [brackets]. Call this
        before answering anything about past decisions, people or project state, and cite the ids you use."""
        call = _Call(mem)
        r = mem.recall(question, at=call.time("at", at), known_at=call.time("known_at", known_at),
                       budget_tokens=budget_tokens)
        lines = r.text.splitlines() or [f"nothing recalled for {question!r} (no matching facts or evidence)"]
        data = r.to_dict()  # the same keys, with facts and hits in their compact form
        data["facts"] = [compact_fact(f) for f in r.facts]
        data["history"] = [compact_fact(f) for f in r.history]
        data["hits"] = [hit_render(i, h, mem.tz)[1] for i, h in enumerate(r.hits, 1)]
        return call.result(lines, data)

    @tool("search", "Search evidence", read_only=True, idempotent=True)
    def search(
        query: Query,
        k: K = 10,
        view: ViewArg = "as_world",
        at: SearchAt = None,
        known_at: KnownAt = None,
        session: SearchSession = None,
        since: Since = None,
        until: Until = None,
    ) -> CallToolResult:
        """Hybrid (keyword + meaning) search over the stored evidence episodes, best first, with why each ranks
        (bm25 / dense ranks) and the facts each supports, flagged current or history (ended, superseded by ...).
        Prefer `recall` to answer a question; use search to dig for specific evidence. Cite hits by [id]."""
        call = _Call(mem)
        hits = mem.search(query, k=k, view=view, at=call.time("at", at), known_at=call.time("known_at", known_at),
                          session=session, since=call.time("since", since), until=call.time("until", until))
        lines: list[str] = []
        out: list[dict[str, Any]] = []
        for i, hit in enumerate(hits, 1):
            hl, hd = hit_render(i, hit, mem.tz)
            lines += hl
            out.append(hd)
        if not hits:
            lines.append(f"no evidence matches {query!r} in the {view} view")
        return call.result(lines, {"hits": out, "count": len(out), "view": view})

    log.debug("evidence tools registered (%s)", ", ".join(WRAPS))

