"""Entities, aliases, merges and predicate declarations: the identity half of
:class:`~chronomem.Memory`. Names resolve through keys
(:mod:`chronomem.core.names`); a merge rewrites the folded entity's facts as new
system-time versions and is recorded as an operation that :meth:`unmerge`
reverses.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Mapping, Sequence

from ..core.codec import dump_props, load_props
from ..core.ids import new_id
from ..core.limits import MAX_ENTITY_TYPE_CHARS, MAX_REASON_CHARS, check_text
from ..core.models import Entity, Predicate
from ..core.names import normalize_key
from ..core.time import MAX_US, from_us
from ..core.version import CloseKind
from ..errors import (
    AliasConflictError,
    EntityNotFoundError,
    InvalidInputError,
    PredicateNotFoundError,
)
from ..store.protocol import EntityRecord, PredicateRecord, WriteTx
from .scope import Scope
from .suggest import unknown_entity
from .unit_of_work import writing

__all__ = ["Identity", "local_merge_payload", "portable_merge_payload", "restore_merge"]

class Identity:
    """Entities, aliases, merges and predicates of one namespace."""

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    def _entity_model(self, rec: EntityRecord) -> Entity:
        return Entity(
            id=rec.id, name=rec.name, key=rec.key, type=rec.type, properties=load_props(rec.properties),
            aliases=rec.aliases, namespace=self._scope.namespace, created_at=from_us(rec.created_at),
        )

    def entity(self, name: str) -> Entity:
        """The entity ``name`` (or an alias) resolves to. Raises
        :class:`EntityNotFoundError` naming the close names it may mean."""
        scope = self._scope
        eid = scope.entity_id(name)
        if eid is None:
            raise self.unknown(name)
        rec = scope.store.entity(eid)
        assert rec is not None
        return self._entity_model(rec)

    def unknown(self, name: str) -> EntityNotFoundError:
        """The error for ``name`` naming no entity, with "did you mean"."""
        scope = self._scope
        return unknown_entity(scope.store, scope.ns_id, scope.namespace, name)

    def entities(self) -> list[Entity]:
        return [self._entity_model(r) for r in self._scope.store.entities(self._scope.ns_id)]

    def set_entity(self, name: str, *, type: str | None = None, properties: Mapping[str, Any] | None = None) -> Entity:
        """Create or update an entity's type and properties."""
        if type is not None:
            if not isinstance(type, str):
                raise InvalidInputError(f"entity type must be a string, not {type!r}")
            check_text(type, "entity type", MAX_ENTITY_TYPE_CHARS)
        props = dump_props(dict(properties) if isinstance(properties, Mapping) else properties)
        with writing(self._scope) as uow:
            uow.tx.update_entity(uow.entity(name), type, props)
        return self.entity(name)

    def alias(self, name: str, alias: str) -> Entity:
        """Make ``alias`` resolve to the entity ``name`` (created if missing)."""
        akey = normalize_key(alias, "alias")
        with writing(self._scope) as uow:
            tx = uow.tx
            eid = uow.entity(name)
            other = tx.entity_id(self._scope.ns_id, akey)
            if other is not None and other != eid:
                raise AliasConflictError(
                    f"{alias!r} already names another entity; use merge({name!r}, {alias!r}) to fold it into {name!r}"
                )
            if other is None:
                tx.add_entity_key(self._scope.ns_id, akey, eid, alias.strip())
        return self.entity(name)

    def merge(self, keep: str, fold: str) -> str:
        """Fold entity ``fold`` into ``keep``: its facts move to ``keep`` (new
        system-time versions, so ``known_at`` before the merge still sees two
        entities) and its names become aliases. Returns an operation id for
        :meth:`unmerge`."""
        op_id = new_id()
        with writing(self._scope) as uow:
            tx = uow.tx
            keep_id = tx.entity_id(self._scope.ns_id, normalize_key(keep, "entity"))
            fold_id = tx.entity_id(self._scope.ns_id, normalize_key(fold, "entity"))
            if keep_id is None:
                raise self.unknown(keep)
            if fold_id is None:
                raise self.unknown(fold)
            if keep_id == fold_id:
                raise InvalidInputError(f"{keep!r} and {fold!r} are already the same entity")
            work = uow.work
            for row in tx.believed_rows_touching_entity(fold_id):
                live = work.find_believed(row.fact_id, row.subject_id, row.predicate_id)
                if live is None:
                    continue
                cand = live.copy(
                    subject_id=keep_id if live.subject_id == fold_id else live.subject_id,
                    object_id=keep_id if live.object_id == fold_id else live.object_id,
                    version=live.version + 1,
                )
                work.place(cand, single=self._scope.single_valued(live.predicate_id), keep=live)
            closed = [rowid for rowid, _kind, _by in work.closes]
            work.closes = [(rowid, CloseKind.MERGED.value, op_id) for rowid, _k, _b in work.closes]
            uow.flush()
            rec = self._scope.store.entity(fold_id)
            keys = tx.move_entity_keys(fold_id, keep_id)
            tx.add_entity_key(self._scope.ns_id, normalize_key(fold, "entity"), keep_id, rec.name if rec else fold)
            payload = {"keep": keep_id, "fold": fold_id, "keys": keys, "closed": closed}
            tx.record_operation(op_id, self._scope.ns_id, "merge", json.dumps(payload))
        return op_id

    def unmerge(self, op_id: str) -> None:
        """Undo :meth:`merge`: the folded entity gets its names back and every
        fact version the merge replaced is believed again (as new versions)."""
        with writing(self._scope) as uow:
            tx = uow.tx
            op = tx.operation(op_id)
            if op is None or op[0] != "merge":
                raise InvalidInputError(f"no merge operation with id {op_id!r}")
            if op[2] is not None:
                raise InvalidInputError(f"merge {op_id} was already undone")
            payload = json.loads(op[1])
            work = uow.work
            closed_rows = [r for r in tx.rows_closed_by(self._scope.ns_id, op_id) if r.rowid in set(payload["closed"])]
            for prior in closed_rows:
                versions = tx.rows_of_fact(prior.fact_id)
                for v in versions:
                    if v.system_to == MAX_US:
                        live = work.find_believed(v.fact_id, v.subject_id, v.predicate_id)
                        if live is not None:
                            work.close(work.group(v.subject_id, v.predicate_id), live, CloseKind.UNMERGED, op_id)
            for prior in closed_rows:
                versions = tx.rows_of_fact(prior.fact_id)
                cand = prior.copy(version=max(v.version for v in versions) + 1 + len(work.new_rows))
                work.insert(work.group(prior.subject_id, prior.predicate_id), cand)
            uow.flush()
            tx.set_entity_keys(self._scope.ns_id, payload["keys"], payload["fold"])
            tx.mark_operation_undone(op_id)

    def define_predicate(
        self,
        name: str,
        cardinality: str = "many",
        inverse: str | None = None,
        aliases: Sequence[str] = (),
        description: str | None = None,
    ) -> Predicate:
        """Declare a predicate: ``"one"`` (single-valued: a new value supersedes
        the old) or ``"many"``. Aliases resolve to it on reads and writes."""
        if cardinality not in ("one", "many"):
            raise InvalidInputError(f"cardinality must be 'one' or 'many', not {cardinality!r}")
        if description is not None:
            check_text(description, "description", MAX_REASON_CHARS)
        key = normalize_key(name, "predicate")
        if isinstance(aliases, str):
            aliases = [aliases]
        alias_keys = [(normalize_key(a, "predicate alias"), a.strip()) for a in aliases]
        inverse_name = inverse.strip() if inverse else None
        if inverse is not None:
            normalize_key(inverse, "inverse")
        with self._scope.store.write() as tx:
            for akey, aname in alias_keys:
                other = tx.predicate(self._scope.ns_id, akey)
                if other is not None and other.key != key:
                    raise AliasConflictError(f"{aname!r} already names predicate {other.name!r}")
            rec = tx.define_predicate(self._scope.ns_id, key, name.strip(), cardinality, inverse_name, description,
                                      alias_keys)
        return self._predicate_model(rec)

    @staticmethod
    def _predicate_model(rec: PredicateRecord) -> Predicate:
        card: Literal["one", "many"] = "one" if rec.cardinality == "one" else "many"
        return Predicate(
            name=rec.name, key=rec.key, cardinality=card, inverse=rec.inverse, aliases=rec.aliases,
            description=rec.description, declared=rec.declared,
        )

    def predicates(self) -> list[Predicate]:
        return [self._predicate_model(r) for r in self._scope.store.predicates(self._scope.ns_id)]

    def predicate(self, name: str) -> Predicate:
        rec = self._scope.predicate(name)
        if rec is None:
            raise PredicateNotFoundError(f"no predicate named {name!r}")
        return self._predicate_model(rec)


