"""The Markdown notes reader over a hand-made Obsidian-style vault
(tests/data/import/markdown), copied to tmp_path so file times are fixed,
odd front matter, and a generated ~28 MB note for the streaming check."""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from pathlib import Path

import pytest

from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats.markdown import READER, parse_date
from chronomem.service.ingest.source import ReadOptions, Skip, SourceMessage
from import_helpers import DATA, assert_claims_no_other_fixture, generator, read_all, stream

UTC = _dt.timezone.utc
MTIME = _dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)


@pytest.fixture()
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(DATA / "markdown", root)
    for f in root.rglob("*.md"):
        os.utime(f, (MTIME.timestamp(), MTIME.timestamp()))
    return root


APOLLO = {"title": "Apollo launch", "tags": ["project", "space"], "aliases": ["Apollo", "Project A"]}


def apollo(slug: str, text: str, headings: list[str], links: tuple[str, ...] = ()) -> SourceMessage:
    return SourceMessage(key=f"Projects/Apollo.md#{slug}", text=text, occurred_at="2024-03-05", speaker="Alice",
                         session="Projects/Apollo.md", context={**APOLLO, "headings": headings}, links=links)


EXPECTED = [
    SourceMessage(key="Daily/2024-03-06.md#wednesday", text="# Wednesday\n\nMet [[Dana]] about the budget.",
                  occurred_at="2024-03-06", session="Daily/2024-03-06.md",
                  context={"title": "Wednesday", "headings": ["Wednesday"]}, links=("Dana",)),
    Skip("Empty.md", "empty"),
    SourceMessage(key="Inbox/latin1.md#caf-notes", text="# Caf\ufffd notes\n\nprice: 5\ufffd or so",
                  occurred_at=MTIME, session="Inbox/latin1.md",
                  context={"title": "Caf\ufffd notes", "headings": ["Caf\ufffd notes"]}),
    SourceMessage(key="Inbox/plain.md#", text="Just a line with no heading and no date.", occurred_at=MTIME,
                  session="Inbox/plain.md", context={"title": "plain", "headings": []}),
    SourceMessage(key="Meeting.md#agenda", text="## Agenda\n\n- item one",
                  occurred_at=_dt.datetime(2024, 3, 7, 9, 30, tzinfo=UTC), session="Meeting.md",
                  context={"title": "Meeting", "tags": ["meeting", "weekly"], "headings": ["Agenda"]}),
    apollo("", "Kick-off summary, before any heading.", []),
    apollo("apollo", "# Apollo\n\nThe plan for [[Alice]] and [[Bob|him]].", ["Apollo"], ("Alice", "Bob")),
    apollo("notes", "## Notes\n\nSee [[Carol#Bio]] and ![[diagram.png]], again [[Alice]].\n\n"
           "```python\n# not a heading\nx = \"[[NotALink]]\"\n```", ["Apollo", "Notes"],
           ("Carol", "diagram.png", "Alice")),
    apollo("notes~2", "## Notes\n\nSecond notes section.", ["Apollo", "Notes"]),
    apollo("deep", "### Deep\n\nUnder the second notes.", ["Apollo", "Notes", "Deep"]),
    Skip("Projects/Apollo.md#empty", "empty"),
]


def test_reads_every_section_exactly(vault: Path) -> None:
    assert read_all(READER, vault) == EXPECTED


def test_hidden_folders_are_not_read(vault: Path) -> None:
    files = [f.relative_to(vault).as_posix() for f in READER.files(ReadOptions(root=vault))]
    assert files == ["Daily/2024-03-06.md", "Empty.md", "Inbox/latin1.md", "Inbox/plain.md", "Meeting.md",
                     "Projects/Apollo.md"]


def test_a_single_note(vault: Path) -> None:
    note = vault / "Daily" / "2024-03-06.md"
    opts = ReadOptions(root=note)
    assert READER.files(opts) == [note]
    (m,) = READER.read(note, opts)
    assert isinstance(m, SourceMessage) and m.key == "2024-03-06.md#wednesday" and m.session == "2024-03-06.md"


