#!/usr/bin/env python3
"""PostgreSQL per-call writes: chronomem's ``add_fact`` against a plain-psycopg floor.

Run:  .venv/bin/python bench/pg_write_bench.py [--pg postgresql://postgres@127.0.0.1:5432/test]
                                               [--writers 1,4,8] [--sync on,off] [--block 0.3]
                                               [--systems chronomem,floor,floor-simple] [--rounds 12] [--json out.json]

(``bench/pg_bench.py`` runs it too, after its own parts.)

Both write into one fresh schema that chronomem created (so the tables,
indexes, trigger and exclusion constraint are the same), each writer process on
its own 50 subjects: a third of the writes set a single-valued ``status``
(a literal; each one cuts the subject's previous status short), the rest add a
``knows`` edge to one of 97 known objects for one day. Names exist before the
timed window (created by an untimed ``add_facts``): the steady state of an
agent writing about what it knows.

* **chronomem**: ``Memory.add_fact`` (durability ``"normal"``: with
  ``synchronous_commit=on`` every acknowledged write is flushed).
* **floor**: the least a plain psycopg client does for the same rows, in two
  pipelined round trips: ``BEGIN``, an advisory lock on the (subject,
  predicate) group and the read of its believed versions; then, from what it
  read, the close and cut copy of a superseded status, the ``INSERT`` of the
  new version and ``COMMIT``.
* **floor-simple**: the same two round trips, each one simple-protocol
  query with the values quoted client side (psycopg's ``ClientCursor``), as
  chronomem sends its batches: less client work than a pipeline.
* **naive** (optional): the floor's statements one round trip each, as plain
  psycopg code without a pipeline would send them.

``--sync on,off`` runs everything with the session's ``synchronous_commit``
on, then off (``-c synchronous_commit=off`` in the connection options; for
chronomem in the URL, which durability ``"normal"`` follows). For 1, 4 and 8
writer processes it prints the aggregate writes/s over the wall time of each
system and their ratio, and, from one traced writer, the **round trips per
write**: libpq's protocol trace of every connection, counting each time the
client, having sent messages, reads the server's answer (a pipelined batch is
one round trip; a failed alive-check ``select`` is none).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

DEFAULT_PG = os.environ.get("CHRONOMEM_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
MAX_US = 2**63 - 1
EPOCH = dt.date(2000, 1, 1)
SUBJECTS, OBJECTS = 50, 97
# the columns a fact version's insert sets (written out: the floor knows the table, not chronomem)
COLS = ("fact_id, version, ns_id, subject_id, predicate_id, object_id, object_lit, valid_from, valid_from_prec, "
        "valid_to, valid_to_prec, system_from, system_to, confidence, source, episode_id, properties, "
        "invalidated_by, close_kind, closed_by, end_kind, end_reason, stated_to, stated_to_prec, recorded_by, single")
NCOLS = len(COLS.split(", "))
INSERT = f"INSERT INTO facts ({COLS}) VALUES ({', '.join(['%s'] * NCOLS)})"
BELIEVED = f"SELECT rowid, {COLS} FROM facts WHERE subject_id = %s AND system_to = {MAX_US} AND predicate_id = %s"
CLOSE = (f"UPDATE facts SET system_to = %s, close_kind = 'superseded', closed_by = %s "
         f"WHERE rowid = %s AND system_to = {MAX_US}")
DAY_PREC = 3  # chronomem's precision code of a date (only stored: the value does not change the work)


def day(i: int) -> str:
    return (EPOCH + dt.timedelta(days=i)).isoformat()


def day_us(i: int) -> int:
    return (i + (EPOCH - dt.date(1970, 1, 1)).days) * 86_400_000_000


def store_url(pg: str, schema: str, sync: str) -> str:
    sep = "&" if "?" in pg else "?"
    url = f"{pg}{sep}schema={schema}"
    if sync == "off":
        url += "&options=" + quote("-c synchronous_commit=off")
    return url


def names(tag: str, w: int) -> tuple[list[str], list[str]]:
    return [f"{tag}w{w}e{j}" for j in range(SUBJECTS)], [f"{tag}w{w}o{j}" for j in range(OBJECTS)]


def write_of(i: int) -> tuple[int, bool, int]:
    """Write ``i``: (subject index, single-valued status?, object index)."""
    return i % SUBJECTS, i % 3 == 0, (i * 7) % OBJECTS


# -- the systems: each returns (write(i), close()) after its untimed set-up -----------------------------------
def chronomem_writer(pg: str, schema: str, sync: str, tag: str, w: int) -> tuple[Callable[[int], None], Any]:
    import chronomem

    m = chronomem.open(store_url(pg, schema, sync), namespace="bench")
    subs, objs = names(tag, w)
    m.add_facts([(s, "knows", objs[j % OBJECTS], day(0), day(1)) for j, s in enumerate(subs)]
                + [(subs[0], "knows", o, day(0), day(1)) for o in objs])

    def write(i: int) -> None:
        s, single, o = write_of(i)
        if single:
            m.add_fact(subs[s], "status", f"s{i}", valid_from=day(i), literal=True, source="bench")
        else:
            m.add_fact(subs[s], "knows", objs[o], valid_from=day(i), valid_to=day(i + 1), source="bench")
    return write, m


def floor_writer(pg: str, schema: str, sync: str, tag: str, w: int, *,
                 how: str = "floor") -> tuple[Callable[[int], None], Any]:
    import psycopg

    import chronomem

    subs, objs = names(tag, w)
    with chronomem.open(store_url(pg, schema, "on"), namespace="bench") as m:  # the names, as chronomem's writer
        m.add_facts([(s, "knows", objs[j % OBJECTS], day(0), day(1)) for j, s in enumerate(subs)]
                    + [(subs[0], "knows", o, day(0), day(1)) for o in objs])
    options = f"-c search_path={schema},public" + (" -c synchronous_commit=off" if sync == "off" else "")
    conn = psycopg.connect(pg, autocommit=True, options=options)

    def ids(table: str, ns: int, wanted: list[str]) -> list[int]:
        got = dict(conn.execute(f"SELECT name, id FROM {table} WHERE ns_id = %s AND name = ANY(%s)",
                                (ns, wanted)).fetchall())
        return [int(got[n]) for n in wanted]

    ns = int(conn.execute("SELECT id FROM namespaces WHERE name = 'bench'").fetchone()[0])
    sid, oid = ids("entities", ns, subs), ids("entities", ns, objs)
    p_status, p_knows = ids("predicates", ns, ["status", "knows"])

    client = psycopg.ClientCursor(conn)

    def run(batch: list[tuple[str, Any]], how: str) -> Any:
        """The batch's last result: each statement a round trip (``naive``),
        pipelined (``floor``), or one simple-protocol query with the values
        quoted client side (``floor-simple``)."""
        if how == "naive":
            return [conn.execute(sql, params) for sql, params in batch][-1]
        if how == "floor":
            with conn.pipeline():
                return [conn.execute(sql, params) for sql, params in batch][-1]
        cur = conn.execute("; ".join(client.mogrify(sql, params) for sql, params in batch), prepare=False)
        while cur.nextset():
            pass
        return cur

    def write(i: int) -> None:
        s, single, o = write_of(i)
        subject, pred = sid[s], p_status if single else p_knows
        read = run([("BEGIN", None), ("SELECT pg_advisory_xact_lock(%s, %s)", (subject, pred)),
                    (BELIEVED, (subject, pred))], how)
        believed = read.fetchall()
        now = time.time_ns() // 1000
        vf = day_us(i)
        fid = uuid.uuid4().hex
        batch: list[tuple[str, Any]] = []
        if single:
            for old in believed:  # the status it cuts short: closed, and again with the new end
                rowid, r = old[0], old[1:]
                if r[7] < vf < r[9]:
                    batch.append((CLOSE, (now, fid, rowid)))
                    cut = list(r)
                    cut[1] += 1
                    cut[9], cut[10], cut[11], cut[12] = vf, DAY_PREC, now, MAX_US
                    cut[17], cut[20], cut[22], cut[23], cut[24] = fid, "superseded", r[9], r[10], "bench"
                    batch.append((INSERT, cut))
            row = (fid, 1, ns, subject, pred, None, f"s{i}", vf, DAY_PREC, MAX_US, 0, now, MAX_US, 1.0, "bench",
                   None, None, None, None, None, None, None, None, None, "bench", True)
        else:
            row = (fid, 1, ns, subject, pred, oid[o], None, vf, DAY_PREC, day_us(i + 1), DAY_PREC, now, MAX_US, 1.0,
                   "bench", None, None, None, None, None, None, None, None, None, "bench", False)
        batch += [(INSERT, row), ("COMMIT", None)]
        run(batch, how)
    return write, conn


def make_writer(system: str, pg: str, schema: str, sync: str, tag: str, w: int) -> tuple[Callable[[int], None], Any]:
    if system == "chronomem":
        return chronomem_writer(pg, schema, sync, tag, w)
    return floor_writer(pg, schema, sync, tag, w, how=system)


# -- writer processes ---------------------------------------------------------------------------------------------
def _warm(_: int) -> int:
    import psycopg  # noqa: F401

    import chronomem  # noqa: F401
    return os.getpid()


Job = tuple[list[tuple[str, str]], str, str, str, int, float, float, int]


def _blocks(job: Job) -> list[int]:
    """One writer process: set up a writer of each (system, synchronous_commit)
    config, then from ``start`` (wall clock) write in blocks of ``block``
    seconds, every process switching config at the same instants (so load from
    elsewhere hits them alike); the writes begun in each block."""
    configs, pg, schema, tag, w, start, block, rounds = job
    made = [make_writer(system, pg, schema, sync, f"{tag}{k}", w) for k, (system, sync) in enumerate(configs)]
    counts: list[int] = []
    done = [0] * len(configs)
    try:
        for b in range(len(configs) * rounds):
            k = b % len(configs)
            write = made[k][0]
            begin = start + b * block
            time.sleep(max(0.0, begin - time.time()))
            end = begin + block
            n = done[k]
            while time.time() < end:
                write(n)
                n += 1
            counts.append(n - done[k])
            done[k] = n
        return counts
    finally:
        for _, handle in made:
            handle.close()


def run_writers(pool: Any, procs: int, configs: list[tuple[str, str]], pg: str, schema: str, block: float,
                rounds: int) -> list[dict[str, Any]]:
    """``procs`` writers through ``rounds`` rounds of every config; each config's aggregate writes/s."""
    tag = uuid.uuid4().hex[:6]
    start = time.time() + 1.5 + 0.3 * procs * len(configs)  # every writer's set-up done by then
    res = pool.map(_blocks, [(configs, pg, schema, tag, w, start, block, rounds) for w in range(procs)])
    out = []
    for k, (system, sync) in enumerate(configs):
        per_round = [sum(r[b] for r in res) / block for b in range(k, len(configs) * rounds, len(configs))]
        out.append({"system": system, "sync": sync, "procs": procs, "rates": per_round,
                    "rate": sum(per_round) / len(per_round)})
    return out


