"""The storage protocol. Everything backend-specific lives under ``store/``.

The services (:mod:`chronomem.service`) work on :class:`~chronomem.core.version.Row`
objects — one row per system-time version of a fact, times as integer UTC
microseconds with the ``MIN_US`` / ``MAX_US`` sentinels — and on the small set
of primitives below; they learn what a backend can do from its
:class:`Capabilities`, never by probing it.
A backend implements :class:`Store` and :class:`WriteTx`; the contract test
suite runs unchanged against each implementation.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, NamedTuple, Protocol, Sequence

from ..core.time import Clock
from ..core.version import ObjKey, Row

__all__ = ["STALE_READS", "Capabilities", "EntityRecord", "FactQuery", "FACT_COLUMNS", "KEY_COLUMNS",
           "KEY_OBJECT_COLUMNS", "PooledEpisode", "PredicateRecord",
           "READ_COLUMNS", "Row", "Store", "StoreHealth", "TokenRecord", "WriteTx", "ObjKey"]

# Column order shared by every backend for fact rows.
FACT_COLUMNS = (
    "rowid", "fact_id", "version", "ns_id", "subject_id", "predicate_id", "object_id",
    "object_lit", "valid_from", "valid_from_prec", "valid_to", "valid_to_prec",
    "system_from", "system_to", "confidence", "source", "episode_id", "properties",
    "invalidated_by", "close_kind", "closed_by", "end_kind", "end_reason", "stated_to", "stated_to_prec",
    "recorded_by",
)


# Column order of the read path (``Store.query_tuples``): no names, no joins;
# ``rowid`` last (reads are ordered by ``valid_from, rowid``).
READ_COLUMNS = (
    "fact_id", "version", "subject_id", "predicate_id", "object_id", "object_lit",
    "valid_from", "valid_from_prec", "valid_to", "valid_to_prec", "system_from", "system_to",
    "confidence", "source", "episode_id", "properties", "invalidated_by", "close_kind", "closed_by",
    "end_kind", "end_reason", "recorded_by", "rowid",
)


# Column order of a ``FactQuery.keys_only`` read: what orders a timeline or an entity's bars.
KEY_COLUMNS = (
    "fact_id", "version", "valid_from", "valid_to", "system_from", "system_to", "invalidated_by", "close_kind",
    "end_kind", "subject_id", "predicate_id",
)
# Column order of a ``keys_only`` read with ``key_objects``: what tells objects
# apart and orders rows as a read does (conflicts and diffs compare on these;
# ``rowid`` names the version: read it back with ``FactQuery.rowids``).
KEY_OBJECT_COLUMNS = (
    "rowid", "valid_from", "valid_to", "subject_id", "predicate_id", "object_id", "object_lit",
)


@dataclass(frozen=True)
class EntityRecord:
    id: int
    ns_id: int
    key: str
    name: str
    type: str | None
    properties: str | None
    created_at: int
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class PredicateRecord:
    id: int
    ns_id: int
    key: str
    name: str
    cardinality: str
    inverse: str | None
    description: str | None
    declared: bool
    aliases: tuple[str, ...] = ()


@dataclass(slots=True)
class FactQuery:
    """A read of fact versions. ``known_at=None`` means "as currently believed".
    Treat it as immutable; it is not ``frozen`` only because a frozen
    dataclass's ``__init__`` costs a microsecond more on every read."""

    ns_id: int
    subject_ids: Sequence[int] | None = None
    object_id: int | None = None
    object_lit: str | None = None
    direction: Literal["out", "in", "both"] = "out"
    as_of: int | None = None
    known_at: int | None = None
    all_versions: bool = False
    overlap: tuple[int, int] | None = None
    fact_ids: Sequence[str] | None = None
    limit: int | None = None
    # a name key instead of ids: the read resolves it itself (``entity_keys``
    # / ``predicate_keys`` in ``ns_id``), in the snapshot of the facts it
    # reads, so it needs no name cache that another process could have made
    # stale. Not together with ``subject_ids``.
    subject_key: str | None = None
    predicate_key: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # only facts whose valid interval had ended by this time (``valid_to <= ended_by``)
    ended_by: int | None = None
    # only versions recorded by this writer (``recorded_by``, exact name)
    recorded_by: str | None = None
    # only facts whose object is one of these entity ids or one of these
    # encoded literals (``(ids, literals)``; with ``direction="out"``)
    object_in: tuple[Sequence[int], Sequence[str]] | None = None
    # only ``KEY_COLUMNS`` (no ORDER BY unless LIMITed): an analysis that
    # orders every version itself reads this much, then a page's full rows
    keys_only: bool = False
    # with ``keys_only``: ``KEY_OBJECT_COLUMNS`` instead of ``KEY_COLUMNS``
    key_objects: bool = False
    # only these versions (their ``rowid``s, from a ``key_objects`` read)
    rowids: Sequence[int] | None = None
    # only facts whose object is an entity (no literal): a graph's edges
    entity_objects: bool = False
    # skip this many rows of a LIMITed read, in the store (a deep page's narrow walk)
    offset: int = 0


