"""Fork safety (``store/_fork.py``): a process that opened a memory and then
forks loses nothing, and a child never uses the parent's ``Memory``.

The mechanism these tests pin: SQLite shares one lock record per file among
a process's connections, and a forked child inherited the parent's records
but not its POSIX locks, so the child's own new connection took no locks at
all; when the parent then closed the file it believed itself the last user,
checkpointed and deleted the WAL the children were still committing to
(before the fix: 811-823 of 900 facts survived, ``/proc/locks`` showed 0
locks for a forked writer and 2 for a spawned one).
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import random
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import pytest

import chronomem
from chronomem import StoreError

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="fork() is POSIX-only"),
]

FORK = mp.get_context("fork")
REPRO = Path(__file__).resolve().parents[2] / "shared" / "repro" / "fork_writers_lose_data.py"


def _count(target: str, subject_prefix: str) -> int:
    with chronomem.open(target, embedder=None) as m:
        return sum(1 for f in m.facts() if f.subject.startswith(subject_prefix))


def _locks_of(pid: int) -> int:
    with open("/proc/locks") as fp:
        return sum(1 for line in fp if line.split()[4] == str(pid))


def _writer(target: str, k: int, n: int) -> None:
    """A child's own memory on the parent's file: exits non-zero on any error."""
    m = chronomem.open(target, embedder=None, busy_timeout=60.0)
    for i in range(n):
        m.add_fact(f"w{k}", "wrote", f"item{i}", valid_from="2024-01-01")


@pytest.mark.parametrize("rep", range(20))
def test_forked_writers_lose_nothing_when_the_parent_closes(tmp_path: Path, rep: int) -> None:
    """The parent holds the file open when it forks three writers, then closes
    it while they commit (what used to delete their WAL)."""
    target = str(tmp_path / "c.db")
    parent = chronomem.open(target, embedder=None)
    parent.add_fact("parent", "wrote", "x")
    procs = [FORK.Process(target=_writer, args=(target, k, 150)) for k in range(3)]
    for p in procs:
        p.start()
    time.sleep(random.Random(rep).uniform(0.0, 0.4))
    parent.close()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert _count(target, "w") == 450
    assert _count(target, "parent") == 1


def _report_locks(target: str, out: Any) -> None:
    m = chronomem.open(target, embedder=None)
    m.add_fact("child", "wrote", "y")
    out.put(_locks_of(os.getpid()))


def test_a_forked_child_holds_its_own_locks(tmp_path: Path) -> None:
    """The child's connection takes real POSIX locks (the database file's
    shared lock and the shared-memory DMS lock), as a spawned one does."""
    if not Path("/proc/locks").exists():  # pragma: no cover
        pytest.skip("needs /proc/locks")
    target = str(tmp_path / "c.db")
    parent = chronomem.open(target, embedder=None)
    parent.stats()
    out = FORK.Queue()
    p = FORK.Process(target=_report_locks, args=(target, out))
    p.start()
    held = out.get(timeout=60)
    p.join(60)
    parent.close()
    assert held >= 2


_RUN_REPRO_WITH_FORK = (
    "import multiprocessing as mp, runpy, sys; mp.set_start_method('fork'); "
    "sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


@pytest.mark.skipif(not REPRO.exists(), reason=f"{REPRO} is absent (../shared not beside the project)")
@pytest.mark.parametrize("rep", range(20))
def test_the_shared_reproduction_passes(rep: int) -> None:
    """``../shared/repro/fork_writers_lose_data.py`` with the start method forced to fork."""
    run = subprocess.run([sys.executable, "-c", _RUN_REPRO_WITH_FORK, str(REPRO)], capture_output=True, text=True,
                         timeout=600, cwd=str(Path(__file__).resolve().parents[1]))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "19/19 steps pass" in run.stdout


# -- the parent's Memory in a child -----------------------------------------

def in_child(target: Callable[[Any, Any], None], mem: chronomem.Memory) -> Any:
    """Run ``target(mem, queue)`` in a forked child; what it put on the queue
    (the child must exit cleanly)."""
    out = FORK.Queue()
    p = FORK.Process(target=target, args=(mem, out))
    p.start()
    got = out.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0
    return got


def outcome(call: Callable[[], object]) -> str:
    """What a call in a forked child did, as the parent is told: "no error",
    the message of the StoreError it raised, or the type and message of any
    other exception."""
    try:
        call()
        return "no error"
    except StoreError as exc:
        return str(exc)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        return f"{type(exc).__name__}: {exc}"


def _use_parents(mem: chronomem.Memory, out: Any) -> None:
    """In the child: every use of the parent's memory raises the clear error,
    close() does nothing, and collecting it finalizes nothing of the parent's."""
    got: list[str] = []
    calls: list[Callable[[], object]] = [mem.facts, partial(mem.add_fact, "child", "wrote", "z"), mem.stats,
                                         partial(mem.add_facts, [("child", "wrote", "zz")])]
    for call in calls:
        got.append(outcome(call))
    mem.close()
    del mem, calls, call
    gc.collect()
    out.put(got)


