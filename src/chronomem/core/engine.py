"""The write engine: where a new fact version goes on the valid-time axis.

Pure logic over :class:`~chronomem.core.version.Row` objects, independent of the
backend. One :class:`TxWork` lives for one write transaction: it loads the
believed versions of each (subject, predicate) once, applies every write of the
transaction in order, and at the end hands the store the versions to close and
the versions to insert. A version created and replaced inside the same
transaction is never written (it would have an empty system interval); one
already handed to the store by an earlier flush of the same transaction (its
``system_from`` is the transaction's time) is deleted again (``deletes``).

Rules (``docs/concepts/time.md`` states them for users):

* same (subject, predicate, object): a new interval contained in a believed one
  is a no-op that returns the existing fact; one that overlaps or touches
  believed intervals coalesces with them into one fact covering the union (a
  new version of the oldest fact); a disjoint one is a separate fact.
* single-valued (or ``supersede=True``): other values that started before the
  new one are closed where it starts (``end_kind`` ``superseded``,
  ``invalidated_by`` = the new fact);
  a value that starts exactly where the new one starts is replaced; and the new
  fact ends where the next later value begins (out-of-order arrival).

A version whose end was cut short where no closed version records the end it
was given (rule 1, or a cut in the transaction that wrote it) keeps that end
in ``stated_to``, so a retraction or correction of the cutter can give it back.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import Callable, Collection, Iterable

from .time import MAX_US
from .version import CloseKind, ObjKey, Row

__all__ = ["GroupState", "TxWork", "same_content"]


def _vf(r: Row) -> int:
    return r.valid_from


class GroupState:
    """Believed versions of one (subject, predicate), indexed by object,
    each list sorted by ``valid_from``."""

    __slots__ = ("by_obj",)

    def __init__(self, rows: Iterable[Row]) -> None:
        self.by_obj: dict[ObjKey, list[Row]] = {}
        if not rows:
            return
        for r in rows:
            self.by_obj.setdefault(r.okey, []).append(r)
        for lst in self.by_obj.values():
            lst.sort(key=_vf)

    def add(self, r: Row) -> None:
        key = (r.object_id, r.object_lit)
        lst = self.by_obj.get(key)
        if lst is None:
            self.by_obj[key] = [r]
        elif lst[-1].valid_from <= r.valid_from:
            lst.append(r)  # arrivals in time order: the common case
        else:
            insort(lst, r, key=_vf)

    def remove(self, r: Row) -> None:
        lst = self.by_obj[r.okey]
        # the list is sorted by valid_from: look where r's start sorts first
        i = bisect_left(lst, r.valid_from, key=_vf)
        while i < len(lst) and lst[i] is not r and lst[i].valid_from == r.valid_from:
            i += 1
        if i < len(lst) and lst[i] is r:
            del lst[i]
        else:  # pragma: no cover - r's start changed after it was added
            for i, x in enumerate(lst):
                if x is r:
                    del lst[i]
                    break
        if not lst:
            del self.by_obj[r.okey]

    def rows(self) -> list[Row]:
        return [r for lst in self.by_obj.values() for r in lst]


class TxWork:
    """Accumulates the effects of the writes of one transaction."""

    def __init__(self, now: int, loader: Callable[[int, int], list[Row]],
                 history: Callable[[str], list[Row]] | None = None) -> None:
        self.now = now
        self._loader = loader
        self._history = history  # every stored version of a fact, by version (where cut ends are recorded)
        self.groups: dict[tuple[int, int], GroupState] = {}
        self.closes: list[tuple[int, str, str | None]] = []
        # rowids of versions an earlier flush of this transaction stored and
        # this work replaced: never believed by anyone, so deleted, not closed
        self.deletes: list[int] = []
        # the facts of versions above 1 that earlier flushes of this
        # transaction stored (a new version names a version above 1 only for
        # a fact stored before the transaction): :meth:`drop_noops` then looks
        # there too, lists in ``reopens`` the closed versions it believes
        # again and deletes (``deletes``) the stored ones that said the same
        self.flushed_facts: set[str] = set()
        self.reopens: list[int] = []
        self.new_rows: dict[int, Row] = {}  # id(row) -> row, insertion ordered
        self.closed_fact_ids: set[str] = set()
        self.closed_rows: dict[int, Row] = {}
        # extra evidence to record: (fact_id, source, episode_id)
        self.sources: list[tuple[str, str | None, str | None]] = []
        # fact ids folded into another fact by coalescing in this transaction
        self.redirects: dict[str, str] = {}
        # id(restored row, not yet stored) -> the stored version it replaced
        # (closed ``restored``): what closes the restored row closes that one
        self._restored: dict[int, Row] = {}

    def _stored(self, r: Row) -> bool:
        """Whether ``r`` was stored before this transaction (else it is this
        transaction's: not stored yet, or stored by an earlier flush of it)."""
        return r.rowid is not None and r.system_from != self.now

    def _cite(self, target: Row, source: str | None, episode_id: str | None) -> None:
        if (source or episode_id) and (source, episode_id) != (target.source, target.episode_id):
            self.sources.append((target.fact_id, source, episode_id))

    # -- working set ------------------------------------------------------
    def group(self, subject_id: int, predicate_id: int) -> GroupState:
        key = (subject_id, predicate_id)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = GroupState(self._loader(subject_id, predicate_id))
        return g

    def close(self, g: GroupState, r: Row, kind: CloseKind, by: str | None, *, replaced: bool = False) -> None:
        """Stop believing ``r`` (it leaves the working set).

        ``replaced``: a later value took ``r``'s place (same start). A restored
        ``r`` this transaction made is never stored, so when another fact
        replaces it or it is folded into another fact, the stored version it
        came from is recorded as closed that way instead of ``restored``: a
        retraction of that fact finds it there."""
        g.remove(r)
        if r.rowid is not None and r.system_from == self.now:
            self.deletes.append(r.rowid)  # flushed earlier in this transaction: it never was
        elif r.rowid is None:
            self.new_rows.pop(id(r), None)
            origin = self._restored.pop(id(r), None)
            folded = kind == CloseKind.COALESCED and by != r.fact_id
            if (replaced or folded) and origin is not None and origin.rowid is not None:
                self.closes = [(rowid, kind.value, by) if rowid == origin.rowid else (rowid, k, b)
                               for rowid, k, b in self.closes]
        else:
            self.closes.append((r.rowid, kind.value, by))  # the store gets the plain value
            self.closed_rows[r.rowid] = r
            self.closed_fact_ids.add(r.fact_id)

    def insert(self, g: GroupState, r: Row) -> None:
        r.rowid = None
        r.system_from = self.now
        r.system_to = MAX_US
        r.close_kind = None
        r.closed_by = None
        g.add(r)
        self.new_rows[id(r)] = r

    def successor(self, r: Row) -> Row:
        """A fresh version row of the same fact, to be inserted."""
        if not self._stored(r):
            return r.copy(rowid=None)
        return r.copy(version=r.version + 1)

    # -- the placement rule ----------------------------------------------
    def place(self, cand: Row, *, single: bool, keep: Row | None = None,
              keep_kind: CloseKind = CloseKind.CORRECTED, spare: Collection[str] = ()) -> tuple[Row, str]:
        """Apply one write. ``cand`` carries the new fact's id and interval.

        ``keep`` is the believed version being rewritten (a correction): it is
        closed first, and the fact keeps its id. ``spare``: ids of other facts
        the single-valued rules leave alone (values a restored version
        coexisted with before it was cut). Returns the resulting version
        and a status: ``"inserted"``, ``"existing"`` or ``"coalesced"``.
        """
        if keep is not None:
            kg = self.group(keep.subject_id, keep.predicate_id)
            if any(x is keep for x in kg.by_obj.get(keep.okey, ())):
                self.close(kg, keep, keep_kind, None)
                if keep_kind == CloseKind.RESTORED and keep.rowid is not None:
                    self._restored[id(cand)] = keep
        g = self.group(cand.subject_id, cand.predicate_id)
        if not g.by_obj and keep is None:
            # nothing believed for (subject, predicate): a plain insert (insert()
            # also resets the system-time fields of a restored, copied version)
            self.insert(g, cand)
            return cand, "inserted"
        okey = (cand.object_id, cand.object_lit)
        if not single and keep is None and okey not in g.by_obj:
            # a multi-valued predicate and a new object: nothing to merge with
            self.insert(g, cand)
            return cand, "inserted"
        lo, hi, hi_prec = cand.valid_from, cand.valid_to, cand.valid_to_prec
        others: list[Row] = []
        if single:
            others = [r for k, lst in g.by_obj.items() if k != okey for r in lst if r.fact_id not in spare]
            cut_by: str | None = None
            for r in others:
                if lo < r.valid_from < hi:
                    hi, hi_prec, cut_by = r.valid_from, r.valid_from_prec, r.fact_id
            if cut_by is not None:
                _set_end(cand, CloseKind.SUPERSEDED.value, cut_by, None)
                if cand.stated_to is None:  # the end asked for, for a restore to give back
                    cand.stated_to, cand.stated_to_prec = cand.valid_to, cand.valid_to_prec
        same = g.by_obj.get(okey) or []
        if same and keep is None:
            # the last believed interval starting at or before lo may contain it
            j = bisect_right(same, lo, key=_vf) - 1
            if j >= 0 and same[j].valid_to >= hi:
                self._cite(same[j], cand.source, cand.episode_id)
                return same[j], "existing"
        touching: list[Row] = []
        k = bisect_right(same, hi, key=_vf) - 1
        while k >= 0 and same[k].valid_to >= lo:
            touching.append(same[k])
            k -= 1
        # the oldest fact's id survives; a fact placed again (a restored version) counts too
        pool = touching + [cand] if cand.version > 1 else touching
        if touching and keep is None:
            survivor = min(pool, key=lambda r: r.fact_id).fact_id
        else:
            survivor = cand.fact_id
        for r in others:
            if r.valid_from < hi and lo < r.valid_to:
                if r.valid_from < lo:
                    self.truncate(r, lo, cand.valid_from_prec, survivor, kind=CloseKind.SUPERSEDED)
                else:
                    self.close(g, r, CloseKind.SUPERSEDED, survivor, replaced=True)
        cand.valid_to, cand.valid_to_prec = hi, hi_prec
        if not touching:
            self.insert(g, cand)
            return cand, "inserted"
        touching.reverse()
        if keep is not None:
            base = cand
        else:
            base = min(pool, key=lambda r: r.fact_id)
        merged = self.successor(base) if base is not cand else cand
        first = min(touching, key=_vf)
        last = max(touching, key=lambda r: r.valid_to)
        if first.valid_from < lo:
            merged.valid_from, merged.valid_from_prec = first.valid_from, first.valid_from_prec
        else:
            merged.valid_from, merged.valid_from_prec = cand.valid_from, cand.valid_from_prec
        if last.valid_to > hi:
            merged.valid_to, merged.valid_to_prec = last.valid_to, last.valid_to_prec
        else:
            merged.valid_to, merged.valid_to_prec = cand.valid_to, cand.valid_to_prec
        # the union ends where its last part ends, for that part's reason
        if last.valid_to > hi:
            _set_end(merged, last.end_kind, last.invalidated_by, last.end_reason)
            merged.stated_to, merged.stated_to_prec = last.stated_to, last.stated_to_prec
        elif base is not cand:
            _set_end(merged, cand.end_kind, cand.invalidated_by, cand.end_reason)
            merged.stated_to, merged.stated_to_prec = cand.stated_to, cand.stated_to_prec
        self._merge_stated_end(merged, [cand, *touching])
        merged.confidence = max([cand.confidence] + [r.confidence for r in touching])
        if merged is not base and id(base) in self._restored:  # a restored row goes on as the union
            self._restored[id(merged)] = self._restored.pop(id(base))
        for r in touching:
            self.close(g, r, CloseKind.COALESCED, merged.fact_id)
            if r.fact_id != merged.fact_id:
                self._cite(merged, r.source, r.episode_id)
                self.redirects[r.fact_id] = merged.fact_id
        if base is not cand:
            self._cite(merged, cand.source, cand.episode_id)
        self.insert(g, merged)
        return merged, "coalesced"

    def _merge_stated_end(self, merged: Row, parts: list[Row]) -> None:
        """The union of coalesced parts is one statement: where several parts
        end at its end, the one given the latest end before a value cut it
        decides (cut there, with that end to give back), so a retraction of the
        cutter gives the union the end its longest part asked for.

        A stored part of the union's own fact whose earlier end is in its
        history (the version the cutter closed) wins a tie, and the union then
        names no ``stated_to``: that version also holds why it ended there (a
        cut by a value that may be taken back later too), which a copied end
        would lose."""
        end = merged.valid_to
        best: Row | None = None
        best_end, best_prec = end, merged.valid_to_prec
        best_traced = False
        for p in parts:
            if p.valid_to != end or p.end_kind != CloseKind.SUPERSEDED.value or p.invalidated_by is None:
                continue
            pre = self._pre_cut(p)
            if pre is None:
                continue
            traced = p.stated_to is None and self._stored(p) and p.fact_id == merged.fact_id
            if pre[0] > best_end or (best is not None and pre[0] == best_end and traced and not best_traced):
                best, (best_end, best_prec), best_traced = p, pre, traced
        if best is not None:
            _set_end(merged, CloseKind.SUPERSEDED.value, best.invalidated_by, None)
            if best_traced:
                merged.stated_to = merged.stated_to_prec = None
            else:
                merged.stated_to, merged.stated_to_prec = best_end, best_prec

    def _pre_cut(self, r: Row) -> tuple[int, int] | None:
        """The end ``r`` had before the value ``r.invalidated_by`` cut it, if recorded."""
        if r.stated_to is not None and r.stated_to_prec is not None:
            return r.stated_to, r.stated_to_prec
        if not self._stored(r) or self._history is None:
            return None
        history, by, below = self._history(r.fact_id), r.invalidated_by, r.version
        found: tuple[int, int] | None = None
        while True:  # back past earlier cuts by the same value (its later parts cut again)
            before = [v for v in history
                      if v.version < below and v.close_kind == CloseKind.SUPERSEDED and v.closed_by == by]
            if not before:
                return found
            prev = max(before, key=lambda v: v.version)
            if prev.stated_to is not None and prev.stated_to_prec is not None:
                return prev.stated_to, prev.stated_to_prec
            found, below = (prev.valid_to, prev.valid_to_prec), prev.version
            if prev.end_kind != CloseKind.SUPERSEDED.value or prev.invalidated_by != by:
                return found

    def truncate(self, r: Row, end: int, end_prec: int, by: str | None = None,
                 kind: CloseKind = CloseKind.INVALIDATED, reason: str | None = None) -> Row:
        """Close ``r``'s valid interval at ``end`` (a new version): cut by the
        fact ``by`` (``kind`` ``SUPERSEDED``) or invalidated, for the free-text
        ``reason`` if one was given. The closed version's ``closed_by`` names
        the same cause (``CloseKind.cause``).

        A stored ``r`` keeps its end in its closed version; one this
        transaction made and never stored has none, so a cut by a fact keeps
        the end it was given in ``stated_to``."""
        g = self.group(r.subject_id, r.predicate_id)
        nxt = self.successor(r)
        superseded = kind == CloseKind.SUPERSEDED
        self.close(g, r, kind, by if superseded else reason)
        if not superseded or self._stored(r):
            nxt.stated_to = nxt.stated_to_prec = None
        elif nxt.stated_to is None:
            nxt.stated_to, nxt.stated_to_prec = r.valid_to, r.valid_to_prec
        nxt.valid_to, nxt.valid_to_prec = end, end_prec
        _set_end(nxt, kind.value, by if superseded else None, None if superseded else reason)
        self.insert(g, nxt)
        return nxt

    def close_version(self, r: Row, kind: CloseKind, by: str | None) -> None:
        """Stop believing one version (it leaves the working set)."""
        self.close(self.group(r.subject_id, r.predicate_id), r, kind, by)

    def retract(self, r: Row, reason: str | None) -> None:
        g = self.group(r.subject_id, r.predicate_id)
        self.close(g, r, CloseKind.RETRACTED, reason)

    def find_believed(self, fact_id: str, subject_id: int, predicate_id: int) -> Row | None:
        g = self.group(subject_id, predicate_id)
        for lst in g.by_obj.values():
            for r in lst:
                if r.fact_id == fact_id:
                    return r
        return None

    def final_id(self, fact_id: str) -> str:
        """The id a fact ended up under after this transaction's coalescing."""
        seen = 0
        while fact_id in self.redirects and seen < 1000:
            fact_id = self.redirects[fact_id]
            seen += 1
        return fact_id

    def result_rows(self) -> list[Row]:
        return list(self.new_rows.values())

    def drop_noops(self) -> None:
        """Forget a close + insert pair that leaves a fact exactly as it was
        (e.g. a value restored and cut again at the same instant). Called once,
        at the transaction's last flush: after earlier flushes of it (see
        ``flushed_facts``) either half may be stored already; the closed
        version is then believed again (``reopens``) and the stored new one
        deleted (``deletes``)."""
        news: list[tuple[int | None, Row]] = list(self.new_rows.items())
        by_fact: dict[str, list[Row]] = {}
        for r in self.closed_rows.values():
            by_fact.setdefault(r.fact_id, []).append(r)
        keep_closes = {rowid for rowid, _k, _b in self.closes}
        restored = {rowid for rowid, k, _b in self.closes if k == CloseKind.RESTORED.value}
        if self.flushed_facts and self._history is not None:
            deleted = set(self.deletes)
            for fid in sorted(self.flushed_facts):
                for v in self._history(fid):
                    if v.rowid is None or v.rowid in self.closed_rows or v.rowid in deleted:
                        continue
                    if v.system_to == self.now:  # closed by an earlier flush
                        by_fact.setdefault(fid, []).append(v)
                        keep_closes.add(v.rowid)
                        if v.close_kind == CloseKind.RESTORED:
                            restored.add(v.rowid)
                    elif v.system_from == self.now and v.system_to == MAX_US:  # stored by one, believed
                        news.append((None, v))
        if not news or not keep_closes:
            return
        for key, new in news:
            for old in by_fact.get(new.fact_id, ()):
                if old.rowid in keep_closes and (same_content(old, new) or (
                        old.rowid in restored and _same_restored(old, new))):
                    keep_closes.discard(old.rowid)
                    if old.rowid not in self.closed_rows:  # closed by an earlier flush
                        assert old.rowid is not None
                        self.reopens.append(old.rowid)
                    if key is None:  # (the last flush: the working set is done with)
                        assert new.rowid is not None
                        self.deletes.append(new.rowid)
                        break
                    del self.new_rows[key]
                    g = self.groups.get((new.subject_id, new.predicate_id))
                    if g is not None:
                        g.remove(new)
                        g.add(old)
                    break
        self.closes = [c for c in self.closes if c[0] in keep_closes]


_CONTENT = ("subject_id", "predicate_id", "object_id", "object_lit", "valid_from", "valid_from_prec",
            "valid_to", "valid_to_prec",
            "confidence", "source", "episode_id", "properties", "invalidated_by", "end_kind", "end_reason",
            "stated_to", "stated_to_prec")


def _set_end(r: Row, kind: str | None, by: str | None, reason: str | None) -> None:
    """Give ``r`` the cause of its valid end (the three fields travel together)."""
    r.end_kind, r.invalidated_by, r.end_reason = kind, by, reason


def same_content(a: Row, b: Row) -> bool:
    """Whether two versions say the same thing (a write of ``b`` over ``a`` would change nothing)."""
    return all(getattr(a, name) == getattr(b, name) for name in _CONTENT)


def _same_restored(old: Row, new: Row) -> bool:
    """A value given back and cut again where it was: ``new`` may name the end
    it was given in ``stated_to`` where ``old`` leaves it to the version its
    cutter closed (the same end), so ``old`` says the same thing."""
    return (old.stated_to is None and old.end_kind == CloseKind.SUPERSEDED.value
            and all(getattr(old, name) == getattr(new, name) for name in _CONTENT[:-2]))
