"""One write transaction's work, written once: the store transaction, the
candidate builder, the write engine's :class:`~chronomem.core.engine.TxWork`
and the flush that hands the engine's result to the store.

Every write of every service runs as::

    with writing(scope) as uow:
        cand, single = uow.build(item)
        uow.work.place(cand, single=single)
    # committed; flushed first

The engine's work starts at its first use, so a writer that locks its
(subject, predicate) groups first (which may move ``tx.now``) sees the time
its versions will carry.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

from ..core.engine import TxWork
from ..core.version import CloseKind, Row
from ..errors import FactNotFoundError, WriteOutcomeUnknownError
from ..store.protocol import WriteTx
from .candidates import CandidateBuilder
from .scope import Scope

__all__ = ["UnitOfWork", "writing"]


class UnitOfWork:
    """The work of one write transaction ``tx`` in ``scope``'s namespace."""

    __slots__ = ("scope", "tx", "_work", "_builder", "written", "recorded_by", "_flushed_subjects",
                 "_flushed_facts")

    def __init__(self, scope: Scope, tx: WriteTx) -> None:
        self.scope = scope
        self.tx = tx
        # who every version this transaction inserts is recorded as, decided
        # once: a version the engine derives from an older one (an invalidation's
        # closed interval, a restored or coalesced value) is this writer's too
        self.recorded_by = scope.recorded_by()
        self._work: TxWork | None = None
        self._builder: CandidateBuilder | None = None
        # the facts this transaction wrote versions of: what a caller must read
        # back when the commit's outcome is unknown (WriteOutcomeUnknownError)
        self.written: list[str] = []
        # subjects of the versions flushed so far while the transaction goes on
        # (add_facts in parts): a new entity's group may hold rows since
        self._flushed_subjects: set[int] = set()
        # facts of the versions above 1 flushed so far (TxWork.flushed_facts)
        self._flushed_facts: set[str] = set()

    @property
    def work(self) -> TxWork:
        """The engine's work for this transaction, started at first use."""
        if self._work is None:
            tx = self.tx
            stored = self._may_have_rows

            def load(subject_id: int, predicate_id: int) -> list[Row]:
                return tx.believed_rows(subject_id, predicate_id) if stored(subject_id) else []

            self._work = TxWork(tx.now, load, tx.rows_of_fact)
            self._work.flushed_facts = self._flushed_facts
        return self._work

    def _may_have_rows(self, subject_id: int) -> bool:
        """Whether the store may hold versions of the subject's groups: not
        for an entity this transaction created, until a flush stored some."""
        return not self.tx.is_new_entity(subject_id) or subject_id in self._flushed_subjects

    def prefetch(self, groups: Iterable[tuple[int, int]]) -> None:
        """The next work will load these (subject, predicate) groups: the
        store may read the believed versions of those it may hold at once."""
        stored = self._may_have_rows
        self.tx.prefetch_believed([g for g in dict.fromkeys(groups) if stored(g[0])])

    @property
    def builder(self) -> CandidateBuilder:
        """Turns write requests into candidate versions (memoizes names and times)."""
        if self._builder is None:
            self._builder = CandidateBuilder(self.tx, self.scope.ns_id, self.scope.tz)
        return self._builder

    def build(self, item: Mapping[str, Any]) -> tuple[Row, bool]:
        """A candidate version for one ``add_fact``-shaped request, and whether it supersedes."""
        return self.builder.build(item)

    def forget_names(self) -> None:
        """Resolve names afresh from now on (the builder's memo dropped):
        :meth:`WriteTx.lock_groups` said they may have changed."""
        self._builder = None

    def entity(self, name: object) -> int:
        """The id of the entity ``name`` names, created if missing."""
        return self.builder.entity(name, "entity")

    def flush(self, *, last: bool = True) -> None:
        """Hand the engine's result to the store: close, insert, add sources.
        Flushing twice writes nothing twice: work begun after a flush (read
        through :attr:`work` again) starts from what the flush wrote.
        ``last=False``: more work of this transaction follows (``add_facts``
        in parts), so a close + insert pair that changes nothing is looked for
        only at the last flush (:meth:`TxWork.drop_noops`), over all of them."""
        work = self._work
        if work is None:
            return
        if last:
            work.drop_noops()
        tx = self.tx
        if work.deletes:
            tx.delete_rows(work.deletes)
        if work.reopens:
            tx.reopen_rows(work.reopens)
        if work.closes:
            tx.close_rows(work.closes)
        rows = work.result_rows()
        if rows:
            by = self.recorded_by
            for r in rows:
                r.recorded_by = by
            tx.insert_rows(rows)
            self.written.extend(r.fact_id for r in rows)
            self._flushed_subjects.update(r.subject_id for r in rows)
            if not last:
                self._flushed_facts.update(r.fact_id for r in rows if r.version > 1)
        if work.sources:
            tx.add_sources(work.sources)
        self._work = None  # more work in this transaction starts from what is now written

    # -- what several writes need ----------------------------------------
    def believed(self, fact_id: str) -> Row:
        """The believed version of ``fact_id`` in this namespace, as this transaction sees it."""
        rows = self.tx.rows_of_fact(fact_id)
        scope = self.scope
        if not rows or rows[0].ns_id != scope.ns_id:
            raise FactNotFoundError(f"no fact with id {fact_id!r} in namespace {scope.namespace!r}")
        live = self.work.find_believed(fact_id, rows[0].subject_id, rows[0].predicate_id)
        if live is None:
            last = rows[-1]
            raise FactNotFoundError(
                f"fact {fact_id} is no longer believed (its last version was {last.close_kind or 'closed'})"
            )
        return live

    def unsupersede(self, fact_id: str, *, then: Row | None = None) -> None:
        """Restore the values that ``fact_id`` had cut short (it was never
        true, or no longer where it was): each gets back the end and the cause
        it had before the cut (past earlier cuts by facts taken back since:
        :meth:`_settle_end`), then is placed again. Two kinds: the versions
        ``fact_id`` closed (placement rule 2 or 3: the closed version holds
        the earlier end), and believed versions it cut on arrival (rule 1: the
        end given is their ``stated_to``).

        ``then``: the corrected version of ``fact_id`` (single-valued) about to
        be placed. Each restored value is cut where it now starts first, or,
        starting there too, left as it is: a value given back only to be cut
        again must not coalesce on the way with a later statement of itself
        (which the cut would then take with it)."""
        tx, work = self.tx, self.work
        single_valued = self.scope.single_valued
        done: set[str] = set()
        # a value cut by this fact more than once: its latest cut holds the
        # end it had just before (and any correction made in between)
        latest: dict[str, Row] = {}
        for closed in tx.rows_closed_by(self.scope.ns_id, fact_id):
            if closed.close_kind == CloseKind.SUPERSEDED:
                prev = latest.get(closed.fact_id)
                if prev is None or prev.version < closed.version:
                    latest[closed.fact_id] = closed
        for closed in sorted(latest.values(), key=lambda r: r.rowid or 0):
            live = work.find_believed(closed.fact_id, closed.subject_id, closed.predicate_id)
            if live is not None and live.invalidated_by != fact_id:
                continue  # changed since: leave it
            versions = tx.rows_of_fact(closed.fact_id)
            if live is None and max(v.version for v in versions) != closed.version:
                continue  # retracted, coalesced or rewritten since: leave it
            version = max(v.version for v in versions) + 1
            if live is None:
                cand = closed.copy(version=version, rowid=None)
            else:
                # the believed version gets back the end it had before the cut;
                # its content stays what it is now (a correction since is kept)
                cand = live.copy(version=version, rowid=None)
                if live.stated_to is None:  # else: given an end since the cut (a correction), cut again
                    _take_end(cand, closed)
            self._settle_end(cand, versions, closed.version)
            done.add(closed.fact_id)
            if then is not None and not self._cut_for(cand, then):
                continue
            # values it coexisted with before the cut stay as they were (e.g.
            # ones written before the predicate was declared single-valued)
            spare = self._coexisting(cand, closed.valid_from, closed.valid_to, closed.system_to)
            work.place(cand, single=single_valued(closed.predicate_id), keep=live,
                       keep_kind=CloseKind.RESTORED, spare=spare)
        for live in self._cut_short_by(fact_id):
            if live.fact_id in done:
                continue
            done.add(live.fact_id)
            versions = tx.rows_of_fact(live.fact_id)
            cand = live.copy(version=max(v.version for v in versions) + 1, rowid=None)
            self._settle_end(cand, versions, live.version)
            if then is not None and not self._cut_for(cand, then):
                continue
            spare = self._coexisting(cand, live.valid_from, live.valid_to, live.system_from)
            work.place(cand, single=single_valued(live.predicate_id), keep=live,
                       keep_kind=CloseKind.RESTORED, spare=spare)

    def _cut_for(self, cand: Row, corrected: Row) -> bool:
        """Cut the restored ``cand`` as ``corrected`` will (placement rules 2
        and 3): it ends where ``corrected`` starts (keeping the end it was
        given). ``False``: it starts there too and is replaced (left as it is)."""
        if ((cand.subject_id, cand.predicate_id) != (corrected.subject_id, corrected.predicate_id)
                or cand.okey == corrected.okey):
            return True
        lo, hi = corrected.valid_from, corrected.valid_to
        for r in self.work.group(cand.subject_id, cand.predicate_id).rows():
            if r.okey != corrected.okey and lo < r.valid_from < hi:
                hi = r.valid_from  # corrected will end there (rule 1)
        if lo < cand.valid_from < hi:
            hi = cand.valid_from
        if not (cand.valid_from < hi and lo < cand.valid_to):
            return True
        if cand.valid_from >= lo:
            return False
        if cand.stated_to is None:
            cand.stated_to, cand.stated_to_prec = cand.valid_to, cand.valid_to_prec
        cand.valid_to, cand.valid_to_prec = lo, corrected.valid_from_prec
        cand.end_kind, cand.invalidated_by, cand.end_reason = CloseKind.SUPERSEDED.value, corrected.fact_id, None
        return True

    def _cut_short_by(self, fact_id: str) -> list[Row]:
        """The believed versions ``fact_id`` cut where no closed version holds
        their earlier end (they carry it in ``stated_to``), in every
        (subject, predicate) group a version of it was in."""
        work = self.work
        groups = {(v.subject_id, v.predicate_id) for v in self.tx.rows_of_fact(fact_id)}
        out: list[Row] = []
        for sid, pid in sorted(groups):
            for lst in work.group(sid, pid).by_obj.values():
                out.extend(r for r in lst if r.invalidated_by == fact_id and r.stated_to is not None
                           and r.end_kind == CloseKind.SUPERSEDED.value)
        out.sort(key=lambda r: (r.valid_from, r.fact_id))
        return out

    def _settle_end(self, cand: Row, history: list[Row], below: int) -> None:
        """Give ``cand`` the end it would have if the facts retracted, erased
        or corrected away since had never been written: while what cut it
        is gone (or, still believed, now starts after that end), step back to
        the end it had before that cut (its ``stated_to``, or the version of
        ``history`` under ``below`` that this cutter closed). Placement then
        cuts it again where a live value begins. A cutter that was itself
        replaced (a later value took its place at its start) still cuts, where
        its last version started: it was not taken back, only displaced."""
        g = self.work.group(cand.subject_id, cand.predicate_id)
        alive: dict[str, int] = {}
        for r in g.rows():
            alive[r.fact_id] = min(r.valid_from, alive.get(r.fact_id, r.valid_from))
        for _ in range(len(history) + 1):
            by = cand.invalidated_by
            if cand.end_kind != CloseKind.SUPERSEDED.value or by is None:
                return
            standing, replaced = self._standing(by, alive, 0)
            if replaced is not None:
                if cand.valid_from < replaced.valid_from:
                    cand.valid_to, cand.valid_to_prec = replaced.valid_from, replaced.valid_from_prec
                return
            if standing is not None and alive[standing] <= cand.valid_to:
                return  # believed: the cut stands (placement moves it to where it now starts)
            if cand.stated_to is not None and cand.stated_to_prec is not None:
                kept = _kept_cut(cand.stated_to, history, below)
                if kept is not None:  # that end was itself a cut, kept through a correction: go on from it
                    _take_end(cand, kept)
                    below = kept.version
                    continue
                cand.valid_to, cand.valid_to_prec = cand.stated_to, cand.stated_to_prec
                cand.stated_to = cand.stated_to_prec = None
                cand.end_kind = cand.invalidated_by = cand.end_reason = None
                return
            before = [v for v in history
                      if v.version < below and v.close_kind == CloseKind.SUPERSEDED and v.closed_by == by]
            if not before:
                return  # nothing records the earlier end (e.g. written before stated ends were kept)
            prev = max(before, key=lambda v: v.version)
            _take_end(cand, prev)
            below = prev.version

    def _standing(self, fact_id: str, alive: dict[str, int], depth: int) -> tuple[str | None, Row | None]:
        """What became of the fact ``fact_id`` that cut a value: the id it is
        believed under in the group ``alive`` maps (following coalescing), or
        its last version if a fact that stands replaced it; ``(None, None)``:
        it is gone (retracted, erased, corrected away, or being taken away)."""
        work = self.work
        for _ in range(1000):
            if fact_id in alive:
                return fact_id, None
            nxt = work.redirects.get(fact_id)
            if nxt is None:
                rows = self.tx.rows_of_fact(fact_id)
                last = rows[-1] if rows else None
                if last is None or last.closed_by is None or last.closed_by == fact_id or depth > 50:
                    return None, None
                if last.close_kind == CloseKind.SUPERSEDED:
                    by, by_replaced = self._standing(last.closed_by, alive, depth + 1)
                    return (None, last) if by is not None or by_replaced is not None else (None, None)
                if last.close_kind != CloseKind.COALESCED:
                    return None, None
                nxt = last.closed_by
            fact_id = nxt
        return None, None  # pragma: no cover - a cycle of coalesces cannot be written

    def _coexisting(self, cand: Row, valid_from: int, valid_to: int, cut_at: int) -> frozenset[str]:
        """Ids of the other believed facts that overlap ``cand`` now and had,
        just before system time ``cut_at``, a believed version overlapping
        ``[valid_from, valid_to)``: values the restored one lived beside
        (written before a predicate was declared single-valued), which the
        restore leaves as they are. Values written since are placed against
        it as usual."""
        g = self.work.group(cand.subject_id, cand.predicate_id)
        out: set[str] = set()
        for r in g.rows():
            if r.fact_id == cand.fact_id or r.fact_id in out:
                continue
            if not (r.valid_from < cand.valid_to and cand.valid_from < r.valid_to):
                continue
            for v in self.tx.rows_of_fact(r.fact_id):
                if (v.system_from < cut_at <= v.system_to and v.valid_from < valid_to and valid_from < v.valid_to
                        and v.okey != cand.okey):
                    out.add(r.fact_id)
                    break
        return frozenset(out)


