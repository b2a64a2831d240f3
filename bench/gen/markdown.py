"""A large folder of Markdown notes for the reader's streaming and speed
checks: ``write(path, messages, seed)`` writes notes of ``per_note``
sections each (``messages`` sections in all), line by line, with front
matter, daily-note names, [[links]], code fences with '#' lines, repeated
headings and a non-UTF-8 byte."""

from __future__ import annotations

import random
import sys
from pathlib import Path

__all__ = ["write"]

_WORDS = ("plan budget review meeting notes idea project research draft follow up decision "
          "risk owner deadline scope launch metric").split()
_PEOPLE = ("Alice", "Bob", "Carol", "Dana", "Erin")


def write(path: Path, messages: int, seed: int = 0, per_note: int = 12) -> Path:
    """Write ``messages`` heading sections under ``path``; returns ``path``."""
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    (path / ".obsidian").mkdir(exist_ok=True)
    (path / ".obsidian" / "app.json").write_text("{}\n")
    written, note = 0, 0
    while written < messages:
        daily = note % 3 == 0
        folder = path / ("Daily" if daily else f"Notes/{note % 10}")
        folder.mkdir(parents=True, exist_ok=True)
        name = f"2024-{1 + note % 12:02d}-{1 + note % 28:02d}-{note}.md" if daily else f"note-{note}.md"
        with open(folder / name, "wb") as fp:
            if not daily:
                fp.write(f"---\ntitle: Note {note}\ndate: 2024-02-{1 + note % 28:02d}\n"
                         f"tags: [gen, t{note % 5}]\n---\n".encode())
            fp.write(b"Intro line before the headings.\n\n")
            for n in range(min(per_note, messages - written)):
                fp.write(_section(rng, n))
                written += 1
        note += 1
    return path


def _section(rng: random.Random, n: int) -> bytes:
    heading = "#" * (1 + n % 3) + " " + ("Notes" if n % 4 == 0 else f"Topic {n}")
    lines = [heading, ""]
    for _ in range(rng.randint(3, 30)):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 25))]
        if rng.random() < 0.3:
            words.append(f"[[{rng.choice(_PEOPLE)}|them]]")
        lines.append(" ".join(words))
    if rng.random() < 0.1:
        lines += ["```sh", "# a comment, not a heading", "echo [[NotALink]]", "```"]
    raw = ("\n".join(lines) + "\n\n").encode()
    return raw.replace(b"plan", b"pl\xe9n", 1) if rng.random() < 0.01 else raw


if __name__ == "__main__":
    print(write(Path(sys.argv[1]), int(sys.argv[2])))
