"""Where a write's effect is in the store: found by the tag it wrote, through the public API.

Every write of the workload leaves a tag the checker can find afterwards: an assert writes
a unique object with its op id as ``source``; an end writes its op id as ``reason`` on the
version it closes and on the one it creates (whose ``valid_to`` is the ``ended`` it asked
for); a correct and a retract write their op id as ``reason`` on the version they close
(``ended_by`` ``corrected`` / ``retracted``). The system time found is the op's commit
time: an assert's first version's ``system_from``, otherwise the closed version's
``system_to``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....core.models import Fact
from ....core.time import MAX_US, MIN_US, Precision, format_us, parse_time, to_us
from .history import Operation

__all__ = ["WRITES", "effect_time", "ended_kind", "fact_key", "stamp", "valid_us"]

#: the functions that write facts (``define`` is the controller's, with its own time)
WRITES = ("assert", "end", "correct", "retract")


def stamp(us: int) -> str:
    """A system instant written exactly (microsecond precision), for ``known_at`` and for the model's ``at``."""
    return format_us(us, Precision.MICROSECOND)


def ended_kind(fact: Fact) -> str | None:
    kind: Any = fact.ended_by
    return None if kind is None else str(getattr(kind, "value", kind))


def valid_us(value: Any, *, end: bool = False) -> int:
    """A written or read bound as an instant (``None``: the unknown start / open end)."""
    if value is None:
        return MAX_US if end else MIN_US
    if isinstance(value, str):
        return parse_time(value, "time").us
    return to_us(value)


def fact_key(fact: Fact) -> tuple[str, int, int]:
    """A believed fact as ``(object, valid_from µs, valid_to µs)``."""
    return (fact.object_text, valid_us(fact.valid_from), valid_us(fact.valid_to, end=True))


def effect_time(op: Operation, versions: Sequence[Fact]) -> int | None:
    """The system time at which ``op`` took effect in ``versions`` (its key's history), or
    ``None`` if its tag is nowhere in it."""
    a = op.args
    if op.f == "assert":
        times = [to_us(v.system_from) for v in versions if v.source == op.id and v.object_text == a.get("object")]
    elif op.f == "end":
        # the version an end closes records it (``ended_by`` invalidated, its reason), for good; the
        # version it creates says so too, until a later write closes that one for its own reason
        ended = valid_us(a.get("ended"), end=True)
        times = [to_us(v.system_to) for v in versions if v.id == a.get("fact_id") and v.system_to is not None
                 and ended_kind(v) == "invalidated" and v.ended_reason == op.id]
        times += [to_us(v.system_from) for v in versions
                  if v.id == a.get("fact_id") and v.ended_reason == op.id and valid_us(v.valid_to, end=True) == ended]
    elif op.f == "correct":
        times = [to_us(v.system_to) for v in versions if v.id == a.get("fact_id") and v.system_to is not None
                 and ended_kind(v) == "corrected" and v.ended_reason == op.id]
    elif op.f == "retract":
        times = [to_us(v.system_to) for v in versions if v.id == a.get("fact_id") and v.system_to is not None
                 and ended_kind(v) == "retracted" and v.ended_reason == op.id]
    else:
        return None
    return min(times) if times else None