@dataclass(frozen=True)
class EpisodeRecord:
    """One stored episode (evidence). ``rowid`` is the backend's integer key."""

    rowid: int
    id: str
    ns_id: int
    text: str
    occurred_at: int | None
    occurred_prec: int | None
    recorded_at: int
    source: str | None
    session: str | None
    speaker: str | None
    metadata: str | None
    # the supersession: the episode that overrides this one, when that takes
    # effect in valid time (the superseding episode's
    # ``coalesce(occurred_at, recorded_at)``) and when it was recorded (system time)
    superseded_by: str | None = None
    superseded_at: int | None = None
    erased_at: int | None = None
    superseded_recorded_at: int | None = None
    # who wrote it (the writer's name; None: not recorded, before schema 10).
    # Not EpisodeFilter.recorded_by, which bounds recorded_at
    recorded_by: str | None = None


class PooledEpisode(NamedTuple):
    """The columns of an episode a search ranks its pool by
    (:meth:`EpisodeStore.pooled_episodes`): a tuple, cheap to make for the
    pool's hundreds of rows."""

    rowid: int
    id: str
    text: str
    occurred_at: int | None
    recorded_at: int
    session: str | None
    speaker: str | None
    metadata: str | None


@dataclass(frozen=True)
class TokenRecord:
    """One stored access token (migration 0011): never the token itself, only
    its SHA-256 (hex); ``scopes`` and ``namespaces`` are JSON arrays of
    strings; times are UTC microseconds (``None``: never / no expiry / live)."""

    id: int
    name: str
    token_hash: str
    scopes: str
    namespaces: str
    created_at: int
    last_used_at: int | None
    expires_at: int | None
    revoked_at: int | None


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes a search may return (a view plus the caller's filters).

    ``recorded_by``: ``recorded_at`` at or before (system time);
    ``occurred_by``: ``coalesce(occurred_at, recorded_at)`` at or before
    (valid time); ``not_superseded_at``: drop the episodes whose supersession
    took effect (``superseded_at``) at or before that instant, counting only
    the supersessions recorded by ``supersessions_recorded_by`` when it is
    set; ``since`` / ``until``: ``coalesce(occurred_at, recorded_at)`` in
    ``[since, until)``.
    """

    ns_id: int
    recorded_by: int | None = None
    not_superseded_at: int | None = None
    session: str | None = None
    since: int | None = None
    until: int | None = None
    occurred_by: int | None = None
    supersessions_recorded_by: int | None = None


@dataclass(frozen=True)
class Capabilities:
    """What a store can do beyond :class:`Store`, declared by its backend.

    Code outside ``store/`` asks these instead of probing a store or a
    transaction for methods, or asking which backend it is.
    """

    # it is an :class:`EpisodeStore` (evidence memory) and its ``write()``
    # yields an :class:`EpisodeWriteTx`
    episodes: bool
    # it has ``entity_names_with_prefix`` (else callers scan with
    # ``entities_by_key_substring``)
    entity_prefix_search: bool
    # the local file the store lives in, for caches kept beside it (the ANN
    # index files); ``None`` for an in-memory or a server store
    local_path: str | None = None
    # it can be opened with ``read_replica=`` (a streaming standby that
    # answers the reads allowed there: ``docs/postgres.md``, "Read replica")
    read_replica: bool = False
    # ``add_facts`` may hand its transaction's work to the store in parts
    # (chronomem.service.facts.FLUSH_ROWS), so a huge batch's memory stays flat
    # (both backends; False for a store whose transaction needs the whole batch)
    flush_in_parts: bool = False


#: Whether the reads of the current thread or task accept a stale answer
#: (:meth:`chronomem.Memory.stale_reads`): a store with a read replica may
#: then answer them there, whatever the replica has replayed. A context
#: variable, so one request of a server opting in leaves the others alone.
STALE_READS: ContextVar[bool] = ContextVar("chronomem_stale_reads", default=False)


@dataclass(frozen=True)
class StoreHealth:
    """What :meth:`EpisodeStore.health` finds in the store's own structures
    (rows the services cannot see through the other reads)."""

    # the backend's own consistency check (SQLite ``integrity_check`` and
    # ``foreign_key_check``): its complaints; ``None`` where there is none
    integrity: tuple[str, ...] | None
    schema_version: int  # the last migration applied
    latest_schema: int  # the last migration this code knows
    # live episodes of the namespace without a lexical index row (rowids)
    lexical_missing: tuple[int, ...]
    # lexical index rows whose episode is erased or gone, any namespace
    lexical_orphans: tuple[int, ...]
    # (model name, episode rowid): vectors whose episode is erased, gone or
    # of another namespace than the vector says, any namespace
    vector_orphans: tuple[tuple[str, int], ...]
    # (model name, episode rowid): vectors of the namespace whose length is not the model's
    vector_bad_dim: tuple[tuple[str, int], ...]
    # a backend that keeps each namespace's BM25 statistics (SQLite): the
    # namespace's (rows, tokens) as kept and as counted from the index, when
    # they differ (its ranking drifts); ``None`` when they agree or none are kept
    lexical_counts: tuple[tuple[int, int], tuple[int, int]] | None = None


class WriteTx(Protocol):
    """Primitives available inside one atomic write transaction."""

    now: int

    # the store's capabilities (``Store.capabilities``)
    @property
    def capabilities(self) -> Capabilities: ...

    # shared writes (Store.write(shared=True)): lock the names the transaction
    # may create and the (subject, predicate) groups it writes, before reading
    # them; lock_groups also takes the transaction's final system time (now).
    # lock_groups is False when names the caller read from the name cache
    # before the transaction began may be stale (the store's names changed
    # meanwhile): resolve them again and lock again, once
    def reserve_names(self, ns_id: int, entities: Sequence[object], predicates: Sequence[object]) -> None: ...
    def lock_groups(self, groups: Sequence[tuple[int, int]]) -> bool: ...

    # entities and names
    def entity_id(self, ns_id: int, key: str) -> int | None: ...
    def create_entity(self, ns_id: int, key: str, name: str, type: str | None, properties: str | None) -> int: ...
    def update_entity(self, entity_id: int, type: str | None, properties: str | None) -> None: ...
    def add_entity_key(self, ns_id: int, key: str, entity_id: int, alias_name: str | None) -> None: ...
    def move_entity_keys(self, from_id: int, to_id: int) -> list[str]: ...
    def set_entity_keys(self, ns_id: int, keys: Sequence[str], entity_id: int) -> None: ...
    def is_new_entity(self, entity_id: int) -> bool: ...
    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None: ...
    def create_predicate(self, ns_id: int, key: str, name: str) -> PredicateRecord: ...
    def define_predicate(self, ns_id: int, key: str, name: str, cardinality: str, inverse: str | None,
                         description: str | None, aliases: Sequence[tuple[str, str]]) -> PredicateRecord: ...

    # fact versions
    # a part of add_facts begins: the groups whose believed versions it will ask
    # for next, those the store may hold (a store may read them in one query;
    # what earlier parts wrote is in the store now)
    def prefetch_believed(self, groups: Sequence[tuple[int, int]]) -> None: ...
    def believed_rows(self, subject_id: int, predicate_id: int) -> list[Row]: ...
    def rows_of_fact(self, fact_id: str) -> list[Row]: ...
    def existing_fact_ids(self, fact_ids: Sequence[str]) -> set[str]: ...
    def rows_closed_by(self, ns_id: int, closed_by: str) -> list[Row]: ...
    def believed_rows_touching_entity(self, entity_id: int) -> list[Row]: ...
    def insert_rows(self, rows: Sequence[Row]) -> None: ...
    def close_rows(self, closes: Sequence[tuple[int, str, str | None]]) -> None: ...
    # versions this transaction stored at an earlier flush and replaced since
    # (``TxWork.deletes``): no one ever believed them, so they go, not close
    def delete_rows(self, rowids: Sequence[int]) -> None: ...
    # versions an earlier flush of this transaction closed, believed again
    # (``TxWork.reopens``: the versions that replaced them said the same)
    def reopen_rows(self, rowids: Sequence[int]) -> None: ...
    def add_sources(self, items: Sequence[tuple[str, str | None, str | None]]) -> None: ...
    # raw restore (JSONL import): rows keep their original system times
    def insert_entity(self, ns_id: int, key: str, name: str, type: str | None, properties: str | None,
                      created_at: int) -> int: ...
    def insert_sources(self, items: Sequence[tuple[str, str | None, str | None, int]]) -> None: ...
    def note_system_time(self, us: int) -> None: ...
    def record_operation(self, op_id: str, ns_id: int, kind: str, payload: str) -> None: ...
    def operation(self, op_id: str) -> tuple[str, str, int | None] | None: ...
    def mark_operation_undone(self, op_id: str) -> None: ...
    # raw restore of an operation (JSONL import, copy): its original times, ids already mapped
    def insert_operation(self, op_id: str, ns_id: int, kind: str, at: int, payload: str,
                         undone_at: int | None) -> None: ...
    def coalesced_family(self, fact_id: str) -> list[str]: ...
    def erase_fact(self, fact_id: str) -> int: ...
    def erase_entity(self, entity_id: int) -> int: ...
    def log_erasure(self, ns_id: int, kind: str, versions: int, reason: str | None) -> None: ...
    # access tokens (store-wide): the row of a name; a new row (its id); revoke
    # a live one (False: none live by that name); last_used_at = at where older than before
    def token_by_name(self, name: str) -> TokenRecord | None: ...
    def insert_token(self, name: str, token_hash: str, scopes: str, namespaces: str, created_at: int,
                     expires_at: int | None) -> int: ...
    def revoke_token(self, name: str, at: int) -> bool: ...
    def touch_token(self, token_id: int, at: int, before: int) -> None: ...



class Store(Protocol):
    """A storage backend. Opened once per :class:`~chronomem.Memory`."""

    url: str

    @property
    def capabilities(self) -> Capabilities: ...
    # where the store's system time comes from (a Memory without its own
    # clock reads the store's)
    @property
    def clock(self) -> Clock: ...
    def schema_version(self) -> int: ...

    def write(self, *, shared: bool = False) -> AbstractContextManager[WriteTx]: ...
    def read(self) -> AbstractContextManager[Any]: ...
    def settle(self, known_at: int) -> None: ...
    def namespace_id(self, name: str, create: bool = True) -> int | None: ...
    def namespaces(self) -> list[str]: ...
    def entity_id(self, ns_id: int, key: str) -> int | None: ...
    def entity(self, entity_id: int) -> EntityRecord | None: ...
    def entity_names(self, ids: Iterable[int]) -> dict[int, str]: ...
    def entity_ids_for_keys(self, ns_id: int, keys: Sequence[str]) -> dict[str, int]: ...
    # whether the namespace names any entity (one index probe): a read with nothing to match skips
    def has_entities(self, ns_id: int) -> bool: ...
    def predicate_names(self, ids: Iterable[int]) -> dict[int, str]: ...
    def entities_by_key_substring(self, ns_id: int, text: str, limit: int) -> list[EntityRecord]: ...
    def predicate(self, ns_id: int, key: str) -> PredicateRecord | None: ...
    def predicate_by_id(self, predicate_id: int) -> PredicateRecord | None: ...
    def predicates(self, ns_id: int) -> list[PredicateRecord]: ...
    def query_tuples(self, q: FactQuery) -> list[tuple[Any, ...]]: ...
    def read_sql(self, q: FactQuery) -> tuple[str, list[Any]]: ...
    # the distinct fact ids of the namespace that start or end with
    # ``fragment`` (case-sensitive), in id order, at most ``limit``: what a
    # shortened id names (the service resolves it, :meth:`FactReads.resolve_id`)
    def fact_ids_matching(self, ns_id: int, fragment: str, limit: int) -> list[str]: ...
    def iter_rows(self, ns_id: int, batch: int = 10000) -> Iterable[Row]: ...
    def recent_rows(self, ns_id: int, limit: int) -> list[Row]: ...
    def sources(self, fact_ids: Sequence[str]) -> list[tuple[str, str | None, str | None, int]]: ...
    def entities(self, ns_id: int) -> list[EntityRecord]: ...
    def merge_operations(self, ns_id: int) -> list[tuple[int, str, int | None]]: ...
    def operations(self, ns_id: int) -> list[tuple[str, str, int, str, int | None]]: ...
    def entity_keys(self, ns_id: int) -> list[tuple[str, int, str | None]]: ...
    def stats(self, ns_id: int, now: int) -> dict[str, int]: ...
    def last_system_time(self) -> int: ...
    # after an erasure ("episode", "fact" or "entity") committed: drop what the
    # backend keeps of the deleted bytes outside its live rows, best effort
    # (SQLite: the WAL; PostgreSQL: the planner's sampled values)
    def after_erasure(self, kind: str) -> None: ...
    # access tokens (store-wide, migration 0011): every row by name; the row of
    # a token's SHA-256; whether any is neither revoked nor expired at ``now``
    def tokens(self) -> list[TokenRecord]: ...
    def token_by_hash(self, token_hash: str) -> TokenRecord | None: ...
    def token_by_name(self, name: str) -> TokenRecord | None: ...
    def live_tokens_exist(self, now: int) -> bool: ...
    def close(self) -> None: ...


class EpisodeWriteTx(WriteTx, Protocol):
    """A write transaction of a backend that stores episodes (evidence)."""

    def insert_episode(self, rec: EpisodeRecord) -> int: ...
    def adjacent_episodes(self, rec: EpisodeRecord) -> tuple[EpisodeRecord | None, EpisodeRecord | None]: ...
    def insert_episode_times(self, items: Sequence[tuple[int, int, int, str, int]]) -> None: ...
    def embedding_model_id(self, name: str, dim: int) -> int: ...
    # items: (episode rowid, ns_id, float32 bytes); stored as int8 + a scale (core/quantize.py)
    def put_episode_vectors(self, model_id: int, items: Sequence[tuple[int, int, bytes]]) -> None: ...
    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None: ...
    # ``at``: when it takes effect (valid time); ``recorded_at``: when it was recorded
    def supersede_episode(self, old_rowid: int, new_id: str, at: int, recorded_at: int) -> None: ...
    def episode_fact_ids(self, episode_id: str) -> list[str]: ...
    # erasure: the live neighbours whose index rows quoted it are returned,
    # to be re-indexed in the same transaction before compact_episode_index
    def erase_episode(self, rowid: int) -> list[EpisodeRecord]: ...
    def compact_episode_index(self) -> None: ...
    def bump_episode_generation(self) -> None: ...
    def replace_episode_index(self, rowid: int, index: tuple[str, str, str, str], new: bool = False) -> None: ...
    def replace_episode_times(self, rowid: int, items: Sequence[tuple[int, int, int, str, int]]) -> None: ...
    # raw restore (export/import, copy): the row as carried, supersession and erasure included
    def restore_episode(self, rec: EpisodeRecord) -> int: ...
    # imports: (ns_id, key, episode_id, digest) upserted by (ns_id, key); a
    # file's fingerprint once read in full; an erased episode's digests emptied
    def put_import_keys(self, items: Sequence[tuple[int, str, str, str]]) -> None: ...
    def put_import_file(self, ns_id: int, path_key: str, fingerprint: str) -> None: ...
    def forget_import_digests(self, episode_id: str) -> None: ...


class EpisodeStore(Store, Protocol):
    """A backend that stores episodes: their rows, time mentions, vectors and
    lexical index. ``write()`` yields an :class:`EpisodeWriteTx`."""

    def write(self, *, shared: bool = False) -> AbstractContextManager[EpisodeWriteTx]: ...
    def episode_by_id(self, episode_id: str) -> EpisodeRecord | None: ...
    def episodes_by_rowids(self, rowids: Sequence[int]) -> list[EpisodeRecord]: ...
    def list_episodes(self, f: EpisodeFilter, limit: int, offset: int = 0) -> list[EpisodeRecord]: ...
    def episode_times(self, rowids: Sequence[int]) -> list[tuple[int, int, int, str, int]]: ...
    # a search's pool: the live episodes of rowids (tombstones left out) and their
    # time mentions (as episode_times), in one read
    def pooled_episodes(self, rowids: Sequence[int]) -> tuple[list[PooledEpisode],
                                                             list[tuple[int, int, int, str, int]]]: ...
    def prune_common_terms(self, match: str, cap: int, budget: int = 0) -> str: ...
    def lexical_search(self, match: str, f: EpisodeFilter, limit: int,
                       weights: tuple[float, float, float, float]) -> list[tuple[int, float]]: ...
    # build now what makes this process's lexical searches fast, if the backend
    # keeps anything in memory (SQLite: a numpy copy of its FTS5 index); whether it did
    def prepare_lexical(self) -> bool: ...
    def embedding_model(self, name: str) -> tuple[int, int] | None: ...
    def embedding_models(self) -> list[tuple[int, str, int]]: ...
    def vector_stats(self, ns_id: int, model_id: int) -> tuple[int, int]: ...
    # whether the namespace holds any vector of the model (no count: one index probe)
    def has_vectors(self, ns_id: int, model_id: int) -> bool: ...
    # (rowid, int8 bytes, scale, recorded_at, occurred_at, session) by rowid: the stored form
    def load_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                     limit: int) -> list[tuple[int, bytes, float, int, int | None, str | None]]: ...
    # (rowid, superseded_at, superseded_recorded_at) of the superseded episodes
    def superseded_episodes(self, ns_id: int) -> list[tuple[int, int, int]]: ...
    def episodes_missing_vectors(self, ns_id: int, model_id: int, after_rowid: int,
                                 limit: int) -> list[EpisodeRecord]: ...
    def episode_index_rows(self, ns_id: int, after_rowid: int, limit: int) -> list[EpisodeRecord]: ...
    def episode_rows(self, ns_id: int, after_rowid: int, limit: int) -> list[EpisodeRecord]: ...
    def facts_citing_episodes(self, ns_id: int, episode_ids: Sequence[str]) -> list[tuple[str, str]]: ...
    def episode_generation(self) -> int: ...
    def episode_count(self, ns_id: int) -> int: ...
    def episode_erasures(self, ns_id: int) -> int: ...
    def entity_names_with_prefix(self, ns_id: int, prefix: str, limit: int) -> list[str]: ...
    # imports: key -> (episode_id, digest) for the keys stored; a file's fingerprint;
    # every row of a namespace (export)
    def import_keys(self, ns_id: int, keys: Sequence[str]) -> dict[str, tuple[str, str]]: ...
    def import_file(self, ns_id: int, path_key: str) -> str | None: ...
    def all_import_keys(self, ns_id: int) -> list[tuple[str, str, str]]: ...
    # doctor: the store's own checks, and dropping index rows and vectors
    # whose episode is erased or gone (derived data only) -> (index rows, vectors)
    def health(self, ns_id: int) -> StoreHealth: ...
    def prune_derived(self) -> tuple[int, int]: ...
    # count every namespace's kept BM25 statistics again (the index rows counted; 0 where none are kept)
    def recount_lexical(self) -> int: ...
