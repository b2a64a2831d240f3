"""Concurrent writers on PostgreSQL: 8 processes x 500 writes to the same
single-valued (subject, predicate), with random valid-from dates.

Afterwards at most one value is valid at any instant, and the history equals
a sequential replay of the same writes in system-time (commit) order: the
final belief and the belief ``known_at`` sampled moments in between.
"""

from __future__ import annotations

import datetime as _dt
import multiprocessing as mp
import random
from typing import Any

import psycopg
import pytest

import chronomem
from chronomem import FakeClock
from chronomem.store.postgres.store import split_schema
from conftest import pg_schema_url

PROCS = 8
WRITES = 500


def _writer(url: str, proc: int, start: Any) -> list[tuple[int, str, str]]:
    rnd = random.Random(proc)
    base = _dt.date(2024, 1, 1)
    done = []
    with chronomem.open(url) as m:
        start.wait()
        for i in range(WRITES):
            day = (base + _dt.timedelta(days=rnd.randrange(365))).isoformat()
            f = m.add_fact("Acme", "ceo", f"p{proc}-{i}", day)
            done.append((_us(f.system_from), str(f.object), day))
    return done


def _us(t: _dt.datetime) -> int:
    return (t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(microseconds=1)


def _state(m: chronomem.Memory, known_at: Any = None) -> set[tuple[str, str | None, str | None]]:
    return {(str(f.object), f.valid_from_text, f.valid_to_text) for f in m.facts("Acme", "ceo", known_at=known_at)}


@pytest.mark.slow
def test_eight_writers_on_one_single_valued_pair(request: pytest.FixtureRequest, tmp_path: Any) -> None:
    url = pg_schema_url(request)
    with chronomem.open(url) as m:
        m.define_predicate("ceo", cardinality="one")
    ctx = mp.get_context("spawn")
    start = ctx.Manager().Event()
    with ctx.Pool(PROCS) as pool:
        pending = pool.starmap_async(_writer, [(url, p, start) for p in range(PROCS)])
        start.set()
        results = pending.get(timeout=600)
    writes = sorted(w for r in results for w in r)
    assert len(writes) == PROCS * WRITES
    assert len({w[0] for w in writes}) == len(writes), "every write has its own system time"

    with chronomem.open(url) as m:
        final = m.facts("Acme", "ceo")
        # at most one value valid at any instant
        spans = sorted((f.valid_from, f.valid_to) for f in final)
        for (_a, end), (nxt, _b) in zip(spans, spans[1:], strict=False):
            assert end is not None and nxt is not None and end <= nxt
        conninfo, schema = split_schema(url)
        with psycopg.connect(conninfo, options=f"-c search_path={schema},public") as con:
            overlapping = con.execute(
                "SELECT count(*) FROM facts a JOIN facts b ON a.subject_id = b.subject_id "
                "AND a.predicate_id = b.predicate_id AND a.rowid < b.rowid AND a.valid && b.valid "
                "WHERE a.system_to = 9223372036854775807 AND b.system_to = 9223372036854775807"
            ).fetchone()
            assert overlapping == (0,)
        samples = sorted(random.Random(7).sample(range(len(writes)), 12)) + [len(writes) - 1]
        pg_states = {k: _state(m, known_at=_dt.datetime.fromtimestamp(writes[k][0] / 1e6, _dt.timezone.utc))
                     for k in samples}
        pg_final = _state(m)

    # sequential replay, in commit order, on SQLite
    with chronomem.open(tmp_path / "replay.db", clock=FakeClock("2025-01-01T00:00:00Z")) as r:
        r.define_predicate("ceo", cardinality="one")
        replay_states = {}
        for k, (_sf, obj, day) in enumerate(writes):
            r.add_fact("Acme", "ceo", obj, day)
            if k in pg_states:
                replay_states[k] = _state(r)
        assert _state(r) == pg_final
    for k in samples:
        assert pg_states[k] == replay_states[k], f"belief after write {k} differs"
