"""The exception tree. Every error chronomem raises on purpose derives from
:class:`ChronomemError`, so callers can catch one base class.

::

    ChronomemError
    ├── InvalidInputError            bad argument value (also a ValueError)
    │   ├── InvalidTimeError         a time value that cannot be read
    │   ├── InvalidIntervalError     valid_to <= valid_from, or an empty interval
    │   ├── InvalidNameError         an empty / unusable entity or predicate name
    │   ├── LimitExceededError       a value past a documented limit (docs/limits.md)
    │   │   └── BodyTooLargeError    web: a request body larger than the server reads (413)
    │   ├── CardinalityError         a write that would break a predicate's cardinality
    │   ├── AmbiguousIdError         a shortened fact id that names several facts
    │   ├── ExportVersionError       an export's format_version this chronomem cannot read
    │   ├── ScenarioFormatError      ``chronomem bench temporal``: a scenario or interval file that cannot be read
    │   └── UnsafeBindError          serving a non-loopback address without a bearer token
    ├── NotFoundError                (also a LookupError)
    │   ├── FactNotFoundError
    │   ├── EntityNotFoundError
    │   ├── PredicateNotFoundError
    │   └── EpisodeNotFoundError
    ├── ConflictError                the request contradicts stored state
    │   └── AliasConflictError       the alias already names another entity
    ├── ConfirmationRequiredError    erase() without confirm=True
    ├── StoreError                   the storage backend failed or is unusable
    │   ├── SchemaVersionError       database written by a newer chronomem
    │   ├── StoreLockedError         could not get the write lock in time
    │   └── StoreUnavailableError    the database cannot be reached now: retry later
    │       └── WriteOutcomeUnknownError  the connection died while a write committed
    ├── MissingExtraError            an optional dependency is not installed
    ├── AuthenticationError          web: a request without the required bearer token (401)
    ├── ForbiddenError               web: a wrong token, foreign Host or Origin (403)
    ├── RateLimitedError             web: a token (or client) over its request rate (429, retry_after)
    ├── InstallError                 ``chronomem install``: the request cannot be carried out
    └── ConfigFormatError            ``chronomem install``: an agent config file cannot be edited

The last five, ``BodyTooLargeError`` and ``ScenarioFormatError`` are raised
and handled inside the web server, the installer and the benchmark (they
become HTTP statuses and CLI messages), so they are not exported from the
top-level ``chronomem`` package; import them from here.
"""

from __future__ import annotations

__all__ = [
    "AliasConflictError",
    "AmbiguousIdError",
    "AuthenticationError",
    "BodyTooLargeError",
    "CardinalityError",
    "ChronomemError",
    "ConfigFormatError",
    "ConfirmationRequiredError",
    "ConflictError",
    "EntityNotFoundError",
    "EpisodeNotFoundError",
    "ExportVersionError",
    "FactNotFoundError",
    "ForbiddenError",
    "InstallError",
    "InvalidInputError",
    "InvalidIntervalError",
    "InvalidNameError",
    "InvalidTimeError",
    "LimitExceededError",
    "MissingExtraError",
    "NotFoundError",
    "PredicateNotFoundError",
    "RateLimitedError",
    "ScenarioFormatError",
    "SchemaVersionError",
    "StoreError",
    "StoreLockedError",
    "StoreUnavailableError",
    "UnsafeBindError",
    "WriteOutcomeUnknownError",
]


class ChronomemError(Exception):
    """Base class of every error chronomem raises deliberately."""


class InvalidInputError(ChronomemError, ValueError):
    """An argument has a value chronomem cannot use. Nothing was written."""


class InvalidTimeError(InvalidInputError):
    """A time value could not be read.

    ``value`` is what was given, ``field`` the parameter it was given for and
    ``why`` what was wrong with it.
    """

    def __init__(self, value: object, field: str, why: str = "") -> None:
        self.value = value
        self.field = field
        self.why = why
        msg = f"invalid time for {field}: {value!r}"
        if why:
            msg += f" ({why})"
        msg += (
            "; use an ISO-8601 date or datetime such as '2024', '2024-03', "
            "'2024-03-05' or '2024-03-05T10:30:00+01:00'"
        )
        super().__init__(msg)


class InvalidIntervalError(InvalidInputError):
    """A valid-time interval is empty or reversed (``valid_to <= valid_from``)."""


class InvalidNameError(InvalidInputError):
    """An entity or predicate name is empty or normalizes to nothing."""


class LimitExceededError(InvalidInputError):
    """A value is past one of the documented limits (``docs/limits.md``):
    too long, too deep, too many keys or items, too large a number.
    ``field`` names the argument, ``limit`` the limit and ``actual`` what
    was given (``None`` when not measured to the end). Nothing was written."""

    def __init__(self, field: str, limit: int, actual: int | None = None, *, unit: str = "characters",
                 why: str = "") -> None:
        self.field = field
        self.limit = limit
        self.actual = actual
        if why:
            msg = f"{field} is out of range: {why}"
        elif unit:
            if actual is not None:
                msg = f"{field} has {actual} {unit}, more than the limit of {limit}"
            else:
                msg = f"{field} has more than the limit of {limit} {unit}"
        else:
            msg = f"{field} must be at most {limit}, not {actual}"
        super().__init__(msg)


