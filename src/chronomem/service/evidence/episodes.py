"""The evidence half of :class:`~chronomem.Memory`: episodes, hybrid search
with time views, and (in :mod:`.recall`) the one-call recall.

Mixed into ``Memory``; uses its store, namespace, clock and write engine.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import math
import os
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, Sequence, cast

from ...core.ids import new_id
from ...core.models import Fact
from ...core.time import Precision, TimeLike, from_us, to_us
from ...errors import ConfirmationRequiredError, ConflictError, EpisodeNotFoundError, InvalidInputError, StoreError
from ...store.protocol import EpisodeFilter, EpisodeRecord, EpisodeStore, EpisodeWriteTx, FactQuery, Store, WriteTx
from .embed import EMBEDDERS, Embedder, auto_embedder, get_embedder
from .fusion import group_boost, relative_contributions, rrf_contributions
from .lexical import cjk_bigrams, fts_query, query_terms
from .models import (
    MAX_EPISODE_CHARS,
    VIEWS,
    Episode,
    FactNote,
    Hit,
    Recall,
    ScoreParts,
    SearchConfig,
    TimeSpan,
)
from .timemention import resolve_mentions
from .vector import VectorCache, drop_ann_files

if TYPE_CHECKING:  # pragma: no cover
    from ...core.engine import TxWork
    from ...core.time import TimePoint
    from ...memory import Memory

__all__ = ["EpisodeNotFoundError", "EvidenceMixin"]

log = logging.getLogger("chronomem.evidence")

_METADATA_TEXT_KEYS = ("caption", "blip_caption", "title", "tags", "summary")
_EMBED_BATCH = 256
_WHEN_QUESTION = re.compile(
    r"^\s*(?:when\b|what (?:year|month|date|day|time|week)\b|which (?:year|month|day|week)\b|"
    r"how long (?:ago|has|have|had|did|was|were)\b)|\b(?:when did|when was|when is|when will|since when)\b",
    re.I,
)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _embed_pool() -> ThreadPoolExecutor:
    """The worker that embeds a search's query while the lexical side runs."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chronomem-embed")
        return _POOL


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: it starts its own pool."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


class _Prepared:
    __slots__ = ("id", "text", "occurred", "recorded", "source", "session", "speaker", "metadata", "mentions")

    def __init__(self, text: str, occurred: TimePoint | None, recorded: TimePoint | None, source: str | None,
                 session: str | None, speaker: str | None, metadata: str | None) -> None:
        self.id = new_id()
        self.text = text
        self.occurred = occurred
        self.recorded = recorded
        self.source = source
        self.session = session
        self.speaker = speaker
        self.metadata = metadata
        self.mentions: list[tuple[int, int, str, int]] = []


