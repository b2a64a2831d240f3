"""The Slack export reader over hand-made exports in Slack's own shapes
(tests/data/import/slack), a zipped copy, broken day files and a generated
~28 MB day file for the streaming check."""

from __future__ import annotations

import datetime as _dt
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats.slack import READER
from chronomem.service.ingest.source import ReadOptions, Skip, SourceMessage
from import_helpers import DATA, assert_claims_no_other_fixture, generator, read_all, stream, zip_folder

ROOT = DATA / "slack"
UTC = _dt.timezone.utc


def at(ts: str) -> _dt.datetime:
    sec, frac = ts.split(".")
    return _dt.datetime.fromtimestamp(int(sec), UTC).replace(microsecond=int(frac))


def msg(chan_id: str, chan: str, ts: str, text: str, speaker: str | None, session: str,
        **context: object) -> SourceMessage:
    return SourceMessage(key=f"{chan_id}/{ts}", text=text, occurred_at=at(ts), speaker=speaker,
                         session=session, context={"channel": chan, **context})


THREAD = "1709557200.000100"
EXPECTED = [
    msg("C02DEV", "dev", "1709640000.001000", "caf\u00e9 \ufffd done", "Alice Smith", "#dev/2024-03-05"),
    Skip("C02DEV/1709643600.001100", "empty"),
    Skip("dev/2024-03-05.json[2]", "not a message object"),
    Skip("C01GENERAL/1709542800.000100", "plumbing: channel_join"),
    msg("C01GENERAL", "general", "1709546400.123456",
        "Morning @Bob Jones! See #dev and the plan (https://example.com/plan) & https://example.com; x < y > z",
        "Alice Smith", "#general/2024-03-04"),
    msg("C01GENERAL", "general", THREAD, "Release thread: ship 2.0 on Friday?", "Alice Smith",
        f"#general/{THREAD}", thread=THREAD),
    msg("C01GENERAL", "general", "1709557500.000200", "Friday works for me", "Bob Jones",  # deleted user
        f"#general/{THREAD}", thread=THREAD),
    msg("C01GENERAL", "general", "1709560800.000400",
        "Deployed build 512\n[attachment: build 512: 3 commits view (https://ci.example.com/512)]",
        "deploybot", "#general/2024-03-04", bot=True),
    msg("C01GENERAL", "general", "1709564400.000500", "Meeting moved to 3pm (was 2pm)", "Carol W",
        "#general/2024-03-04", edited=True),
    msg("C01GENERAL", "general", "1709568000.000600", "[file: Q1 report (q1-report.pdf)]", "Alice Smith",
        "#general/2024-03-04"),
    msg("C01GENERAL", "general", "1709571600.000700", "hello from a guest", "Ghost Writer",  # not in users.json
        "#general/2024-03-04"),
    msg("C01GENERAL", "general", "1709575200.000800", "no profile at all; cc @U09GHOST", "U08NOBODY",
        "#general/2024-03-04"),
    # the thread's second reply is in the next day's file, and still in the thread's session
    msg("C01GENERAL", "general", "1709629200.000300", "Friday is fine, @Alice Smith", "Carol W",
        f"#general/{THREAD}", thread=THREAD),
    msg("C01GENERAL", "general", "1709632800.000900", "Standup notes are in the doc", "Alice Smith",
        "#general/2024-03-05"),
]


def test_files_are_the_day_files_in_order() -> None:
    files = READER.files(ReadOptions(root=ROOT))
    assert [f.relative_to(ROOT).as_posix() for f in files] == [
        "dev/2024-03-05.json", "general/2024-03-04.json", "general/2024-03-05.json"]


def test_reads_every_message_exactly() -> None:
    assert read_all(READER, ROOT) == EXPECTED


def test_microseconds_are_kept_exactly() -> None:
    first = next(i for i in read_all(READER, ROOT) if isinstance(i, SourceMessage) and i.key.endswith(".123456"))
    assert first.occurred_at == _dt.datetime(2024, 3, 4, 10, 0, 0, 123456, tzinfo=UTC)


def test_since_prunes_old_day_files() -> None:
    opts = ReadOptions(root=ROOT, since=_dt.datetime(2024, 3, 6, tzinfo=UTC))
    assert [f.name for f in READER.files(opts)] == ["2024-03-05.json", "2024-03-05.json"]


