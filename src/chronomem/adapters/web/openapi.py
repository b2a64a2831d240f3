"""The OpenAPI 3.1 document served at ``/api/openapi.json``. A test checks
that its paths are exactly the ``/api`` routes of the app."""

from __future__ import annotations

from typing import Any

from ...core.models import CloseKind
from ...core.paging import DEFAULT_PAGE_SIZE, MAX_MULTI_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE
from ...core.phrases import PHRASE_HELP
from ...service.evidence import MAX_EPISODE_CHARS

__all__ = ["openapi_document"]


def _q(name: str, description: str, *, required: bool = False, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "description": description,
            "schema": schema or {"type": "string"}}


def _p(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "description": description, "schema": {"type": "string"}}


def _tq(name: str, description: str, *, required: bool = False) -> dict[str, Any]:
    """A read-basis query parameter: ISO or a time phrase, echoed in the answer's ``times``."""
    return _q(name, f"{description}; {PHRASE_HELP} (resolved against the store clock in the memory's timezone, "
              "echoed in `times`)", required=required)


_AS_OF = _tq("as_of", "valid time to read at; omitted: all of history or now")
_KNOWN_AT = _tq("known_at", "system time to read at (what the store believed then); omitted: now")


def _paging(max_size: int = MAX_PAGE_SIZE) -> list[dict[str, Any]]:
    """``page`` and ``page_size`` (every list route pages; past the end: an empty page)."""
    return [_q("page", "page number, from 1 (past the end: an empty page)",
               schema={"type": "integer", "minimum": 1, "maximum": MAX_PAGE}),
            _q("page_size", f"items per page (default {DEFAULT_PAGE_SIZE}, at most {max_size})",
               schema={"type": "integer", "minimum": 1, "maximum": max_size})]


#: the echo of a page
_PAGE_ECHO = {"page": {"type": "integer"}, "page_size": {"type": "integer"},
              "next": {"type": ["integer", "null"], "description": "the next page's number; null on the last page"}}
#: the echo of a read's time parameters
_TIMES = {"type": "object", "additionalProperties": {"type": "string"},
          "description": "each read-basis parameter given, as resolved, at its precision: {\"as_of\": \"2022-04\"}"}
_ERR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "bad input", 401: "bearer token missing", 403: "bearer token wrong", 404: "unknown id or entity",
            409: "conflicts with stored state"}
    return {str(c): _json(_ERR, text[c]) for c in codes}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": False, "content": {"application/json": {"schema": schema}}}


_FACT = {"$ref": "#/components/schemas/Fact"}
_TOKEN = {"type": "object", "properties": {
    "name": {"type": "string"}, "namespaces": {"type": "array", "items": {"type": "string"}},
    "scopes": {"type": "array", "items": {"type": "string"}}, "status": {"enum": ["active", "expired", "revoked"]},
    "created_at": {"type": "string"}, "last_used_at": {"type": ["string", "null"]},
    "expires_at": {"type": ["string", "null"]}, "revoked_at": {"type": ["string", "null"]}}}
_FACT_RESULT = {"type": "object", "properties": {"fact": _FACT}}
_TIME = {"type": "string", "description": "ISO 8601 time; partial dates like 2024 or 2024-03 keep their precision"}
_EPISODE = {"$ref": "#/components/schemas/Episode"}
_NOTE_STATUS = {"enum": ["valid", "ended", "not_yet"],
                "description": "where the fact's valid interval lies relative to the basis (search: at; episode: now)"}
_EPISODE_VIEW = {"type": "object", "properties": {
    "now": {"type": "string"}, "namespace": {"type": "string"}, "episode": _EPISODE,
    "facts": {"type": "array", "items": {"type": "object", "properties": {
        "fact": _FACT, "current": {"type": "boolean", "description": "false: the fact has ended (history)"},
        "status_at_basis": _NOTE_STATUS,
        "ended_at": {"type": ["string", "null"]}, "superseded_by": {"oneOf": [_FACT, {"type": "null"}]}}}},
    "facts_page": {"type": "object", "description": "page, page_size, next and total of the facts citing it"},
    "superseded_by": {"type": ["object", "null"], "description": "the later episode that overrides this one"}}}