def _opt_str(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string, not {type(value).__name__}")
    return value.strip() or None


def index_parts(rec: EpisodeRecord, prev: EpisodeRecord | None, nxt: EpisodeRecord | None,
                tz: _dt.tzinfo) -> tuple[str, str, str, str]:
    """The four FTS columns of an episode: its text, speaker, context (the
    date in words and caption-like metadata) and the text of its neighbours
    in the session (a reply often names what the turn before it asked)."""
    context: list[str] = []
    if rec.occurred_at is not None:
        d = from_us(rec.occurred_at).astimezone(tz)
        context.append(f"{d.strftime('%B')} {d.year}")
    metadata = json.loads(rec.metadata) if rec.metadata else {}
    for key in _METADATA_TEXT_KEYS:
        value = metadata.get(key)
        if isinstance(value, str):
            context.append(value)
        elif isinstance(value, list):
            context.extend(str(v) for v in value)
    neighbors = " ".join(r.text for r in (prev, nxt) if r is not None)
    return cjk_bigrams(rec.text), rec.speaker or "", cjk_bigrams(" ".join(context)), cjk_bigrams(neighbors)


def embed_text(text: str, speaker: str | None, metadata: Mapping[str, Any] | None) -> str:
    """What the dense index embeds: ``speaker: text`` plus caption-like metadata."""
    out = f"{speaker}: {text}" if speaker else text
    for key in _METADATA_TEXT_KEYS:
        value = (metadata or {}).get(key)
        if isinstance(value, str) and value:
            out += f" [{value}]"
    return out


class EvidenceMixin:
    """Episodes and hybrid search (see ``docs/evidence.md``)."""

    _store: Store
    _ns: int
    namespace: str
    tz: _dt.tzinfo
    _tzname: str
    _embedder: Embedder | None
    _embedder_set: bool
    _vectors: VectorCache | None

    if TYPE_CHECKING:  # pragma: no cover - provided by Memory
        def parse_time(self, value: TimeLike, field: str = "time") -> TimePoint: ...
        def now(self) -> _dt.datetime: ...
        def _now_us(self) -> int: ...
        def _work(self, tx: WriteTx) -> TxWork: ...
        @staticmethod
        def _flush(tx: WriteTx, work: TxWork) -> None: ...
        def _believed(self, tx: WriteTx, work: TxWork, fact_id: str) -> Any: ...
        def _unsupersede(self, tx: WriteTx, work: TxWork, fact_id: str) -> None: ...
        def _run(self, q: FactQuery | None) -> list[Fact]: ...

    @property
    def _es(self) -> EpisodeStore:
        store = self._store
        if not store.capabilities.episodes:
            raise StoreError(f"the {type(store).__name__} backend does not store episodes yet")
        return cast(EpisodeStore, store)

    # -- embedder ----------------------------------------------------------
    def use_embedder(self, embedder: Embedder | str | None) -> None:
        """Use ``embedder`` for new episodes and searches: an :class:`Embedder`,
        the short name of a built-in one (``"minilm"``, ``"bge-small"``,
        ``"e5-multilingual"``: loaded on first use), ``"auto"`` (the default:
        the built-in model this store's vectors were made with, else MiniLM)
        or ``None`` (lexical only, no vectors). Vectors are stored per model
        name, never mixed."""
        if isinstance(embedder, str):
            if embedder != "auto" and embedder not in EMBEDDERS:
                raise InvalidInputError(
                    f"unknown embedder {embedder!r}; expected auto, {', '.join(EMBEDDERS)} or None")
            self._embedder_name: str | None = embedder
            self._embedder_set = False
            return
        if embedder is not None and not isinstance(embedder, Embedder):
            raise InvalidInputError("an embedder needs name, dim and embed(texts, kind)")
        self._embedder = embedder
        self._embedder_set = True

    @property
    def embedder(self) -> Embedder | None:
        """The embedder in use (``None`` when searches are lexical only)."""
        if not getattr(self, "_embedder_set", False):
            name = getattr(self, "_embedder_name", None) or "auto"
            if name == "auto":
                name = auto_embedder([m for _i, m, _d in self._es.embedding_models()])
            self._embedder = get_embedder(name)
            self._embedder_set = True
        return self._embedder

    def _vector_cache(self) -> VectorCache:
        cache = getattr(self, "_vectors", None)
        if cache is None:
            cache = VectorCache()
            self._vectors = cache
        return cache

    # -- writes ------------------------------------------------------------
    def _prepare(self, text: object, occurred_at: TimeLike | None, recorded_at: TimeLike | None,
                 source: object, session: object, speaker: object, metadata: object) -> _Prepared:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("episode text must be a non-empty string")
        if len(text) > MAX_EPISODE_CHARS:
            raise InvalidInputError(
                f"episode text has {len(text)} characters, more than the limit of {MAX_EPISODE_CHARS}; split it"
            )
        meta_json: str | None = None
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidInputError(f"metadata must be a dict, not {type(metadata).__name__}")
            try:
                meta_json = json.dumps(dict(metadata), sort_keys=True, ensure_ascii=False) if metadata else None
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from None
        occurred = self.parse_time(occurred_at, "occurred_at") if occurred_at is not None else None
        recorded = self.parse_time(recorded_at, "recorded_at") if recorded_at is not None else None
        prep = _Prepared(text, occurred, recorded, _opt_str(source, "source"), _opt_str(session, "session"),
                         _opt_str(speaker, "speaker"), meta_json)
        base_us = occurred.us if occurred is not None else recorded.us if recorded is not None else self._now_us()
        base = from_us(base_us).astimezone(self.tz)
        prep.mentions = [
            (to_us(m.start), to_us(m.end), m.phrase, int(m.precision)) for m in resolve_mentions(text, base)
        ]
        return prep

    def _embed_prepared(self, preps: Sequence[_Prepared],
                        progress: Callable[[int, int], None] | None = None) -> list[bytes] | None:
        emb = self.embedder
        if emb is None:
            return None
        out: list[bytes] = []
        for start in range(0, len(preps), _EMBED_BATCH):
            chunk = preps[start:start + _EMBED_BATCH]
            texts = [embed_text(p.text, p.speaker, json.loads(p.metadata) if p.metadata else None) for p in chunk]
            mat = emb.embed(texts, "passage")
            out.extend(bytes(row.astype("float32").tobytes()) for row in mat)
            if progress is not None:
                progress(min(start + _EMBED_BATCH, len(preps)), len(preps))
        return out

    def _write_prepared(self, preps: Sequence[_Prepared], vectors: list[bytes] | None,
                        facts: Sequence[Mapping[str, Any]] = ()) -> list[EpisodeRecord]:
        emb = self.embedder
        recs: list[EpisodeRecord] = []
        with self._es.write() as tx:
            model_id = tx.embedding_model_id(emb.name, emb.dim) if (emb is not None and vectors is not None) else None
            vec_items: list[tuple[int, int, bytes]] = []
            times: list[tuple[int, int, int, str, int]] = []
            for i, p in enumerate(preps):
                recorded = p.recorded.us if p.recorded is not None else tx.now
                rec = EpisodeRecord(
                    0, p.id, self._ns, p.text, p.occurred.us if p.occurred else None,
                    int(p.occurred.precision) if p.occurred else None, recorded, p.source, p.session, p.speaker,
                    p.metadata,
                )
                rowid = tx.insert_episode(rec)
                recs.append(dataclasses.replace(rec, rowid=rowid))
                times.extend((rowid, a, b, phrase, prec) for a, b, phrase, prec in p.mentions)
                if vectors is not None and model_id is not None:
                    vec_items.append((rowid, self._ns, vectors[i]))
            self._index_new(tx, recs)
            if times:
                tx.insert_episode_times(times)
            if vec_items and model_id is not None:
                tx.put_episode_vectors(model_id, vec_items)
            tx.bump_episode_generation()
            if facts:
                self._write_episode_facts(tx, preps[0], facts)
        return recs

    def _write_episode_facts(self, tx: Any, prep: _Prepared, facts: Sequence[Mapping[str, Any]]) -> None:
        """Place facts citing ``prep`` inside the episode's own transaction."""
        from ..candidates import CandidateBuilder

        work = self._work(tx)
        builder = CandidateBuilder(tx, self._ns, self.tz)
        for index, item in enumerate(facts):
            data = dict(item)
            data["episode_id"] = prep.id
            if data.get("source") is None:
                data["source"] = prep.source
            try:
                cand, single = builder.build(data)
            except InvalidInputError as exc:
                exc.args = (f"facts[{index}]: {exc}",)
                raise
            work.place(cand, single=single)
        self._flush(tx, work)

    def _index_new(self, tx: EpisodeWriteTx, recs: Sequence[EpisodeRecord]) -> None:
        """FTS rows for new episodes, and fresh ones for the stored episodes
        that just got a new neighbour."""
        batch = {r.rowid for r in recs}
        touched: dict[int, EpisodeRecord] = {}
        for rec in recs:
            prev, nxt = tx.adjacent_episodes(rec)
            tx.replace_episode_index(rec.rowid, index_parts(rec, prev, nxt, self.tz), new=True)
            for other in (prev, nxt):
                if other is not None and other.rowid not in batch:
                    touched[other.rowid] = other
        self._reindex_rows(tx, touched.values())

    def _reindex_rows(self, tx: EpisodeWriteTx, recs: Iterable[EpisodeRecord]) -> None:
        """Fresh FTS rows for stored episodes whose neighbours changed."""
        for other in recs:
            prev, nxt = tx.adjacent_episodes(other)
            tx.replace_episode_index(other.rowid, index_parts(other, prev, nxt, self.tz))

    def add_episode(
        self,
        text: str,
        *,
        occurred_at: TimeLike | None = None,
        recorded_at: TimeLike | None = None,
        source: str | None = None,
        session: str | None = None,
        speaker: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        facts: Iterable[Mapping[str, Any]] | None = None,
    ) -> Episode:
        """Store one piece of evidence verbatim and index it (lexical and
        dense) in the same transaction. ``occurred_at`` is when it was said or
        happened; ``recorded_at`` defaults to the store clock. Time
        expressions in the text are resolved against ``occurred_at``.
        ``facts`` are dicts with :meth:`add_fact`'s parameter names, recorded
        in the same transaction, each citing this episode (their ``source``
        defaults to the episode's): if the episode or any fact is invalid,
        nothing is written. Returns the episode; its id sorts by creation time."""
        prep = self._prepare(text, occurred_at, recorded_at, source, session, speaker, metadata)
        fact_items = _fact_items(facts)
        vectors = self._embed_prepared([prep])
        rec = self._write_prepared([prep], vectors, fact_items)[0]
        return self._episode_model(rec, with_facts=bool(fact_items))

    def add_episodes(self, items: Iterable[Mapping[str, Any] | str], *,
                     progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Add many episodes atomically (one transaction; embeddings batched).
        Items are strings or dicts with :meth:`add_episode`'s parameter names.
        If any item is invalid nothing is written and the error names its
        index. ``progress(done, total)`` is called as embedding advances.
        Returns the new ids in order."""
        if isinstance(items, (str, bytes, Mapping)) or not hasattr(items, "__iter__"):
            raise InvalidInputError(f"add_episodes() needs a list of episodes, not {type(items).__name__}")
        preps: list[_Prepared] = []
        keys = {"text", "occurred_at", "recorded_at", "source", "session", "speaker", "metadata"}
        for index, item in enumerate(items):
            try:
                if isinstance(item, str):
                    item = {"text": item}
                if not isinstance(item, Mapping):
                    raise InvalidInputError("an item must be a string or a dict with a 'text' key")
                unknown = set(item) - keys
                if unknown:
                    raise InvalidInputError(f"unknown episode field(s): {', '.join(sorted(unknown))}")
                preps.append(self._prepare(item.get("text"), item.get("occurred_at"), item.get("recorded_at"),
                                           item.get("source"), item.get("session"), item.get("speaker"),
                                           item.get("metadata")))
            except InvalidInputError as exc:
                exc.args = (f"item {index}: {exc}",)
                raise
        if not preps:
            return []
        vectors = self._embed_prepared(preps, progress)
        return [r.id for r in self._write_prepared(preps, vectors)]

    def _require_episode_rec(self, episode_id: object) -> EpisodeRecord:
        if not isinstance(episode_id, str) or not episode_id.strip():
            raise InvalidInputError("an episode id must be a non-empty string")
        rec = self._es.episode_by_id(episode_id.strip())
        if rec is None or rec.ns_id != self._ns:
            raise EpisodeNotFoundError(f"no episode with id {episode_id!r} in namespace {self.namespace!r}")
        return rec

    def supersede_episode(self, old_id: str, new_id: str) -> Episode:
        """Mark ``old_id`` as overridden by the later episode ``new_id`` (a
        meeting moved from the 10th to the 12th). From ``new_id``'s
        ``recorded_at`` on, the ``as_world`` view no longer returns ``old_id``.
        Returns the old episode."""
        old = self._require_episode_rec(old_id)
        new = self._require_episode_rec(new_id)
        if old.id == new.id:
            raise InvalidInputError("an episode cannot supersede itself")
        if old.erased_at is not None or new.erased_at is not None:
            raise ConflictError("an erased episode cannot take part in a supersession")
        if old.superseded_by is not None:
            raise ConflictError(f"episode {old.id} is already superseded by {old.superseded_by}")
        with self._es.write() as tx:
            tx.supersede_episode(old.rowid, new.id, max(new.recorded_at, old.recorded_at))
            tx.bump_episode_generation()
        return self.episode(old.id)

    def erase_episode(self, episode_id: str, *, facts: Literal["keep", "retract"] = "keep",
                      confirm: bool = False, reason: str | None = None) -> list[str]:
        """Physically delete an episode's content for privacy: its text,
        speaker, source, session, metadata, time mentions, vectors and index
        row, and its words in the index rows of its neighbours in the session
        (indexed again, as neighbours of each other), all in one transaction
        (``docs/evidence.md``, "Erasure", says what stays on disk). The id
        stays as a tombstone so citing facts are never silently orphaned.
        ``facts="keep"``: facts stay, their ``episode_id`` now names the
        tombstone; ``facts="retract"``: the facts that no other episode
        supports are retracted and the values they had superseded restored.
        Needs ``confirm=True``. Returns the ids of the retracted facts."""
        if facts not in ("keep", "retract"):
            raise InvalidInputError(f"facts must be 'keep' or 'retract', not {facts!r}")
        rec = self._require_episode_rec(episode_id)
        if not confirm:
            raise ConfirmationRequiredError("erase_episode() deletes evidence permanently; call it with confirm=True")
        if rec.erased_at is not None:
            raise ConflictError(f"episode {rec.id} is already erased")
        retracted: list[str] = []
        with self._es.write() as tx:
            if facts == "retract":
                work = self._work(tx)
                for fid in tx.episode_fact_ids(rec.id):
                    rows = tx.rows_of_fact(fid)
                    if not rows or rows[0].ns_id != self._ns:
                        continue
                    others = {r.episode_id for r in rows if r.episode_id and r.episode_id != rec.id}
                    others |= {ep for _f, _s, ep, _a in self._es.sources([fid]) if ep and ep != rec.id}
                    live_others = [o for o in others if (x := tx.episode_by_id(o)) is not None and x.erased_at is None]
                    if live_others:
                        continue
                    live = work.find_believed(fid, rows[0].subject_id, rows[0].predicate_id)
                    if live is None:
                        continue
                    work.retract(live, reason or "evidence erased")
                    self._unsupersede(tx, work, fid)
                    retracted.append(fid)
                self._flush(tx, work)
            # the neighbours' index rows quote its text: index them again, now
            # next to each other (as a new turn re-indexes its neighbours)
            self._reindex_rows(tx, tx.erase_episode(rec.rowid))
            tx.compact_episode_index()
            tx.log_erasure(self._ns, "episode", 1, reason)
            tx.bump_episode_generation()
        # this process's vector caches and the ANN files hold its vector (and
        # context vectors that mix it in): drop them now, not at the next search
        cache = getattr(self, "_vectors", None)
        if cache is not None:
            cache.invalidate()
        drop_ann_files(self._store.capabilities.local_path, self._ns)
        self._es.after_erasure("episode")
        return retracted

    # -- reads -------------------------------------------------------------
    def _episode_model(self, rec: EpisodeRecord, *, with_facts: bool = True,
                       times: Sequence[tuple[int, int, int, str, int]] | None = None,
                       fact_ids: Sequence[str] | None = None) -> Episode:
        if times is None:
            times = self._es.episode_times([rec.rowid])
        if fact_ids is None:
            fact_ids = sorted({f for _e, f in self._es.facts_citing_episodes(self._ns, [rec.id])}) if with_facts else []
        tz = self.tz
        return Episode(
            id=rec.id, text=rec.text,
            occurred_at=from_us(rec.occurred_at) if rec.occurred_at is not None else None,
            recorded_at=from_us(rec.recorded_at), source=rec.source, session=rec.session, speaker=rec.speaker,
            metadata=json.loads(rec.metadata) if rec.metadata else {},
            mentions=tuple(
                TimeSpan(phrase, from_us(a).astimezone(tz), from_us(b).astimezone(tz), Precision(p))
                for _r, a, b, phrase, p in times
            ),
            fact_ids=tuple(fact_ids),
            superseded_by=rec.superseded_by,
            superseded_at=from_us(rec.superseded_at) if rec.superseded_at is not None else None,
            erased_at=from_us(rec.erased_at) if rec.erased_at is not None else None,
            namespace=self.namespace,
        )

    def episode(self, episode_id: str) -> Episode:
        """One episode by id, with its time mentions and the ids of the facts citing it."""
        return self._episode_model(self._require_episode_rec(episode_id))

    def episode_facts(self, episode_id: str) -> list[Fact]:
        """The facts citing an episode (believed now, all of valid time), in
        the order they were first recorded (fact ids sort by creation)."""
        rec = self._require_episode_rec(episode_id)
        ids = sorted({f for _e, f in self._es.facts_citing_episodes(self._ns, [rec.id])})
        return sorted(self._facts_by_ids(ids, None), key=lambda f: f.id)

    def episodes(self, *, session: str | None = None, since: TimeLike | None = None,
                 until: TimeLike | None = None, limit: int = 100, offset: int = 0) -> list[Episode]:
        """Episodes in time order (``occurred_at``, else ``recorded_at``)."""
        for name, value in (("limit", limit), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{name} must be a non-negative integer, not {value!r}")
        f = EpisodeFilter(
            self._ns, session=_opt_str(session, "session"),
            since=self.parse_time(since, "since").us if since is not None else None,
            until=self.parse_time(until, "until").us if until is not None else None,
        )
        recs = self._es.list_episodes(f, limit, offset)
        return self._hydrate(recs)

    def _hydrate(self, recs: Sequence[EpisodeRecord]) -> list[Episode]:
        times: dict[int, list[tuple[int, int, int, str, int]]] = {}
        for t in self._es.episode_times([r.rowid for r in recs]):
            times.setdefault(t[0], []).append(t)
        cites: dict[str, list[str]] = {}
        for ep, fid in self._es.facts_citing_episodes(self._ns, [r.id for r in recs]):
            cites.setdefault(ep, []).append(fid)
        return [self._episode_model(r, times=times.get(r.rowid, []), fact_ids=sorted(set(cites.get(r.id, []))))
                for r in recs]

    def _facts_by_ids(self, ids: Sequence[str], known_at: int | None) -> list[Fact]:
        if not ids:
            return []
        return self._run(FactQuery(self._ns, fact_ids=list(ids), known_at=known_at))

    # -- search ------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        k: int = 10,
        view: str = "as_world",
        at: TimeLike | None = None,
        session: str | None = None,
        since: TimeLike | None = None,
        until: TimeLike | None = None,
        config: SearchConfig | str | None = None,
    ) -> list[Hit]:
        """Hybrid search over episodes: BM25 (FTS5) and dense vectors fused
        with reciprocal-rank fusion, optionally boosted by time proximity.

        ``view``: ``raw`` (every episode), ``as_recorded`` (recorded at or
        before ``at``) or ``as_world`` (also not superseded at ``at``: not
        explicitly superseded, and not only citing facts that have all ended).
        ``at`` defaults to now. ``since``/``until`` bound ``occurred_at``.
        ``config`` is a :class:`SearchConfig` or a preset name."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("search query must be a non-empty string")
        if len(query) > MAX_EPISODE_CHARS:
            raise InvalidInputError(f"search query is longer than {MAX_EPISODE_CHARS} characters")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise InvalidInputError(f"k must be an integer from 1 to 1000, not {k!r}")
        if view not in VIEWS:
            raise InvalidInputError(f"unknown view {view!r}; expected one of {', '.join(VIEWS)}")
        cfg = SearchConfig.preset(config) if isinstance(config, str) else (config or SearchConfig())
        if not isinstance(cfg, SearchConfig):
            raise InvalidInputError("config must be a SearchConfig or a preset name")
        at_us = self.parse_time(at, "at").us if at is not None else self._now_us()
        if at is not None and view != "raw":
            self._store.settle(at_us)  # the view at a past time is final (Store.settle)
        f = EpisodeFilter(
            self._ns,
            recorded_by=at_us if view != "raw" else None,
            not_superseded_at=at_us if view == "as_world" else None,
            session=_opt_str(session, "session"),
            since=self.parse_time(since, "since").us if since is not None else None,
            until=self.parse_time(until, "until").us if until is not None else None,
        )
        pool = max(cfg.pool, k * 3)
        # the dense side's set-up first, so the query embedding (onnxruntime
        # releases the GIL) runs in a worker thread while SQLite ranks BM25
        emb = self.embedder if cfg.dense_weight > 0 else None
        model = self._es.embedding_model(emb.name) if emb is not None else None
        if emb is not None and model is None and not getattr(self, "_warned_no_vectors", False):
            others = [m for _i, m, _d in self._es.embedding_models()]
            if others:  # the episodes were embedded with another model: say so once
                self._warned_no_vectors = True
                log.warning("the store has no %s vectors (it has: %s); searching lexically only. "
                            "Open it with that embedder, or reindex", emb.name, ", ".join(others))
        slot = None
        qfuture: Future[Any] | None = None
        if emb is not None and model is not None:
            if model[1] != emb.dim:
                raise InvalidInputError(f"embedder {emb.name!r} has {emb.dim} dimensions, the store {model[1]}")
            slot = self._vector_cache().slot(self._es, self._ns, model[0], model[1])
            if slot.size:
                qfuture = _embed_pool().submit(emb.embed, [query], "query")
        lexical: list[tuple[int, float]] = []
        try:
            if cfg.lexical_weight > 0:
                match = fts_query(query)
                if match is not None:
                    # (the store returns the query as it is when neither limit is set)
                    match = self._es.prune_common_terms(match, cfg.lexical_df_cap, cfg.lexical_postings_budget)
                    lexical = self._es.lexical_search(match, f, pool, cfg.bm25_weights)
        finally:
            if qfuture is not None:
                wait([qfuture])  # never leave the worker running past this call
        qvec = qfuture.result()[0] if qfuture is not None else None
        dense: list[tuple[int, float]] = []
        if qvec is not None and slot is not None and model is not None:
            cache = self._vector_cache()
            superseded = self._es.superseded_episodes(self._ns) if f.not_superseded_at else []
            got = None
            if slot.size >= cfg.ann_threshold:
                got = cache.ann_search(slot, qvec, pool, f, superseded, cfg.dense_context,
                                       self._store.capabilities.local_path, (self._ns, model[0]))
            dense = got if got is not None else cache.search(slot, qvec, pool, f, superseded, cfg.dense_context)
        return self._fuse(query, lexical, dense, cfg, at_us, k, view)

    def _fuse(self, query: str, lexical: list[tuple[int, float]], dense: list[tuple[int, float]],
              cfg: SearchConfig, at_us: int, k: int, view: str) -> list[Hit]:
        lex_rank = {rowid: (i + 1, s) for i, (rowid, s) in enumerate(lexical)}
        den_rank = {rowid: (i + 1, s) for i, (rowid, s) in enumerate(dense)}
        weights = [cfg.lexical_weight, cfg.dense_weight]
        if cfg.fusion == "rrf":
            parts = rrf_contributions([[r for r, _ in lexical], [r for r, _ in dense]], weights, cfg.rrf_k)
        else:
            # a short list ran out of candidates: what it did not find scores 0
            parts = relative_contributions([lexical, dense], weights, cfg.fusion_scale, cfg.pool, (0.0, 0.0))
        if not parts:
            return []
        # (a tombstone never answers: a cache read just before an erasure may still name it)
        recs = {r.rowid: r for r in self._es.episodes_by_rowids(list(parts)) if r.erased_at is None}
        bonus: dict[int, float] = {}
        if cfg.time_weight > 0:
            half = cfg.time_half_life_days * 86_400e6
            for rowid, rec in recs.items():
                when = rec.occurred_at if rec.occurred_at is not None else rec.recorded_at
                bonus[rowid] = cfg.time_weight * math.pow(0.5, abs(at_us - when) / half)
        times = self._es.episode_times(list(recs))
        if cfg.mention_weight > 0:
            qspans = [(to_us(m.start), to_us(m.end)) for m in
                      resolve_mentions(query, from_us(at_us).astimezone(self.tz))]
            if qspans:
                spans: dict[int, list[tuple[int, int]]] = {}
                for rowid, a, b, _p, _pr in times:
                    spans.setdefault(rowid, []).append((a, b))
                for rowid, rec in recs.items():
                    own = list(spans.get(rowid, []))
                    if rec.occurred_at is not None:
                        own.append((rec.occurred_at, rec.occurred_at + 1))
                    if any(a < qb and qa < b for a, b in own for qa, qb in qspans):
                        bonus[rowid] = bonus.get(rowid, 0.0) + cfg.mention_weight
        if cfg.when_weight > 0 and _WHEN_QUESTION.search(query):
            with_time = {t[0] for t in times}
            for rowid in with_time:
                bonus[rowid] = bonus.get(rowid, 0.0) + cfg.when_weight
        if cfg.speaker_weight > 0:
            qwords = set(query_terms(query, keep_stopwords=True))
            for rowid, rec in recs.items():
                if rec.speaker and set(query_terms(rec.speaker, keep_stopwords=True)) & qwords:
                    bonus[rowid] = bonus.get(rowid, 0.0) + cfg.speaker_weight
        base = {rowid: sum(p) + bonus.get(rowid, 0.0) for rowid, p in parts.items() if rowid in recs}
        final = group_boost(base, {rowid: recs[rowid].session for rowid in base}, cfg.session_weight,
                            cfg.session_top)
        ranked = sorted(final.items(), key=lambda x: (-x[1], x[0]))
        # facts citing the candidates, as known at `at`, for annotation and the as_world view
        cand = [rowid for rowid, _ in ranked[: max(k * 4, 40)]]
        cites: dict[str, list[str]] = {}
        for ep, fid in self._es.facts_citing_episodes(self._ns, [recs[r].id for r in cand]):
            cites.setdefault(ep, []).append(fid)
        all_ids = sorted({f for fs in cites.values() for f in fs})
        known = {f.id: f for f in self._facts_by_ids(all_ids, at_us if view != "raw" else None)}
        out_rows: list[tuple[int, float]] = []
        for rowid, score in ranked[: len(cand)]:
            rec = recs[rowid]
            if view == "as_world":
                facts = [known[fid] for fid in cites.get(rec.id, []) if fid in known]
                if facts and all(f.valid_to is not None and to_us(f.valid_to) <= at_us for f in facts):
                    continue  # every fact this evidence supports had ended by `at`
            out_rows.append((rowid, score))
            if len(out_rows) == k:
                break
        tmap: dict[int, list[tuple[int, int, int, str, int]]] = {}
        for t in times:
            tmap.setdefault(t[0], []).append(t)
        now_facts = {f.id: f for f in self._facts_by_ids(all_ids, None)}
        hits: list[Hit] = []
        for rowid, score in out_rows:
            rec = recs[rowid]
            fids = sorted(set(cites.get(rec.id, [])))
            episode = self._episode_model(rec, times=tmap.get(rowid, []), fact_ids=fids)
            notes = tuple(self._fact_note(now_facts[fid], at_us) for fid in fids if fid in now_facts)
            lr, dr = lex_rank.get(rowid), den_rank.get(rowid)
            hits.append(Hit(
                episode=episode, score=score,
                parts=ScoreParts(
                    fused=score, bm25=lr[1] if lr else None, bm25_rank=lr[0] if lr else None,
                    dense=dr[1] if dr else None, dense_rank=dr[0] if dr else None, time=bonus.get(rowid, 0.0),
                    session=score - base[rowid],
                ),
                facts=notes,
            ))
        return hits

    def _fact_note(self, fact: Fact, at_us: int) -> FactNote:
        ended = fact.valid_to is not None and to_us(fact.valid_to) <= at_us
        if not ended:
            return FactNote(fact=fact, current=True)
        by: Fact | None = None
        if fact.invalidated_by:
            got = self._facts_by_ids([fact.invalidated_by], None)
            by = got[0] if got else None
        return FactNote(fact=fact, current=False, ended_at=fact.valid_to, superseded_by=by)

    def recall(self, question: str, *, at: TimeLike | None = None, budget_tokens: int = 1500) -> Recall:
        """Everything the memory knows for ``question``, packed for a prompt:
        the entities it names (exact names and aliases; fuzzy matches are only
        listed as candidates), their facts valid at ``at`` (default now), then
        evidence from :meth:`search` in the ``as_world`` view, deduplicated
        per episode, each item with a citation id, within ``budget_tokens``."""
        from .recall import recall as _recall

        return _recall(cast("Memory", self), question, at=at, budget_tokens=budget_tokens)

    # -- maintenance -------------------------------------------------------
    def reindex(self, *, lexical: bool = True, vectors: bool = True, times: bool = False,
                progress: Callable[[int, int], None] | None = None, batch: int = 512) -> dict[str, int]:
        """Rebuild what can be rebuilt from the stored episodes: the FTS rows
        (``lexical``), missing vectors for the current embedder (``vectors``)
        and, with ``times=True``, the resolved time mentions. Each batch
        commits on its own, so an interrupted reindex resumes where it
        stopped. Returns counts per part."""
        counts = {"lexical": 0, "vectors": 0, "times": 0}
        total = self._es.episode_count(self._ns)
        if lexical or times:
            last = 0
            done = 0
            while True:
                recs = self._es.episode_index_rows(self._ns, last, batch)
                if not recs:
                    break
                with self._es.write() as tx:
                    for rec in recs:
                        if lexical:
                            prev, nxt = tx.adjacent_episodes(rec)
                            tx.replace_episode_index(rec.rowid, index_parts(rec, prev, nxt, self.tz))
                            counts["lexical"] += 1
                        if times:
                            base_us = rec.occurred_at if rec.occurred_at is not None else rec.recorded_at
                            found = resolve_mentions(rec.text, from_us(base_us).astimezone(self.tz))
                            tx.replace_episode_times(rec.rowid, [
                                (rec.rowid, to_us(m.start), to_us(m.end), m.phrase, int(m.precision)) for m in found
                            ])
                            counts["times"] += len(found)
                last = recs[-1].rowid
                done += len(recs)
                if progress is not None:
                    progress(done, total)
        emb = self.embedder if vectors else None
        if emb is not None:
            with self._es.write() as tx:
                model_id = tx.embedding_model_id(emb.name, emb.dim)
            last = 0
            while True:
                recs = self._es.episodes_missing_vectors(self._ns, model_id, last, batch)
                if not recs:
                    break
                texts = [embed_text(r.text, r.speaker, json.loads(r.metadata) if r.metadata else None) for r in recs]
                mat = emb.embed(texts, "passage")
                with self._es.write() as tx:
                    tx.put_episode_vectors(model_id, [(r.rowid, self._ns, bytes(mat[i].astype("float32").tobytes()))
                                                      for i, r in enumerate(recs)])
                    tx.bump_episode_generation()
                counts["vectors"] += len(recs)
                last = recs[-1].rowid
                if progress is not None:
                    progress(counts["vectors"], total)
        return counts

    def evidence_stats(self) -> dict[str, Any]:
        """Episode count and, per embedding model, how many episodes have vectors."""
        out: dict[str, Any] = {"episodes": self._es.episode_count(self._ns), "models": {}}
        for model_id, name, dim in self._es.embedding_models():
            count, _ = self._es.vector_stats(self._ns, model_id)
            out["models"][name] = {"dim": dim, "vectors": count}
        emb = self.embedder if getattr(self, "_embedder_set", False) else None
        out["embedder"] = emb.name if emb is not None else None
        return out


def _fact_items(facts: Iterable[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    """Check the shape of ``add_episode``'s ``facts`` before anything runs."""
    if facts is None:
        return []
    if isinstance(facts, (str, bytes, Mapping)) or not hasattr(facts, "__iter__"):
        raise InvalidInputError(f"facts must be a list of dicts, not {type(facts).__name__}")
    items = list(facts)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"facts[{index}] must be a dict with add_fact's parameter names")
        if "episode_id" in item:
            raise InvalidInputError(f"facts[{index}]: episode_id is set by add_episode to the new episode")
    return items
