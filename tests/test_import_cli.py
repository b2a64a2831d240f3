"""``chronomem ingest [FORMAT] PATH`` end to end, in real subprocesses: every
format's fixture is detected and imported once, a second run adds nothing,
``--dry-run`` writes nothing, and bad input is a one-line error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import chronomem

DATA = Path(__file__).parent / "data" / "import"
CLI = [sys.executable, "-m", "chronomem"]
FIXTURES = ["claude-code", "codex", "chatgpt", "claude-ai", "slack", "markdown"]


def _ingest(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--db", str(db), "--embedder", "none", "ingest", *args, "--no-progress"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("fmt", FIXTURES)
def test_each_fixture_is_detected_and_imported_once(tmp_path: Path, fmt: str) -> None:
    src = tmp_path / fmt
    shutil.copytree(DATA / fmt, src)
    db = tmp_path / "m.db"
    dry = _ingest(db, str(src), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert planned["format"] == fmt and planned["dry_run"] and planned["added"] > 0
    assert not db.exists() or chronomem.open(db).evidence_stats()["episodes"] == 0
    first = json.loads(_ingest(db, str(src), "--json").stdout)
    assert first["added"] == planned["added"] and first["episodes"] == first["added"]
    second = _ingest(db, fmt, str(src))
    assert second.returncode == 0 and "added 0 new" in second.stdout and "not read" in second.stdout
    with chronomem.open(db) as mem:
        eps = mem.episodes(limit=1000)
    assert len(eps) == first["added"]
    assert all(e.metadata and e.metadata["import"]["format"] == fmt for e in eps)
    assert all(e.source and e.source.startswith(f"{fmt}:") for e in eps)


def test_git_history(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    env = {"GIT_AUTHOR_NAME": "Ana", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "Ana",
           "GIT_COMMITTER_EMAIL": "a@x", "GIT_AUTHOR_DATE": "2024-03-05T10:00:00Z",
           "GIT_COMMITTER_DATE": "2024-03-05T10:00:00Z", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "Move the queue to SQLite"],
                   check=True, env=env)
    db = tmp_path / "m.db"
    out = json.loads(_ingest(db, str(repo), "--json").stdout)
    assert (out["format"], out["added"]) == ("git", 1)
    with chronomem.open(db) as mem:
        (ep,) = mem.episodes()
    assert ep.text == "Move the queue to SQLite" and ep.speaker == "Ana"
    assert ep.occurred_at is not None and ep.occurred_at.isoformat() == "2024-03-05T10:00:00+00:00"


@pytest.mark.parametrize(("args", "needle"), [
    (["docx", "x.txt"], "FORMAT"),
    (["claude-code", "/nonexistent/path"], "does not exist"),
    (["a", "b", "c"], "at most"),
    (["--since", "the 45th of Smarch", "x.txt"], "since"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], needle: str) -> None:
    (tmp_path / "x.txt").write_text("hello\n")
    r = subprocess.run([*CLI, "--db", str(tmp_path / "m.db"), "ingest", *args], capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == "" and not (tmp_path / "m.db").exists()  # refused before a database is made


def test_undetectable_input_says_how_to_name_the_format(tmp_path: Path) -> None:
    odd = tmp_path / "notes.docx"
    odd.write_bytes(b"PK\x03\x04 not a known export")
    r = _ingest(tmp_path / "m.db", str(odd))
    assert r.returncode == 1 and "cannot tell the format" in r.stderr and "Traceback" not in r.stderr