@pytest.mark.parametrize("wrap", ["", "My Workspace Slack export/"])
def test_zip_reads_like_the_folder(tmp_path: Path, wrap: str) -> None:
    archive = zip_folder(ROOT, tmp_path / "export.zip", wrap)
    assert READER.detect(archive)
    assert READER.files(ReadOptions(root=archive)) == [archive]
    assert read_all(READER, archive) == EXPECTED


def test_detect() -> None:
    assert READER.detect(ROOT)
    assert_claims_no_other_fixture(READER, "slack")
    assert not READER.detect(ROOT / "users.json")
    assert not READER.detect(ROOT / "missing")


def test_not_an_export(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="path: .*does not exist"):
        READER.files(ReadOptions(root=tmp_path / "nope"))
    (tmp_path / "general").mkdir()
    with pytest.raises(InvalidInputError, match="path: .*not a Slack export folder"):
        READER.files(ReadOptions(root=tmp_path))
    bad_zip = tmp_path / "x.zip"
    with zipfile.ZipFile(bad_zip, "w") as zf:
        zf.writestr("notes.txt", "hello")
    with pytest.raises(InvalidInputError, match="path: .*not a Slack export zip"):
        READER.files(ReadOptions(root=bad_zip))


def test_broken_day_file_keeps_what_came_before(tmp_path: Path) -> None:
    root = tmp_path / "export"
    shutil.copytree(ROOT, root)
    day = root / "general" / "2024-03-05.json"
    day.write_bytes(day.read_bytes()[:-200])  # cut inside the second message
    items = [i for i in read_all(READER, root) if isinstance(i, SourceMessage)
             or isinstance(i, Skip) and "general/2024-03-05" in i.where]
    tail = items[-2:]
    assert tail[0] == EXPECTED[-2]
    assert tail[1] == Skip("general/2024-03-05.json[1]", "truncated: the file ends inside this element")
    (root / "dev" / "2024-03-05.json").write_text('{"not": "an array"}')
    assert Skip("dev/2024-03-05.json", "not a JSON array") in read_all(READER, root)


def test_markup_and_subtypes(tmp_path: Path) -> None:
    root = tmp_path / "export"
    shutil.copytree(ROOT, root)
    day = [
        {"type": "message", "user": "U01ALICE", "ts": "1709700000.000001",
         "text": "<!here> <!subteam^S01|@oncall> <#C01GENERAL> <mailto:a@b.org|a@b.org> <@U03CAROL|carol>"},
        {"type": "message", "subtype": "channel_topic", "user": "U01ALICE", "ts": "1709700000.000002",
         "text": "set the topic"},
        {"type": "message", "subtype": "tombstone", "hidden": True, "user": "U01ALICE",
         "ts": "1709700000.000003", "text": "This message was deleted."},
        {"type": "message", "user": "U01ALICE", "ts": "not-a-ts", "text": "x"},
        {"type": "message", "bot_id": "B02", "ts": "1709700000.000004", "text": "no username",
         "bot_profile": {"name": "Reminders"}},
        {"type": "message", "user": "U01ALICE", "ts": "1709700000.000005", "text": "x" * 10,
         "attachments": [{"title": "y" * 500}]},
    ]
    (root / "general" / "2024-03-06.json").write_text(json.dumps(day))
    items = [i for i in read_all(READER, root) if "1709700000" in getattr(i, "key", getattr(i, "where", ""))
             or "2024-03-06" in getattr(i, "where", "")]
    assert [getattr(i, "text", None) or getattr(i, "reason", None) for i in items] == [
        "@here @oncall #general a@b.org @carol",
        "plumbing: channel_topic",
        "plumbing: tombstone",
        "no valid ts",
        "no username",
        "x" * 10 + "\n[attachment: " + "y" * 199 + "…]",
    ]
    assert isinstance(items[4], SourceMessage) and items[4].speaker == "Reminders" and items[4].context["bot"]


def test_streams_a_large_day_file_in_constant_memory(tmp_path: Path) -> None:
    root = generator("slack").write(tmp_path / "big", 40_000, per_day=40_000, channels=1)
    (day,) = READER.files(ReadOptions(root=root))
    assert day.stat().st_size > 25_000_000
    got = stream(READER, root)
    assert got.messages + got.skips == 40_000
    assert got.peak < 20_000_000, got.peak
