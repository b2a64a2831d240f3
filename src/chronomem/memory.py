"""The :class:`Memory` façade: the one object every interface talks to.

It holds the services of one namespace (:mod:`chronomem.service`) and
answers each public method with the service's own method: the signature and
docstring are the service's, written once. The services share a
:class:`~chronomem.service.scope.Scope` (store, namespace, timezone, clock);
every write runs as one :class:`~chronomem.service.unit_of_work.UnitOfWork`.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Concatenate, Generic, ParamSpec, TypeVar, overload

from .core.limits import MAX_NAMESPACE_CHARS, check_text
from .core.phrases import ResolvedTime
from .core.time import TimeLike, TimePoint, get_timezone, timezone_name
from .errors import InvalidInputError
from .service.analyses import Analyses
from .service.doctor import Doctor
from .service.evidence.embed import Embedder
from .service.evidence.embedding import Embedding
from .service.evidence.episodes import Episodes, episode_store
from .service.evidence.recall import Recaller
from .service.evidence.search import Search
from .service.facts import FactWrites
from .service.identity import Identity
from .service.ingest.run import Importer
from .service.reads import FactReads
from .service.scope import Scope
from .store.protocol import Store

__all__ = ["Memory"]

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


class _Service(Generic[S, P, R]):
    """A :class:`Memory` method answered by a service's method of the same name.

    On the class it is the service's function (so ``help`` and
    ``inspect.signature`` show its signature and docstring); on an instance,
    the bound method of that instance's service, kept in the instance's
    ``__dict__`` after the first lookup so later calls cost nothing extra."""

    def __init__(self, attr: str, fn: Callable[Concatenate[S, P], R]) -> None:
        self._attr = attr
        self._fn = fn
        self._name = fn.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"Memory.{name} must delegate to a method of the same name, not {self._name}")

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Callable[Concatenate[S, P], R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self._fn
        bound = getattr(obj.__dict__[self._attr], self._name)
        obj.__dict__[self._name] = bound
        return bound


class Memory:
    """A bi-temporal memory opened on one namespace of one store.

    Create it with :func:`chronomem.open`. Safe to share between threads; use
    one per process (several processes may open the same file).
    """

    def __init__(self, store: Store, namespace: str = "default", *, timezone: str | _dt.tzinfo | None = None,
                 clock: Any = None) -> None:
        if not isinstance(namespace, str) or not namespace.strip():
            raise InvalidInputError(f"namespace must be a non-empty string, not {namespace!r}")
        check_text(namespace, "namespace", MAX_NAMESPACE_CHARS)
        tz = get_timezone(timezone)
        ns_id = store.namespace_id(namespace)
        assert ns_id is not None
        scope = Scope(store, ns_id, namespace, tz, timezone_name(tz), clock if clock is not None else store.clock)
        self._scope = scope
        self.namespace = namespace
        self.tz = tz
        reads = FactReads(scope)
        identity = Identity(scope)
        self._reads = reads
        self._identity = identity
        self._writes = FactWrites(scope, reads)
        self._analyses = Analyses(scope, reads, identity)
        self._embedding = Embedding(lambda: episode_store(store).embedding_models(), "auto")
        self._episodes = Episodes(scope, reads, self._embedding)
        self._search = Search(scope, reads, self._episodes, self._embedding)
        self._recaller = Recaller(scope, reads, self._search)
        self._doctor = Doctor(scope, self._episodes, self._embedding)
        self._importer = Importer(scope, self._episodes)

    # -- lifecycle -------------------------------------------------------
    @property
    def store(self) -> Store:
        return self._scope.store

    @property
    def url(self) -> str:
        return self._scope.store.url

    @property
    def _ns(self) -> int:
        """The namespace's id in the store."""
        return self._scope.ns_id

    def close(self) -> None:
        self._scope.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Memory {self._scope.store.url} namespace={self.namespace!r}>"

    def now(self) -> _dt.datetime:
        """The store's current time (UTC): its clock, never earlier than the
        last system time the store has stamped, so ``known_at=mem.now()``
        includes every committed write."""
        return self._scope.store_now()

    def parse_time(self, value: TimeLike, field: str = "time") -> TimePoint:
        """Read a time value in this memory's timezone, strictly: ISO-8601,
        partial dates and typed values, as writes read them (see
        :mod:`chronomem.core.time`)."""
        return self._scope.parse_time(value, field)

    def resolve_time(self, text: TimeLike, field: str = "at", *, now: _dt.datetime | None = None) -> ResolvedTime:
        """Read a time as every read basis (``as_of``, ``known_at``, ``at``,
        ``since``, ...) is read: what :meth:`parse_time` reads, plus time
        phrases ("now", "yesterday", "3 days ago", "last March", "April 2022",
        "Q3 2024"; see :mod:`chronomem.core.phrases`) resolved against the
        store clock (:meth:`now`, or ``now`` if given) in this memory's
        timezone. Returns the :class:`~chronomem.core.phrases.ResolvedTime`
        (``text``, ``point``, ``relative``); raises
        :class:`~chronomem.errors.InvalidTimeError` naming ``field``. Writes
        (``valid_from``, ``occurred_at``, ...) never take phrases."""
        return self._scope.resolve_time(text, field, now)

    # -- facts: writes (service/facts.py) --------------------------------
    add_fact = _Service("_writes", FactWrites.add_fact)
    add_facts = _Service("_writes", FactWrites.add_facts)
    invalidate = _Service("_writes", FactWrites.invalidate)
    invalidate_fact = _Service("_writes", FactWrites.invalidate_fact)
    correct = _Service("_writes", FactWrites.correct)
    retract = _Service("_writes", FactWrites.retract)
    erase = _Service("_writes", FactWrites.erase)

    # -- facts: reads (service/reads.py) ---------------------------------
    facts = _Service("_reads", FactReads.facts)
    facts_sql = _Service("_reads", FactReads.facts_sql)
    current = _Service("_reads", FactReads.current)
    between = _Service("_reads", FactReads.between)
    history = _Service("_reads", FactReads.history)
    fact = _Service("_reads", FactReads.fact)
    versions = _Service("_reads", FactReads.versions)
    evidence = _Service("_reads", FactReads.evidence)
    search_facts = _Service("_reads", FactReads.search_facts)
    recent_changes = _Service("_reads", FactReads.recent_changes)
    stats = _Service("_reads", FactReads.stats)
    with_decay = _Service("_reads", FactReads.with_decay)

    # -- analyses (service/analyses.py) ----------------------------------
    timeline = _Service("_analyses", Analyses.timeline)
    diff = _Service("_analyses", Analyses.diff)
    conflicts = _Service("_analyses", Analyses.conflicts)
    volatility = _Service("_analyses", Analyses.volatility)
    neighbors = _Service("_analyses", Analyses.neighbors)
    paths = _Service("_analyses", Analyses.paths)
    fact_bars = _Service("_analyses", Analyses.fact_bars)
    entity_timeline = _Service("_analyses", Analyses.entity_timeline)
    edges = _Service("_analyses", Analyses.edges)
    valid_span = _Service("_analyses", Analyses.valid_span)

    # -- entities, aliases, merges, predicates (service/identity.py) -----
    entity = _Service("_identity", Identity.entity)
    entities = _Service("_identity", Identity.entities)
    set_entity = _Service("_identity", Identity.set_entity)
    alias = _Service("_identity", Identity.alias)
    merge = _Service("_identity", Identity.merge)
    unmerge = _Service("_identity", Identity.unmerge)
    define_predicate = _Service("_identity", Identity.define_predicate)
    predicates = _Service("_identity", Identity.predicates)
    predicate = _Service("_identity", Identity.predicate)

    # -- evidence (service/evidence/) ------------------------------------
    add_episode = _Service("_episodes", Episodes.add_episode)
    add_episodes = _Service("_episodes", Episodes.add_episodes)
    supersede_episode = _Service("_episodes", Episodes.supersede_episode)
    erase_episode = _Service("_episodes", Episodes.erase_episode)
    episode = _Service("_episodes", Episodes.episode)
    episode_facts = _Service("_episodes", Episodes.episode_facts)
    episodes = _Service("_episodes", Episodes.episodes)
    reindex = _Service("_episodes", Episodes.reindex)
    evidence_stats = _Service("_episodes", Episodes.evidence_stats)
    doctor = _Service("_doctor", Doctor.doctor)
    search = _Service("_search", Search.search)
    recall = _Service("_recaller", Recaller.recall)
    import_source = _Service("_importer", Importer.import_source)

    def use_embedder(self, embedder: Embedder | str | None) -> None:
        """Use ``embedder`` for new episodes and searches: an :class:`Embedder`,
        the short name of a built-in one (``"minilm"``, ``"bge-small"``,
        ``"e5-multilingual"``: loaded on first use), ``"auto"`` (the default:
        the built-in model this store's vectors were made with, else MiniLM)
        or ``None`` (lexical only, no vectors). Vectors are stored per model
        name, never mixed."""
        self._embedding.use(embedder)

    @property
    def embedder(self) -> Embedder | None:
        """The embedder in use (``None`` when searches are lexical only)."""
        return self._embedding.current
