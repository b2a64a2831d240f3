"""The streaming JSON array reader under the ChatGPT and Claude.ai
importers: elements one at a time whatever the chunking, bounded memory, and
a Skip (never an exception) for a truncated or garbled file."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats.jsonarray import export_files, head, iter_array, iter_export
from chronomem.service.ingest.source import Skip

# strings with escapes, multibyte characters of 2, 3 and 4 bytes, nested arrays, every JSON type
DOC: list[Any] = [
    {"text": "naïve café — 東京 😀", "esc": "quote \" backslash \\ tab \t nl \n uni \u00e9 \U0001F600"},
    [1, [2, [3, [4, []]]], {"a": [{"b": []}]}],
    12345678901234567890,
    -1.5e-10,
    "plain",
    True,
    False,
    None,
    {},
    [],
]


class Counting(io.BytesIO):
    """Counts the bytes and calls read from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.calls = 0
        self.taken = 0

    def read(self, n: int | None = -1, /) -> bytes:
        self.calls += 1
        data = super().read(n)
        self.taken += len(data)
        return data


def values(raw: bytes, chunk: int = 65536, **kw: Any) -> list[Any]:
    return list(iter_array(io.BytesIO(raw), "f", chunk=chunk, **kw))


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("ascii_only", [False, True])  # True: \\uXXXX escapes, surrogate pairs
def test_every_chunk_size_gives_the_same_elements(indent: int | None, ascii_only: bool) -> None:
    raw = json.dumps(DOC, ensure_ascii=ascii_only, indent=indent).encode("utf-8")
    expected = list(enumerate(json.loads(raw)))
    # chunk sizes 1..64 cut inside strings, escapes, multibyte characters and numbers
    for chunk in range(1, 65):
        assert values(raw, chunk) == expected, chunk


def test_chunk_boundary_inside_a_multibyte_character_and_an_escape() -> None:
    raw = '["a😀b", "x\\u00e9y\\\\"]'.encode()
    cut = raw.index("😀".encode()) + 2  # in the middle of the 4 bytes
    for chunk in (cut, cut - 1, raw.index(b"\\u") + 1, raw.index(b"\\u") + 3):
        assert values(raw, chunk) == [(0, "a😀b"), (1, "xéy\\")]


def test_a_number_cut_by_a_chunk_is_read_whole() -> None:
    assert values(b"[12345, 678]", 3) == [(0, 12345), (1, 678)]
    assert values(b"[1.5e10]", 4) == [(0, 1.5e10)]


def test_bom_and_whitespace() -> None:
    raw = "\ufeff \n [ \n {\"a\": 1} \n , \n 2 \n ] \n".encode()
    assert values(raw, 2) == [(0, {"a": 1}), (1, 2)]


def test_empty_array() -> None:
    assert values(b"[]") == []
    assert values(b"  [ \n\t ]  ") == []


@pytest.mark.parametrize("raw", [b"", b"   ", b'{"conversations": []}', b"garbage", b"\x00\x01"])
def test_not_an_array_is_one_skip(raw: bytes) -> None:
    assert values(raw) == [Skip("f", "not a JSON array")]


def test_truncated_inside_an_element() -> None:
    out = values(b'[{"a": 1}, {"b": "unfinished str', 4)
    assert out == [(0, {"a": 1}), Skip("f[1]", "truncated: the file ends inside this element")]


def test_truncated_after_an_element() -> None:
    assert values(b'[{"a": 1}, ', 3) == [(0, {"a": 1}), Skip("f[1]", "truncated: the array is not closed")]
    assert values(b'[{"a": 1}', 3) == [(0, {"a": 1}), Skip("f[1]", "truncated: the array is not closed")]


def test_garbage_in_an_element_ends_the_stream_without_reading_the_rest() -> None:
    rest = b", ".join([b'{"pad": "' + b"x" * 1000 + b'"}'] * 5000)  # 5 MB after the bad element
    fp = Counting(b'[{"a": 1}, {"b" 2}, ' + rest + b"]")
    out = list(iter_array(fp, "f", chunk=4096))
    assert out[0] == (0, {"a": 1})
    assert out[1] == Skip("f[1]", "invalid JSON: Expecting ':' delimiter")
    assert len(out) == 2
    assert fp.taken < 100_000  # gave up at once, did not buffer the 5 MB


