"""The SQLite store's background checkpointer (``sqlite_tx._Checkpointer``).

It copies the WAL into the database file without ever making a writer wait,
and empties the WAL once the store has gone quiet, so the -wal file does not
keep the size of the last burst of writes.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import chronomem
from chronomem.store.sqlite.tx import _Checkpointer


def _wal_bytes(db: Path) -> int:
    wal = Path(str(db) + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_the_wal_is_emptied_once_the_store_goes_quiet(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with chronomem.open(db) as mem:
        for i in range(200):
            mem.add_fact(f"E{i}", "knows", f"F{i}")
        assert _wal_bytes(db) > 0
        deadline = time.monotonic() + 10
        while _wal_bytes(db) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _wal_bytes(db) == 0  # emptied while the store is still open
        assert len(mem.facts("E7")) == 1
        mem.add_fact("E7", "knows", "G7")  # and writing goes on from an empty WAL
        assert {f.object for f in mem.facts("E7")} == {"F7", "G7"}


def test_a_reader_holding_an_old_snapshot_never_makes_a_writer_wait(tmp_path: Path) -> None:
    """With a snapshot held open by another connection the WAL cannot be
    emptied. The checkpointer must give up at once rather than hold the
    write lock while it waits for the reader (with a busy timeout, a
    RESTART/TRUNCATE checkpoint does exactly that, for up to that timeout)."""
    db = tmp_path / "m.db"
    with chronomem.open(db) as mem:
        mem.add_fact("A", "knows", "B")
        reader = sqlite3.connect(db, isolation_level=None)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM facts").fetchone() == (1,)
        # an eager checkpointer: tries to empty the WAL on every tick
        eager = _Checkpointer(str(db), busy_ms=5000, interval=0.02, min_pages=0)
        try:
            worst = 0.0
            end = time.monotonic() + 1.0
            i = 0
            while time.monotonic() < end:
                t = time.monotonic()
                mem.add_fact(f"W{i}", "knows", "B")
                worst = max(worst, time.monotonic() - t)
                i += 1
            assert worst < 1.0, f"a write waited {worst:.2f} s for the checkpointer"
            assert reader.execute("SELECT count(*) FROM facts").fetchone() == (1,)  # its snapshot held
        finally:
            reader.execute("COMMIT")
            reader.close()
            eager.stop()
        assert len(mem.facts(predicate="knows")) == i + 1
