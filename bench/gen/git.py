"""A large git repository for the reader's streaming and speed checks:
``write(path, messages, seed)`` builds ``messages`` commits with ``git
fast-import`` (streamed: one commit at a time on its stdin), multi-line
bodies, non-ASCII authors, empty messages, merges and an empty commit."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

__all__ = ["write"]

_WORDS = ("fix add remove refactor update docs tests parser reader store index cache retry "
          "timeout config release build ci lint").split()
_AUTHORS = ("Alice Smith <alice@example.com>", "Zoë Ångström <zoe@example.com>",
            "李雷 <lilei@example.com>", "Bob Jones <bob@example.com>")
_T0 = 1704067200  # 2024-01-01T00:00:00Z


def write(path: Path, messages: int, seed: int = 0, scale: int = 1) -> Path:
    """Build a repository of ``messages`` commits at ``path`` (bodies ``scale``
    times longer than usual, for a large log from fewer commits); returns ``path``."""
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    proc = subprocess.Popen(["git", "-C", str(path), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert proc.stdin is not None
    for n in range(1, messages + 1):
        author = rng.choice(_AUTHORS)
        when = _T0 + n * 600
        body = "" if n % 97 == 0 else _message(rng, n, scale)
        data = body.encode()
        cmd = [f"commit refs/heads/{'side' if n % 50 == 25 else 'main'}", f"mark :{n}",
               f"author {author} {when} +0000", f"committer {author} {when} +0000",
               f"data {len(data)}"]
        out = ("\n".join(cmd) + "\n").encode() + data + b"\n"
        if n > 1:
            out += f"from :{n - 1}\n".encode() if n % 50 != 26 else f"from :{n - 2}\nmerge :{n - 1}\n".encode()
        if n % 13:  # every 13th commit changes no file
            content = f"{n} {rng.random()}\n".encode()
            out += f"M 100644 inline src/file{n % 40}.txt\ndata {len(content)}\n".encode() + content
        proc.stdin.write(out + b"\n")
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    return path


def _message(rng: random.Random, n: int, scale: int) -> str:
    subject = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9)))
    paras = ["\n".join(" ".join(rng.choice(_WORDS) for _ in range(12)) for _ in range(rng.randint(1, 8)))
             for _ in range(rng.randint(0, 6) * scale)]
    return "\n\n".join([f"{subject} ({n})", *paras]) + "\n"


if __name__ == "__main__":
    print(write(Path(sys.argv[1]), int(sys.argv[2])))
