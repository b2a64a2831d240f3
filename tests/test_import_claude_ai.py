"""The Claude.ai export reader on hand-made fixtures in the export's shape
(tests/data/import/claude-ai): content blocks over the flat ``text``, one line
per tool call, tool result and attachment (extracted content never pasted),
thinking left out, the newest branch of an edited conversation, and the
export read from its folder, its file or its zip, streamed."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from chronomem.service.ingest.formats.claude_ai import READER
from chronomem.service.ingest.source import Item, Skip, SourceMessage
from import_helpers import DATA, generator, messages, read_all, stream

FIXTURE = DATA / "claude-ai"
C1 = "1c2d3e4f-0000-4aaa-8bbb-000000000001"
C2 = "2d3e4f5a-0000-4aaa-8bbb-000000000002"
UTC = _dt.timezone.utc
REVIEW = {"title": "Review my parser"}
HAIKU = {"title": "Haiku"}


def at(text: str) -> _dt.datetime:
    return _dt.datetime.fromisoformat(text).astimezone(UTC)


EXPECTED: list[Item] = [
    # an attachment with extracted_content: one line, the file's text is not pasted
    SourceMessage(f"{C1}/1c2d3e4f-0000-4aaa-8bbb-00000000a001",
                  "Can you review this file? It is slow on big inputs.\n[attachment: parser.py]",
                  at("2025-01-05T20:55:32.499880+00:00"), "user", C1, REVIEW),
    # empty "text", everything in content blocks; the thinking block is left out
    SourceMessage(f"{C1}/1c2d3e4f-0000-4aaa-8bbb-00000000a002",
                  "`out = out + [line]` copies the list on every line, so parsing is quadratic.\n"
                  "[tool web_search: python list append vs concatenation performance]\n"
                  "[tool result web_search: 3 lines]\n"
                  "Use `out.append(line)` instead: append is amortised O(1).",
                  at("2025-01-05T20:55:40.123456+00:00"), "assistant", C1, REVIEW),
    Skip(f"{C1}/1c2d3e4f-0000-4aaa-8bbb-00000000a003", "empty"),
    SourceMessage(f"{C1}/1c2d3e4f-0000-4aaa-8bbb-00000000a004",
                  "Here is the profile output.\n[attachment: profile.png]",
                  at("2025-01-05T20:57:30+00:00"), "user", C1, REVIEW),
    # the latin-1 byte of the file is not UTF-8: replaced
    SourceMessage(f"{C1}/1c2d3e4f-0000-4aaa-8bbb-00000000a005", "The hot spot is parse() at 97% — see caf\ufffd.py.",
                  at("2025-01-05T20:58:01+00:00"), "assistant", C1, REVIEW),
    # an edited prompt: the branch ending at the newest leaf
    SourceMessage(f"{C2}/2d3e4f5a-0000-4aaa-8bbb-00000000b001", "Write a haiku about rain.",
                  at("2025-03-10T09:00:00+00:00"), "user", C2, HAIKU),
    SourceMessage(f"{C2}/2d3e4f5a-0000-4aaa-8bbb-00000000b002",
                  "Soft rain on the roof\nthe gutter hums an old tune\nkettle starts to sing",
                  at("2025-03-10T09:00:05+00:00"), "assistant", C2, HAIKU),
    SourceMessage(f"{C2}/2d3e4f5a-0000-4aaa-8bbb-00000000b005", "Now one about autumn.",
                  at("2025-03-10T09:05:00+00:00"), "user", C2, {**HAIKU, "variants": 2}),
    SourceMessage(f"{C2}/2d3e4f5a-0000-4aaa-8bbb-00000000b006",
                  "Red leaves in the wind\nthe path forgets where it went\nsmoke from a chimney",
                  at("2025-03-10T09:05:10+00:00"), "assistant", C2, HAIKU),
]


def fixture_conversations() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(
        FIXTURE.joinpath("conversations.json").read_bytes().decode("utf-8", "replace"))
    return data


def write(tmp_path: Path, convs: list[Any]) -> Path:
    f = tmp_path / "conversations.json"
    f.write_text(json.dumps(convs), encoding="utf-8")
    return f


def test_fixture_exactly() -> None:
    assert read_all(READER, FIXTURE) == EXPECTED


def test_extracted_content_and_thinking_are_not_pasted() -> None:
    text = "\n".join(m.text for m in messages(read_all(READER, FIXTURE)))
    assert "def parse" not in text  # parser.py's extracted_content
    assert "quadratic." in text and "The list is copied" not in text  # the thinking block
    assert "More on lists" not in text  # the tool result's text


def test_abandoned_branch_is_not_imported() -> None:
    keys = {m.key for m in messages(read_all(READER, FIXTURE))}
    assert f"{C2}/2d3e4f5a-0000-4aaa-8bbb-00000000b003" not in keys
    assert f"{C2}/2d3e4f5a-0000-4aaa-8bbb-00000000b004" not in keys


def test_legacy_export_without_parent_links_keeps_list_order(tmp_path: Path) -> None:
    conv = fixture_conversations()[1]
    for m in conv["chat_messages"]:
        del m["parent_message_uuid"]
    texts = [m.text for m in messages(read_all(READER, write(tmp_path, [conv])))]
    assert texts[2:4] == ["Now one about snow.", "White hush on the street"]
    assert len(texts) == 6


def test_detect_not_the_other_files_of_the_export() -> None:
    assert not READER.detect(FIXTURE / "projects.json")
    assert not READER.detect(FIXTURE / "users.json")


def test_truncated_export_keeps_what_was_complete(tmp_path: Path) -> None:
    raw = FIXTURE.joinpath("conversations.json").read_bytes()
    cut = tmp_path / "conversations.json"
    cut.write_bytes(raw[: raw.index(b"Now one about snow")])
    items = read_all(READER, cut)
    assert items[:5] == EXPECTED[:5]
    assert items[5:] == [Skip("conversations.json[1]", "truncated: the file ends inside this element")]


def test_bad_records_are_skips(tmp_path: Path) -> None:
    conv = fixture_conversations()[0]
    conv["chat_messages"][3]["uuid"] = None
    conv["chat_messages"].insert(0, "not a message")
    items = read_all(READER, write(tmp_path, ["oops", {"name": "no uuid"}, conv]))
    assert items[:2] == [Skip("conversations.json[0]", "not a conversation object"),
                         Skip("conversations.json[1]", "conversation without a uuid")]
    # a message without a uuid (a trimmed export) is named by its place on the branch
    got = messages(items)
    assert len(got) == 4 and got[2].key == f"{conv['uuid']}/#3" and got[2].text.startswith("Here is the profile")


def test_a_single_conversation_object_without_uuids(tmp_path: Path) -> None:
    """What single-chat exporters write (the shape of public fixtures): one
    object, ``conversation_id`` for the uuid, messages without uuids or times."""
    (tmp_path / "conversations.json").write_text(json.dumps({
        "conversation_id": "claude-abc", "name": "demo chat", "chat_messages": [
            {"sender": "human", "text": "hello"}, {"sender": "assistant", "text": "hi there"},
            {"future_field": {"x": 1}}], "custom_export_meta": "v2"}))
    assert READER.detect(tmp_path)
    items = read_all(READER, tmp_path)
    assert [(m.key, m.speaker, m.text) for m in messages(items)] == [
        ("claude-abc/#0", "user", "hello"), ("claude-abc/#1", "assistant", "hi there")]
    assert items[-1] == Skip("claude-abc/#2", "empty")


def test_times_speakers_and_fallbacks(tmp_path: Path) -> None:
    conv = {"uuid": "c", "name": "", "created_at": "2025-05-01T12:00:00", "updated_at": "2025-05-01T12:00:00",
            "model": "claude-sonnet-4", "chat_messages": [
                {"uuid": "a", "sender": "human", "text": "naive time", "created_at": "2025-05-01T12:00:01"},
                {"uuid": "b", "sender": "assistant", "text": "no time", "created_at": None},
                {"uuid": "c", "sender": "assistant", "text": "offset", "created_at": "2025-05-01T14:00:02+02:00"}]}
    a, b, c = messages(read_all(READER, write(tmp_path, [conv])))
    assert a.occurred_at == _dt.datetime(2025, 5, 1, 12, 0, 1, tzinfo=UTC) and a.speaker == "user"
    assert b.occurred_at == _dt.datetime(2025, 5, 1, 12, 0, 0, tzinfo=UTC)  # the conversation's
    assert c.occurred_at == _dt.datetime(2025, 5, 1, 12, 0, 2, tzinfo=UTC)
    assert a.context == {} and b.context == {"model": "claude-sonnet-4"}


def test_pasted_text_attachment_without_a_name(tmp_path: Path) -> None:
    conv = {"uuid": "c", "name": "t", "chat_messages": [
        {"uuid": "a", "sender": "human", "text": "", "content": [],
         "attachments": [{"file_name": "", "file_size": 12, "file_type": "txt", "extracted_content": "pasted words"}]}]}
    (m,) = messages(read_all(READER, write(tmp_path, [conv])))
    assert m.text == "[attachment: pasted text, 12 chars]"
    assert m.occurred_at is None


def test_since_prunes_older_conversations() -> None:
    since = _dt.datetime(2025, 2, 1, tzinfo=UTC)
    assert {m.session for m in messages(read_all(READER, FIXTURE, since=since))} == {C2}


def test_streaming_a_30_mb_export_in_bounded_memory(tmp_path: Path) -> None:
    path = generator("claude_ai").write(tmp_path / "big", 10_000)
    assert path.stat().st_size > 25_000_000
    got = stream(READER, tmp_path / "big")
    assert got.messages == 10_000
    assert got.peak < 20_000_000
