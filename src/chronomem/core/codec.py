"""Conversions between stored rows and public values (literals, facts)."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import InvalidInputError
from .limits import MAX_LITERAL_CHARS, check_int, check_json, check_text
from .models import Fact
from .time import MAX_US, MIN_US, Precision, TimePoint, calendar_zone, format_us, from_us, get_timezone, parse_time
from .version import CLOSE_KINDS, CloseKind, Row

__all__ = ["decode_literal", "encode_literal", "row_to_fact", "tuples_to_facts", "dump_props", "load_props"]

_PRECS = {p.value: p for p in Precision}
# the close kinds whose ``closed_by`` is a free-text reason
_REASONED = frozenset(k.value for k in CloseKind if k.cause == "reason")


def encode_literal(value: Any, tz: _dt.tzinfo) -> str:
    """Typed, comparable text for a literal object: equal values, equal text.

    A time is ``t:<us>:<precision>``: a ``date`` is its UTC midnight at day
    precision (the same text in every zone, so it matches by value for every
    reader), a naive ``datetime`` is read in ``tz``."""
    if isinstance(value, bool):
        return "b:1" if value else "b:0"
    if isinstance(value, int):
        return f"i:{check_int(value, 'object')}"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidInputError(f"literal number must be finite, not {value!r}")
        return f"f:{value!r}"
    if isinstance(value, (_dt.datetime, _dt.date, TimePoint)):
        tp = parse_time(value, "object", tz)
        return f"t:{tp.us}:{int(tp.precision)}"
    if isinstance(value, str):
        return "s:" + check_text(value, "object", MAX_LITERAL_CHARS)
    raise InvalidInputError(
        f"literal object must be str, int, float, bool or a date/datetime, not {type(value).__name__}"
    )


def decode_literal(text: str, tz: _dt.tzinfo | str = "UTC") -> Any:
    """The value :func:`encode_literal` encoded, with its type: a day comes
    back as a ``date``, seconds or microseconds as an aware UTC ``datetime``,
    other precisions (only a :class:`TimePoint` gives them) as a ``TimePoint``.
    ``tz`` is the reader's zone, used only for a day stored off its UTC
    midnight by an older version (see :func:`~chronomem.core.time.calendar_zone`)."""
    tag, _, body = text.partition(":")
    if tag == "s":
        return body
    if tag == "i":
        return int(body)
    if tag == "f":
        return float(body)
    if tag == "b":
        return body == "1"
    if tag == "t":
        us_text, _, prec_text = body.partition(":")
        us, prec = int(us_text), Precision(int(prec_text))
        if prec >= Precision.SECOND:
            return from_us(us)
        if prec == Precision.DAY:
            zone = calendar_zone(us, prec, get_timezone(tz))
            return from_us(us).astimezone(zone).date()
        return TimePoint(us, prec)
    raise ValueError(f"bad literal encoding {text!r}")  # pragma: no cover


def literal_text(text: str, tz: _dt.tzinfo = _dt.timezone.utc) -> str:
    """Human rendering of an encoded literal (times at their precision, in
    ``tz`` unless calendar values)."""
    if text.startswith("t:"):
        us, _, prec = text[2:].partition(":")
        return format_us(int(us), int(prec), tz)
    return repr(decode_literal(text))


def dump_props(props: Any) -> str | None:
    if props is None:
        return None
    if not isinstance(props, dict):
        raise InvalidInputError(f"properties must be a dict, not {type(props).__name__}")
    return check_json(props, "properties")


def load_props(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_US = _dt.timedelta(microseconds=1)
_DT_CACHE: dict[int, _dt.datetime] = {}
_new_fact = object.__new__
_set_attr = object.__setattr__


def _new_dt(us: int) -> _dt.datetime:
    """The datetime of ``us``, made and cached (the caller has looked in
    ``_DT_CACHE`` already)."""
    if len(_DT_CACHE) > 100_000:
        _DT_CACHE.clear()
    got = _DT_CACHE[us] = _EPOCH + us * _US
    return got


def row_to_fact(r: Row, now: int, namespace: str, timezone: str = "UTC") -> Fact:
    """Build a :class:`Fact` from a stored row that carries its names."""
    ents = {r.subject_id: r.subject_name or ""}
    if r.object_id is not None and r.object_name is not None:
        ents[r.object_id] = r.object_name
    facts = _build_facts(
        ((r.fact_id, r.version, r.subject_id, r.predicate_id, r.object_id, r.object_lit,
          r.valid_from, r.valid_from_prec, r.valid_to, r.valid_to_prec, r.system_from, r.system_to,
          r.confidence, r.source, r.episode_id, r.properties, r.invalidated_by, r.close_kind, r.closed_by,
          r.end_kind, r.end_reason, r.recorded_by, r.rowid),),
        now, namespace, timezone, ents, {r.predicate_id: r.predicate_name or ""}, True)
    assert facts is not None
    return facts[0]


def _build_facts(rows: Sequence[Sequence[Any]], now: int, namespace: str, timezone: str,
                 entity_names: Mapping[int, str], predicate_names: Mapping[int, str],
                 complete: bool) -> list[Fact] | None:
    """:class:`Fact` objects from read-path tuples. Hot path: each instance's
    ``__dict__`` is set to one dict display instead of going through the
    frozen dataclass ``__init__`` (an ``object.__setattr__`` per field: twice
    the time). ``None`` if a name is missing from the mappings, unless
    ``complete`` (then a missing subject or predicate renders as "")."""
    ent = entity_names.get
    pred = predicate_names.get
    dt = _new_dt
    cached = _DT_CACHE.get  # most times repeat (days, one batch's system time)
    precs = _PRECS
    kinds = CLOSE_KINDS
    reasoned = _REASONED
    new = _new_fact
    set_ = _set_attr
    out: list[Fact] = []
    append = out.append
    for (fact_id, version, sid, pid, oid, lit, vf, vf_prec, vt, vt_prec, sf, st, confidence,
         source, episode_id, props, invalidated_by, close_kind, closed_by, end_kind, end_reason, recorded_by,
         _rowid) in rows:
        subject = ent(sid)
        predicate = pred(pid)
        obj = decode_literal(lit, timezone) if lit is not None else ent(oid)
        if subject is None or predicate is None or (obj is None and lit is None):
            if not complete:
                return None
            subject = subject or ""
            predicate = predicate or ""
        f = new(Fact)
        set_(f, "__dict__", {
            "id": fact_id,
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "valid_from": None if vf == MIN_US else cached(vf) or dt(vf),
            "valid_to": None if vt == MAX_US else cached(vt) or dt(vt),
            "system_from": cached(sf) or dt(sf),
            "system_to": None if st == MAX_US else cached(st) or dt(st),
            "confidence": confidence,
            "source": source,
            "episode_id": episode_id,
            "properties": load_props(props) if props else {},
            "invalidated_by": invalidated_by,
            "current": st == MAX_US and vf <= now < vt,
            "literal": lit is not None,
            "valid_from_precision": None if vf == MIN_US else precs[vf_prec],
            "valid_to_precision": None if vt == MAX_US else precs[vt_prec],
            "version": version,
            "namespace": namespace,
            # a closed version ended when it stopped being believed (the close
            # names its reason, if its kind has one); a believed one, where its
            # valid interval was cut short
            "ended_by": kinds[close_kind] if close_kind is not None else kinds[end_kind] if end_kind else None,
            "ended_reason": (end_reason if close_kind is None
                             else closed_by if close_kind in reasoned else None),
            "timezone": timezone,
            "recorded_by": recorded_by,
        })
        append(f)
    return out


def tuples_to_facts(rows: Sequence[Sequence[Any]], now: int, namespace: str, timezone: str,
                    entity_names: Callable[[Iterable[int]], Mapping[int, str]],
                    predicate_names: Callable[[Iterable[int]], Mapping[int, str]]) -> list[Fact]:
    """Build :class:`Fact` objects from read-path tuples (``store.protocol.READ_COLUMNS``).
    ``entity_names`` / ``predicate_names`` are the store's cached lookups
    (``Store.entity_names``): the cached mappings are tried first, and only a
    read that meets an uncached id asks for its rows' ids."""
    facts = _build_facts(rows, now, namespace, timezone, entity_names(()), predicate_names(()), False)
    if facts is None:
        ents = entity_names({t[2] for t in rows} | {t[4] for t in rows if t[4] is not None})
        preds = predicate_names({t[3] for t in rows})
        facts = _build_facts(rows, now, namespace, timezone, ents, preds, True)
        assert facts is not None
    return facts
