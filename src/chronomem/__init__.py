"""chronomem: a local-first, bi-temporal knowledge-graph memory for AI agents.

>>> import chronomem
>>> mem = chronomem.open(":memory:")
>>> _ = mem.add_fact("Acme", "ceo", "Alice", valid_from="2020")
"""

from ._open import open
from .core.models import (
    CloseKind,
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
    AmbiguousIdError,
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
    LimitExceededError,
    MissingExtraError,
    NotFoundError,
    PredicateNotFoundError,
    SchemaVersionError,
    StoreError,
    StoreLockedError,
    UnsafeBindError,
)
from .memory import Memory
from .service.doctor_report import DoctorReport
from .service.evidence import Embedder, Episode, FactNote, Hit, Recall, RecallItem, ScoreParts, SearchConfig, TimeSpan

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "AliasConflictError",
    "AmbiguousIdError",
    "CardinalityError",
    "ChronomemError",
    "CloseKind",
    "ConfirmationRequiredError",
    "Conflict",
    "ConflictError",
    "Diff",
    "DiffChange",
    "DoctorReport",
    "Embedder",
    "Entity",
    "EntityNotFoundError",
    "Episode",
    "EpisodeNotFoundError",
    "Event",
    "ExportVersionError",
    "Fact",
    "FactNote",
    "FactNotFoundError",
    "FakeClock",
    "Hit",
    "InvalidInputError",
    "InvalidIntervalError",
    "InvalidNameError",
    "InvalidTimeError",
    "LimitExceededError",
    "Memory",
    "MissingExtraError",
    "Neighbor",
    "normalize_key",
    "NotFoundError",
    "open",
    "Path",
    "period_end",
    "Precision",
    "Predicate",
    "PredicateNotFoundError",
    "Provenance",
    "Recall",
    "RecallItem",
    "SchemaVersionError",
    "ScoreParts",
    "SearchConfig",
    "Stats",
    "StoreError",
    "StoreLockedError",
    "SystemClock",
    "TimePoint",
    "TimeSpan",
    "UnsafeBindError",
    "Volatility",
]
