"""An import killed with SIGKILL mid-way resumes by running it again:
nothing duplicated, nothing lost (docs/import/README.md, "Interrupted").
A real ``chronomem ingest`` subprocess on each backend is killed once some
batches have committed and before it is done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import chronomem

CLI = [sys.executable, "-m", "chronomem"]
TOTAL = 12_000


def _count(target: str) -> int:
    mem = chronomem.open(target, embedder=None)
    try:
        return int(mem.evidence_stats()["episodes"])
    finally:
        mem.close()


def test_sigkill_mid_import_then_rerun_stores_each_message_once(store_url: str, tmp_path: Path) -> None:
    src = tmp_path / "big.jsonl"
    with src.open("w", encoding="utf-8") as fh:
        for i in range(TOTAL):
            fh.write(json.dumps({"id": f"k{i}", "text": f"message {i} on the release plan",
                                 "timestamp": f"2024-05-{1 + i % 28:02d}T12:00:00Z", "session": f"s{i // 50}"}) + "\n")
    cmd = [*CLI, "--db", store_url, "--embedder", "none", "ingest", "jsonl", str(src), "--batch", "200",
           "--no-progress", "--json"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    seen = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        seen = _count(store_url) if Path(store_url).exists() or "://" in store_url else 0
        if seen >= 1000:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the import finished before it could be interrupted: make TOTAL larger"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    partial = _count(store_url)
    assert 1000 <= partial < TOTAL and partial % 200 == 0  # whole batches only
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["added"] == TOTAL - partial and summary["unchanged"] == partial
    assert _count(store_url) == TOTAL
    mem = chronomem.open(store_url, embedder=None)
    try:
        sources = [e.source for e in mem.episodes(limit=TOTAL + 10)]
    finally:
        mem.close()
    assert len(sources) == TOTAL and len(set(sources)) == TOTAL


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_third_run_reads_nothing(store_url: str, tmp_path: Path) -> None:
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "text": f"t{i}"}) + "\n" for i in range(10)), encoding="utf-8")
    cmd = [*CLI, "--db", store_url, "--embedder", "none", "ingest", str(src), "--no-progress", "--json"]
    runs = [json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout) for _ in range(3)]
    assert [r["added"] for r in runs] == [10, 0, 0]
    assert runs[0]["format"] == "jsonl" and runs[2]["files_unchanged"] == 1
