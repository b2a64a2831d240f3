"""Name normalization for entities and predicates.

A key is: Unicode NFKC, casefolded, trimmed, apostrophes dropped, and runs of
whitespace, ``_`` and ``-`` collapsed to a single ``_``. ``"My API"``,
``"my_api"`` and ``" MY-API "`` all have the key ``my_api``. Scripts without
case (Chinese, Japanese, ...) pass through unchanged apart from NFKC.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ..errors import InvalidInputError, InvalidNameError, LimitExceededError
from .limits import MAX_NAME_CHARS, check_clean

__all__ = ["normalize_key"]

_APOSTROPHES = str.maketrans("", "", "'\u2019\u2018\u02bc`\u00b4")
_SEPARATORS = re.compile(r"[\s_\-\u2010-\u2015]+")


@lru_cache(maxsize=262144)
def _key(name: str) -> str:
    if name.isascii():
        # NFKC leaves ASCII alone and casefold() is lower(); str.split()
        # splits on exactly the ASCII characters \s matches (property-tested
        # against _general_key): half the cost of the general path
        text = name.lower().replace("'", "").replace("`", "")  # the ASCII apostrophes
        return "_".join(text.replace("_", " ").replace("-", " ").split())
    return _general_key(name)


def _general_key(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).casefold().translate(_APOSTROPHES)
    return _SEPARATORS.sub("_", text).strip("_")


def normalize_key(name: object, what: str = "name") -> str:
    """Return the normalized key of ``name`` or raise :class:`InvalidNameError`."""
    if not isinstance(name, str):
        raise InvalidNameError(f"{what} must be a string, not {type(name).__name__}: {name!r}")
    if len(name) > MAX_NAME_CHARS and len(name.strip()) > MAX_NAME_CHARS:  # the name is stored as given, trimmed
        raise LimitExceededError(what, MAX_NAME_CHARS, len(name.strip()))
    try:
        check_clean(name, what)
    except InvalidInputError as exc:  # NUL, lone surrogate: not a usable name
        raise InvalidNameError(str(exc)) from None
    key = _key(name)
    if not key:
        raise InvalidNameError(f"{what} {name!r} is empty after normalization")
    if len(key) > MAX_NAME_CHARS:
        raise LimitExceededError(what, MAX_NAME_CHARS, len(key), unit="characters after normalization")
    return key
