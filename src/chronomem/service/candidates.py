"""Turning a write request (a dict of ``add_fact`` parameters) into a
candidate :class:`Row`: validation, name resolution and time parsing.

One :class:`CandidateBuilder` lives for one write transaction and memoizes
raw names and raw time values, which makes bulk loads with repeated names
and dates cheap.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

from ..core.codec import dump_props, encode_literal
from ..core.ids import id_block
from ..core.limits import MAX_ID_CHARS, MAX_SOURCE_CHARS, check_bool, check_text
from ..core.names import normalize_key
from ..core.time import MAX_US, MIN_US, parse_time
from ..errors import InvalidInputError, InvalidIntervalError
from ..store.protocol import PredicateRecord, Row, WriteTx

__all__ = ["CandidateBuilder", "FACT_KEYS"]

FACT_KEYS = frozenset(
    {"subject", "predicate", "object", "valid_from", "valid_to", "confidence", "source", "episode_id",
     "properties", "supersede", "literal"}
)


class CandidateBuilder:
    def __init__(self, tx: WriteTx, ns_id: int, tz: _dt.tzinfo) -> None:
        self.tx = tx
        self.ns = ns_id
        self.tz = tz
        self._entities: dict[str, int] = {}
        self._preds: dict[str, PredicateRecord] = {}
        self._times: dict[tuple[object, str], tuple[int, int]] = {}
        self._ids = id_block()

    def entity(self, name: object, what: str) -> int:
        if type(name) is str:
            eid = self._entities.get(name)
            if eid is not None:
                return eid
        key = normalize_key(name, what)
        tx = self.tx
        eid = tx.entity_id(self.ns, key)
        if eid is None:
            assert isinstance(name, str)
            eid = tx.create_entity(self.ns, key, name.strip(), None, None)
        self._entities[name] = eid  # type: ignore[index]
        return eid

    def predicate(self, name: object) -> PredicateRecord:
        if type(name) is str:
            rec = self._preds.get(name)
            if rec is not None:
                return rec
        key = normalize_key(name, "predicate")
        rec = self.tx.predicate(self.ns, key)
        if rec is None:
            assert isinstance(name, str)
            rec = self.tx.create_predicate(self.ns, key, name.strip())
        self._preds[name] = rec  # type: ignore[index]
        return rec

    def time(self, value: object, field: str) -> tuple[int, int]:
        cache_key: tuple[object, str] | None = (value, field)
        try:
            got = self._times.get(cache_key)  # type: ignore[arg-type]
        except TypeError:  # unhashable: let parse_time report it
            cache_key, got = None, None
        if got is not None:
            return got
        tp = parse_time(value, field, self.tz)
        out = (tp.us, int(tp.precision))
        if cache_key is not None and not isinstance(value, _dt.datetime):
            self._times[cache_key] = out
        return out

    def build(self, item: Mapping[str, Any]) -> tuple[Row, bool]:
        """Validate one request; returns the candidate row and whether the
        write supersedes other values of (subject, predicate)."""
        if not FACT_KEYS.issuperset(item):
            unknown = set(item) - FACT_KEYS
            raise InvalidInputError(f"unknown fact field(s): {', '.join(sorted(unknown))}")
        get = item.get
        subject, predicate, obj = get("subject"), get("predicate"), get("object")
        if subject is None or predicate is None or obj is None:
            missing = [k for k in ("subject", "predicate", "object") if get(k) is None]
            raise InvalidInputError(f"a fact needs {', '.join(repr(m) for m in missing)}")
        ents = self._entities
        subject_id = ents.get(subject) if type(subject) is str else None
        if subject_id is None:
            subject_id = self.entity(subject, "subject")
        pred = self._preds.get(predicate) if type(predicate) is str else None
        if pred is None:
            pred = self.predicate(predicate)
        literal = get("literal")
        if literal is not None and literal is not False and literal is not True:
            check_bool(literal, "literal")
        if type(obj) is str and not literal:
            object_id = ents.get(obj)
            if object_id is None:
                object_id = self.entity(obj, "object")
            object_lit = None
        else:
            object_id, object_lit = None, encode_literal(obj, self.tz)
        times = self._times
        vf_raw, vt_raw = get("valid_from"), get("valid_to")
        if vf_raw is None:
            vf, vf_prec = MIN_US, 0
        else:
            got = times.get((vf_raw, "valid_from")) if type(vf_raw) is str else None
            vf, vf_prec = got if got is not None else self.time(vf_raw, "valid_from")
        if vt_raw is None:
            vt, vt_prec = MAX_US, 0
        else:
            got = times.get((vt_raw, "valid_to")) if type(vt_raw) is str else None
            vt, vt_prec = got if got is not None else self.time(vt_raw, "valid_to")
        if vt <= vf:
            raise InvalidIntervalError(
                f"valid_to ({vt_raw}) must be after valid_from ({vf_raw}): intervals are half-open [from, to)"
            )
        confidence = get("confidence", 1.0)
        if type(confidence) is not float or confidence != 1.0:
            if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0:
                raise InvalidInputError(f"confidence must be a number between 0 and 1, not {confidence!r}")
        source = get("source")
        if source is not None:
            check_text(source, "source", MAX_SOURCE_CHARS)
        episode_id = get("episode_id")
        if episode_id is not None:
            check_text(episode_id, "episode_id", MAX_ID_CHARS)
        supersede = get("supersede")
        if supersede is None:
            single = pred.cardinality == "one"
        else:
            if not isinstance(supersede, bool):
                raise InvalidInputError(f"supersede must be True, False or None, not {supersede!r}")
            single = supersede
            if not single and pred.cardinality == "one":
                raise InvalidInputError(
                    f"predicate {pred.name!r} is single-valued; supersede=False would leave two values valid at once"
                )
        props = get("properties")
        row = Row(
            None, next(self._ids), 1, self.ns, subject_id, pred.id, object_id, object_lit,
            vf, vf_prec, vt, vt_prec, self.tx.now, MAX_US, float(confidence), source, episode_id,
            None if props is None else dump_props(props),
        )
        return row, single