# -- round trips ------------------------------------------------------------------------------------------------
class Tracer:
    """libpq's protocol trace of each connection given to :meth:`attach`;
    :meth:`round_trips` counts the client's waits for an answer (a switch
    from messages sent to messages read)."""

    def __init__(self) -> None:
        self.files: list[tuple[Any, Any, str]] = []

    def attach(self, conn: Any) -> Any:
        import psycopg

        fd, path = tempfile.mkstemp(prefix="pgtrace")
        conn.pgconn.trace(fd)
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        self.files.append((conn, fd, path))
        return conn

    def round_trips(self) -> tuple[int, int]:
        """(round trips, Sync + simple Query messages) over every traced connection."""
        trips = syncs = 0
        for conn, fd, path in self.files:
            if not conn.closed:
                conn.pgconn.untrace()
            os.close(fd)
            last = ""
            for line in Path(path).read_text(errors="replace").splitlines():
                parts = line.split("\t")
                if len(parts) < 3:
                    continue
                direction, kind = parts[0], parts[2].strip()
                if direction == "F" and kind in ("Sync", "Query"):
                    syncs += 1
                if direction == "B" and last == "F":
                    trips += 1
                last = direction
            os.unlink(path)
        self.files = []
        return trips, syncs


def _server_cpu(pids: list[int]) -> float | None:
    """CPU seconds the server processes ``pids`` used so far (from /proc: a local server)."""
    total = 0
    try:
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime
    except OSError:
        return None
    return total / os.sysconf("SC_CLK_TCK")


