"""The :class:`Memory` façade: the one object every interface talks to.

It holds the services of one namespace (:mod:`chronomem.service`) and
answers each public method with the service's own method: the signature and
docstring are the service's, written once. The services share a
:class:`~chronomem.service.scope.Scope` (store, namespace, timezone, clock);
every write runs as one :class:`~chronomem.service.unit_of_work.UnitOfWork`.

A read-only caller (``open`` + ``recall`` / ``search`` / ``facts``, as the
Claude Code hook runs in a cold process) should not pay for importing the
writers, analyses, doctor and importer: those services, and their modules,
are made on first use (:class:`_lazy`, :class:`_LazyService`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from typing import TYPE_CHECKING, Any, Callable, Concatenate, Generic, Iterator, ParamSpec, TypeVar, overload

from .core.limits import MAX_AGENT_CHARS, MAX_NAMESPACE_CHARS, check_text
from .core.phrases import ResolvedTime
from .core.time import TimeLike, TimePoint, get_timezone, timezone_name
from .errors import InvalidInputError
from .service.evidence.embed import Embedder
from .service.evidence.embedding import Embedding
from .service.evidence.episodes import Episodes, episode_store
from .service.evidence.recall import Recaller
from .service.evidence.search import Search
from .service.reads import FactReads
from .service.scope import ACTING_AS, Scope
from .store.protocol import STALE_READS, Store

if TYPE_CHECKING:  # pragma: no cover - imported on first use, see _lazy
    from .service.analyses import Analyses
    from .service.doctor import Doctor
    from .service.facts import FactWrites
    from .service.identity import Identity
    from .service.ingest.run import Importer
    from .service.tokens import Tokens

__all__ = ["Memory"]

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class _Service(Generic[S, P, R]):
    """A :class:`Memory` method answered by a service's method of the same name.

    On the class it is the service's function (so ``help`` and
    ``inspect.signature`` show its signature and docstring); on an instance,
    the bound method of that instance's service, kept in the instance's
    ``__dict__`` after the first lookup so later calls cost nothing extra."""

    _fn: Callable[Concatenate[S, P], R] | None
    _name: str

    def __init__(self, attr: str, fn: Callable[Concatenate[S, P], R]) -> None:
        self._attr = attr
        self._fn = fn
        self._name = fn.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"Memory.{name} must delegate to a method of the same name, not {self._name}")

    def _function(self) -> Callable[Concatenate[S, P], R]:
        assert self._fn is not None
        return self._fn

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Callable[Concatenate[S, P], R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self._function()
        # getattr, not __dict__: a lazy service is made here on first use
        bound = getattr(getattr(obj, self._attr), self._name)
        obj.__dict__[self._name] = bound
        return bound


class _LazyService(_Service[S, P, R]):
    """A :class:`_Service` whose module is imported on first use: ``load``
    returns the service's function (``lambda: _analyses_type().diff``), called
    on the first access on the class (``help(Memory.diff)``); an instance's
    first call makes the service itself (its :class:`_lazy` attribute)."""

    def __init__(self, attr: str, load: Callable[[], Callable[Concatenate[S, P], R]]) -> None:
        self._attr = attr
        self._load = load
        self._fn = None

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name  # checked against the function when it is loaded

    def _function(self) -> Callable[Concatenate[S, P], R]:
        fn = self._fn
        if fn is None:
            fn = self._load()
            if fn.__name__ != self._name:
                raise TypeError(f"Memory.{self._name} must delegate to a method of the same name, not {fn.__name__}")
            self._fn = fn  # two threads racing load the same function: either store is right
        return fn


class _lazy(Generic[T]):
    """A service of a :class:`Memory` made on its first use by ``make(memory)``
    and kept in the instance's ``__dict__`` (which then shadows this
    descriptor). ``setdefault`` keeps the first one stored: two threads racing
    on the first call may both make one, but both use the same. No lock, so
    nothing can be left held across ``os.fork``."""

    def __init__(self, make: Callable[[Any], T]) -> None:
        self._make = make
        self.__doc__ = make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> "_lazy[T]": ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return obj.__dict__.setdefault(self._name, self._make(obj))


# The services a read-only recall does not use, imported on first use.
def _analyses_type() -> type[Analyses]:
    from .service.analyses import Analyses

    return Analyses


def _doctor_type() -> type[Doctor]:
    from .service.doctor import Doctor

    return Doctor


def _writes_type() -> type[FactWrites]:
    from .service.facts import FactWrites

    return FactWrites


def _identity_type() -> type[Identity]:
    from .service.identity import Identity

    return Identity


def _tokens_type() -> type[Tokens]:
    from .service.tokens import Tokens

    return Tokens


def _importer_type() -> type[Importer]:
    from .service.ingest.run import Importer

    return Importer


def _agent_name(value: object, field: str) -> str:
    """A writer's name: a non-empty string of at most MAX_AGENT_CHARS."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{field} must be a non-empty string, not {value!r}")
    return check_text(value.strip(), field, MAX_AGENT_CHARS)


