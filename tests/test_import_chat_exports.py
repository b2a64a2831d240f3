"""What the two chat export readers (ChatGPT, Claude.ai) do alike, checked
on each over its fixture (tests/data/import/<format>): the export read
alike from its folder, its file or its zip; detected there and nowhere
else, an empty export told by the files its service puts beside it; and
``files()`` naming what is wrong with a path, the other export included."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats import reader
from chronomem.service.ingest.source import ReadOptions
from import_helpers import DATA, assert_claims_no_other_fixture, read_all, zip_folder

#: format, the files beside an empty export, the other export's format and what it is called
CASES = [
    pytest.param("chatgpt", ("chat.html", "message_feedback.json"), "claude-ai", "Claude.ai export", id="chatgpt"),
    pytest.param("claude-ai", ("users.json",), "chatgpt", "ChatGPT export", id="claude-ai"),
]


@pytest.mark.parametrize("fmt", ["chatgpt", "claude-ai"])
def test_file_and_zip_read_like_the_folder(tmp_path: Path, fmt: str) -> None:
    fixture = DATA / fmt
    read = reader(fmt)
    assert read.files(ReadOptions(root=fixture)) == [fixture / "conversations.json"]
    folder = read_all(read, fixture)
    assert folder and read_all(read, fixture / "conversations.json") == folder
    archive = zip_folder(fixture, tmp_path / f"{fmt}-export.zip")
    assert read.detect(archive)
    assert read.files(ReadOptions(root=archive)) == [archive]
    assert read_all(read, archive) == folder


@pytest.mark.parametrize("fmt", ["chatgpt", "claude-ai"])
def test_detect_the_fixture_and_no_other(fmt: str) -> None:
    assert reader(fmt).detect(DATA / fmt)
    assert reader(fmt).detect(DATA / fmt / "conversations.json")
    assert_claims_no_other_fixture(reader(fmt), fmt)
    assert not reader(fmt).detect(DATA / "nope")


@pytest.mark.parametrize(("fmt", "beside", "other", "called"), CASES)
def test_detect_an_empty_export_by_its_files(tmp_path: Path, fmt: str, beside: tuple[str, ...], other: str,
                                             called: str) -> None:
    for name in beside:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "conversations.json").write_text("[]")
        assert not reader(fmt).detect(folder)
        (folder / name).write_text("[]")
        assert reader(fmt).detect(folder) and not reader(other).detect(folder)
        assert read_all(reader(fmt), folder) == []


@pytest.mark.parametrize(("fmt", "beside", "other", "called"), CASES)
def test_files_errors(tmp_path: Path, fmt: str, beside: tuple[str, ...], other: str, called: str) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        reader(fmt).files(ReadOptions(root=tmp_path / "missing"))
    with pytest.raises(InvalidInputError, match="has no conversations.json"):
        reader(fmt).files(ReadOptions(root=tmp_path))
    with pytest.raises(InvalidInputError, match=f"{called}; use: ingest {other}"):
        reader(fmt).files(ReadOptions(root=DATA / other))
    (tmp_path / "conversations.json").write_text("hello")
    with pytest.raises(InvalidInputError, match="not JSON"):
        reader(fmt).files(ReadOptions(root=tmp_path))
    # a wrapper object holding the array is read too (an empty one holds nothing)
    (tmp_path / "conversations.json").write_text('{"conversations": []}')
    assert read_all(reader(fmt), tmp_path) == []
