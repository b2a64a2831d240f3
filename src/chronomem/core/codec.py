"""Conversions between stored rows and public values (literals, facts)."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import InvalidInputError
from .models import Fact
from .time import MAX_US, MIN_US, Precision, TimePoint, format_us, from_us, parse_time
from .version import Row

__all__ = ["decode_literal", "encode_literal", "row_to_fact", "tuples_to_facts", "dump_props", "load_props"]

_PRECS = {p.value: p for p in Precision}


def encode_literal(value: Any, tz: _dt.tzinfo) -> str:
    """Typed, comparable text for a literal object: equal values, equal text."""
    if isinstance(value, bool):
        return "b:1" if value else "b:0"
    if isinstance(value, int):
        return f"i:{value}"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidInputError(f"literal number must be finite, not {value!r}")
        return f"f:{value!r}"
    if isinstance(value, (_dt.datetime, _dt.date, TimePoint)):
        tp = parse_time(value, "object", tz)
        return f"t:{tp.us}:{int(tp.precision)}"
    if isinstance(value, str):
        return "s:" + value
    raise InvalidInputError(
        f"literal object must be str, int, float, bool or a date/datetime, not {type(value).__name__}"
    )


def decode_literal(text: str) -> Any:
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
        us, _, prec = body.partition(":")
        return from_us(int(us))
    raise ValueError(f"bad literal encoding {text!r}")  # pragma: no cover


def literal_text(text: str) -> str:
    """Human rendering of an encoded literal (dates at their precision)."""
    if text.startswith("t:"):
        us, _, prec = text[2:].partition(":")
        return format_us(int(us), int(prec))
    return repr(decode_literal(text))


def dump_props(props: Any) -> str | None:
    if props is None:
        return None
    if not isinstance(props, dict):
        raise InvalidInputError(f"properties must be a dict, not {type(props).__name__}")
    try:
        return json.dumps(props, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"properties must be JSON-serializable: {exc}") from None


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
          r.confidence, r.source, r.episode_id, r.properties, r.invalidated_by, r.close_kind, r.rowid),),
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
    new = _new_fact
    set_ = _set_attr
    out: list[Fact] = []
    append = out.append
    for (fact_id, version, sid, pid, oid, lit, vf, vf_prec, vt, vt_prec, sf, st, confidence,
         source, episode_id, props, invalidated_by, close_kind, _rowid) in rows:
        subject = ent(sid)
        predicate = pred(pid)
        obj = decode_literal(lit) if lit is not None else ent(oid)
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
            "ended_reason": close_kind,
            "timezone": timezone,
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