def note(tmp_path: Path, text: str, name: str = "n.md") -> list[object]:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return list(READER.read(f, ReadOptions(root=tmp_path)))


def test_front_matter_odd_cases(tmp_path: Path) -> None:
    # an opening '---' that never closes is a rule, not front matter; the date falls back to the name
    (m,) = note(tmp_path, "---\nnot: front matter\n\nbody\n", "2024-05-01 standup.md")
    assert isinstance(m, SourceMessage) and m.text == "---\nnot: front matter\n\nbody" and m.occurred_at == "2024-05-01"
    # a bad date falls through to 'created'; an offset is converted to UTC; scalar tags split, '#' dropped
    (m,) = note(tmp_path, "---\ndate: soon\ncreated: 2024-01-02T10:00:00+02:00\ntags: '#a b'\n"
                "author: Bob # the editor\n---\n# T\nx\n")
    assert isinstance(m, SourceMessage)
    assert m.occurred_at == _dt.datetime(2024, 1, 2, 8, 0, tzinfo=UTC)
    assert m.context == {"title": "T", "tags": ["a", "b"], "headings": ["T"]} and m.speaker == "Bob"
    # a title in the front matter wins over the first H1; the H1 is found even after an H2
    (m1, m2) = note(tmp_path, "## First\na\n# Real title\nb\n")
    assert isinstance(m1, SourceMessage) and m1.context["title"] == "Real title"
    assert isinstance(m2, SourceMessage) and m2.context["headings"] == ["Real title"]
    # only front matter: an empty note
    assert note(tmp_path, "---\ntitle: x\n---\n\n") == [Skip("n.md", "empty")]


def test_headings_and_fences(tmp_path: Path) -> None:
    items = note(tmp_path, "#tag is not a heading\n~~~\n# in tilde fence\n```\nstill fenced\n~~~\n"
                 "# Real ##\n####### seven is text\n")
    assert [(getattr(i, "key", None), getattr(i, "text", None)) for i in items] == [
        ("n.md#", "#tag is not a heading\n~~~\n# in tilde fence\n```\nstill fenced\n~~~"),
        ("n.md#real", "# Real ##\n####### seven is text"),
    ]


def test_link_forms(tmp_path: Path) -> None:
    (m, h) = note(tmp_path, "[[People/Alice]] [[#Local heading]] [[Bob.md|B]] ![[Carol#^b1]] `x` [[Alice]]\n"
                  "## Call with [[Erin]]\nabout [[Alice]]\n")
    assert isinstance(m, SourceMessage) and m.links == ("Alice", "Bob", "Carol")
    assert isinstance(h, SourceMessage) and h.links == ("Erin", "Alice") and h.key == "n.md#call-with-erin"


def test_parse_date() -> None:
    assert parse_date("2024-03-05") == "2024-03-05"
    assert parse_date("2024-02-30") is None
    assert parse_date("2024-03-05 10:00") == _dt.datetime(2024, 3, 5, 10, 0, tzinfo=UTC)
    assert parse_date("2024-03-05T10:00:00Z") == _dt.datetime(2024, 3, 5, 10, 0, tzinfo=UTC)


def test_detect(vault: Path) -> None:
    assert READER.detect(vault) and READER.detect(vault / "Meeting.md")
    assert_claims_no_other_fixture(READER, "markdown")


def test_not_notes(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="path: .*does not exist"):
        READER.files(ReadOptions(root=tmp_path / "nope"))
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.md").write_text("# x\n")
    with pytest.raises(InvalidInputError, match="path: no Markdown notes"):
        READER.files(ReadOptions(root=tmp_path))
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(InvalidInputError, match="path: .*not a Markdown file"):
        READER.files(ReadOptions(root=tmp_path / "a.txt"))


def test_streams_a_large_note_in_constant_memory(tmp_path: Path) -> None:
    root = generator("markdown").write(tmp_path / "big", 16_000, per_note=16_000)
    (big,) = READER.files(ReadOptions(root=root))
    assert big.stat().st_size > 25_000_000
    got = stream(READER, root)
    assert got.messages + got.skips == 16_001  # the intro before the first heading, then every section
    assert got.peak < 20_000_000, got.peak
