"""Episodes: verbatim evidence with its three times (occurred, recorded,
mentioned), written with its index rows, vectors and citing facts in one
transaction; read, superseded, erased and reindexed."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence, cast

from ...core.ids import new_id
from ...core.index_text import METADATA_TEXT_KEYS, index_columns, metadata_text
from ...core.limits import (
    MAX_BATCH,
    MAX_EPISODE_CHARS,
    MAX_ID_CHARS,
    MAX_REASON_CHARS,
    MAX_SESSION_CHARS,
    MAX_SOURCE_CHARS,
    MAX_SPEAKER_CHARS,
    check_bool,
    check_clean,
    check_json,
    check_text,
    opt_text,
)
from ...core.models import Fact
from ...core.time import Precision, TimeLike, TimePoint, from_us, local_datetime, to_us
from ...errors import (
    ConfirmationRequiredError,
    ConflictError,
    EpisodeNotFoundError,
    InvalidInputError,
    InvalidTimeError,
    LimitExceededError,
    StoreError,
)
from ...store.protocol import EpisodeFilter, EpisodeRecord, EpisodeStore, EpisodeWriteTx, Store
from ..reads import FactReads
from ..scope import Scope
from ..unit_of_work import UnitOfWork
from .embed import ingest_session
from .embedding import Embedding
from .models import (
    Episode,
    SearchConfig,
    TimeSpan,
)
from .redact import redact
from .timemention import ambiguous_phrases, resolve_mentions
from .vector import drop_ann_files

__all__ = ["EpisodeNotFoundError", "Episodes", "episode_store", "supersede_in"]

log = logging.getLogger("chronomem.evidence")

_EMBED_BATCH = 256


#: an add_episodes() of this many items brings the dense-search caches up to date
PREPARE_BATCH = 256


class _Prepared:
    __slots__ = ("id", "text", "occurred", "recorded", "source", "session", "speaker", "metadata", "mentions",
                 "redacted")

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
        self.redacted: dict[str, int] = {}


def opt_str(value: object, name: str, limit: int = MAX_SESSION_CHARS) -> str | None:
    """An optional free text argument, checked (:func:`~chronomem.core.limits.opt_text`)."""
    return opt_text(value, name, limit)


def index_parts(rec: EpisodeRecord, prev: EpisodeRecord | None, nxt: EpisodeRecord | None,
                tz: _dt.tzinfo) -> tuple[str, str, str, str]:
    """The four FTS columns of an episode: its text, speaker, context (the
    date in words and caption-like metadata) and the text of its neighbours
    in the session (a reply often names what the turn before it asked)."""
    context: list[str] = []
    if rec.occurred_at is not None:
        d = local_datetime(rec.occurred_at, rec.occurred_prec, tz)
        context.append(f"{d.strftime('%B')} {d.year}")
    context.extend(metadata_text(json.loads(rec.metadata) if rec.metadata else {}))
    return index_columns(rec.text, rec.speaker, context, [r.text for r in (prev, nxt) if r is not None])


def embed_text(text: str, speaker: str | None, metadata: Mapping[str, Any] | None) -> str:
    """What the dense index embeds: ``speaker: text`` plus caption-like metadata."""
    out = f"{speaker}: {text}" if speaker else text
    for key in METADATA_TEXT_KEYS:
        value = (metadata or {}).get(key)
        if isinstance(value, str) and value:
            out += f" [{value}]"
    return out


class Episodes:
    """Episodes of one namespace: write, read, supersede, erase, reindex."""

    def __init__(self, scope: Scope, reads: FactReads, embedding: Embedding) -> None:
        self._scope = scope
        self._reads = reads
        self._embedding = embedding

    @property
    def _es(self) -> EpisodeStore:
        return episode_store(self._scope.store)

    def _prepare(self, text: object, occurred_at: TimeLike | None, recorded_at: TimeLike | None,
                 source: object, session: object, speaker: object, metadata: object,
                 keep_secrets: bool = False) -> _Prepared:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("episode text must be a non-empty string")
        if len(text) > MAX_EPISODE_CHARS:
            raise LimitExceededError("episode text", MAX_EPISODE_CHARS, len(text))
        check_clean(text, "episode text")  # NUL and lone surrogates are refused, not escaped (docs/limits.md)
        counts: dict[str, int] = {}
        if not keep_secrets:  # at the door: no secret reaches the table, the FTS index or an embedder
            text, counts = redact(text)
            if len(text) > MAX_EPISODE_CHARS:  # a marker can be longer than a short password
                raise LimitExceededError("episode text (redacted)", MAX_EPISODE_CHARS, len(text))
            if counts and (metadata is None or isinstance(metadata, Mapping)):
                metadata = {**(metadata or {}), "redacted": counts}
        meta_json: str | None = None
        if metadata is not None:
            meta_json = check_json(metadata, "metadata") if metadata or not isinstance(metadata, Mapping) else None
        occurred = self._scope.parse_time(occurred_at, "occurred_at") if occurred_at is not None else None
        recorded = self._scope.parse_time(recorded_at, "recorded_at") if recorded_at is not None else None
        prep = _Prepared(text, occurred, recorded, opt_str(source, "source", MAX_SOURCE_CHARS),
                         opt_str(session, "session", MAX_SESSION_CHARS),
                         opt_str(speaker, "speaker", MAX_SPEAKER_CHARS), meta_json)
        prep.redacted = counts
        base_us = occurred.us if occurred is not None else recorded.us if recorded is not None else self._scope.now_us()
        said = occurred if occurred is not None else recorded  # a calendar day is that day in the memory's zone
        base = local_datetime(base_us, said.precision if said is not None else None, self._scope.tz)
        prep.mentions = [
            (to_us(a), to_us(b), m.phrase, int(m.precision)) for m in resolve_mentions(text, base) for a, b in m.spans()
        ]  # an ambiguous phrase: one row per candidate (timemention module docstring)
        return prep

    def _embed_prepared(self, preps: Sequence[_Prepared],
                        progress: Callable[[int, int], None] | None = None) -> list[bytes] | None:
        emb = self._embedding.current
        if emb is None:
            return None
        out: list[bytes] = []
        # one passage session (all cores) for the whole batch, released after it
        with ingest_session(emb):
            for start in range(0, len(preps), _EMBED_BATCH):
                chunk = preps[start:start + _EMBED_BATCH]
                texts = [embed_text(p.text, p.speaker, json.loads(p.metadata) if p.metadata else None) for p in chunk]
                mat = emb.embed(texts, "passage")
                out.extend(bytes(row.astype("float32").tobytes()) for row in mat)
                if progress is not None:
                    progress(min(start + _EMBED_BATCH, len(preps)), len(preps))
        return out

    def _write_prepared(self, preps: Sequence[_Prepared], vectors: list[bytes] | None,
                        facts: Sequence[Mapping[str, Any]] = (),
                        after: Callable[[EpisodeWriteTx, list[EpisodeRecord]], None] | None = None,
                        ) -> list[EpisodeRecord]:
        emb = self._embedding.current
        recs: list[EpisodeRecord] = []
        writer = self._scope.recorded_by()  # once per transaction, as the unit of work decides it
        with self._es.write() as tx:
            model_id = tx.embedding_model_id(emb.name, emb.dim) if (emb is not None and vectors is not None) else None
            vec_items: list[tuple[int, int, bytes]] = []
            times: list[tuple[int, int, int, str, int]] = []
            for i, p in enumerate(preps):
                recorded = p.recorded.us if p.recorded is not None else tx.now
                rec = EpisodeRecord(
                    0, p.id, self._scope.ns_id, p.text, p.occurred.us if p.occurred else None,
                    int(p.occurred.precision) if p.occurred else None, recorded, p.source, p.session, p.speaker,
                    p.metadata, recorded_by=writer,
                )
                rowid = tx.insert_episode(rec)
                recs.append(dataclasses.replace(rec, rowid=rowid))
                times.extend((rowid, a, b, phrase, prec) for a, b, phrase, prec in p.mentions)
                if vectors is not None and model_id is not None:
                    vec_items.append((rowid, self._scope.ns_id, vectors[i]))
            self._index_new(tx, recs)
            if times:
                tx.insert_episode_times(times)
            if vec_items and model_id is not None:
                tx.put_episode_vectors(model_id, vec_items)
            tx.bump_episode_generation()
            if facts:
                self._write_episode_facts(tx, preps[0], facts)
            if after is not None:
                after(tx, recs)
        return recs

    def _write_episode_facts(self, tx: EpisodeWriteTx, prep: _Prepared, facts: Sequence[Mapping[str, Any]]) -> None:
        """Place facts citing ``prep`` inside the episode's own transaction."""
        uow = UnitOfWork(self._scope, tx)
        work, builder = uow.work, uow.builder
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
        uow.flush()

    def _index_new(self, tx: EpisodeWriteTx, recs: Sequence[EpisodeRecord]) -> None:
        """FTS rows for new episodes, and fresh ones for the stored episodes
        that just got a new neighbour."""
        batch = {r.rowid for r in recs}
        touched: dict[int, EpisodeRecord] = {}
        for rec in recs:
            prev, nxt = tx.adjacent_episodes(rec)
            tx.replace_episode_index(rec.rowid, index_parts(rec, prev, nxt, self._scope.tz), new=True)
            for other in (prev, nxt):
                if other is not None and other.rowid not in batch:
                    touched[other.rowid] = other
        self._reindex_rows(tx, touched.values())

    def _reindex_rows(self, tx: EpisodeWriteTx, recs: Iterable[EpisodeRecord]) -> None:
        """Fresh FTS rows for stored episodes whose neighbours changed."""
        for other in recs:
            prev, nxt = tx.adjacent_episodes(other)
            tx.replace_episode_index(other.rowid, index_parts(other, prev, nxt, self._scope.tz))

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
        keep_secrets: bool = False,
    ) -> Episode:
        """Store one piece of evidence verbatim and index it (lexical and
        dense) in the same transaction. ``occurred_at`` is when it was said or
        happened; ``recorded_at`` defaults to the store clock. Time
        expressions in the text are resolved against ``occurred_at``.
        ``facts`` are dicts with :meth:`add_fact`'s parameter names, recorded
        in the same transaction, each citing this episode (their ``source``
        defaults to the episode's): if the episode or any fact is invalid,
        nothing is written. Secrets in the text (API keys, tokens, private
        keys, ``password=`` values) are replaced by ``[REDACTED:<kind>]``
        before anything is stored, their count by kind in
        ``metadata["redacted"]``; ``keep_secrets=True`` stores the text as
        given (``docs/evidence.md``, "Secrets"). Returns the episode; its id
        sorts by creation time."""
        keep = bool(check_bool(keep_secrets, "keep_secrets"))
        prep = self._prepare(text, occurred_at, recorded_at, source, session, speaker, metadata, keep)
        self._check_recorded([prep], indexed=False)
        fact_items = _fact_items(facts)
        vectors = self._embed_prepared([prep])
        rec = self._write_prepared([prep], vectors, fact_items)[0]
        return self.model(rec, with_facts=bool(fact_items))

    def add_episodes(self, items: Iterable[Mapping[str, Any] | str], *,
                     progress: Callable[[int, int], None] | None = None, keep_secrets: bool = False,
                     on_redact: Callable[[int, Mapping[str, int]], None] | None = None) -> list[str]:
        """Add many episodes atomically (one transaction; embeddings batched).
        Items are strings or dicts with :meth:`add_episode`'s parameter names.
        If any item is invalid nothing is written and the error names its
        index. ``progress(done, total)`` is called as embedding advances.
        Secrets are redacted as in :meth:`add_episode` (``keep_secrets``);
        once the batch is stored, ``on_redact(index, counts_by_kind)`` is
        called for each item that had any. Returns the new ids in order."""
        keep = bool(check_bool(keep_secrets, "keep_secrets"))
        if isinstance(items, (str, bytes, Mapping)) or not hasattr(items, "__iter__"):
            raise InvalidInputError(f"add_episodes() needs a list of episodes, not {type(items).__name__}")
        preps: list[_Prepared] = []
        keys = {"text", "occurred_at", "recorded_at", "source", "session", "speaker", "metadata"}
        for index, item in enumerate(items):
            if index == MAX_BATCH:
                raise LimitExceededError("add_episodes() items", MAX_BATCH, None, unit="items")
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
                                           item.get("metadata"), keep))
            except InvalidInputError as exc:
                exc.args = (f"item {index}: {exc}",)
                raise
        if not preps:
            return []
        self._check_recorded(preps, indexed=True)
        vectors = self._embed_prepared(preps, progress)
        ids = [r.id for r in self._write_prepared(preps, vectors)]
        path = self._scope.store.capabilities.local_path
        if vectors is not None and len(preps) >= PREPARE_BATCH and path and path != ":memory:":
            # a bulk load: extend the mapped vector file (and the ANN index) now, so
            # the next cold search opens them current (docs/evidence.md, "At scale")
            cfg = SearchConfig()
            self._embedding.prepare(self._es, self._scope.ns_id, path, cfg.ann_threshold, cfg.dense_context,
                                    complete=False)
        if on_redact is not None:
            for index, prep in enumerate(preps):
                if prep.redacted:
                    on_redact(index, dict(prep.redacted))
        return ids

    def write_batch(self, items: Sequence[Mapping[str, Any]], *, keep_secrets: bool = False,
                    after: Callable[[EpisodeWriteTx, list[EpisodeRecord | None]], None] | None = None,
                    progress: Callable[[int, int], None] | None = None,
                    ) -> tuple[list[EpisodeRecord | None], dict[int, InvalidInputError], dict[int, dict[str, int]]]:
        """The importer's write: unlike :meth:`add_episodes`, each item (a
        dict of :meth:`add_episode`'s parameter names) is checked on its own
        and an invalid one is left out and reported, not raised; the valid
        ones are embedded and written in one transaction, inside which
        ``after(tx, records)`` runs with the record per item (``None`` where
        invalid), so the import keys commit with their episodes. Returns the
        records, the errors by index and the redaction counts by index."""
        preps: list[_Prepared] = []
        where: list[int] = []
        errors: dict[int, InvalidInputError] = {}
        for index, item in enumerate(items):
            try:
                prep = self._prepare(item.get("text"), item.get("occurred_at"), item.get("recorded_at"),
                                     item.get("source"), item.get("session"), item.get("speaker"),
                                     item.get("metadata"), keep_secrets)
                self._check_recorded([prep], indexed=False)
            except InvalidInputError as exc:
                errors[index] = exc
                continue
            preps.append(prep)
            where.append(index)
        out: list[EpisodeRecord | None] = [None] * len(items)

        def aligned(tx: EpisodeWriteTx, recs: list[EpisodeRecord]) -> None:
            for index, rec in zip(where, recs, strict=True):
                out[index] = rec
            if after is not None:
                after(tx, out)

        if preps:
            self._write_prepared(preps, self._embed_prepared(preps, progress), after=aligned)
        elif after is not None:
            with self._es.write() as tx:
                after(tx, out)
        redacted = {where[i]: dict(p.redacted) for i, p in enumerate(preps) if p.redacted}
        return out, errors, redacted

    def _check_recorded(self, preps: Sequence[_Prepared], *, indexed: bool) -> None:
        """A memory cannot have stored anything in its future: a given
        ``recorded_at`` must not be later than the store's time
        (:meth:`Scope.store_now`; the write's own system time is never
        earlier). Checked once per call, before anything is embedded."""
        given = [(i, p.recorded.us) for i, p in enumerate(preps) if p.recorded is not None]
        if not given:
            return
        latest = to_us(self._scope.store_now())
        for i, us in given:
            if us > latest:
                exc = InvalidTimeError(preps[i].recorded, "recorded_at",
                                       f"later than the store's time {from_us(latest).isoformat()}: "
                                       "an episode cannot be recorded in the future")
                if indexed:
                    exc.args = (f"item {i}: {exc}",)
                raise exc

    def _require(self, episode_id: object) -> EpisodeRecord:
        if not isinstance(episode_id, str) or not episode_id.strip():
            raise InvalidInputError("an episode id must be a non-empty string")
        check_text(episode_id, "episode id", MAX_ID_CHARS)
        rec = self._es.episode_by_id(episode_id.strip())
        if rec is None or rec.ns_id != self._scope.ns_id:
            raise EpisodeNotFoundError(f"no episode with id {episode_id!r} in namespace {self._scope.namespace!r}")
        return rec

    def supersede_episode(self, old_id: str, new_id: str) -> Episode:
        """Mark ``old_id`` as overridden by the later episode ``new_id`` (a
        meeting moved from the 10th to the 12th). The supersession takes
        effect in valid time when ``new_id`` was said (its ``occurred_at``,
        else its ``recorded_at``): from then on the ``as_world`` view no
        longer returns ``old_id``, in reads as known at or after the time
        the supersession is recorded (now, or ``new_id``'s ``recorded_at``
        if that is later). Returns the old episode."""
        old = self._require(old_id)
        new = self._require(new_id)
        if old.id == new.id:
            raise InvalidInputError("an episode cannot supersede itself")
        if old.erased_at is not None or new.erased_at is not None:
            raise ConflictError("an erased episode cannot take part in a supersession")
        if old.superseded_by is not None:
            raise ConflictError(f"episode {old.id} is already superseded by {old.superseded_by}")
        with self._es.write() as tx:
            supersede_in(tx, old, new)
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
        rec = self._require(episode_id)
        reason = opt_text(reason, "reason", MAX_REASON_CHARS)
        if not check_bool(confirm, "confirm"):  # confirm="no" must not erase
            raise ConfirmationRequiredError("erase_episode() deletes evidence permanently; call it with confirm=True")
        if rec.erased_at is not None:
            raise ConflictError(f"episode {rec.id} is already erased")
        retracted: list[str] = []
        with self._es.write() as tx:
            if facts == "retract":
                uow = UnitOfWork(self._scope, tx)
                work = uow.work
                for fid in tx.episode_fact_ids(rec.id):
                    rows = tx.rows_of_fact(fid)
                    if not rows or rows[0].ns_id != self._scope.ns_id:
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
                    uow.unsupersede(fid)
                    retracted.append(fid)
                uow.flush()
            # the neighbours' index rows quote its text: index them again, now
            # next to each other (as a new turn re-indexes its neighbours)
            self._reindex_rows(tx, tx.erase_episode(rec.rowid))
            tx.forget_import_digests(rec.id)  # a re-import skips it, and no hash of its text stays
            tx.compact_episode_index()
            tx.log_erasure(self._scope.ns_id, "episode", 1, reason)
            tx.bump_episode_generation()
        # this process's vector caches and the ANN files hold its vector (and
        # context vectors that mix it in): drop them now, not at the next search
        self._embedding.forget_vectors()
        drop_ann_files(self._scope.store.capabilities.local_path, self._scope.ns_id)
        self._es.after_erasure("episode")
        return retracted

    # -- reads -------------------------------------------------------------
    def model(self, rec: EpisodeRecord, *, with_facts: bool = True,
                       times: Sequence[tuple[int, int, int, str, int]] | None = None,
                       fact_ids: Sequence[str] | None = None) -> Episode:
        if times is None:
            times = self._es.episode_times([rec.rowid])
        if fact_ids is None:
            cites = self._es.facts_citing_episodes(self._scope.ns_id, [rec.id]) if with_facts else []
            fact_ids = sorted({f for _e, f in cites})
        tz = self._scope.tz
        unsure = ambiguous_phrases((phrase, a, b) for _r, a, b, phrase, _p in times)
        return Episode(
            id=rec.id, text=rec.text,
            occurred_at=from_us(rec.occurred_at) if rec.occurred_at is not None else None,
            recorded_at=from_us(rec.recorded_at), source=rec.source, session=rec.session, speaker=rec.speaker,
            metadata=json.loads(rec.metadata) if rec.metadata else {},
            mentions=tuple(
                TimeSpan(phrase, from_us(a).astimezone(tz), from_us(b).astimezone(tz), Precision(p),
                         certain=phrase not in unsure)
                for _r, a, b, phrase, p in times
            ),
            fact_ids=tuple(fact_ids),
            superseded_by=rec.superseded_by,
            superseded_at=from_us(rec.superseded_at) if rec.superseded_at is not None else None,
            erased_at=from_us(rec.erased_at) if rec.erased_at is not None else None,
            namespace=self._scope.namespace,
            occurred_precision=Precision(rec.occurred_prec) if rec.occurred_prec is not None else None,
            superseded_recorded_at=(from_us(rec.superseded_recorded_at)
                                    if rec.superseded_recorded_at is not None else None),
            recorded_by=rec.recorded_by,
        )

    def episode(self, episode_id: str) -> Episode:
        """One episode by id, with its time mentions and the ids of the facts citing it."""
        return self.model(self._require(episode_id))

    def episode_facts(self, episode_id: str) -> list[Fact]:
        """The facts citing an episode (believed now, all of valid time), in
        the order they were first recorded (fact ids sort by creation)."""
        rec = self._require(episode_id)
        ids = sorted({f for _e, f in self._es.facts_citing_episodes(self._scope.ns_id, [rec.id])})
        return sorted(self._reads.by_ids(ids, None), key=lambda f: f.id)

    def episodes(self, *, session: str | None = None, since: TimeLike | None = None,
                 until: TimeLike | None = None, limit: int = 100, offset: int = 0) -> list[Episode]:
        """Episodes in time order (``occurred_at``, else ``recorded_at``)."""
        for name, value in (("limit", limit), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{name} must be a non-negative integer, not {value!r}")
        f = EpisodeFilter(
            self._scope.ns_id, session=opt_str(session, "session"),
            since=self._scope.read_time(since, "since").us if since is not None else None,
            until=self._scope.read_time(until, "until").us if until is not None else None,
        )
        recs = self._es.list_episodes(f, limit, offset)
        return self._hydrate(recs)

    def _hydrate(self, recs: Sequence[EpisodeRecord]) -> list[Episode]:
        times: dict[int, list[tuple[int, int, int, str, int]]] = {}
        for t in self._es.episode_times([r.rowid for r in recs]):
            times.setdefault(t[0], []).append(t)
        cites: dict[str, list[str]] = {}
        for ep, fid in self._es.facts_citing_episodes(self._scope.ns_id, [r.id for r in recs]):
            cites.setdefault(ep, []).append(fid)
        return [self.model(r, times=times.get(r.rowid, []), fact_ids=sorted(set(cites.get(r.id, []))))
                for r in recs]

    # -- maintenance -------------------------------------------------------
    def reindex(self, *, lexical: bool = True, vectors: bool = True, times: bool = False,
                progress: Callable[[int, int], None] | None = None, batch: int = 512) -> dict[str, int]:
        """Rebuild what can be rebuilt from the stored episodes: the FTS rows
        (``lexical``), missing vectors for the current embedder (``vectors``)
        and, with ``times=True``, the resolved time mentions. Each batch
        commits on its own, so an interrupted reindex resumes where it
        stopped. Returns counts per part."""
        counts = {"lexical": 0, "vectors": 0, "times": 0}
        ns = self._scope.ns_id
        total = self._es.episode_count(ns)
        if lexical or times:
            last = 0
            done = 0
            while True:
                recs = self._es.episode_index_rows(self._scope.ns_id, last, batch)
                if not recs:
                    break
                with self._es.write() as tx:
                    for rec in recs:
                        if lexical:
                            prev, nxt = tx.adjacent_episodes(rec)
                            tx.replace_episode_index(rec.rowid, index_parts(rec, prev, nxt, self._scope.tz))
                            counts["lexical"] += 1
                        if times:
                            base_us = rec.occurred_at if rec.occurred_at is not None else rec.recorded_at
                            found = resolve_mentions(rec.text, local_datetime(
                                base_us, rec.occurred_prec if rec.occurred_at is not None else None, self._scope.tz))
                            tx.replace_episode_times(rec.rowid, [
                                (rec.rowid, to_us(a), to_us(b), m.phrase, int(m.precision))
                                for m in found for a, b in m.spans()
                            ])
                            counts["times"] += len(found)
                last = recs[-1].rowid
                done += len(recs)
                if progress is not None:
                    progress(done, total)
        emb = self._embedding.current if vectors else None
        if emb is not None:
            with self._es.write() as tx:
                model_id = tx.embedding_model_id(emb.name, emb.dim)
            last = 0
            with ingest_session(emb):  # the passage session lives until the last batch is written
                while True:
                    recs = self._es.episodes_missing_vectors(self._scope.ns_id, model_id, last, batch)
                    if not recs:
                        break
                    texts = [embed_text(r.text, r.speaker, json.loads(r.metadata) if r.metadata else None)
                             for r in recs]
                    mat = emb.embed(texts, "passage")
                    with self._es.write() as tx:
                        tx.put_episode_vectors(model_id, [(r.rowid, ns, bytes(mat[i].astype("float32").tobytes()))
                                                          for i, r in enumerate(recs)])
                        tx.bump_episode_generation()
                    counts["vectors"] += len(recs)
                    last = recs[-1].rowid
                    if progress is not None:
                        progress(counts["vectors"], total)
        return counts

    def evidence_stats(self) -> dict[str, Any]:
        """Episode count and, per embedding model, how many episodes have vectors."""
        out: dict[str, Any] = {"episodes": self._es.episode_count(self._scope.ns_id), "models": {}}
        for model_id, name, dim in self._es.embedding_models():
            count, _ = self._es.vector_stats(self._scope.ns_id, model_id)
            out["models"][name] = {"dim": dim, "vectors": count}
        emb = self._embedding.loaded
        out["embedder"] = emb.name if emb is not None else None
        return out


def supersede_in(tx: EpisodeWriteTx, old: EpisodeRecord, new: EpisodeRecord) -> None:
    """Record in ``tx`` that ``new`` overrides ``old``: from when ``new`` was
    said (its ``occurred_at``, else its ``recorded_at``), recorded now or at
    the later ``recorded_at`` of the two, never before either episode was (a
    read as known at K that applies it also sees the episode that overrides)."""
    takes_effect = new.occurred_at if new.occurred_at is not None else new.recorded_at
    tx.supersede_episode(old.rowid, new.id, takes_effect, max(tx.now, new.recorded_at, old.recorded_at))


def episode_store(store: Store) -> EpisodeStore:
    """``store`` as an episode store (raises :class:`StoreError` if its backend keeps none)."""
    if not store.capabilities.episodes:
        raise StoreError(f"the {type(store).__name__} backend does not store episodes yet")
    return cast(EpisodeStore, store)


def _fact_items(facts: Iterable[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    """Check the shape of ``add_episode``'s ``facts`` before anything runs."""
    if facts is None:
        return []
    if isinstance(facts, (str, bytes, Mapping)) or not hasattr(facts, "__iter__"):
        raise InvalidInputError(f"facts must be a list of dicts, not {type(facts).__name__}")
    items = list(facts)
    if len(items) > MAX_BATCH:
        raise LimitExceededError("facts", MAX_BATCH, len(items), unit="items")
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"facts[{index}] must be a dict with add_fact's parameter names")
        if "episode_id" in item:
            raise InvalidInputError(f"facts[{index}]: episode_id is set by add_episode to the new episode")
    return items
