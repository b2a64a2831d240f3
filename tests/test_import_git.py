"""The git history reader over real repositories built in tmp_path with the
git program (fixed author and committer dates), a bare clone, and a
generated ~30 MB history for the streaming check."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import subprocess
from collections.abc import Generator
from pathlib import Path

import pytest

from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats.git import READER
from chronomem.service.ingest.source import ReadOptions, Skip, SourceMessage
from import_helpers import assert_claims_no_other_fixture, generator, read_all, stream

UTC = _dt.timezone.utc
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")


def git(repo: Path, *args: str, when: str = "2024-03-05T10:00:00Z", author: str = "Alice Smith") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": "a@example.com",
           "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when, "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_SYSTEM": os.devnull}
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "apollo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "a.txt").write_text("a\n")
    (r / "b.txt").write_text("b\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "Initial commit\n\nSets up the project.\nTwo files for now.",
        when="2024-03-05T10:00:00Z")
    git(r, "checkout", "-q", "-b", "feature")
    (r / "c.txt").write_text("c\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "Add c", when="2024-03-05T11:00:00Z", author="Zoë Ångström")
    git(r, "checkout", "-q", "main")
    git(r, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "", when="2024-03-05T12:00:00Z")
    git(r, "merge", "-q", "--no-ff", "feature", "-m", "Merge branch 'feature'", when="2024-03-05T15:00:00+02:00")
    return r


def sha(repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", rev)


def expected(repo: Path, name: str = "apollo") -> list[object]:
    merge, empty, feature, first = (sha(repo, r) for r in ("main", "main^1", "main^2", "main~2"))

    def commit(s: str, text: str, when: _dt.datetime, who: str, files: int, branch: str,
               **extra: object) -> SourceMessage:
        return SourceMessage(key=s, text=text, occurred_at=when, speaker=who, session=name,
                             context={"repo": name, "sha": s[:7], "files_changed": files, "branch": branch, **extra})

    return [
        commit(merge, "Merge branch 'feature'", _dt.datetime(2024, 3, 5, 13, 0, tzinfo=UTC), "Alice Smith", 1,
               "main", merge=True),  # files against the first parent
        Skip(empty, "empty"),
        commit(feature, "Add c", _dt.datetime(2024, 3, 5, 11, 0, tzinfo=UTC), "Zoë Ångström", 1, "feature"),
        commit(first, "Initial commit\n\nSets up the project.\nTwo files for now.",
               _dt.datetime(2024, 3, 5, 10, 0, tzinfo=UTC), "Alice Smith", 2, "main"),
    ]


def test_reads_every_commit_exactly(repo: Path) -> None:
    assert READER.files(ReadOptions(root=repo)) == [repo]
    assert read_all(READER, repo) == expected(repo)


def test_a_bare_clone_reads_the_same(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "apollo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    assert READER.detect(bare)
    assert read_all(READER, bare) == expected(repo)  # "apollo.git" is the repository "apollo"


def test_since(repo: Path) -> None:
    items = read_all(READER, repo, since=_dt.datetime(2024, 3, 5, 10, 30, tzinfo=UTC))
    assert [getattr(i, "key", None) or getattr(i, "where", None) for i in items] == [
        sha(repo, "main"), sha(repo, "main^1"), sha(repo, "main^2")]


def test_fingerprint_moves_with_head_and_refs(repo: Path) -> None:
    before = READER.fingerprint(repo)
    assert READER.fingerprint(repo) == before
    git(repo, "branch", "spare")
    with_branch = READER.fingerprint(repo)
    assert with_branch != before
    git(repo, "commit", "-q", "--allow-empty", "-m", "more")
    assert READER.fingerprint(repo) not in (before, with_branch)


def test_stopping_early_ends_git(repo: Path) -> None:
    items = READER.read(repo, ReadOptions(root=repo))
    assert isinstance(next(items), SourceMessage)
    assert isinstance(items, Generator)
    items.close()  # must not hang or leave a running git behind


def test_a_repository_without_commits(tmp_path: Path) -> None:
    r = tmp_path / "empty"
    r.mkdir()
    git(r, "init", "-q")
    assert READER.detect(r)
    assert read_all(READER, r) == []
    assert READER.fingerprint(r)


def test_not_a_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not READER.detect(plain)
    with pytest.raises(InvalidInputError, match=f"path: .*{plain.name}.* is not a git repository"):
        READER.files(ReadOptions(root=plain))
    (plain / ".git").write_text("gitdir: /nowhere\n")  # looks like one, is not
    with pytest.raises(InvalidInputError, match="path: .*plain.* not a readable git repository"):
        READER.files(ReadOptions(root=plain))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(InvalidInputError, match="path: .*plain.*git program is not on PATH"):
        READER.files(ReadOptions(root=plain))


def test_detect_only_repositories(repo: Path) -> None:
    assert READER.detect(repo)
    assert not READER.detect(repo / "a.txt")
    assert_claims_no_other_fixture(READER, "")


def test_streams_a_large_history_in_constant_memory(tmp_path: Path) -> None:
    root = generator("git").write(tmp_path / "big", 5_000, scale=6)
    log = subprocess.run(["git", "-C", str(root), "log", "--format=%B"], capture_output=True, check=True).stdout
    assert len(log) > 25_000_000
    got = stream(READER, root, keys=True)
    assert got.messages + got.skips == 5_000 and got.keys == 5_000
    assert got.peak < 20_000_000, got.peak


def test_a_detached_head_commit_is_read_without_a_branch(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach", "main~1")
    git(repo, "commit", "-q", "--allow-empty", "-m", "Experiment", when="2024-03-06T09:00:00Z")
    first = read_all(READER, repo)[0]
    assert isinstance(first, SourceMessage) and first.key == sha(repo, "HEAD") and first.text == "Experiment"
    assert "branch" not in first.context and first.context["files_changed"] == 0