class Memory:
    """A bi-temporal memory opened on one namespace of one store.

    Create it with :func:`chronomem.open`. Safe to share between threads; use
    one per process (several processes may open the same file).
    """

    def __init__(self, store: Store, namespace: str = "default", *, timezone: str | _dt.tzinfo | None = None,
                 clock: Any = None, agent: str | None = None, _shared: "Memory | None" = None) -> None:
        if not isinstance(namespace, str) or not namespace.strip():
            raise InvalidInputError(f"namespace must be a non-empty string, not {namespace!r}")
        check_text(namespace, "namespace", MAX_NAMESPACE_CHARS)
        if agent is not None:
            agent = _agent_name(agent, "agent")
        tz = get_timezone(timezone)
        ns_id = store.namespace_id(namespace)
        assert ns_id is not None
        scope = Scope(store, ns_id, namespace, tz, timezone_name(tz), clock if clock is not None else store.clock,
                      agent)
        self._scope = scope
        self.namespace = namespace
        self.tz = tz
        # a view (Memory.view) shares its parent's store and embedder, and
        # leaves closing the store to the parent
        self._owns_store = _shared is None
        reads = FactReads(scope)
        self._reads = reads
        self._embedding: Embedding = (_shared._embedding if _shared is not None
                                      else Embedding(lambda: episode_store(store).embedding_models(), "auto"))
        self._episodes = Episodes(scope, reads, self._embedding)
        self._search = Search(scope, reads, self._episodes, self._embedding)
        self._recaller = Recaller(scope, reads, self._search)

    # made on first use, from the same scope and services as the ones above
    @_lazy
    def _identity(self) -> Identity:
        return _identity_type()(self._scope)

    @_lazy
    def _writes(self) -> FactWrites:
        return _writes_type()(self._scope, self._reads)

    @_lazy
    def _analyses(self) -> Analyses:
        return _analyses_type()(self._scope, self._reads, self._identity)

    @_lazy
    def _doctor(self) -> Doctor:
        return _doctor_type()(self._scope, self._episodes, self._embedding)

    @_lazy
    def _importer(self) -> Importer:
        return _importer_type()(self._scope, self._episodes)

    @_lazy
    def _tokens(self) -> Tokens:
        return _tokens_type()(self._scope)

    @property
    def tokens(self) -> Tokens:
        """The store's access tokens for ``chronomem serve`` (store-wide:
        every namespace's; :class:`chronomem.tokens.Tokens`: ``create``,
        ``list``, ``revoke``, ``authenticate``). See docs/web.md#tokens."""
        return self._tokens

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

    @property
    def agent(self) -> str | None:
        """Who this memory's writes are recorded as when no
        :meth:`acting_as` says otherwise (``open(agent=...)``; ``None``: the
        local user)."""
        return self._scope.agent

    def view(self, namespace: str | None = None, *, agent: str | None = None) -> "Memory":
        """Another namespace (or writer) of the same open store: the views
        share this memory's store, connection pool and embedder, so a server
        keeps one per namespace at the cost of a few objects. Closing a view
        closes nothing; closing this memory closes the store under every view.
        ``agent`` defaults to this memory's."""
        return Memory(self._scope.store, self.namespace if namespace is None else namespace, timezone=self.tz,
                      clock=self._scope.clock, agent=self._scope.agent if agent is None else agent, _shared=self)

    @contextlib.contextmanager
    def acting_as(self, agent: str) -> Iterator["Memory"]:
        """Record the writes made inside the block (in this thread or task,
        through any memory) as ``agent``: what a server does with the name of
        each request's token. Nested blocks restore the outer name."""
        token = ACTING_AS.set(_agent_name(agent, "agent"))
        try:
            yield self
        finally:
            ACTING_AS.reset(token)

    @contextlib.contextmanager
    def stale_reads(self) -> Iterator["Memory"]:
        """Let the reads made inside the block (in this thread or task,
        through any memory) answer from the store's read replica
        (``open(..., read_replica=...)``) whatever it has replayed: an answer
        may then miss the last writes, by the replica's lag. Reads inside a
        write, and every read of a store without a replica, are unchanged."""
        token = STALE_READS.set(True)
        try:
            yield self
        finally:
            STALE_READS.reset(token)

    def close(self) -> None:
        if self._owns_store:
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
    add_fact = _LazyService("_writes", lambda: _writes_type().add_fact)
    add_facts = _LazyService("_writes", lambda: _writes_type().add_facts)
    invalidate = _LazyService("_writes", lambda: _writes_type().invalidate)
    invalidate_fact = _LazyService("_writes", lambda: _writes_type().invalidate_fact)
    correct = _LazyService("_writes", lambda: _writes_type().correct)
    retract = _LazyService("_writes", lambda: _writes_type().retract)
    erase = _LazyService("_writes", lambda: _writes_type().erase)

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
    timeline = _LazyService("_analyses", lambda: _analyses_type().timeline)
    diff = _LazyService("_analyses", lambda: _analyses_type().diff)
    conflicts = _LazyService("_analyses", lambda: _analyses_type().conflicts)
    volatility = _LazyService("_analyses", lambda: _analyses_type().volatility)
    neighbors = _LazyService("_analyses", lambda: _analyses_type().neighbors)
    paths = _LazyService("_analyses", lambda: _analyses_type().paths)
    fact_bars = _LazyService("_analyses", lambda: _analyses_type().fact_bars)
    entity_timeline = _LazyService("_analyses", lambda: _analyses_type().entity_timeline)
    edges = _LazyService("_analyses", lambda: _analyses_type().edges)
    valid_span = _LazyService("_analyses", lambda: _analyses_type().valid_span)

    # -- entities, aliases, merges, predicates (service/identity.py) -----
    entity = _LazyService("_identity", lambda: _identity_type().entity)
    entities = _LazyService("_identity", lambda: _identity_type().entities)
    set_entity = _LazyService("_identity", lambda: _identity_type().set_entity)
    alias = _LazyService("_identity", lambda: _identity_type().alias)
    merge = _LazyService("_identity", lambda: _identity_type().merge)
    unmerge = _LazyService("_identity", lambda: _identity_type().unmerge)
    define_predicate = _LazyService("_identity", lambda: _identity_type().define_predicate)
    predicates = _LazyService("_identity", lambda: _identity_type().predicates)
    predicate = _LazyService("_identity", lambda: _identity_type().predicate)

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
    doctor = _LazyService("_doctor", lambda: _doctor_type().doctor)
    search = _Service("_search", Search.search)
    prepare_search = _Service("_search", Search.prepare_search)
    recall = _Service("_recaller", Recaller.recall)
    import_source = _LazyService("_importer", lambda: _importer_type().import_source)

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