def count_round_trips(system: str, pg: str, schema: str, sync: str, writes: int) -> dict[str, float | None]:
    """One writer, traced: round trips, Sync/Query messages, and client and
    server CPU time per write."""
    tracer = Tracer()
    tag = f"t{system[0]}{uuid.uuid4().hex[:6]}"
    if system == "chronomem":
        write, m = chronomem_writer(pg, schema, sync, tag, 0)
        for i in range(30):  # caches warm, as in the timed runs
            write(i)
        pool = m.store._pool  # type: ignore[attr-defined]
        for conn, _ in pool._idle:
            tracer.attach(conn)
        connect = pool._connect
        pool._connect = lambda: tracer.attach(connect())  # (a write makes none: one writer, one connection)
        handle: Any = m
    else:
        write, handle = floor_writer(pg, schema, sync, tag, 0, how=system)
        for i in range(30):
            write(i)
        tracer.attach(handle)
    pids = [c.info.backend_pid for c, _, _ in tracer.files]
    server0, client0 = _server_cpu(pids), time.process_time()
    for i in range(30, 30 + writes):
        write(i)
    client = time.process_time() - client0
    server1 = _server_cpu(pids)
    trips, syncs = tracer.round_trips()
    handle.close()
    return {"round_trips": trips / writes, "syncs": syncs / writes, "client_us": client / writes * 1e6,
            "server_us": None if server0 is None or server1 is None else (server1 - server0) / writes * 1e6}


