"""chronomem: a local-first, bi-temporal knowledge-graph memory for AI agents.

>>> import chronomem
>>> mem = chronomem.open(":memory:")
>>> _ = mem.add_fact("Acme", "ceo", "Alice", valid_from="2020")
"""

from __future__ import annotations

from ._open import open
from .core.models import (
    Conflict,
    Diff,
    DiffChange,
    Entity,
    Event,
    Fact,
    Neighbor,
    Path,
    Predicate,
    Provenance,
    Stats,
    Volatility,
)
from .core.names import normalize_key
from .core.time import FakeClock, Precision, SystemClock, TimePoint, period_end
from .errors import (
    AliasConflictError,
    CardinalityError,
    ChronomemError,
    ConfirmationRequiredError,
    ConflictError,
    EntityNotFoundError,
    EpisodeNotFoundError,
    ExportVersionError,
    FactNotFoundError,
    InvalidInputError,
    InvalidIntervalError,
    InvalidNameError,
    InvalidTimeError,
    MissingExtraError,
    NotFoundError,
    PredicateNotFoundError,
    SchemaVersionError,
    StoreError,
    StoreLockedError,
    UnsafeBindError,
)
from .memory import Memory
from .service.evidence import (
    Embedder,
    Episode,
    FactNote,
    Hit,
    Recall,
    RecallItem,
    ScoreParts,
    SearchConfig,
    TimeSpan,
)

__version__ = "0.1.0"

__all__ = [
    "AliasConflictError",
    "CardinalityError",
    "ChronomemError",
    "Conflict",
    "ConfirmationRequiredError",
    "ConflictError",
    "Diff",
    "DiffChange",
    "Embedder",
    "Episode",
    "EpisodeNotFoundError",
    "FactNote",
    "Hit",
    "Entity",
    "EntityNotFoundError",
    "Event",
    "ExportVersionError",
    "Fact",
    "FactNotFoundError",
    "FakeClock",
    "InvalidInputError",
    "InvalidIntervalError",
    "InvalidNameError",
    "InvalidTimeError",
    "Memory",
    "MissingExtraError",
    "Neighbor",
    "NotFoundError",
    "Path",
    "Precision",
    "Predicate",
    "PredicateNotFoundError",
    "Provenance",
    "Recall",
    "RecallItem",
    "ScoreParts",
    "SearchConfig",
    "SchemaVersionError",
    "Stats",
    "StoreError",
    "StoreLockedError",
    "SystemClock",
    "TimePoint",
    "TimeSpan",
    "UnsafeBindError",
    "Volatility",
    "__version__",
    "normalize_key",
    "open",
    "period_end",
]
