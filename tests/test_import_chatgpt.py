"""The ChatGPT export reader on hand-made fixtures in the export's shape
(tests/data/import/chatgpt): the current branch only, one line per tool call,
tool result and attachment, hidden and empty messages left out, and the
export read from its folder, its file or its zip, streamed."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from chronomem.service.ingest.formats.chatgpt import READER
from chronomem.service.ingest.source import Item, Skip, SourceMessage
from import_helpers import DATA, generator, messages, read_all, stream

FIXTURE = DATA / "chatgpt"
C1 = "6750a1b2-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
C2 = "6750b9c8-1111-4222-8333-444455556666"
UTC = _dt.timezone.utc


def at(seconds: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(seconds, tz=UTC)


T1, T2 = 1717236000.5, 1717322400.0
LISBON = {"title": "Two days in Lisbon"}
EXPENSES = {"title": "Chart my expenses"}
EXPECTED: list[Item] = [
    SourceMessage(f"{C1}/b1000000-0000-4000-8000-000000000003", "What should I see in Lisbon in two days?",
                  at(T1 + 10), "user", C1, LISBON),
    SourceMessage(f"{C1}/b2000000-0000-4000-8000-000000000004",
                  "Day one: Alfama, the castle and a fado evening.\n\n"
                  "Day two: Belém — the tower, the monastery and pastéis de nata.",
                  at(T1 + 18), "assistant", C1, {**LISBON, "model": "gpt-4o"}),
    # the edited question (the original is on the other branch), both siblings counted
    SourceMessage(f"{C1}/b4000000-0000-4000-8000-000000000006", "Is the tram 28 worth it in August?",
                  at(T1 + 120), "user", C1, {**LISBON, "variants": 2}),
    # the regenerated answer current_node points to; create_time null: the conversation's
    SourceMessage(f"{C1}/b4200000-0000-4000-8000-000000000009",
                  "In August take tram 12 instead: same views, shorter queue.",
                  at(T1), "assistant", C1, {**LISBON, "model": "gpt-4o-mini", "variants": 2}),
    # an image with its attachment named once, then each attachment on one line
    SourceMessage(f"{C2}/c2000000-0000-4000-8000-000000000002",
                  "Here is my receipt and the CSV; plot the totals by month.\n"
                  "[attachment: receipt.jpg]\n[attachment: expenses-2024.csv]",
                  at(T2 + 5), "user", C2, EXPENSES),
    SourceMessage(f"{C2}/c4000000-0000-4000-8000-000000000004", "[tool python: import pandas as pd]",
                  at(T2 + 12), "assistant", C2, {**EXPENSES, "model": "o3"}),
    SourceMessage(f"{C2}/c5000000-0000-4000-8000-000000000005", "[tool result python: 3 lines]",
                  at(T2 + 14), "python", C2, EXPENSES),
    SourceMessage(f"{C2}/c6000000-0000-4000-8000-000000000006", "[tool result python: 1 image]",
                  at(T2 + 15), "python", C2, EXPENSES),
    Skip(f"{C2}/c7000000-0000-4000-8000-000000000007", "empty"),
    # the latin-1 bytes of the file are not UTF-8: replaced
    SourceMessage(f"{C2}/c8000000-0000-4000-8000-000000000008",
                  "April was the most expensive month: caf\ufffd Ol\ufffd 412.50 in total.",
                  at(T2 + 20), "assistant", C2, {**EXPENSES, "model": "o3"}),
]


def test_fixture_exactly() -> None:
    assert read_all(READER, FIXTURE) == EXPECTED


def test_off_branch_hidden_and_reasoning_messages_are_not_imported() -> None:
    keys = {m.key.split("/")[1] for m in messages(read_all(READER, FIXTURE))}
    for left_out in ("b3000000-0000-4000-8000-000000000005",  # the edited-away question
                     "b3100000-0000-4000-8000-000000000007",  # its answer
                     "b4100000-0000-4000-8000-000000000008",  # the answer that was regenerated
                     "0f1e2d3c-0000-4000-8000-000000000002",  # hidden system message
                     "c1000000-0000-4000-8000-000000000001",  # custom instructions
                     "c3000000-0000-4000-8000-000000000003"):  # thoughts
        assert left_out not in keys
    assert all(m.occurred_at is not None and m.occurred_at.tzinfo is not None  # type: ignore[union-attr]
               for m in messages(read_all(READER, FIXTURE)))


def test_split_export_files(tmp_path: Path) -> None:
    convs = json.loads(FIXTURE.joinpath("conversations.json").read_bytes().decode("utf-8", "replace"))
    (tmp_path / "conversations-000.json").write_text(json.dumps([convs[0]]))
    (tmp_path / "conversations-001.json").write_text(json.dumps([convs[1]]))
    assert READER.detect(tmp_path)
    assert messages(read_all(READER, tmp_path)) == messages(EXPECTED)


def test_detect_not_the_other_files_of_the_export() -> None:
    assert not READER.detect(FIXTURE / "user.json")


def test_truncated_export_keeps_what_was_complete(tmp_path: Path) -> None:
    raw = FIXTURE.joinpath("conversations.json").read_bytes()
    cut = tmp_path / "conversations.json"
    cut.write_bytes(raw[: raw.index(b'"Chart my expenses"') + 200])
    items = read_all(READER, cut)
    assert items[:4] == EXPECTED[:4]
    assert items[4:] == [Skip("conversations.json[1]", "truncated: the file ends inside this element")]


def test_bad_conversations_are_skips(tmp_path: Path) -> None:
    convs = json.loads(FIXTURE.joinpath("conversations.json").read_bytes().decode("utf-8", "replace"))
    no_id = dict(convs[0])
    del no_id["conversation_id"], no_id["id"], no_id["create_time"]
    only_id = dict(convs[0], conversation_id=None)  # "id" is enough
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([42, no_id, only_id]))
    items = read_all(READER, f)
    assert items[:2] == [Skip("conversations.json[0]", "not a conversation object"),
                         Skip("conversations.json[1]", "conversation without an id")]
    assert messages(items) == messages(EXPECTED[:4])


def test_a_trimmed_export_without_ids_is_named_by_its_creation_time(tmp_path: Path) -> None:
    """The shape of public fixtures written by hand or by older tools (e.g.
    alyssafuward/chatgpt-explorer's tests/fixtures/conversations.json): no
    conversation id, no current_node, messages without ids or times."""
    conv = {"title": "Help writing a Python script", "create_time": 1700000000, "mapping": {
        "node-1": {"id": "node-1", "parent": None, "children": ["node-2"], "message": None},
        "node-2": {"id": "node-2", "parent": "node-1", "children": ["node-3"], "message": {
            "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["Parse CSV files?"]}}},
        "node-3": {"id": "node-3", "parent": "node-2", "children": [], "message": {
            "author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["Use the csv module."]}}}}}
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([conv]))
    got = messages(read_all(READER, f))
    assert [(m.key, m.speaker, m.text, m.occurred_at) for m in got] == [
        ("created-1700000000/node-2", "user", "Parse CSV files?", at(1700000000)),
        ("created-1700000000/node-3", "assistant", "Use the csv module.", at(1700000000))]


def test_missing_current_node_takes_the_newest_leaf(tmp_path: Path) -> None:
    convs = json.loads(FIXTURE.joinpath("conversations.json").read_bytes().decode("utf-8", "replace"))
    conv = dict(convs[0], current_node=None)
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([conv]))
    # the null-time leaf ranks last: the newest timed leaf is the first answer to the edit
    assert [m.text for m in messages(read_all(READER, f))][-1] == "It is crowded in August; go before 9."


def test_since_prunes_older_conversations() -> None:
    since = at(T1 + 3600)  # after the whole first conversation
    assert [m.session for m in messages(read_all(READER, FIXTURE, since=since))] == [C2] * 5


def test_lone_surrogate_escape_is_replaced(tmp_path: Path) -> None:
    conv = {"conversation_id": "c", "title": "t", "create_time": 1.0, "current_node": "m", "mapping": {
        "m": {"id": "m", "parent": None, "children": [], "message": {
            "id": "m", "author": {"role": "user"}, "create_time": 2.0,
            "content": {"content_type": "text", "parts": ["half \\ud83d pair"]}}}}}
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([conv]).replace("\\\\ud83d", "\\ud83d"))
    (m,) = messages(read_all(READER, f))
    assert m.text == "half ? pair"
    m.text.encode("utf-8")


def test_long_tool_lines_are_clipped(tmp_path: Path) -> None:
    conv: dict[str, Any] = {"conversation_id": "c", "title": None, "create_time": 1.0, "current_node": "m", "mapping": {
        "m": {"id": "m", "parent": None, "children": [], "message": {
            "id": "m", "author": {"role": "assistant"}, "create_time": 2.0, "recipient": "browser",
            "content": {"content_type": "code", "text": "search(" + "x" * 500 + ")"}}}}}
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps([conv]))
    (m,) = messages(read_all(READER, f))
    assert m.text.startswith("[tool browser: search(xxx") and m.text.endswith("…]")
    assert len(m.text) <= 200
    assert m.context == {}


def test_streaming_a_30_mb_export_in_bounded_memory(tmp_path: Path) -> None:
    path = generator("chatgpt").write(tmp_path / "big", 15_000)
    assert path.stat().st_size > 25_000_000
    got = stream(READER, tmp_path / "big")
    assert got.messages >= 15_000
    assert got.peak < 20_000_000


def test_one_conversation_as_an_object_and_the_wrapper(tmp_path: Path) -> None:
    """A file holding one conversation object (single-chat exporters), or
    ``{"conversations": [...]}``, reads like the export's array."""
    conv = {"title": "single", "create_time": 1700000000.5, "conversation_id": "c-1", "current_node": "n3",
            "mapping": {
                "n1": {"id": "n1", "parent": None, "children": ["n2"], "message": None},
                "n2": {"id": "n2", "parent": "n1", "children": ["n3"], "message": {
                    "id": "n2", "author": {"role": "user"}, "create_time": 1700000001,
                    "content": {"content_type": "text", "parts": ["one conversation as an object"]}}},
                "n3": {"id": "n3", "parent": "n2", "children": [], "message": {
                    "id": "n3", "author": {"role": "assistant"}, "create_time": 1700000002,
                    "content": {"content_type": "text", "parts": ["ok"]}}}}}
    f = tmp_path / "conversations.json"
    for shape in (conv, {"conversations": [conv]}, [conv]):
        f.write_text(json.dumps(shape))
        assert READER.detect(f)
        assert [(m.key, m.text) for m in messages(read_all(READER, f))] == [
            ("c-1/n2", "one conversation as an object"), ("c-1/n3", "ok")], shape