_HIT = {"type": "object", "properties": {
    "rank": {"type": "integer"}, "episode": _EPISODE, "score": {"type": "number"},
    "parts": {"type": "object", "description": "why it ranks here: fused, bm25, bm25_rank, dense, dense_rank, time",
              "properties": {"fused": {"type": "number"}, "bm25": {"type": ["number", "null"]},
                             "bm25_rank": {"type": ["integer", "null"]}, "dense": {"type": ["number", "null"]},
                             "dense_rank": {"type": ["integer", "null"]}, "time": {"type": "number"}}},
    "facts": {"type": "array", "description": "facts the episode supports (or, uncited, mentions), each current "
                                              "or history",
              "items": {"type": "object", "properties": {
                  "fact": _FACT, "current": {"type": "boolean", "description": "not ended at the view's at"},
                  "status_at_basis": _NOTE_STATUS, "line": {"type": "string"},
                  "link": {"enum": ["cited", "mentioned"],
                           "description": "cited: the fact names the episode as evidence; mentioned: the "
                                          "episode names the fact's subject and value, said while it held"},
                  "ended_at": {"type": ["string", "null"]}, "superseded_by": {"oneOf": [_FACT, {"type": "null"}]}}}},
    "history": {"type": "boolean", "description": "every fact it supports (cited, else mentioned) has ended"},
    "superseded": {"type": ["object", "null"], "description": "{by, at}: a later episode overrides this one"}}}


