"""The SQL both backends share (``store/_basetx.py``, ``store/_basestore.py``):
every statement, composed for the backend's placeholder, prepares against its
real schema, and the shared upserts re-point a name key on both backends."""

from __future__ import annotations

from typing import Any

import chronomem
from chronomem.store.sql.reads import StoreSQL
from chronomem.store.sql.tx import TxSQL


def _statements(sql: TxSQL | StoreSQL) -> dict[str, str]:
    """The complete statements of ``sql`` (not the pieces a caller joins); a
    template's literal length (``{n}``) filled in as the caller does."""
    return {k: v.replace("{n}", "8") for k, v in vars(sql).items()
            if not v.rstrip().endswith("VALUES") and not v.startswith("(")}


def test_every_shared_statement_prepares(store_url: str) -> None:
    with chronomem.open(store_url) as mem:
        store: Any = mem.store
        with store.write() as tx:
            ph = "?" if store.backend == "sqlite" else "%s"
            other = "%s" if ph == "?" else "?"
            statements = {**_statements(tx.sql), **{"store." + k: v for k, v in _statements(store._rows_sql).items()}}
            assert len(statements) > 25
            for name, sql in statements.items():
                assert other not in sql, name
                params = [None] * sql.count(ph)
                assert params, name
                # EXPLAIN parses and plans the statement against the schema without running it
                tx._execute("EXPLAIN " + sql, params)


def test_shared_upserts_repoint_name_keys(store_url: str) -> None:
    with chronomem.open(store_url) as mem:
        store: Any = mem.store
        ns = mem._ns
        with store.write() as tx:
            a = tx.create_entity(ns, "a", "A", None, None)
            b = tx.create_entity(ns, "b", "B", None, None)
            tx.add_entity_key(ns, "alias", a, "Alias")
            tx.add_entity_key(ns, "alias", b, None)  # an existing key: points at b now, no alias name
            tx.define_predicate(ns, "works_at", "works at", "one", None, None, [("employer", "Employer")])
            tx.define_predicate(ns, "works_for", "works for", "many", None, "d", [("employer", "employer of")])
        assert ("alias", b, None) in store.entity_keys(ns)
        assert [k for k in store.entity_keys(ns) if k[0] == "alias"] == [("alias", b, None)]
        employer = store.predicate(ns, "employer")
        assert (employer.key, employer.cardinality, employer.description) == ("works_for", "many", "d")
        assert store.predicate(ns, "works_at").aliases == ()
        assert employer.aliases == ("employer of",)