# -- merge undo records between stores -------------------------------------
# A merge's payload names entities by id and the versions it closed by rowid,
# both local to one store. Exports and copies carry it in a portable form:
# entities by key, closed versions as [fact id, version] pairs.
_NO_ENTITY = 0  # no entity has this id: an erased entity of a carried merge


def portable_merge_payload(
    payload: str, entity_keys: Mapping[int, str], versions: Mapping[int, tuple[str, int]]
) -> dict[str, Any]:
    """The payload of a merge with its store-local ids replaced: ``keep`` /
    ``fold`` by entity key (``None`` for an erased entity), ``closed`` rowids
    by ``[fact_id, version]`` (erased versions dropped). ``entity_keys`` maps
    entity ids to keys, ``versions`` rowids to (fact id, version)."""
    data: dict[str, Any] = json.loads(payload)
    out = dict(data)
    for name in ("keep", "fold"):
        out[name] = entity_keys.get(int(data[name]))
    out["closed"] = [list(versions[r]) for r in data.get("closed", ()) if r in versions]
    return out


def local_merge_payload(
    data: Mapping[str, Any], entity_ids: Mapping[str, int], rowids: Mapping[tuple[str, int], int]
) -> str:
    """The inverse of :func:`portable_merge_payload` in the destination store:
    ``entity_ids`` maps keys to its entity ids and ``rowids`` (fact id,
    version) to its rowids. Raises :class:`InvalidInputError` for a malformed
    payload or one naming an entity or version that is not there."""
    out = dict(data)
    for name in ("keep", "fold"):
        key = data.get(name)
        if key is None:
            out[name] = _NO_ENTITY
        elif isinstance(key, str) and key in entity_ids:
            out[name] = entity_ids[key]
        else:
            raise InvalidInputError(f"the merge's {name} entity {key!r} is not defined")
    keys = data.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise InvalidInputError("a merge's keys must be a list of name keys")
    closed = data.get("closed")
    if not isinstance(closed, list):
        raise InvalidInputError("a merge's closed versions must be a list of [fact id, version] pairs")
    local: list[int] = []
    for pair in closed:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], int) and not isinstance(pair[1], bool)):
            raise InvalidInputError(f"a merge's closed version must be a [fact id, version] pair, not {pair!r}")
        rowid = rowids.get((pair[0], pair[1]))
        if rowid is None:
            raise InvalidInputError(f"fact {pair[0]} version {pair[1]} is not a version the merge closed")
        local.append(rowid)
    out["closed"] = local
    return json.dumps(out)


def restore_merge(tx: WriteTx, ns_id: int, op_id: str, at: int, undone_at: int | None,
                  portable: Mapping[str, Any], entity_ids: Mapping[str, int]) -> None:
    """Write a carried merge (export/import, copy) once the versions it
    closed are in the destination: its payload's keys and (fact id, version)
    pairs become this store's ids (see :func:`local_merge_payload`)."""
    rowids = {(r.fact_id, r.version): r.rowid for r in tx.rows_closed_by(ns_id, op_id) if r.rowid is not None}
    tx.insert_operation(op_id, ns_id, "merge", at, local_merge_payload(portable, entity_ids, rowids), undone_at)
