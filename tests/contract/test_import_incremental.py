"""Transcript imports are incremental and idempotent (docs/import/README.md):
a re-run adds only what is new, an edited message becomes a new version of
its episode, an erased one is not imported again, a dry run writes nothing,
``since`` / ``project`` filter, and a restore carries what was imported.
Both backends; the generic ``jsonl`` reader, so only the service is tested."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

import chronomem
from chronomem import InvalidInputError, Memory
from chronomem.io import export_jsonl, import_jsonl, import_source

from ._helpers import MemoryFactory


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(n: int, start: int = 0) -> list[dict[str, object]]:
    return [{"id": f"m{i}", "text": f"turn {i} about the queue", "speaker": "ana" if i % 2 else "bo",
             "timestamp": f"2024-03-{1 + i % 28:02d}T10:{i % 60:02d}:00Z", "session": f"s{i // 10}"}
            for i in range(start, start + n)]


def _mem(make_memory: MemoryFactory) -> Memory:
    mem = make_memory()
    mem.use_embedder(None)
    return mem


def _bump(path: Path) -> None:
    """A new mtime, as a rewrite of the file would give."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))


def test_second_run_adds_nothing_and_skips_the_unchanged_file(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    f = _write(tmp_path / "t.jsonl", _rows(25))
    first = mem.import_source(f, "jsonl", batch=7)
    assert (first.added, first.updated, first.unchanged, first.files_unchanged) == (25, 0, 0, 0)
    assert len(mem.episodes(limit=100)) == 25
    again = import_source(mem, f, "jsonl")
    assert (again.added, again.messages, again.files_unchanged) == (0, 0, 1)
    _bump(f)  # read again: every message is known
    reread = mem.import_source(f, "jsonl")
    assert (reread.added, reread.updated, reread.unchanged) == (0, 0, 25)
    assert len(mem.episodes(limit=100)) == 25


def test_appended_lines_are_the_only_new_episodes(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    f = _write(tmp_path / "t.jsonl", _rows(10))
    mem.import_source(f, "jsonl")
    with f.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in _rows(3, start=10))
    more = mem.import_source(f, "jsonl")
    assert (more.added, more.unchanged, more.files_unchanged) == (3, 10, 0)
    assert sorted(e.text for e in mem.episodes(limit=100))[-1] == "turn 9 about the queue"
    assert len(mem.episodes(limit=100)) == 13


def test_an_edited_message_is_a_new_version_superseding_the_old(make_memory: MemoryFactory,
                                                               tmp_path: Path) -> None:
    mem = _mem(make_memory)
    rows = _rows(3)
    f = _write(tmp_path / "t.jsonl", rows)
    mem.import_source(f, "jsonl")
    old = next(e for e in mem.episodes(limit=10) if e.text == "turn 1 about the queue")
    rows[1]["text"] = "turn 1 about the queue, moved to SQLite"
    _write(f, rows)
    _bump(f)
    res = mem.import_source(f, "jsonl")
    assert (res.added, res.updated, res.unchanged) == (0, 1, 2)
    new_id = res.episode_ids[0]
    assert mem.episode(old.id).superseded_by == new_id
    world = [h.episode.id for h in mem.search("queue SQLite", view="as_world", k=10)]
    assert new_id in world and old.id not in world
    raw = [h.episode.id for h in mem.search("turn 1", view="raw", k=10)]
    assert old.id in raw  # history is kept, never overwritten
    assert mem.episode(new_id).metadata["import"] == {"format": "jsonl", "key": "m1"}


def test_an_erased_message_is_not_imported_again(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    f = _write(tmp_path / "t.jsonl", _rows(3))
    mem.import_source(f, "jsonl")
    victim = next(e for e in mem.episodes(limit=10) if e.text == "turn 2 about the queue")
    mem.erase_episode(victim.id, confirm=True)
    _bump(f)
    res = mem.import_source(f, "jsonl")
    assert (res.added, res.updated, res.unchanged, res.skipped_by_reason) == (0, 0, 2, {"erased": 1})
    assert "turn 2 about the queue" not in {e.text for e in mem.episodes(limit=10)}


def test_dry_run_counts_and_writes_nothing(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    f = _write(tmp_path / "t.jsonl", _rows(4))
    dry = mem.import_source(f, "jsonl", dry_run=True)
    assert (dry.dry_run, dry.added, dry.episode_ids) == (True, 4, [])
    assert mem.episodes(limit=10) == []
    real = mem.import_source(f, "jsonl")  # the dry run left no fingerprint behind
    assert real.added == 4


def test_since_and_project_filter(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    rows = [{"id": "a", "text": "old news", "timestamp": "2024-01-05T00:00:00Z", "metadata": {"project": "Alpha"}},
            {"id": "b", "text": "new news", "timestamp": "2024-06-05T00:00:00Z", "metadata": {"project": "alpha-web"}},
            {"id": "c", "text": "other", "timestamp": "2024-06-06", "metadata": {"project": "beta"}}]
    f = _write(tmp_path / "t.jsonl", rows)
    res = mem.import_source(f, "jsonl", since="2024-06", project="ALPHA", dry_run=True)
    assert (res.added, res.filtered) == (1, 2)
    res = mem.import_source(f, "jsonl", since="2024-06-06")
    assert (res.added, res.filtered) == (1, 2)  # a day is in if it ends after since
    assert [e.text for e in mem.episodes(limit=10)] == ["other"]


def test_bad_records_are_skipped_and_the_rest_stored(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    f = tmp_path / "t.jsonl"
    long_text = "x" * 150_000
    f.write_bytes(b'{"id": "1", "text": "fine"}\n'
                  b'{"id": "2", "text": "bad time", "timestamp": "the 45th of Smarch"}\n'
                  b'not json\n'
                  b'{"id": "3", "text": "nul\\u0000byte and \xff raw"}\n'
                  + json.dumps({"id": "4", "text": long_text}).encode() + b"\n")
    res = mem.import_source(f, "jsonl")
    assert res.added == 3 and res.truncated == 1
    assert res.skipped_by_reason == {"invalid": 2}
    texts = {e.text[:20] for e in mem.episodes(limit=10)}
    assert "nulbyte and \ufffd raw" in texts
    assert any(s["reason"].startswith("invalid: ") and "occurred_at" in s["reason"] for s in res.skips)


def test_secrets_are_counted_in_the_summary(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    f = _write(tmp_path / "t.jsonl", [{"id": "1", "text": f"use {token} to push"}])
    res = mem.import_source(f, "jsonl")
    assert (res.redacted, res.redacted_by_kind) == (1, {"github_token": 1})
    assert token not in mem.episodes(limit=1)[0].text


def test_restore_carries_the_import_keys(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    f = _write(tmp_path / "t.jsonl", _rows(5))
    mem.import_source(f, "jsonl")
    buf = io.StringIO()
    exported = export_jsonl(mem, buf)
    assert exported.import_keys == 5
    other = chronomem.open(tmp_path / "restored.db", embedder=None)  # episode ids are unique per database
    buf.seek(0)
    restored = import_jsonl(other, buf)
    assert restored.import_keys == 5
    res = other.import_source(f, "jsonl")  # file fingerprints are not carried: read, nothing new
    assert (res.added, res.unchanged) == (0, 5)
    other.close()


def test_bad_arguments_are_typed_errors(make_memory: MemoryFactory, tmp_path: Path) -> None:
    mem = _mem(make_memory)
    f = _write(tmp_path / "t.jsonl", _rows(1))
    for kwargs, field in [({"format": "docx"}, "format"), ({"batch": 0}, "batch"), ({"project": " "}, "project"),
                          ({"since": "the 45th of Smarch"}, "since"), ({"dry_run": "no"}, "dry_run")]:
        with pytest.raises(InvalidInputError, match=field):
            mem.import_source(f, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="path"):
        mem.import_source(tmp_path / "missing.jsonl")
    assert mem.episodes(limit=10) == []
    assert chronomem.io.IMPORT_FORMATS[0] == "claude-code"
