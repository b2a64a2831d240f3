"""The history of a git repository: one episode per commit (its full
message), streamed from a ``git log`` subprocess. See docs/import/git.md."""

from __future__ import annotations

import codecs
import datetime as _dt
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Iterator

from ....errors import InvalidInputError
from ..source import Item, Reader, ReadOptions, Skip, SourceMessage

__all__ = ["READER", "GitReader"]

# one record per commit: RS, then NUL-separated fields; %B (the raw message)
# cannot hold a NUL, and -z ends it with one, so the shortstat follows it
_FIELDS = ("%H", "%h", "%P", "%aN", "%ct", "%S", "%B")
_FORMAT = "%x1e" + "%x00".join(_FIELDS)
_RECORD = re.compile(r"[0-9a-f]{40,64}\x00")  # what starts a real record (sha-1 or sha-256)
_STAT = re.compile(r"(\d+) files? changed")
_CHUNK = 1 << 16
# the repository's own config must not make a read run programs or prompt
_SAFE = ("-c", "log.showSignature=false", "-c", "core.fsmonitor=false", "-c", "diff.external=",
         "-c", "core.pager=cat", "--no-pager")


def _env() -> dict[str, str]:
    # English shortstat ("3 files changed") whatever the user's locale; no prompts
    return {**os.environ, "LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0"}


class GitReader(Reader):
    name = "git"
    description = "a git repository's history: one episode per commit message"

    def detect(self, path: Path) -> bool:
        try:
            return path.is_dir() and ((path / ".git").exists() or self._is_bare(path))
        except OSError:
            return False

    @staticmethod
    def _is_bare(path: Path) -> bool:
        return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()

    def files(self, opts: ReadOptions) -> list[Path]:
        root = opts.root
        if shutil.which("git") is None:
            raise InvalidInputError(f"path: cannot read {str(root)!r}: the git program is not on PATH")
        if not self.detect(root):
            raise InvalidInputError(f"path: {str(root)!r} is not a git repository "
                                    "(no .git in it, and not a bare repository)")
        done = self._git(root, "rev-parse", "--git-dir")
        if done.returncode != 0:
            raise InvalidInputError(f"path: {str(root)!r} is not a readable git repository: "
                                    f"{done.stderr.strip() or 'git rev-parse failed'}")
        return [root]

    def fingerprint(self, file: Path) -> str:
        """HEAD and every ref: a repository with neither moved is unchanged."""
        head = self._git(file, "rev-parse", "HEAD").stdout  # empty in a repository with no commit yet
        refs = self._git(file, "for-each-ref", "--format=%(objectname) %(refname)").stdout
        return hashlib.sha256(f"{head}\n{refs}".encode()).hexdigest()

    @staticmethod
    def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *_SAFE, "-C", str(root), *args], capture_output=True, text=True,
                              encoding="utf-8", errors="replace", env=_env(), check=False)

    @staticmethod
    def repo_name(root: Path) -> str:
        name = root.resolve().name
        return name[:-4] if name.endswith(".git") and len(name) > 4 else name

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        repo = self.repo_name(file)
        # every branch, local and remote-tracking, and a detached HEAD; HEAD
        # last, so a commit on a branch is attributed to the branch
        refs = ["--branches", "--remotes"]
        if self._git(file, "rev-parse", "--verify", "-q", "HEAD").returncode == 0:
            refs.append("HEAD")
        elif not self._git(file, "for-each-ref", "--count=1", "refs/heads", "refs/remotes").stdout.strip():
            return  # no commit yet: nothing to read
        cmd = ["git", *_SAFE, "-C", str(file), "log", *refs, "--source", "-z", f"--format={_FORMAT}",
               "--encoding=UTF-8", "--shortstat", "--diff-merges=first-parent", "--no-renames",
               "--no-ext-diff", "--no-textconv", "--no-color"]
        if opts.since is not None:
            cmd.append(f"--since=@{int(opts.since.timestamp())}")
        with tempfile.TemporaryFile() as errors:  # a file, not a pipe: a chatty stderr cannot block git
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, env=_env())
            assert proc.stdout is not None
            try:
                for record in self._records(proc.stdout):
                    yield self._commit(record, repo)
            finally:
                proc.stdout.close()
                if proc.poll() is None:  # the caller stopped early: do not leave git running
                    proc.kill()
                code = proc.wait()
            if code != 0:
                errors.seek(0)
                err = errors.read(2000).decode("utf-8", "replace").strip()
                yield Skip(repo, f"git log failed: {err[:200] or f'exit status {code}'}")

    @staticmethod
    def _records(out: IO[bytes]) -> Iterator[str]:
        """Each commit's record, one at a time. An RS inside a message (legal
        there) is told apart from a record start by the sha and NUL after it."""
        text = codecs.getincrementaldecoder("utf-8")("replace")  # a character split across reads stays whole
        buf, eof = "", False
        while not eof:
            data = out.read(_CHUNK)
            eof = not data
            buf += text.decode(data, final=eof)
            start = 0 if buf.startswith("\x1e") else buf.find("\x1e")
            if start == -1:
                continue
            search = start + 1
            while (cut := buf.find("\x1e", search)) != -1:
                if _RECORD.match(buf, cut + 1):
                    yield buf[start + 1:cut]
                    start = cut
                elif len(buf) - cut <= 65 and not eof:
                    break  # its sha is still arriving
                search = cut + 1
            buf = buf[start:]  # once per read: the buffer is one record plus a chunk
        if buf.startswith("\x1e"):
            yield buf[1:]

    @staticmethod
    def _commit(record: str, repo: str) -> Item:
        parts = record.split("\x00", len(_FIELDS) - 1)
        if len(parts) < len(_FIELDS):
            return Skip(f"{repo}@{record[:12]}", "unreadable git log record")
        sha, short, parents, author, when, source, rest = parts
        message, _, stat = rest.partition("\x00")
        text = message.strip()
        if not text:
            return Skip(sha, "empty")
        try:
            occurred = _dt.datetime.fromtimestamp(int(when), _dt.timezone.utc)
        except (ValueError, OverflowError, OSError):
            return Skip(sha, "no valid commit time")
        m = _STAT.search(stat)
        context: dict[str, object] = {"repo": repo, "sha": short, "files_changed": int(m.group(1)) if m else 0}
        branch = source.removeprefix("refs/heads/").removeprefix("refs/remotes/")
        if branch and branch != "HEAD":
            context["branch"] = branch
        if len(parents.split()) > 1:
            context["merge"] = True
        return SourceMessage(key=sha, text=text, occurred_at=occurred, speaker=author.strip() or None,
                             session=repo, context=context)


READER = GitReader()
