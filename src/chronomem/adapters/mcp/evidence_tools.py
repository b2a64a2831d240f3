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
from .fact_tools import Confidence, KnownAt, _Call, make_tool
from .results import compact_fact

__all__ = ["EXTRAS", "WRAPS", "RememberFact", "compact_episode", "hit_render", "register"]

log = logging.getLogger("chronomem.mcp")

#: tool name -> (Memory method, method parameters the tool does not expose).
#: ``remember`` wraps ``add_episode`` with its ``facts`` (one transaction; the
#: server clock sets ``recorded_at``; secrets are always redacted, an agent
#: cannot opt out with ``keep_secrets``); ``search`` keeps the default search
#: configuration.
WRAPS: dict[str, tuple[str, frozenset[str]]] = {
    "remember": ("add_episode", frozenset({"recorded_at", "keep_secrets"})),
    "recall": ("recall", frozenset()),
    "search": ("search", frozenset({"config"})),
}

#: tool name -> tool parameters that are not parameters of the wrapped method.
EXTRAS: dict[str, frozenset[str]] = {}

_TEXT_PREVIEW = 160


class RememberFact(BaseModel):
    """A fact the episode states (it cites the episode). Its fields mean what
    they mean in ``fact_add``, where the listing describes them once."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema: schema.pop("description", None))

    subject: str
    predicate: str
    object: str | int | float | bool
    valid_from: str | None = None
    valid_to: str | None = None
    confidence: Confidence = 1.0
    properties: dict[str, Any] | None = None
    supersede: bool | None = None
    literal: bool = False


EpisodeText = Annotated[str, Field(
    description=f"Verbatim, at most {MAX_EPISODE_CHARS} characters.")]
OccurredAt = Annotated[str | None, Field(
    description="When it was said; time phrases in the text resolve against it.")]
EpSource = Annotated[str | None, Field(description="Also its facts' source.")]
EpSession = Annotated[str | None, Field(description="Conversation or thread id.")]
Speaker = str | None
Metadata = Annotated[dict[str, Any] | None, Field(
    description="'title', 'tags' and 'summary' are searchable.")]
Facts = Annotated[list[RememberFact], Field(
    description="As in fact_add; one bad fact stores nothing.")]
Question = Annotated[str, Field(description="In plain words; entity names in it select facts.")]
At = Annotated[str | None, Field(description="Answer as of this time.")]
Budget = Annotated[int, Field(ge=1, le=100_000)]
Query = Annotated[str, Field(description="Keywords or a question.")]
K = Annotated[int, Field(ge=1, le=1000)]
ViewArg = Annotated[Literal["as_world", "as_recorded", "raw"], Field(
    description="as_world: still standing at `at`; as_recorded: all stored by `at`; raw: all.")]
SearchAt = str | None
SearchSession = str | None
Since = Annotated[str | None, Field(description="Occurred at or after.")]
Until = Annotated[str | None, Field(description="Occurred before.")]


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

    @tool("remember", "Remember evidence", read_only=False)
    def remember(
        text: EpisodeText,
        facts: Facts = [],  # noqa: B006 - pydantic copies defaults
        occurred_at: OccurredAt = None,
        source: EpSource = None,
        session: EpSession = None,
        speaker: Speaker = None,
        metadata: Metadata = None,
    ) -> CallToolResult:
        """Store evidence verbatim (a turn, a note, a decision and why) with the facts it states,
        each citing the episode; prefer it to fact_add when the wording matters."""
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

    @tool("recall", "Recall", read_only=True, idempotent=True)
    def recall(question: Question, at: At = None, known_at: KnownAt = None,
               budget_tokens: Budget = 1500) -> CallToolResult:
        """What the memory knows for a question, packed for your prompt: current facts about
        the entities it names, earlier ones, then the best evidence, each with an [id] to cite."""
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
        """Hybrid keyword + meaning search over evidence, with ranks and the facts each hit
        supports. Prefer `recall` to answer."""
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

