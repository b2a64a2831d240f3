"""The SQLite store caches SQL text per query shape and rebuilds only the
parameters: both paths must agree for every shape, and the SQL must prepare."""

from __future__ import annotations

import itertools
from pathlib import Path

import chronomem
from chronomem.store.protocol import FactQuery
from chronomem.store.sqlite.store import SQLiteStore, _query_params


def test_cached_parameters_match_composed_sql_for_every_shape(tmp_path: Path) -> None:
    mem = chronomem.open(str(tmp_path / "m.db"))
    store = mem.store
    assert isinstance(store, SQLiteStore)
    checked = 0
    for subj, direction, pred, oid, olit, as_of, known, allv, overlap, fids, limit in itertools.product(
        [None, [5], [5, 6], "acme"], ["out", "in", "both"], [None, "ceo"], [None, 7], [None, "s:x"],
        [None, 100], [None, 200], [False, True], [None, (1, 9)], [None, ["a"]], [None, 3],
    ):
        # a subject is given by ids or by a name key the SQL resolves
        ids, key = (None, subj) if isinstance(subj, str) else (subj, None)
        q = FactQuery(1, ids, oid, olit, direction, as_of, known, allv, overlap, fids, limit,  # type: ignore[arg-type]
                      subject_key=key, predicate_key=pred)
        sql, params = store.read_sql(q)
        if sql.endswith("WHERE 0"):
            assert params == []
            continue
        assert params == _query_params(q), q
        cached_sql, cached_params = store.read_sql(q)  # second call: from the shape cache
        assert (cached_sql, cached_params) == (sql, params)
        store._con.execute("EXPLAIN " + sql, params)
        checked += 1
    assert checked > 5000
    mem.close()