@pytest.mark.parametrize("kind", ["file", "memory", "postgres"])
def test_the_parents_memory_raises_in_a_child(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from conftest import pg_schema_url

    target = {"file": str(tmp_path / "m.db"), "memory": ":memory:"}.get(kind) or pg_schema_url(request)
    mem = chronomem.open(target, embedder=None)
    mem.add_fact("parent", "wrote", "x")
    got = in_child(_use_parents, mem)
    want = f"this memory was opened in process {os.getpid()}; open it again in this process"
    assert len(got) == 4 and all(want in g for g in got), got
    # the parent's memory is untouched: nothing the child tried was written,
    # and its connections (the pool's, on PostgreSQL) still work
    assert [f.object for f in mem.facts()] == ["x"]
    mem.add_fact("parent", "wrote", "after")
    assert len(mem.facts("parent")) == 2
    mem.close()


# -- forks at random moments ---------------------------------------------------

def _stress_child(target: str, parent_mem: chronomem.Memory, k: int) -> None:
    try:
        parent_mem.facts()
    except StoreError:
        pass
    else:  # pragma: no cover - reported as a failure
        os._exit(3)
    try:
        m = chronomem.open(target, embedder=None, busy_timeout=60.0)
        for i in range(10):
            m.add_fact(f"c{k}", "wrote", f"i{i}")
        m.close() if k % 2 else None  # half close, half just exit
    except StoreError as exc:
        os._exit(4 if "disk I/O" in str(exc) else 5)


def test_forks_at_random_moments_while_the_parent_writes(tmp_path: Path) -> None:
    """60 forks at random moments while a parent thread writes continuously
    (its WAL busy, the checkpointer copying it): no child sees an error, no
    write of the parent or of a child is lost."""
    target = str(tmp_path / "s.db")
    parent = chronomem.open(target, embedder=None)
    stop = threading.Event()
    acked: list[str] = []

    def keep_writing() -> None:
        i = 0
        while not stop.is_set():
            acked.append(parent.add_fact("parent", "wrote", f"p{i}").id)
            i += 1

    writer = threading.Thread(target=keep_writing)
    writer.start()
    rng = random.Random(7)
    running: list[Any] = []
    codes: list[int | None] = []
    try:
        for k in range(60):
            time.sleep(rng.uniform(0.0, 0.03))
            p = FORK.Process(target=_stress_child, args=(target, parent, k))
            p.start()
            running.append(p)
            while len(running) >= 4:  # bounded: at most four children at once
                running[0].join(60)
                codes.append(running.pop(0).exitcode)
        for p in running:
            p.join(60)
            codes.append(p.exitcode)
    finally:
        stop.set()
        writer.join(60)
    assert codes == [0] * 60
    parent.close()
    assert _count(target, "c") == 600
    with chronomem.open(target, embedder=None) as m:
        assert len(m.facts("parent")) == len(acked) > 0


# -- PostgreSQL ----------------------------------------------------------------

def test_forked_writers_on_postgres_lose_nothing(request: pytest.FixtureRequest) -> None:
    from conftest import pg_schema_url

    target = pg_schema_url(request)
    parent = chronomem.open(target, embedder=None)
    parent.add_fact("parent", "wrote", "x")
    procs = [FORK.Process(target=_writer, args=(target, k, 40)) for k in range(3)]
    for p in procs:
        p.start()
    for i in range(40):  # the parent keeps writing through its own pool meanwhile
        parent.add_fact("parent", "wrote", f"p{i}")
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert len(parent.facts("parent")) == 41
    parent.close()
    assert _count(target, "w") == 120


# -- a preforking HTTP server ----------------------------------------------------

def _http_worker(target: str, sock: Any) -> None:
    from chronomem.adapters.web.server import build_app, run_app

    mem = chronomem.open(target, embedder=None, busy_timeout=60.0)
    run_app(build_app(mem, mcp=False), sock)


def test_a_preforked_http_server_loses_nothing(tmp_path: Path) -> None:
    """The parent opens the memory and the listening socket, forks two
    workers that each open their own memory on the file and serve the API,
    writes itself meanwhile and closes its memory; every write a worker
    acknowledged with 201 is in the file afterwards."""
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    from chronomem.adapters.web.server import bind

    target = str(tmp_path / "h.db")
    parent = chronomem.open(target, embedder=None)
    parent.add_fact("parent", "wrote", "x")
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    workers = [FORK.Process(target=_http_worker, args=(target, sock)) for _ in range(2)]
    for w in workers:
        w.start()
    acked: list[str] = []
    failures: list[str] = []
    base = f"http://127.0.0.1:{port}"

    def client(k: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as c:
            for i in range(40):
                r = c.post("/api/facts", json={"subject": f"h{k}", "predicate": "wrote", "object": f"i{i}"})
                if r.status_code == 201:
                    acked.append(r.json()["fact"]["id"])
                else:  # pragma: no cover - reported below
                    failures.append(f"{r.status_code} {r.text[:200]}")

    try:
        deadline = time.monotonic() + 60
        while True:  # wait until a worker answers
            try:
                httpx.get(base + "/api/facts", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:  # pragma: no cover
                    raise
                time.sleep(0.1)
        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for i in range(20):
            parent.add_fact("parent", "wrote", f"p{i}")
        parent.close()
        for t in threads:
            t.join(120)
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            w.join(30)
        sock.close()
    assert failures == []
    assert len(acked) == 160
    with chronomem.open(target, embedder=None) as m:
        assert all(m.fact(fid) is not None for fid in acked)
        assert sum(len(m.facts(f"h{k}")) for k in range(4)) == 160
        assert len(m.facts("parent")) == 21


# -- process-global locks ----------------------------------------------------------

def _try_locks(out: Any) -> None:
    from chronomem.core import ids as _ids
    from chronomem.service import gcpause as _gc
    from chronomem.service.evidence import embed

    got = []
    for lock in (_gc._lock, embed._loaded_lock, _ids._lock):
        ok = lock.acquire(timeout=2)
        got.append(ok)
        if ok:
            lock.release()
    out.put(got)


def test_process_global_locks_held_at_the_fork_are_free_in_the_child() -> None:
    """A thread holding one of chronomem's module locks at the fork does not
    exist in the child: the child gets fresh locks instead of a deadlock."""
    pytest.importorskip("numpy")
    from chronomem.core import ids as _ids
    from chronomem.service import gcpause as _gc
    from chronomem.service.evidence import embed

    locks = (_gc._lock, embed._loaded_lock, _ids._lock)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        for lock in locks:
            lock.acquire()
        holding.set()
        release.wait(30)
        for lock in locks:
            lock.release()

    t = threading.Thread(target=hold)
    t.start()
    holding.wait(30)
    try:
        out = FORK.Queue()
        p = FORK.Process(target=_try_locks, args=(out,))
        p.start()
        got = out.get(timeout=60)
        p.join(60)
    finally:
        release.set()
        t.join(30)
    assert got == [True, True, True]


# -- a memory dropped without close() ----------------------------------------------

def _open_fds(name: str) -> list[str]:
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if name in target:
            fds.append(target)
    return fds


def test_a_dropped_memory_lets_go_of_its_file(tmp_path: Path) -> None:
    """A sqlite3.Connection sits in a reference cycle with its statement
    cache, so a store dropped without close() used to keep its file open
    until the cycle collector ran; a fork then carried it into the children
    (the shared reproduction's "disk I/O error")."""
    if not Path("/proc/self/fd").exists():  # pragma: no cover
        pytest.skip("needs /proc/self/fd")
    gc.disable()  # prove it does not wait for the cycle collector
    try:
        chronomem.open(str(tmp_path / "d.db"), embedder=None).add_fact("a", "b", "c")
        deadline = time.monotonic() + 5
        while _open_fds("d.db") and time.monotonic() < deadline:  # the checkpointer stops within a tick
            time.sleep(0.05)
        assert _open_fds("d.db") == []
    finally:
        gc.enable()


@pytest.mark.parametrize("rep", range(5))
def test_forked_writers_right_after_a_dropped_memory(tmp_path: Path, rep: int) -> None:
    """The reproduction's last step: the parent opens the file, drops the
    memory without closing it and forks writers at once."""
    target = str(tmp_path / "c.db")
    gc.disable()
    try:
        chronomem.open(target, embedder=None).stats()
        procs = [FORK.Process(target=_writer, args=(target, k, 100)) for k in range(3)]
        for p in procs:
            p.start()
    finally:
        gc.enable()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert _count(target, "w") == 300
