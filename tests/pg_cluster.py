"""A throwaway PostgreSQL server for tests that crash, restart or freeze
one: initdb into a temp dir, run as the ``postgres`` user when the tests run
as root (PostgreSQL refuses root), on a free loopback port. Used by
``test_pg_crash.py`` (acknowledged writes survive a crash) and
``test_pg_outage.py`` (a memory rides out restarts, crashes and stalls);
:func:`replica_pair` adds a streaming standby of it (``test_pg_replica.py``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import psycopg
import pytest

__all__ = ["SMALL_SETTINGS", "Cluster", "bindir", "replica_pair", "throwaway"]

#: a small, fast cluster for tests that restart, crash or replicate it (no
#: fsync: what they check is the client's side, not the disk's)
SMALL_SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{root}'
max_connections = 30
shared_buffers = 16MB
fsync = off
autovacuum = off
"""


def bindir() -> Path | None:
    """The directory with initdb and pg_ctl: on PATH, else ``pg_config
    --bindir``, else Debian's ``/usr/lib/postgresql/N/bin``."""
    found = [Path(p).resolve().parent for p in (shutil.which("initdb"),) if p]
    try:
        found.append(Path(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                                         check=True).stdout.strip()))
    except (OSError, subprocess.CalledProcessError):
        pass
    found += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    return next((d for d in found if (d / "initdb").is_file() and (d / "pg_ctl").is_file()), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _state(pid: int) -> str | None:
    """The process's state letter (``/proc/PID/stat``), ``None`` once gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return kids


class Cluster:
    """A throwaway PostgreSQL server in a temp dir (see the module docstring)."""

    def __init__(self, bindir: Path, settings: str, prefix: str = "chronomem-pgtest-") -> None:
        self.bindir = bindir
        self.settings = settings  # postgresql.conf lines; {port} and {root} are filled in
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            import pwd

            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                pytest.fail("running as root needs a 'postgres' user to run the throwaway server")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, tool: str, *args: str) -> None:
        cmd = [*self.as_user, str(self.bindir / tool), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            raise AssertionError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n{tail}")

    def create(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(self.settings.format(port=self.port, root=self.root))

    def standby_of(self, primary: "Cluster") -> None:
        """Make this cluster a streaming standby of ``primary`` (a base
        backup with ``-R``: ``standby.signal`` and its ``primary_conninfo``),
        on its own port and socket directory."""
        self._run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                  "-D", str(self.data), "-R", "-X", "stream", "-c", "fast", "--no-sync")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(self.settings.format(port=self.port, root=self.root))
            conf.write("hot_standby = on\n")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "120", "start")

    def restart(self) -> None:
        """A fast shutdown (every connection closed by the server) and a start."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-m", "fast", "-w",
                  "-t", "120", "restart")

    def freeze(self) -> list[int]:
        """SIGSTOP the postmaster and every child: connections stay open, nothing answers."""
        pm = self.postmaster()
        assert pm is not None, "the server is not running"
        os.kill(pm, signal.SIGSTOP)  # first: no new children from here on
        pids = [pm, *_children(pm)]
        for pid in pids[1:]:
            os.kill(pid, signal.SIGSTOP)
        return pids

    def thaw(self, pids: list[int]) -> None:
        for pid in reversed(pids):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def postmaster(self) -> int | None:
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            return None
        return pid if _state(pid) not in (None, "Z") else None

    def unflushed(self) -> int:
        """Bytes of WAL written into the server's buffers but not yet flushed."""
        with psycopg.connect(self.url, autocommit=True) as con:
            row = con.execute(
                "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), pg_current_wal_flush_lsn())"
            ).fetchone()
            assert row is not None
            return int(row[0])

    def hold_wal_writer(self) -> None:
        """SIGSTOP the WAL writer while it sleeps in its wait (never while it
        holds WALWriteLock: a durable commit would then wait forever). The
        crash kills it; the restarted server has a new one."""
        with psycopg.connect(self.url, autocommit=True) as con:
            for _ in range(200):
                row = con.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'").fetchone()
                assert row is not None, "the server has no WAL writer"
                pid = int(row[0])
                os.kill(pid, signal.SIGSTOP)
                deadline = time.monotonic() + 5
                while _state(pid) != "T" and time.monotonic() < deadline:
                    time.sleep(0.001)
                wait = con.execute("SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
                if _state(pid) == "T" and wait is not None and wait[0] == "WalWriterMain":
                    return
                os.kill(pid, signal.SIGCONT)
                time.sleep(0.01)
        raise AssertionError("could not stop the WAL writer while it slept")

    def crash(self) -> None:
        """SIGKILL the postmaster and all its children; wait until they are gone."""
        pm = self.postmaster()
        assert pm is not None, "the server is not running"
        os.kill(pm, signal.SIGSTOP)  # no new children from here on
        pids = [*_children(pm), pm]  # each child is its own process group: one by one
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while any(_state(p) not in (None, "Z") for p in pids):
            assert time.monotonic() < deadline, f"server processes survived SIGKILL: {pids}"
            time.sleep(0.01)
        # a dead postmaster not yet reaped (by init) still answers kill(pid, 0),
        # and a new one then refuses to start: wait for it to go, else drop
        # its lock file (nothing runs any more: every process is dead)
        deadline = time.monotonic() + 10
        while _state(pm) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        if _state(pm) is not None:
            (self.data / "postmaster.pid").unlink()

    def remove(self) -> None:
        """Stop the server if it runs (immediate: it is thrown away) and delete it."""
        pm = self.postmaster()
        if pm is not None:
            for pid in [*_children(pm), pm]:  # a held WAL writer would stall the shutdown
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "60", "stop")
            except (AssertionError, subprocess.TimeoutExpired):
                self.crash()
        shutil.rmtree(self.root, ignore_errors=True)