# -- main -------------------------------------------------------------------------------------------------------
def fnum(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    import chronomem

    schema = "bench_" + uuid.uuid4().hex[:10]
    systems = args.systems.split(",")
    syncs = args.sync.split(",")
    writers = [int(x) for x in args.writers.split(",")]
    res: dict[str, Any] = {"schema": schema, "runs": [], "round_trips": {}}
    with chronomem.open(store_url(args.pg, schema, "on"), namespace="bench") as m:
        m.define_predicate("status", cardinality="one")
        m.define_predicate("knows")
    try:
        for system in systems:
            res["round_trips"][system] = count_round_trips(system, args.pg, schema, "on", args.trace_writes)
            print(f"{system}: {res['round_trips'][system]['round_trips']:.2f} round trips per write",
                  file=sys.stderr)
        ctx = mp.get_context("spawn")
        configs = [(system, sync) for sync in syncs for system in systems]
        for procs in writers:
            with ctx.Pool(procs) as pool:
                pool.map(_warm, range(procs))
                for r in run_writers(pool, procs, configs, args.pg, schema, args.block, args.rounds):
                    res["runs"].append(r)
                    spread = ", ".join(f"{x:,.0f}" for x in r["rates"])
                    print(f"{r['system']}: {procs} writers, synchronous_commit={r['sync']}: {r['rate']:,.0f} "
                          f"writes/s (blocks: {spread})", file=sys.stderr)
    finally:
        with psycopg.connect(args.pg, autocommit=True) as con:
            con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return res


def report(res: dict[str, Any], args: argparse.Namespace) -> None:
    systems = args.systems.split(",")
    floors = [s for s in systems if s.startswith("floor")]
    ratio = "chronomem" in systems and bool(floors)
    print("\nPostgreSQL per-call writes (writes/s, all writer processes together; "
          "ratio = chronomem / the faster floor)")
    head = f"{'synchronous_commit':>18} {'writers':>7} " + " ".join(f"{s:>12}" for s in systems)
    print(head + (f" {'ratio':>6}" if ratio else ""))
    keys = sorted({(r["sync"], r["procs"]) for r in res["runs"]}, key=lambda k: (k[0] != "on", k[1]))
    for sync, procs in keys:
        rates = {r["system"]: r["rate"] for r in res["runs"] if (r["sync"], r["procs"]) == (sync, procs)}
        line = f"{sync:>18} {procs:>7} " + " ".join(f"{fnum(rates.get(s)):>12}" for s in systems)
        if ratio:
            line += f" {rates['chronomem'] / max(rates[f] for f in floors):>6.2f}"
        print(line)
    print("\nper write, one writer, synchronous_commit=on (round trips from libpq's protocol trace;"
          " CPU times include the trace's)")
    print(f"{'':>12} {'round trips':>11} {'Sync/Query':>10} {'client CPU':>10} {'server CPU':>10}")
    for s, rt in res["round_trips"].items():
        srv = "-" if rt["server_us"] is None else f"{rt['server_us']:,.0f} us"
        print(f"{s:>12} {rt['round_trips']:>11.2f} {rt['syncs']:>10.2f} {rt['client_us']:>7,.0f} us {srv:>10}")


def add_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--pg", default=DEFAULT_PG)
    ap.add_argument("--writers", default="1,4,8")
    ap.add_argument("--sync", default="on,off", help="synchronous_commit settings to run: on,off")
    ap.add_argument("--block", type=float, default=0.3, help="seconds of each block (the configs take turns)")
    ap.add_argument("--systems", default="chronomem,floor,floor-simple",
                    help="comma list: chronomem,floor,floor-simple,naive")
    ap.add_argument("--rounds", type=int, default=12, help="blocks of each config (their mean is shown)")
    ap.add_argument("--trace-writes", type=int, default=300, help="writes traced to count round trips")
    ap.add_argument("--json", default=None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_args(ap)
    args = ap.parse_args(argv)
    res = run(args)
    report(res, args)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