def test_missing_comma_between_elements() -> None:
    out = values(b"[1 2]")
    assert out == [(0, 1), Skip("f[1]", "invalid JSON: expected ',' or ']' after the element before")]


def test_undecodable_bytes_are_replaced() -> None:
    assert values(b'["caf\xe9", "ok"]', 4) == [(0, "caf\ufffd"), (1, "ok")]


def test_a_large_element_is_read_in_few_reads() -> None:
    # the read size doubles while an element is incomplete: re-parsing stays linear
    big = {"text": "y" * 2_000_000}
    fp = Counting(json.dumps([big, 1]).encode())
    assert list(iter_array(fp, "f", chunk=1024)) == [(0, big), (1, 1)]
    assert fp.calls < 40


def test_an_element_past_the_limit_is_skipped() -> None:
    raw = json.dumps([1, "z" * 10_000]).encode()
    assert values(raw, 64, max_element=1000) == [(0, 1), Skip("f[1]", "element larger than 1000 chars")]


def test_memory_is_bounded_by_the_largest_element() -> None:
    element = json.dumps({"text": "w" * 2000, "n": list(range(50))})
    raw = ("[" + ", ".join([element] * 10_000) + "]").encode()  # ~21 MB
    tracemalloc.start()
    try:
        count = 0
        for item in iter_array(io.BytesIO(raw), "f"):
            assert not isinstance(item, Skip)
            count += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 10_000
    assert peak < 2_000_000


# -- finding the file in an export --------------------------------------------------------------

def test_export_files_folder_file_zip(tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "conversations.json").write_text("[]")
    assert export_files(folder, "X") == [folder / "conversations.json"]
    assert export_files(folder / "conversations.json", "X") == [folder / "conversations.json"]
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data-2025-01-01-batch-0000/conversations.json", "[1, 2]")
        zf.writestr("data-2025-01-01-batch-0000/users.json", "[]")
    assert export_files(archive, "X") == [archive]
    assert list(iter_export(archive)) == [
        ("export.zip:data-2025-01-01-batch-0000/conversations.json", 0, 1),
        ("export.zip:data-2025-01-01-batch-0000/conversations.json", 1, 2)]


def test_split_files_in_order(tmp_path: Path) -> None:
    for n, body in ((1, "[2]"), (0, "[1]"), (10, "[3]")):
        (tmp_path / f"conversations-{n:03d}.json").write_text(body)
    found = export_files(tmp_path, "X")
    assert [p.name for p in found] == ["conversations-000.json", "conversations-001.json", "conversations-010.json"]
    assert head(tmp_path) == "[1]"
    archive = tmp_path / "split.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations-001.json", "[2]")
        zf.writestr("conversations-000.json", "[1]")
    assert [(w, v) for w, _, v in iter_export(archive)] == [  # type: ignore[misc]
        ("split.zip:conversations-000.json", 1), ("split.zip:conversations-001.json", 2)]


def test_export_files_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        export_files(tmp_path / "nope", "X")
    with pytest.raises(InvalidInputError, match="has no conversations.json"):
        export_files(tmp_path, "X")
    archive = tmp_path / "other.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(InvalidInputError, match="holds no conversations.json"):
        export_files(archive, "X")


def test_a_damaged_zip_member_is_a_skip(tmp_path: Path) -> None:
    archive = tmp_path / "bad.zip"
    payload = json.dumps([{"i": i, "pad": "p" * 50} for i in range(2000)]).encode()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", payload)
    data = bytearray(archive.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = b"\xff" * 64  # corrupt the compressed stream
    archive.write_bytes(bytes(data))
    out = list(iter_export(archive))
    assert isinstance(out[-1], Skip)
    assert out[-1].where.startswith("bad.zip")


def test_head_never_raises(tmp_path: Path) -> None:
    assert head(tmp_path / "missing") == ""
    assert head(tmp_path) == ""
    (tmp_path / "conversations.json").write_bytes(b"\xef\xbb\xbf[\xff]")
    assert head(tmp_path) == "[\ufffd]"
    (tmp_path / "x.zip").write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty zip
    assert head(tmp_path / "x.zip") == ""