def throwaway(settings: str, why: str) -> Iterator[Cluster]:
    """A started cluster with ``settings`` and btree_gist (chronomem's
    exclusion constraint), removed afterwards; the body of a module fixture.
    Skips (saying ``why`` it needs one) where initdb / pg_ctl are missing."""
    found = bindir()
    if found is None:
        pytest.skip(f"PostgreSQL's initdb / pg_ctl are not installed (Debian: postgresql), so {why}")
    c = Cluster(found, settings)
    try:
        c.create()
        c.start()
        with psycopg.connect(c.url, autocommit=True) as con:
            con.execute("CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public")
        yield c
    finally:
        c.remove()


def replica_pair(settings: str, why: str) -> Iterator[tuple[Cluster, Cluster]]:
    """A started primary (``wal_level=replica``, loopback replication
    allowed) and a streaming standby of it that accepts read-only
    connections, each on a loopback port of its own, both removed
    afterwards; the body of a module fixture. Skips (saying ``why``) where
    initdb / pg_ctl / pg_basebackup are missing."""
    found = bindir()
    if found is None or not (found / "pg_basebackup").is_file():
        pytest.skip(f"PostgreSQL's initdb / pg_ctl / pg_basebackup are not installed (Debian: postgresql), so {why}")
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip(f"running as root needs a 'postgres' system user to run the servers as, so {why}")
    replication = "wal_level = replica\nmax_wal_senders = 4\nhot_standby_feedback = on\n"
    primary = Cluster(found, settings + replication, prefix="chronomem-pgprimary-")
    standby = Cluster(found, settings, prefix="chronomem-pgstandby-")
    try:
        primary.create()
        with open(primary.data / "pg_hba.conf", "a") as hba:
            hba.write("host replication postgres 127.0.0.1/32 trust\n")
        primary.start()
        with psycopg.connect(primary.url, autocommit=True) as con:
            con.execute("CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public")
        standby.standby_of(primary)
        standby.start()
        deadline = time.monotonic() + 60
        while True:  # pg_ctl -w returns once it accepts connections; wait for streaming too
            try:
                with psycopg.connect(standby.url, autocommit=True, connect_timeout=2) as con:
                    row = con.execute("SELECT pg_is_in_recovery(), status FROM pg_stat_wal_receiver").fetchone()
                if row is not None and row[0] and row[1] == "streaming":
                    break
            except psycopg.OperationalError:
                pass
            assert time.monotonic() < deadline, "the standby did not start streaming within 60 s"
            time.sleep(0.05)
        yield primary, standby
    finally:
        standby.remove()
        primary.remove()