def _kept_cut(end: int, history: list[Row], below: int) -> Row | None:
    """The version just under ``below`` if a correction closed it and kept its
    end ``end``, a cut by another value: the end a later cut recorded in
    ``stated_to`` is then that cut, which may be taken back too."""
    earlier = [v for v in history if v.version < below]
    if not earlier:
        return None
    prev = max(earlier, key=lambda v: v.version)
    if (prev.close_kind == CloseKind.CORRECTED and prev.valid_to == end
            and prev.end_kind == CloseKind.SUPERSEDED.value and prev.invalidated_by is not None):
        return prev
    return None


def _take_end(cand: Row, src: Row) -> None:
    """Give ``cand`` the end of ``src``: where, why, and the end it was given."""
    cand.valid_to, cand.valid_to_prec = src.valid_to, src.valid_to_prec
    cand.end_kind, cand.invalidated_by, cand.end_reason = src.end_kind, src.invalidated_by, src.end_reason
    cand.stated_to, cand.stated_to_prec = src.stated_to, src.stated_to_prec


@contextmanager
def writing(scope: Scope, *, shared: bool = False) -> Iterator[UnitOfWork]:
    """A write transaction with its unit of work, flushed before it commits.
    ``shared``: writers of other (subject, predicate) groups may run beside
    it (PostgreSQL; SQLite has one writer anyway)."""
    uow: UnitOfWork | None = None
    try:
        with scope.store.write(shared=shared) as tx:
            uow = UnitOfWork(scope, tx)
            yield uow
            uow.flush()
    except WriteOutcomeUnknownError as exc:
        if uow is None or not uow.written:
            raise
        ids = tuple(dict.fromkeys(uow.written))  # in write order, once each
        named = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        raise WriteOutcomeUnknownError(f"{exc} (facts: {named})", fact_ids=ids,
                                       retry_after=exc.retry_after) from None
