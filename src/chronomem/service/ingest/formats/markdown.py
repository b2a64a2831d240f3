"""A folder of Markdown notes (an Obsidian vault, a notes directory), read
recursively: one episode per heading section, ``[[links]]`` as entity links,
YAML front matter for the date, title, tags and author. See
docs/import/markdown.md."""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ....errors import InvalidInputError
from ..source import Item, Reader, ReadOptions, Skip, SourceMessage
from .inputs import claims, lone_file

__all__ = ["READER", "MarkdownReader"]

_SUFFIXES = (".md", ".markdown")
# CommonMark ATX heading: up to 3 spaces, 1-6 '#', then a space or the end ('#tag' is no heading)
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_DAY_IN_NAME = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


_FM_KEYS = ("date", "created", "updated", "title", "tags", "aliases", "author")
_FM_MAX_LINES = 200  # an opening '---' not closed by then is a horizontal rule, not front matter


@dataclass(frozen=True)
class FrontMatter:
    """The few front-matter keys a note's episodes use."""

    date: _dt.datetime | str | None = None
    title: str | None = None
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    author: str | None = None


def _unquote(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return re.sub(r"\s+#.*$", "", v)  # a trailing YAML comment


def _yaml_value(v: str) -> str | list[str]:
    v = v.strip()
    if v.startswith("[") and v.endswith("]"):
        return [x for x in (_unquote(p) for p in v[1:-1].split(",")) if x]
    return _unquote(v)


def parse_date(v: str) -> _dt.datetime | str | None:
    """A day ("2024-03-05", kept as the ISO string) or a datetime (in UTC;
    naive is taken as UTC); ``None`` if it is neither."""
    v = v.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
            return _dt.date.fromisoformat(v).isoformat()
        d = _dt.datetime.fromisoformat(v)
    except ValueError:
        return None
    return d.astimezone(_dt.timezone.utc) if d.tzinfo else d.replace(tzinfo=_dt.timezone.utc)


def read_front_matter(lines: Iterator[str]) -> tuple[FrontMatter, list[str]]:
    """Consume a leading ``---`` ... ``---`` block from ``lines``. Returns the
    keys it read and the lines to give back to the body (everything read, if
    the block was not front matter after all). A small line reader, never
    eval: ``key: scalar``, ``key: [a, b]`` and ``key:`` + ``- item`` lists."""
    first = next(lines, None)
    if first is None:
        return FrontMatter(), []
    if first.rstrip() != "---":
        return FrontMatter(), [first]
    block: list[str] = []
    for line in lines:
        if line.rstrip() in ("---", "..."):
            break
        block.append(line)
        if len(block) > _FM_MAX_LINES:
            return FrontMatter(), [first, *block]
    else:
        return FrontMatter(), [first, *block]
    values: dict[str, str | list[str]] = {}
    key = None
    for line in block:
        m = re.match(r"^([A-Za-z_][\w-]*)\s*:(.*)$", line)
        if m:
            key = m.group(1).lower()
            if key in _FM_KEYS and key not in values:
                values[key] = _yaml_value(m.group(2)) if m.group(2).strip() else []
            continue
        item = re.match(r"^\s+-\s+(.*)$", line) or re.match(r"^-\s+(.*)$", line)
        if item and key in values and isinstance(values[key], list):
            values[key].append(_unquote(item.group(1)))  # type: ignore[union-attr]
    return _front_matter(values), []


def _front_matter(values: dict[str, str | list[str]]) -> FrontMatter:
    def items(k: str, split: bool) -> tuple[str, ...]:
        v = values.get(k, [])
        raw = v if isinstance(v, list) else (re.split(r"[,\s]+", v) if split else [v])
        return tuple(dict.fromkeys(x.lstrip("#").strip() for x in raw if x.lstrip("#").strip()))

    date: _dt.datetime | str | None = None
    for k in ("date", "created", "updated"):
        raw = values.get(k)
        date = parse_date(raw) if isinstance(raw, str) else None
        if date is not None:
            break
    title = values.get("title")
    author = items("author", split=False)
    return FrontMatter(date=date, title=title if isinstance(title, str) and title else None,
                       tags=items("tags", split=True), aliases=items("aliases", split=False),
                       author=author[0].strip("[]").strip() or None if author else None)  # "[[Alice]]"


def _lines(path: Path) -> Iterator[str]:
    """Every line, blank ones included (they are part of a note's text),
    decoded with undecodable bytes replaced; a BOM dropped."""
    with open(path, "rb") as fp:
        for n, raw in enumerate(fp):
            if n == 0 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            yield raw.decode("utf-8", "replace").rstrip("\r\n")


class _Fences:
    """Tracks fenced code blocks, so a ``#`` line inside one is code."""

    def __init__(self) -> None:
        self.open: str | None = None

    def inside(self, line: str) -> bool:
        """Is ``line`` part of a fence (its opening and closing lines included)?"""
        m = _FENCE.match(line)
        if self.open is None:
            if m and not (m.group(1)[0] == "`" and "`" in line[m.end():]):
                self.open = m.group(1)
                return True
            return False
        if m and m.group(1)[0] == self.open[0] and len(m.group(1)) >= len(self.open) \
                and not line[m.end():].strip():
            self.open = None
        return True


def _heading(line: str) -> tuple[int, str] | None:
    m = _HEADING.match(line)
    return (len(m.group(1)), (m.group(2) or "").strip()) if m else None


def _slug(text: str) -> str:
    """GitHub-style anchor: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", text.lower()).strip().replace(" ", "-")


def _links(lines: list[str]) -> list[str]:
    found: list[str] = []
    for line in lines:
        for m in _LINK.finditer(line):
            target = m.group(1).split("|", 1)[0].split("#", 1)[0].strip()
            target = target.rsplit("/", 1)[-1]  # Obsidian resolves by file name
            if target.lower().endswith(".md"):
                target = target[:-3]
            if target:
                found.append(target)
    return found


@dataclass
class _Section:
    headings: list[tuple[int, str]]
    lines: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def _is_note(path: Path) -> bool:
    return path.suffix.lower() in _SUFFIXES


def _is_vault(path: Path) -> bool:
    if (path / ".obsidian").is_dir():
        return True
    md = other = 0
    with os.scandir(path) as it:
        for n, entry in enumerate(it):
            if n >= 500:
                break
            suffix = os.path.splitext(entry.name)[1].lower()
            md += suffix in _SUFFIXES
            other += suffix in (".json", ".jsonl")
    return md > other  # a data folder with a README is not a vault


class MarkdownReader(Reader):
    name = "markdown"
    description = "a folder of Markdown notes (Obsidian vault): one episode per heading section"

    def detect(self, path: Path) -> bool:
        return claims(path, _is_note, _is_vault)

    def files(self, opts: ReadOptions) -> list[Path]:
        root = opts.root
        if lone_file(root, _is_note, "Markdown file (.md)"):
            return [root]
        found: list[Path] = []
        for top, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]  # .obsidian, .git, .trash ...
            found += [Path(top, n) for n in names
                      if not n.startswith(".") and os.path.splitext(n)[1].lower() in _SUFFIXES]
        if not found:
            raise InvalidInputError(f"path: no Markdown notes (.md) under {str(root)!r}")
        return sorted(found, key=lambda p: p.relative_to(root).as_posix())

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        rel = file.name if opts.root.is_file() else file.relative_to(opts.root).as_posix()
        lines = _lines(file)
        fm, head = read_front_matter(lines)
        title = fm.title or self._first_h1(file) or file.stem
        base: dict[str, Any] = {"title": title}
        if fm.tags:
            base["tags"] = list(fm.tags)
        if fm.aliases:
            base["aliases"] = list(fm.aliases)
        when = self._occurred_at(fm, file)
        seen: dict[str, int] = {}
        emitted = sections = 0
        for section in self._sections(head, lines):
            sections += bool(section.headings)
            slug = _slug(section.headings[-1][1]) if section.headings else ""
            seen[slug] = seen.get(slug, 0) + 1
            key = f"{rel}#{slug}" + (f"~{seen[slug]}" if seen[slug] > 1 else "")
            text = "\n".join(section.lines).strip("\n").rstrip()
            body = text.split("\n", 1)[1] if section.headings and "\n" in text else ""
            if not text or (section.headings and not body.strip()):
                if section.headings:  # a heading with nothing under it says nothing alone
                    yield Skip(key, "empty")
                continue
            emitted += 1
            yield SourceMessage(key=key, text=text, occurred_at=when, speaker=fm.author, session=rel,
                                context={**base, "headings": [h for _, h in section.headings]},
                                links=tuple(dict.fromkeys(section.links)))
        if not emitted and not sections:
            yield Skip(rel, "empty")

    @staticmethod
    def _sections(head: list[str], rest: Iterator[str]) -> Iterator[_Section]:
        fences = _Fences()
        current = _Section(headings=[])
        for line in itertools.chain(head, rest):
            h = None if fences.inside(line) else _heading(line)
            if h is not None:
                yield current
                path = [x for x in current.headings if x[0] < h[0]]
                current = _Section(headings=[*path, h])
            if fences.open is None:  # the heading line's links are the new section's
                current.links += _links([line])
            current.lines.append(line)
        yield current

    @staticmethod
    def _first_h1(file: Path) -> str | None:
        """The first level-1 heading outside code: a note's title when its
        front matter has none (found before the sections that precede it)."""
        lines = _lines(file)
        _, head = read_front_matter(lines)
        fences = _Fences()
        for line in itertools.chain(head, lines):
            h = None if fences.inside(line) else _heading(line)
            if h and h[0] == 1 and h[1]:
                return h[1]
        return None

    @staticmethod
    def _occurred_at(fm: FrontMatter, file: Path) -> _dt.datetime | str:
        if fm.date is not None:
            return fm.date
        m = _DAY_IN_NAME.search(file.stem)  # daily notes: 2024-03-05.md
        if m and parse_date(m.group(1)) is not None:
            return m.group(1)
        return _dt.datetime.fromtimestamp(file.stat().st_mtime, _dt.timezone.utc)


READER = MarkdownReader()