class BodyTooLargeError(LimitExceededError):
    """An HTTP request body is larger than the server reads (413)."""

    def __init__(self, limit: int, actual: int | None = None) -> None:
        super().__init__("the request body", limit, actual, unit="bytes")


class CardinalityError(InvalidInputError):
    """The write would leave two values of a single-valued predicate valid at once."""


class AmbiguousIdError(InvalidInputError):
    """A shortened fact id (a prefix of the id, or the short id tables
    print) names more than one fact. ``field`` is the parameter, ``value``
    what was given, ``candidates`` the first full ids it names (a few, in id
    order) and ``more`` whether it names others too. Nothing was written."""

    def __init__(self, value: str, candidates: tuple[str, ...], *, more: bool = False,
                 field: str = "fact_id") -> None:
        self.value = value
        self.candidates = candidates
        self.more = more
        self.field = field
        listed = ", ".join(candidates) + (", ..." if more else "")
        count = f"more than {len(candidates)}" if more else str(len(candidates))
        super().__init__(f"{field} {value!r} is ambiguous: it names {count} facts ({listed}); "
                         "give more of the id, or the whole id")


class ExportVersionError(InvalidInputError):
    """An export file's ``format_version`` is not one this chronomem reads
    (usually: it was written by a newer chronomem). Raised before anything
    is written. ``field`` is ``"format_version"``, ``version`` the value the
    file has and ``supported`` the versions this chronomem reads."""

    def __init__(self, version: object, supported: tuple[int, ...]) -> None:
        self.field = "format_version"
        self.version = version
        self.supported = supported
        known = ", ".join(map(str, supported))
        if isinstance(version, int) and not isinstance(version, bool) and version > max(supported):
            why = f"it was written by a newer chronomem (this one reads versions {known}); upgrade chronomem"
        else:
            why = f"this chronomem reads versions {known}"
        super().__init__(f"unsupported export format version: format_version is {version!r}; {why}")


class ScenarioFormatError(InvalidInputError):
    """A benchmark scenario or interval file that cannot be read; the message names the file, line and field."""


class UnsafeBindError(InvalidInputError):
    """Binding a non-loopback address without a bearer token."""


class NotFoundError(ChronomemError, LookupError):
    """The thing asked for does not exist (in this namespace)."""


class FactNotFoundError(NotFoundError):
    """No fact matches."""


class EntityNotFoundError(NotFoundError):
    """No entity has that name or alias."""


class PredicateNotFoundError(NotFoundError):
    """No predicate has that name."""


class EpisodeNotFoundError(NotFoundError):
    """No episode has that id in this namespace."""


class ConflictError(ChronomemError):
    """The request contradicts what the store holds."""


class AliasConflictError(ConflictError):
    """The alias already resolves to a different entity (use ``merge``)."""


class ConfirmationRequiredError(ChronomemError):
    """A destructive operation (``erase``) was called without ``confirm=True``."""


class StoreError(ChronomemError):
    """The storage backend failed or cannot be used."""


class SchemaVersionError(StoreError):
    """The database was written by a newer chronomem than this one."""


class StoreLockedError(StoreError):
    """The write lock could not be taken before the busy timeout ran out."""


class StoreUnavailableError(StoreError):
    """The database cannot be reached now: it is down, restarting, or did not
    answer in time. Nothing was written; the same call may succeed later.
    ``retry_after`` is a suggested wait in seconds (``None``: retrying will
    not help, e.g. the memory was closed)."""

    def __init__(self, message: str, *, retry_after: float | None = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WriteOutcomeUnknownError(StoreUnavailableError):
    """The connection to the database died while a write was committing: it
    may or may not have been stored. ``fact_ids`` names the facts the write
    touched: read them back (``history``) before writing again."""

    def __init__(self, message: str, *, fact_ids: tuple[str, ...] = (), retry_after: float | None = 1.0) -> None:
        super().__init__(message, retry_after=retry_after)
        self.fact_ids = fact_ids


class MissingExtraError(ChronomemError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, package: str, extra: str, *, hint: str | None = None) -> None:
        self.package = package
        self.extra = extra
        install = hint or f"pip install 'chronomem[{extra}]'"
        super().__init__(f"{package} is not installed; install it with: {install}")


class AuthenticationError(ChronomemError):
    """The request carries no bearer token but the server requires one (401)."""


class ForbiddenError(ChronomemError):
    """The request's bearer token is wrong (403)."""


class RateLimitedError(ChronomemError):
    """The request's principal (its token's name, else the client address) is
    over the server's request rate (429). ``retry_after``: whole seconds to
    wait, at least 1."""

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = max(1, int(retry_after))


class InstallError(ChronomemError):
    """The install request cannot be carried out (unknown client, unsupported scope, unreadable config)."""


class ConfigFormatError(ChronomemError):
    """An existing agent config file cannot be read or safely edited."""
