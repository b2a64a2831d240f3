"""``chronomem doctor``: check one memory for what would break its readers
and repair what can be repaired without losing data.

The checks: the backend's own consistency check (SQLite ``integrity_check``),
migrations, every stored time inside years 1-9999 (facts' valid and system
times, time literals, episodes' times, time mentions), every JSON value
parseable with finite numbers (entity and fact properties, episode metadata,
operation payloads), and the lexical index and vectors against the
episodes. ``repair`` rebuilds derived rows only (index rows, vectors,
mentions); what would change or drop stored data it refuses, and says what
it would do. Recovery is described in ``docs/architecture.md``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..core.codec import decode_literal
from ..core.limits import MAX_JSON_DEPTH
from ..core.time import FIRST_US, LAST_US, MAX_US, MIN_US
from ..errors import ChronomemError, InvalidInputError
from ..store.protocol import EpisodeStore, StoreHealth
from .doctor_report import DoctorReport, Problem
from .evidence.embedding import Embedding
from .evidence.episodes import Episodes, episode_store
from .scope import Scope

__all__ = ["CHECKS", "Doctor", "DoctorReport", "Problem"]

#: what ``doctor`` checks, in the order it reports them
CHECKS = ("integrity", "migrations", "times", "json", "lexical_index", "vectors")
#: examples a problem lists (its count says how many there are)
EXAMPLES = 10
_BATCH = 1000


@dataclass
class _Found:
    """Problems as they are found, one entry per code."""

    check: str
    items: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, code: str, where: str) -> None:
        self.counts[code] = self.counts.get(code, 0) + 1
        sample = self.items.setdefault(code, [])
        if len(sample) < EXAMPLES:
            sample.append(where)


def _time_ok(us: int | None, *, start: bool = False, end: bool = False) -> bool:
    """A stored instant a reader can turn into a date: inside years 1-9999,
    or the sentinel of an unknown start / open end."""
    if us is None or (start and us == MIN_US) or (end and us == MAX_US):
        return True
    return FIRST_US <= us <= LAST_US


def _json_problem(text: str | None) -> str | None:
    """Why ``text`` is not a JSON value readers can use, or None."""
    if text is None:
        return None

    def refuse(token: str) -> Any:
        raise ValueError(f"non-finite number {token}")

    try:
        value = json.loads(text, parse_constant=refuse)
    except RecursionError:
        return "nested too deep to parse"
    except ValueError as exc:
        return f"not JSON ({str(exc)[:80]})"
    depth = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):  # a huge literal such as 1e999
            return "a non-finite number"
        if isinstance(v, (dict, list)):
            depth = max(depth, d)
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    if depth > MAX_JSON_DEPTH:
        return f"nested {depth} deep (writes accept {MAX_JSON_DEPTH})"
    return None


class Doctor:
    """The checks and repairs of one memory's namespace (and of the store it is in)."""

    def __init__(self, scope: Scope, episodes: Episodes, embedding: Embedding) -> None:
        self._scope = scope
        self._episodes = episodes
        self._embedding = embedding

    @property
    def _es(self) -> EpisodeStore:
        return episode_store(self._scope.store)

    def doctor(self, repair: bool = False) -> DoctorReport:
        """Check the memory: the store's integrity, migrations, stored times,
        JSON values, lexical index and vectors. Each problem names the
        command that fixes it. With ``repair=True`` fix what can be fixed
        without losing data (rebuild index rows, vectors and time mentions;
        drop index rows and vectors of erased episodes) and report what is
        left; fixes that would change or drop stored data are refused and
        listed in ``refused``. Returns a :class:`DoctorReport`."""
        if not isinstance(repair, bool):
            raise InvalidInputError(f"repair must be true or false, not {repair!r}")
        checks, problems = self._check()
        repaired: list[str] = []
        refused: list[str] = []
        if repair and problems:
            self._repair(problems, repaired, refused)
            if repaired:
                checks, problems = self._check()
        return DoctorReport(self._scope.store.url, self._scope.namespace, checks, tuple(problems),
                            tuple(repaired), tuple(refused))

    # -- checks ----------------------------------------------------------------
    def _check(self) -> tuple[dict[str, str], list[Problem]]:
        try:
            health: StoreHealth | Exception = self._es.health(self._scope.ns_id)
        except Exception as exc:  # a damaged file: the checks that need it say so, the others still run
            health = exc

        def on(check: Callable[[StoreHealth], Iterator[Problem]]) -> Callable[[], Iterator[Problem]]:
            def run() -> Iterator[Problem]:
                if isinstance(health, Exception):
                    raise health
                return check(health)
            return run

        runs: list[tuple[str, Callable[[], Iterator[Problem]]]] = [
            ("integrity", on(self._integrity)), ("migrations", on(self._migrations)),
            ("times", self._times), ("json", self._json), ("lexical_index", on(self._lexical)),
            ("vectors", on(self._vectors)),
        ]
        checks: dict[str, str] = {}
        problems: list[Problem] = []
        for name, run in runs:
            if name == "integrity" and isinstance(health, StoreHealth) and health.integrity is None:
                checks[name] = "not applicable (the database server keeps its own pages consistent)"
                continue
            try:
                found = list(run())
            except Exception as exc:  # a check that cannot read the store is itself a finding
                found = [Problem(name, "unreadable", 1, f"the {name} check could not read the store: {exc}",
                                 (), "restore a backup, or copy out what reads: chronomem export", False)]
            checks[name] = "ok" if not found else f"{sum(p.count for p in found)} problem(s)"
            problems += found
        return checks, problems

    def _integrity(self, health: StoreHealth) -> Iterator[Problem]:
        if health.integrity:
            if all(" index " in line for line in health.integrity):  # only index entries: rebuilt from the tables
                fix = f"sqlite3 {self._file()} REINDEX (the indexes are rebuilt from the tables: nothing is lost)"
            else:
                fix = (f"restore a backup, or rebuild what can be read: sqlite3 {self._file()} '.recover' "
                       "| sqlite3 recovered.db, then chronomem --db recovered.db doctor")
            yield Problem("integrity", "integrity", len(health.integrity), "the database file is damaged",
                          health.integrity[:EXAMPLES], fix, False)

    def _file(self) -> str:
        return self._scope.store.capabilities.local_path or "FILE"

    def _migrations(self, health: StoreHealth) -> Iterator[Problem]:
        if health.schema_version < health.latest_schema:
            yield Problem("migrations", "schema_behind", health.latest_schema - health.schema_version,
                          f"schema version {health.schema_version}, this chronomem knows "
                          f"{health.latest_schema}", (), "chronomem migrate", False)

    def _times(self) -> Iterator[Problem]:
        scope, es = self._scope, self._es
        found = _Found("times")
        for r in scope.store.iter_rows(scope.ns_id):
            for name, us, kw in (("valid_from", r.valid_from, {"start": True}), ("valid_to", r.valid_to, {"end": True}),
                                 ("system_from", r.system_from, {}), ("system_to", r.system_to, {"end": True})):
                if not _time_ok(us, **kw):
                    found.add("fact_time", f"fact {r.fact_id} version {r.version}: {name} = {us}")
            if r.object_lit is not None and r.object_lit.startswith("t:"):
                try:
                    decode_literal(r.object_lit)
                    bad = not _time_ok(int(r.object_lit.split(":")[1]))
                except (ValueError, OverflowError, KeyError, IndexError):
                    bad = True
                if bad:
                    found.add("fact_time", f"fact {r.fact_id} version {r.version}: object = {r.object_lit}")
        ids: dict[int, str] = {}
        for rec in self._episode_rows():
            ids[rec.rowid] = rec.id
            for name, us in (("occurred_at", rec.occurred_at), ("recorded_at", rec.recorded_at),
                             ("superseded_at", rec.superseded_at)):
                if not _time_ok(us):
                    found.add("episode_time", f"episode {rec.id}: {name} = {us}")
        rowids = list(ids)
        for start in range(0, len(rowids), _BATCH):
            for rowid, lo, hi, phrase, _prec in es.episode_times(rowids[start:start + _BATCH]):
                if not (_time_ok(lo) and _time_ok(hi, end=True)):
                    found.add("mention_time", f"episode {ids.get(rowid, rowid)}: {phrase!r} = [{lo}, {hi})")
        yield from self._problems(found, {
            "fact_time": ("fact version(s) with a time outside years 1-9999 (readers of them fail)",
                          "chronomem erase FACT_ID --yes, then add the fact again (correct keeps the "
                          "unreadable version in the history)", False),
            "episode_time": ("episode(s) with a time outside years 1-9999",
                             "mem.erase_episode(ID, confirm=True), then add the episode again", False),
            "mention_time": ("time mention(s) outside years 1-9999", "chronomem reindex --times", True),
        })

    def _json(self) -> Iterator[Problem]:
        scope = self._scope
        found = _Found("json")
        for e in scope.store.entities(scope.ns_id):
            if (why := _json_problem(e.properties)) is not None:
                found.add("entity_properties", f"entity {e.name}: {why}")
        for r in scope.store.iter_rows(scope.ns_id):
            if (why := _json_problem(r.properties)) is not None:
                found.add("fact_properties", f"fact {r.fact_id} version {r.version}: {why}")
        for rec in self._episode_rows():
            if (why := _json_problem(rec.metadata)) is not None:
                found.add("episode_metadata", f"episode {rec.id}: {why}")
        for op_id, kind, _at, payload, _undone in scope.store.operations(scope.ns_id):
            if (why := _json_problem(payload)) is not None:
                found.add("operation_payload", f"{kind} {op_id}: {why}")
        yield from self._problems(found, {
            "entity_properties": ("entity properties readers cannot use",
                                  "mem.set_entity(NAME, properties={...}) replaces them", False),
            "fact_properties": ("fact properties readers cannot use",
                                "chronomem erase FACT_ID --yes, then add the fact again (correct --properties "
                                "keeps the unreadable version in the history)", False),
            "episode_metadata": ("episode metadata readers cannot use",
                                 "mem.erase_episode(ID, confirm=True), then add the episode again", False),
            "operation_payload": ("merge records that cannot be undone",
                                  "none needed unless you unmerge them: merge the entities again instead", False),
        })

    def _lexical(self, health: StoreHealth) -> Iterator[Problem]:
        ids = self._episode_ids(health.lexical_missing)
        if health.lexical_missing:
            yield Problem("lexical_index", "lexical_missing", len(health.lexical_missing),
                          "episode(s) missing from the lexical index (search does not find them)",
                          tuple(f"episode {ids.get(r, r)}" for r in health.lexical_missing[:EXAMPLES]),
                          "chronomem reindex (or chronomem doctor --repair)", True)
        if health.lexical_orphans:
            yield Problem("lexical_index", "lexical_orphans", len(health.lexical_orphans),
                          "lexical index row(s) of erased or missing episodes",
                          tuple(f"index row {r}" for r in health.lexical_orphans[:EXAMPLES]),
                          "chronomem doctor --repair", True)
        if health.lexical_counts is not None:
            (rows, tokens), (n_rows, n_tokens) = health.lexical_counts
            yield Problem("lexical_index", "lexical_counts", 1,
                          "the namespace's BM25 statistics differ from its lexical index (search ranks "
                          "with the wrong ones)",
                          (f"kept {rows} row(s) / {tokens} token(s), counted {n_rows} / {n_tokens}",),
                          "chronomem doctor --repair", True)

    def _vectors(self, health: StoreHealth) -> Iterator[Problem]:
        es, ns = self._es, self._scope.ns_id
        for model_id, name, _dim in es.embedding_models():
            if es.vector_stats(ns, model_id)[0] == 0:
                continue  # this namespace never used the model
            missing: list[str] = []
            count, last = 0, 0
            while recs := es.episodes_missing_vectors(ns, model_id, last, _BATCH):
                count += len(recs)
                missing += [f"episode {r.id}" for r in recs[:EXAMPLES - len(missing)]]
                last = recs[-1].rowid
            if count:
                yield Problem("vectors", "vectors_missing", count, f"episode(s) without a {name} vector "
                              "(dense search misses them)", tuple(missing),
                              f"chronomem reindex with the {name} embedder (or chronomem doctor --repair)", True)
        if health.vector_orphans:
            yield Problem("vectors", "vector_orphans", len(health.vector_orphans),
                          "vector(s) of erased or missing episodes",
                          tuple(f"{m} vector of episode row {r}" for m, r in health.vector_orphans[:EXAMPLES]),
                          "chronomem doctor --repair", True)
        if health.vector_bad_dim:
            ids = self._episode_ids([r for _m, r in health.vector_bad_dim])
            yield Problem("vectors", "vector_bad_dim", len(health.vector_bad_dim),
                          "vector(s) whose length is not their model's",
                          tuple(f"{m} vector of episode {ids.get(r, r)}" for m, r in health.vector_bad_dim[:EXAMPLES]),
                          "mem.erase_episode(ID, confirm=True), then add the episode again", False)

    def _problems(self, found: _Found, kinds: dict[str, tuple[str, str, bool]]) -> Iterator[Problem]:
        for code, (message, fix, repairable) in kinds.items():
            if found.counts.get(code):
                yield Problem(found.check, code, found.counts[code], message, tuple(found.items[code]), fix,
                              repairable)

    def _episode_rows(self) -> Iterator[Any]:
        es, ns, last = self._es, self._scope.ns_id, 0
        while recs := es.episode_rows(ns, last, _BATCH):
            yield from recs
            last = recs[-1].rowid

    def _episode_ids(self, rowids: Any) -> dict[int, str]:
        wanted = list(rowids)[:EXAMPLES]
        return {r.rowid: r.id for r in self._es.episodes_by_rowids(wanted)} if wanted else {}

    # -- repairs -----------------------------------------------------------------
    def _repair(self, problems: list[Problem], repaired: list[str], refused: list[str]) -> None:
        codes = {p.code: p for p in problems}
        if "lexical_orphans" in codes or "vector_orphans" in codes:
            rows, vectors = self._es.prune_derived()
            self._embedding.forget_vectors()
            repaired.append(f"dropped {rows} lexical index row(s) and {vectors} vector(s) of erased or "
                            "missing episodes")
        if "lexical_missing" in codes or "mention_time" in codes:
            counts = self._episodes.reindex(lexical="lexical_missing" in codes, vectors=False,
                                            times="mention_time" in codes)
            if counts["lexical"]:
                repaired.append(f"rebuilt the lexical index of {counts['lexical']} episode(s)")
            if "mention_time" in codes:
                repaired.append(f"resolved the time mentions again ({counts['times']} found)")
        if {"lexical_counts", "lexical_missing", "lexical_orphans"} & set(codes) and self._es.recount_lexical():
            # last: index rows written or deleted behind the library's back left the counts behind
            repaired.append("counted the namespaces' BM25 statistics again")
        if "vectors_missing" in codes:
            self._repair_vectors(repaired, refused)
        for p in problems:
            if not p.repairable:
                refused.append(f"{p.code}: not repaired, it would change or drop stored data ({p.count} "
                               f"place(s)); fix: {p.fix}")

    def _repair_vectors(self, repaired: list[str], refused: list[str]) -> None:
        try:
            emb = self._embedding.current
        except (ChronomemError, ImportError, OSError) as exc:
            refused.append(f"vectors_missing: no embedder to make them ({exc})")
            return
        es, ns = self._es, self._scope.ns_id
        models = {name for model_id, name, _d in es.embedding_models()
                  if es.vector_stats(ns, model_id)[0] and es.episodes_missing_vectors(ns, model_id, 0, 1)}
        others = sorted(models - ({emb.name} if emb is not None else set()))
        if others:
            refused.append(f"vectors_missing: {', '.join(others)} vectors need that embedder: open the memory "
                           "with it (mem.use_embedder) and run reindex")
        if emb is not None and emb.name in models:
            try:
                counts = self._episodes.reindex(lexical=False, vectors=True, times=False)
            except ValueError as exc:  # an episode's metadata is not JSON: its text cannot be embedded
                refused.append(f"vectors_missing: re-embedding failed ({exc}); fix the episode metadata first")
                return
            repaired.append(f"embedded {counts['vectors']} episode(s) with {emb.name}")