def openapi_document() -> dict[str, Any]:
    """The API description (routes, parameters, bodies, errors)."""
    write_errors = _errors(400, 401, 403, 404, 409)
    return {
        "openapi": "3.1.0",
        "info": {"title": "chronomem API", "version": "1",
                 "description": "Bi-temporal knowledge-graph memory. Writes need the bearer token when the server "
                                "has one; errors are {\"error\": {\"type\", \"message\"}}."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {
                    "type": "object", "required": ["type", "message"],
                    "properties": {"type": {"type": "string"}, "message": {"type": "string"}}}}},
                "Fact": {"type": "object", "properties": {
                    "id": {"type": "string"}, "subject": {"type": "string"}, "predicate": {"type": "string"},
                    "object": {}, "valid_from": {"type": ["string", "null"]}, "valid_to": {"type": ["string", "null"]},
                    "system_from": {"type": "string"}, "system_to": {"type": ["string", "null"]},
                    "confidence": {"type": "number"}, "source": {"type": ["string", "null"]},
                    "current": {"type": "boolean", "description": "believed now and valid now (whatever the basis)"},
                    "status_at_basis": {"enum": ["valid", "ended", "not_yet"],
                                        "description": "reads only: where the valid interval lies relative to the "
                                                       "basis as_of (or now)"},
                    "believed_at_basis": {"type": "boolean",
                                          "description": "reads only: this version was believed at the basis "
                                                         "known_at (or now)"},
                    "literal": {"type": "boolean"}, "version": {"type": "integer"},
                    "ended_by": {"enum": [*(k.value for k in CloseKind), None],
                                 "description": "what ended this version: why it stopped being believed, or "
                                                "(believed) what cut its valid interval short"},
                    "ended_reason": {"type": ["string", "null"],
                                     "description": "the free-text reason given to invalidate/retract/correct"},
                    "invalidated_by": {"type": ["string", "null"],
                                       "description": "the id of the fact that superseded it"}}},
                "Episode": {"type": "object", "properties": {
                    "id": {"type": "string"}, "text": {"type": "string"},
                    "occurred_at": {"type": ["string", "null"]}, "recorded_at": {"type": "string"},
                    "source": {"type": ["string", "null"]}, "session": {"type": ["string", "null"]},
                    "speaker": {"type": ["string", "null"]}, "metadata": {"type": "object"},
                    "mentions": {"type": "array", "items": {"type": "object", "properties": {
                        "phrase": {"type": "string"}, "start": {"type": "string"}, "end": {"type": "string"},
                        "precision": {"type": "string"}}}},
                    "fact_ids": {"type": "array", "items": {"type": "string"}},
                    "superseded_by": {"type": ["string", "null"]}, "superseded_at": {"type": ["string", "null"]},
                    "erased_at": {"type": ["string", "null"]}, "namespace": {"type": "string"}}},
                "NewEpisode": {"type": "object", "required": ["text"], "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": MAX_EPISODE_CHARS,
                             "description": "the evidence verbatim (non-empty, at most "
                                            f"{MAX_EPISODE_CHARS} characters)"},
                    "occurred_at": _TIME, "recorded_at": _TIME, "source": {"type": "string"},
                    "session": {"type": "string"}, "speaker": {"type": "string"}, "metadata": {"type": "object"}}},
                "NewFact": {"type": "object", "required": ["subject", "predicate", "object"], "properties": {
                    "subject": {"type": "string"}, "predicate": {"type": "string"}, "object": {},
                    "valid_from": _TIME, "valid_to": _TIME, "confidence": {"type": "number"},
                    "source": {"type": "string"}, "episode_id": {"type": "string"}, "properties": {"type": "object"},
                    "supersede": {"type": "boolean"}, "literal": {"type": "boolean"}}},
            },
        },
        "paths": {
            "/api/openapi.json": {"get": {"summary": "this document", "responses": {"200": _json({"type": "object"})}}},
            "/api/stats": {"get": {
                "summary": "counts of the served namespace (facts and evidence) and the server's memory",
                "responses": {"200": _json({"type": "object", "properties": {
                    "stats": {"type": "object"}, "evidence": {"type": "object"},
                    "process": {"type": "object", "properties": {
                        "rss_bytes": {"type": ["integer", "null"], "description": "resident set size now"},
                        "peak_rss_bytes": {"type": ["integer", "null"],
                                           "description": "largest resident set size so far"}}}}})}}},
            "/api/facts": {
                "get": {
                    "summary": "facts matching filters",
                    "parameters": [
                        _q("subject", "entity name (or alias)"), _q("predicate", "predicate name"),
                        _q("object", "object entity name or literal text"), _AS_OF, _KNOWN_AT,
                        _q("direction", "out, in or both (relative to subject)",
                           schema={"type": "string", "enum": ["out", "in", "both"]}),
                        _q("recorded_by", "only versions this writer recorded (exact name)"),
                        _q("limit", f"another name for page_size (default {DEFAULT_PAGE_SIZE}, at most "
                           f"{MAX_PAGE_SIZE})", schema={"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE}),
                        *_paging(),
                    ],
                    "responses": {"200": _json({"type": "object", "properties": {
                        "basis": {"type": "object"}, "count": {"type": "integer"}, "limit": {"type": "integer"},
                        "facts": {"type": "array", "items": _FACT}, **_PAGE_ECHO, "times": _TIMES}}),
                        **_errors(400)},
                },
                "post": {
                    "summary": "add a fact (duplicates coalesce; single-valued predicates supersede)",
                    "security": [{"bearer": []}],
                    "requestBody": {"required": True,
                                    "content": {"application/json": {
                                        "schema": {"$ref": "#/components/schemas/NewFact"}}}},
                    "responses": {"201": _json(_FACT_RESULT, "created (or the existing fact)"), **write_errors},
                },
            },
            "/api/facts/{fact_id}/invalidate": {"post": {
                "summary": "the world changed: end the fact's valid time at `ended` (default now)",
                "security": [{"bearer": []}], "parameters": [_p("fact_id", "fact id")],
                "requestBody": _body({"type": "object", "properties": {"ended": _TIME, "reason": {"type": "string"}}}),
                "responses": {"200": _json(_FACT_RESULT), **write_errors}}},
            "/api/facts/{fact_id}/correct": {"post": {
                "summary": "the record was wrong: write a corrected version (old one stays readable with known_at)",
                "security": [{"bearer": []}], "parameters": [_p("fact_id", "fact id")],
                "requestBody": _body({"type": "object", "description": "fields to change: subject, predicate, object, "
                                      "valid_from, valid_to, confidence, source, episode_id, properties, literal"}),
                "responses": {"200": _json(_FACT_RESULT), **write_errors}}},
            "/api/facts/{fact_id}/retract": {"post": {
                "summary": "it was never true: stop believing the fact (values it superseded come back)",
                "security": [{"bearer": []}], "parameters": [_p("fact_id", "fact id")],
                "requestBody": _body({"type": "object", "properties": {"reason": {"type": "string"}}}),
                "responses": {"200": _json(_FACT_RESULT), **write_errors}}},
            "/api/entities/{name}": {"get": {
                "summary": "an entity (type, aliases, properties) and its facts valid at as_of (default now)",
                "parameters": [_p("name", "entity name or alias"), _AS_OF, _KNOWN_AT, *_paging()],
                "responses": {"200": _json({"type": "object", "properties": {
                    "basis": {"type": "object"}, "entity": {"type": "object"}, "count": {"type": "integer"},
                    "facts": {"type": "array", "items": _FACT}, **_PAGE_ECHO, "times": _TIMES}}),
                    **_errors(400, 404)}}},
            "/api/timeline/{name}": {"get": {
                "summary": "chronological events about an entity on both time axes",
                "parameters": [_p("name", "entity name or alias"), _tq("start", "first instant (inclusive)"),
                               _tq("end", "last instant (exclusive)"), *_paging()],
                "responses": {"200": _json({"type": "object", "properties": {
                    "entity": {"type": "object"}, "count": {"type": "integer"},
                    "events": {"type": "array", "items": {"type": "object"}}, **_PAGE_ECHO, "times": _TIMES}}),
                    **_errors(400, 404)}}},
            "/api/diff": {"get": {
                "summary": "facts added, removed and changed between t1 and t2",
                "parameters": [_tq("t1", "from", required=True), _tq("t2", "to", required=True),
                               _q("axis", "valid or system", schema={"type": "string", "enum": ["valid", "system"]}),
                               _q("subject", "only this entity"), _q("predicate", "only this predicate"),
                               _tq("as_of", "valid time pinned for a system-axis diff"),
                               _tq("known_at", "system time pinned for a valid-axis diff"),
                               *_paging(MAX_MULTI_PAGE_SIZE)],
                "responses": {"200": _json({"type": "object", "properties": {
                    "added": {"type": "array", "items": _FACT}, "removed": {"type": "array", "items": _FACT},
                    "changed": {"type": "array", "items": {"type": "object"}},
                    "totals": {"type": "object", "description": "added, removed and changed in all"},
                    **_PAGE_ECHO, "times": _TIMES}}),
                    **_errors(400)}}},
            "/api/search": {"get": {
                "summary": "evidence search (BM25 and dense vectors fused), with score parts and the facts each hit "
                           "supports",
                "parameters": [_q("q", "the question or words to search for", required=True),
                               _q("view", "raw (every episode), as_recorded (what had been stored by `at`) or "
                                  "as_world (what had been said by `at` and was not superseded by then, nor only "
                                  "citing facts that had all ended; default)",
                                  schema={"type": "string", "enum": ["as_world", "as_recorded", "raw"]}),
                               _tq("at", "the instant the view is taken at (default now)"),
                               _tq("known_at", "the system time the view is known at: only episodes, supersessions "
                                  "and facts recorded by then (default now)"),
                               _q("k", "hits returned (1 to 100, default 10)",
                                  schema={"type": "integer", "minimum": 1, "maximum": 100})],
                "responses": {"200": _json({"type": "object", "properties": {
                    "basis": {"type": "object", "description": "view, at, known_at, now and k used"},
                    "query": {"type": "string"}, "count": {"type": "integer"},
                    "hits": {"type": "array", "items": _HIT}, "times": _TIMES}}), **_errors(400)}}},
            "/api/recall": {"get": {
                "summary": "recall for a question, packed for a prompt: the facts of the entities it names, the "
                           "facts that had ended, then evidence, within a token budget (what the Claude Code hook "
                           "adds to a prompt)",
                "parameters": [_q("q", "the question", required=True),
                               _q("budget_tokens", "token budget of the packed items (default 1500)",
                                  schema={"type": "integer", "minimum": 1}),
                               _tq("at", "the instant the facts are valid at and the evidence view taken at "
                                  "(default now)"),
                               _tq("known_at", "the system time the memory is asked as of (default now)")],
                "responses": {"200": _json({"type": "object", "properties": {
                    "question": {"type": "string"}, "at": {"type": "string"}, "text": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "object"}},
                    "hits": {"type": "array", "items": {"type": "object"}}, "tokens": {"type": "integer"},
                    "times": _TIMES}}), **_errors(400)}}},
            "/api/episodes": {"post": {
                "summary": "store one piece of evidence verbatim and index it",
                "security": [{"bearer": []}],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/NewEpisode"}}}},
                "responses": {"201": _json({"type": "object", "properties": {"episode": _EPISODE}}, "created"),
                              **_errors(400, 401, 403)}}},
            "/api/episodes/{episode_id}": {"get": {
                "summary": "one episode with its time mentions, the facts citing it and what superseded it",
                "parameters": [_p("episode_id", "episode id"), *_paging()],
                "responses": {"200": _json(_EPISODE_VIEW), **_errors(400, 404)}}},
            "/api/tokens": {
                "get": {"summary": "the access tokens this admin token manages (never the tokens themselves)",
                        "security": [{"bearer": []}],
                        "responses": {"200": _json({"type": "object", "properties": {
                            "tokens": {"type": "array", "items": _TOKEN}}}), **_errors(401, 403)}},
                "post": {"summary": "create a token (admin scope, for namespaces this token manages); the "
                                    "answer holds the token, shown this once",
                         "security": [{"bearer": []}],
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "type": "object", "required": ["name"], "properties": {
                                 "name": {"type": "string"},
                                 "namespace": {"type": "string"},
                                 "namespaces": {"type": "array", "items": {"type": "string"}},
                                 "scope": {"enum": ["read", "write", "admin"]},
                                 "expires": {"type": "string", "description": "ISO time or a phrase"}}}}}},
                         "responses": {"201": _json({"type": "object", "properties": {
                             "token": {"type": "string"}, "name": {"type": "string"},
                             "namespace": {"type": "string"},
                             "namespaces": {"type": "array", "items": {"type": "string"}},
                             "scopes": {"type": "array", "items": {"type": "string"}},
                             "expires_at": {"type": ["string", "null"]}}}, "created"),
                             **_errors(400, 401, 403, 409)}}},
            "/api/tokens/{name}/revoke": {"post": {
                "summary": "revoke a token at once (admin scope; the row stays)",
                "security": [{"bearer": []}], "parameters": [_p("name", "token name")],
                "responses": {"200": _json({"type": "object", "properties": {"token": _TOKEN}}),
                              **_errors(401, 403, 404)}}},
            "/api/conflicts": {"get": {
                "summary": "values of one (subject, predicate) valid at the same time",
                "parameters": [_AS_OF, _KNOWN_AT, *_paging()],
                "responses": {"200": _json({"type": "object", "properties": {
                    "count": {"type": "integer"}, "conflicts": {"type": "array", "items": {"type": "object"},
                                                                "description": "each with its first facts and "
                                                                               "facts_total"},
                    **_PAGE_ECHO, "times": _TIMES}}), **_errors(400)}}},
        },
    }
