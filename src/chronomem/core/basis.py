"""A fact's status relative to a read's basis (its ``as_of`` / ``known_at``),
for the surfaces that label facts: "valid at 2019-06", "ended 2018-04",
"starts 2020". ``Fact.current`` stays "believed now and valid now"; these
helpers answer the same question at any basis, so a past read never speaks
of "now"."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Literal

from .models import Fact

__all__ = ["BASIS_STATUSES", "BasisStatus", "believed_at", "fact_dict_at", "status_at", "status_label"]

#: a fact at a valid-time instant: inside its interval, ended at or before it, or starting after it
BasisStatus = Literal["valid", "ended", "not_yet"]
BASIS_STATUSES: tuple[BasisStatus, ...] = ("valid", "ended", "not_yet")


def status_at(fact: Fact, at: _dt.datetime) -> BasisStatus:
    """Where the valid interval ``[valid_from, valid_to)`` lies relative to ``at``."""
    if fact.valid_from is not None and at < fact.valid_from:
        return "not_yet"
    if fact.valid_to is not None and fact.valid_to <= at:
        return "ended"
    return "valid"


def believed_at(fact: Fact, known_at: _dt.datetime | None) -> bool:
    """Whether this version was the store's belief at system time ``known_at``
    (``None``: now, i.e. the version is still open)."""
    if known_at is None:
        return fact.system_to is None
    return fact.system_from <= known_at and (fact.system_to is None or known_at < fact.system_to)


def fact_dict_at(fact: Fact, at: _dt.datetime) -> dict[str, Any]:
    """``fact.to_dict()`` plus ``status_at_basis`` (its :func:`status_at` ``at``)."""
    out = fact.to_dict()
    out["status_at_basis"] = status_at(fact, at)
    return out


def status_label(status: BasisStatus, *, basis: str | None, valid_from: str | None, valid_to: str | None) -> str:
    """Words for ``status``: ``basis`` is the basis as written (``None``: now),
    ``valid_from``/``valid_to`` the fact's bounds as written."""
    if status == "valid":
        return f"valid at {basis}" if basis else "valid now"
    # an ended fact has a known end and a later-starting one a known start; "…" only guards bad input
    if status == "ended":
        when, bound, rel = f"ended {valid_to or '…'}", valid_to, "before"
    else:
        when, bound, rel = f"starts {valid_from or '…'}", valid_from, "after"
    # "ended 2019-06" at basis 2019-06 says it all (half-open: not valid at its end)
    return f"{when} ({rel} {basis})" if basis and basis != bound else when
