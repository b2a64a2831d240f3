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
from typing import Any, Iterator, Mapping

from ..core.engine import TxWork
from ..core.version import CloseKind, Row
from ..errors import FactNotFoundError
from ..store.protocol import WriteTx
from .candidates import CandidateBuilder
from .scope import Scope

__all__ = ["UnitOfWork", "writing"]


class UnitOfWork:
    """The work of one write transaction ``tx`` in ``scope``'s namespace."""

    __slots__ = ("scope", "tx", "_work", "_builder")

    def __init__(self, scope: Scope, tx: WriteTx) -> None:
        self.scope = scope
        self.tx = tx
        self._work: TxWork | None = None
        self._builder: CandidateBuilder | None = None

    @property
    def work(self) -> TxWork:
        """The engine's work for this transaction, started at first use."""
        if self._work is None:
            tx = self.tx
            fresh = tx.is_new_entity

            def load(subject_id: int, predicate_id: int) -> list[Row]:
                if fresh(subject_id):
                    return []
                return tx.believed_rows(subject_id, predicate_id)

            self._work = TxWork(tx.now, load)
        return self._work

    @property
    def builder(self) -> CandidateBuilder:
        """Turns write requests into candidate versions (memoizes names and times)."""
        if self._builder is None:
            self._builder = CandidateBuilder(self.tx, self.scope.ns_id, self.scope.tz)
        return self._builder

    def build(self, item: Mapping[str, Any]) -> tuple[Row, bool]:
        """A candidate version for one ``add_fact``-shaped request, and whether it supersedes."""
        return self.builder.build(item)

    def entity(self, name: object) -> int:
        """The id of the entity ``name`` names, created if missing."""
        return self.builder.entity(name, "entity")

    def flush(self) -> None:
        """Hand the engine's result to the store: close, insert, add sources.
        Flushing twice writes nothing twice: work begun after a flush (read
        through :attr:`work` again) starts from what the flush wrote."""
        work = self._work
        if work is None:
            return
        work.drop_noops()
        tx = self.tx
        if work.closes:
            tx.close_rows(work.closes)
        rows = work.result_rows()
        if rows:
            tx.insert_rows(rows)
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

    def unsupersede(self, fact_id: str) -> None:
        """Restore the values that ``fact_id`` had superseded (it was never true)."""
        tx, work = self.tx, self.work
        for closed in tx.rows_closed_by(self.scope.ns_id, fact_id):
            if closed.close_kind != CloseKind.SUPERSEDED:
                continue
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
                cand = live.copy(version=version, rowid=None, valid_to=closed.valid_to,
                                 valid_to_prec=closed.valid_to_prec, invalidated_by=closed.invalidated_by,
                                 end_kind=closed.end_kind, end_reason=closed.end_reason)
            work.place(cand, single=self.scope.single_valued(closed.predicate_id), keep=live,
                       keep_kind=CloseKind.RESTORED)


@contextmanager
def writing(scope: Scope, *, shared: bool = False) -> Iterator[UnitOfWork]:
    """A write transaction with its unit of work, flushed before it commits.
    ``shared``: writers of other (subject, predicate) groups may run beside
    it (PostgreSQL; SQLite has one writer anyway)."""
    with scope.store.write(shared=shared) as tx:
        uow = UnitOfWork(scope, tx)
        yield uow
        uow.flush()
