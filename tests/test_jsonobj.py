"""The one "parse JSON, require an object" helper and the exact error
messages of its three callers (CLI option, JSONL import line, evidence file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronomem.adapters.cli._common import parse_json_object
from chronomem.errors import InvalidInputError
from chronomem.service.ingest.formats.jsonl import READER as JSONL
from chronomem.service.ingest.source import ReadOptions, Skip
from chronomem.service.transfer.jsonl import _json_line


def _reason(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.msg
    raise AssertionError(f"{text!r} is valid JSON")


def _message(fn: object, *args: object) -> str:
    with pytest.raises(InvalidInputError) as info:
        fn(*args)  # type: ignore[operator]
    return str(info.value)


def test_load_object() -> None:
    from chronomem.core.jsonobj import load_object

    assert load_object('{"a": 1}', "x") == {"a": 1}
    assert load_object(b'{"a": [1]}', "x") == {"a": [1]}
    assert _message(load_object, "{oops", "p") == f"p is not valid JSON ({_reason('{oops')})"
    assert _message(load_object, "[1]", "p") == "p must be a JSON object"
    assert _message(lambda: load_object("3", "p:", invalid="bad", not_object="not {type}")) == "p: not int"
    assert _message(lambda: load_object("nope", "p:", invalid="bad")) == f"p: bad ({_reason('nope')})"


def test_cli_option_messages() -> None:
    assert parse_json_object(None, "--properties") is None
    assert parse_json_object('{"k": "v"}', "--properties") == {"k": "v"}
    assert _message(parse_json_object, "{oops", "--properties") == (
        f"--properties is not valid JSON ({_reason('{oops')})"
    )
    assert _message(parse_json_object, '["k"]', "--properties") == (
        "--properties must be a JSON object such as '{\"key\": \"value\"}'"
    )


def test_import_line_messages() -> None:
    assert _json_line(4, '{"subject": "a"}') == {"subject": "a"}
    assert _message(_json_line, 6, "nope") == f"line 6: not valid JSON ({_reason('nope')})"
    assert _message(_json_line, 6, "[1, 2]") == "line 6: expected a JSON object, not list"
    assert _message(_json_line, 7, '"text"') == "line 7: expected a JSON object, not str"


def test_evidence_file_messages(tmp_path: Path) -> None:
    """The transcript importer's JSON lines: a bad line is a Skip naming its
    line and the JSON decoder's reason, and the rest is read."""
    path = tmp_path / "episodes.jsonl"
    path.write_text('{"text": "hello", "role": "user"}\n\n{oops\n[1]\n', encoding="utf-8")
    items = list(JSONL.read(path, ReadOptions(root=path)))
    assert not isinstance(items[0], Skip) and items[0].speaker == "user"
    assert items[1:] == [Skip("episodes.jsonl:3", f"invalid: not JSON ({_reason('{oops')})"),
                         Skip("episodes.jsonl:4", "invalid: not a JSON object")]
