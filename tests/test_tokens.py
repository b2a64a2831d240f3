"""Access tokens at rest and in the service, on both backends: only the
SHA-256 is stored, create / list / revoke / expiry, the throttled
``last_used_at``, typed refusals of bad input; and ``chronomem token`` in
real subprocesses."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import chronomem
from chronomem import FakeClock, Memory
from chronomem.errors import AuthenticationError, ConflictError, InvalidInputError, InvalidTimeError, NotFoundError
from chronomem.tokens import TOUCH_EVERY, hash_token
from conftest import pg_test_url
from contract._helpers import MemoryFactory

_SCRIPT = Path(sys.executable).with_name("chronomem")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "chronomem.adapters.cli"]


def test_create_authenticate_list_revoke(mem: Memory) -> None:
    assert mem.tokens.list() == [] and not mem.tokens.any_active()
    made = mem.tokens.create("alice", "team", "write")
    assert made.token.startswith("cm_") and len(made.token) == 46
    assert made.to_dict() == {"token": made.token, "name": "alice", "namespace": "team", "namespaces": ["team"],
                              "scopes": ["read", "write"], "expires_at": None}
    assert mem.tokens.any_active()
    who = mem.tokens.authenticate(made.token)
    assert (who.name, who.namespaces, who.scopes) == ("alice", ("team",), ("read", "write"))
    assert who.allows("team") and not who.allows("default") and who.has("write") and not who.has("admin")
    (listed,) = mem.tokens.list()
    assert listed.status == "active" and made.token not in json.dumps(listed.to_dict())
    revoked = mem.tokens.revoke("alice")
    assert revoked.status == "revoked" and revoked.revoked_at is not None
    with pytest.raises(AuthenticationError, match="revoked"):
        mem.tokens.authenticate(made.token)
    assert not mem.tokens.any_active()
    assert mem.tokens.revoke("alice").status == "revoked"  # again: nothing changes
    with pytest.raises(ConflictError):  # a revoked token keeps its name
        mem.tokens.create("alice", "team")
    with pytest.raises(NotFoundError):
        mem.tokens.revoke("nobody")


def test_several_namespaces_and_every_namespace(mem: Memory) -> None:
    two = mem.tokens.create("both", ["a", "b", "a"], "read")
    assert mem.tokens.authenticate(two.token).namespaces == ("a", "b")
    root = mem.tokens.create("root", "*", "admin")
    who = mem.tokens.authenticate(root.token)
    assert who.allows("anything") and who.manages(["a", "*"])
    assert not mem.tokens.authenticate(two.token).manages(["a"])


@pytest.mark.parametrize("kwargs, field", [
    ({"name": "", "namespace": "a"}, "name"),
    ({"name": "has space", "namespace": "a"}, "name"),
    ({"name": "x" * 65, "namespace": "a"}, "name"),
    ({"name": "ok", "namespace": "a", "scope": "root"}, "scope"),
    ({"name": "ok", "namespace": "a", "scope": []}, "scope"),
    ({"name": "ok", "namespace": ""}, "namespace"),
    ({"name": "ok", "namespace": []}, "namespace"),
    ({"name": "ok", "namespace": "*", "scope": "write"}, "namespace"),
    ({"name": "ok", "namespace": "a", "expires": "yesterday"}, "expires"),
    ({"name": "ok", "namespace": "a", "expires": "not a time"}, "expires"),
])
def test_bad_input_is_refused_before_anything_is_written(mem: Memory, kwargs: dict[str, object],
                                                          field: str) -> None:
    kwargs = dict(kwargs)  # the parameters are shared by both backends' runs
    name, namespace = kwargs.pop("name"), kwargs.pop("namespace")
    with pytest.raises(InvalidInputError, match=field) as info:
        mem.tokens.create(name, namespace, **kwargs)  # type: ignore[arg-type]
    if field == "expires" and kwargs["expires"] == "not a time":
        assert isinstance(info.value, InvalidTimeError)
    assert mem.tokens.list() == []


@pytest.mark.parametrize("token", ["", "cm_short", "Bearer x", "cm_" + "A" * 43])
def test_unknown_tokens_are_401s(mem: Memory, token: str) -> None:
    mem.tokens.create("real", "a")
    with pytest.raises(AuthenticationError):
        mem.tokens.authenticate(token)


def test_expiry_follows_the_clock(make_memory: MemoryFactory) -> None:
    clock = FakeClock("2025-01-01T12:00:00Z", tick=0)
    mem = make_memory(clock=clock)
    phrase = mem.tokens.create("phrase", "a", expires="in 2 days")  # a calendar day: 2025-01-03T00:00Z
    iso = mem.tokens.create("iso", "a", expires="2025-01-01T13:00:00Z")
    assert iso.info.expires_at is not None and iso.info.expires_at.isoformat() == "2025-01-01T13:00:00+00:00"
    assert mem.tokens.authenticate(iso.token).name == "iso"
    clock.advance(3600)
    with pytest.raises(AuthenticationError, match="expired"):
        mem.tokens.authenticate(iso.token)
    assert mem.tokens.authenticate(phrase.token).name == "phrase"
    assert {t.name: t.status for t in mem.tokens.list()} == {"iso": "expired", "phrase": "active"}
    clock.set("2025-01-03T00:00:00Z")
    with pytest.raises(AuthenticationError, match="expired"):
        mem.tokens.authenticate(phrase.token)
    assert not mem.tokens.any_active()


def test_last_used_is_written_at_most_once_a_minute(make_memory: MemoryFactory) -> None:
    clock = FakeClock("2025-01-01T12:00:00Z", tick=0)
    mem = make_memory(clock=clock)
    made = mem.tokens.create("t", "a")
    assert mem.tokens.get("t").last_used_at is None
    mem.tokens.authenticate(made.token)
    first = mem.tokens.get("t").last_used_at
    assert first is not None and first.isoformat() == "2025-01-01T12:00:00+00:00"
    clock.advance(TOUCH_EVERY / 1e6 - 1)
    mem.tokens.authenticate(made.token)
    assert mem.tokens.get("t").last_used_at == first
    clock.advance(1)
    mem.tokens.authenticate(made.token)
    later = mem.tokens.get("t").last_used_at
    assert later is not None and (later - first).total_seconds() == TOUCH_EVERY / 1e6


def test_tokens_are_store_wide(make_memory: MemoryFactory) -> None:
    a, b = make_memory("a"), make_memory("b")
    made = a.tokens.create("shared", ["a", "b"])
    assert b.tokens.authenticate(made.token).name == "shared"
    assert [t.name for t in b.tokens.list()] == ["shared"]


# -- only the hash at rest ---------------------------------------------------------
def test_sqlite_file_holds_only_the_hash(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with chronomem.open(db) as mem:
        secrets = [mem.tokens.create(f"t{i}", "default", "admin").token for i in range(3)]
        mem.tokens.revoke("t1")
        mem.tokens.authenticate(secrets[0])
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("m.db"))
    for secret in secrets:
        assert secret.encode() not in raw and secret[3:].encode() not in raw
    with sqlite3.connect(db) as con:
        stored = {name: h for name, h in con.execute("SELECT name, token_hash FROM tokens")}
        columns = [r[1] for r in con.execute("PRAGMA table_info(tokens)")]
    assert stored == {f"t{i}": hashlib.sha256(s.encode()).hexdigest() for i, s in enumerate(secrets)}
    assert columns == ["id", "name", "token_hash", "scopes", "namespaces", "created_at", "last_used_at",
                       "expires_at", "revoked_at"]


def test_postgres_rows_hold_only_the_hash(request: pytest.FixtureRequest) -> None:
    psycopg = pytest.importorskip("psycopg")
    from conftest import pg_schema_url

    url = pg_schema_url(request)
    with chronomem.open(url) as mem:
        secrets = [mem.tokens.create(f"t{i}", ["default", "x"], "write").token for i in range(3)]
        mem.tokens.revoke("t2")
    schema = url.split("schema=")[1].split("&")[0]
    with psycopg.connect(pg_test_url()) as con:
        rows = con.execute(f'SELECT * FROM "{schema}".tokens ORDER BY name').fetchall()
    text = repr(rows)
    assert len(rows) == 3
    for secret in secrets:
        assert secret not in text and secret[3:] not in text
    assert [r[2] for r in rows] == [hash_token(s) for s in secrets]


# -- the CLI, as a shell runs it ---------------------------------------------------
def _run(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    return subprocess.run([*CLI, "--db", str(db), *args], capture_output=True, text=True, timeout=60, env=env)


def test_cli_create_list_revoke(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    done = _run("token", "create", "--name", "ci", "--namespace", "team", "--namespace", "ops", "--scope",
                "write", "--expires", "2099-01-01", "--json", db=db)
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)
    assert set(made) == {"token", "name", "namespace", "namespaces", "scopes", "expires_at"}
    assert made["name"] == "ci" and made["namespace"] == "team" and made["namespaces"] == ["team", "ops"]
    assert made["scopes"] == ["read", "write"] and made["expires_at"] == "2099-01-01T00:00:00Z"
    plain = _run("--namespace", "team", "token", "create", "--name", "reader", db=db)
    assert plain.returncode == 0, plain.stderr
    secret = plain.stdout.strip()
    assert secret.startswith("cm_") and "cannot be shown again" in plain.stderr
    listed = _run("token", "list", "--json", db=db)
    assert listed.returncode == 0 and made["token"] not in listed.stdout and secret not in listed.stdout
    rows = {t["name"]: t for t in json.loads(listed.stdout)["tokens"]}
    assert rows["reader"]["namespaces"] == ["team"] and rows["reader"]["scopes"] == ["read"]
    assert {t["status"] for t in rows.values()} == {"active"}
    human = _run("token", "list", db=db)
    assert "ci" in human.stdout and "reader" in human.stdout and secret not in human.stdout
    revoked = _run("token", "revoke", "ci", "--json", db=db)
    assert revoked.returncode == 0 and json.loads(revoked.stdout)["status"] == "revoked"
    with chronomem.open(db) as mem:
        with pytest.raises(AuthenticationError, match="revoked"):
            mem.tokens.authenticate(made["token"])
        assert mem.tokens.authenticate(secret).name == "reader"
    again = _run("token", "create", "--name", "ci", db=db)
    assert again.returncode == 1 and again.stderr.startswith("error: ") and "exists" in again.stderr
    bad = _run("token", "create", "--name", "x", "--namespace", "*", db=db)
    assert bad.returncode == 1 and "admin" in bad.stderr
    missing = _run("token", "revoke", "nobody", db=db)
    assert missing.returncode == 1 and "no token named 'nobody'" in missing.stderr
