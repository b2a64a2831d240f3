"""The small config-format helpers behind ``chronomem install``: the TOML
emitter (checked against stdlib tomllib), JSON-with-comments reading and the
YAML block splicer."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem.adapters.install.formats import (
    ConfigFormatError,
    load_jsonc,
    toml_remove_table,
    toml_set_table,
    toml_table,
    toml_value,
    yaml_has_child,
    yaml_remove_child,
    yaml_set_child,
)

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_scalar = st.one_of(_text, st.booleans(), st.integers(-(2**63), 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False))
_values = st.dictionaries(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12),
    st.one_of(_scalar, st.lists(_text, max_size=4), st.dictionaries(st.from_regex(r"[A-Za-z_]{1,8}", fullmatch=True),
                                                                      _text, max_size=3)),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(_values)
def test_toml_table_round_trips_through_tomllib(values: dict[str, Any]) -> None:
    parsed = tomllib.loads(toml_table(["mcp_servers", "chronomem"], values))
    assert parsed == {"mcp_servers": {"chronomem": values}}


@pytest.mark.parametrize(
    ("value", "toml"),
    [("plain", '"plain"'), ('quo"te\\back', '"quo\\"te\\\\back"'), ("tab\tnew\nline", '"tab\\tnew\\nline"'),
     ("\x01", '"\\u0001"'), ("é", '"é"'), (True, "true"), (3, "3"), (1.5, "1.5"), (["a", "b"], '["a", "b"]'),
     ({}, "{}"), ({"k": "v", "a b": 1}, '{ k = "v", "a b" = 1 }')],
)
def test_toml_values(value: Any, toml: str) -> None:
    assert toml_value(value) == toml
    assert tomllib.loads(f"x = {toml}")["x"] == value


def test_toml_set_and_remove_keep_other_bytes() -> None:
    base = ('# c\na = 1\n\n[x]\nb = "2" # keep\n\n[mcp_servers."chronomem"]\nold = 1\n'
            '[mcp_servers.chronomem.env]\nE = "1"\n')
    out = toml_set_table(base, ["mcp_servers", "chronomem"], {"command": "c"}, "cfg")
    assert out.startswith('# c\na = 1\n\n[x]\nb = "2" # keep\n')
    assert tomllib.loads(out)["mcp_servers"] == {"chronomem": {"command": "c"}}
    assert "[mcp_servers.chronomem.env]" not in toml_remove_table(base, ["mcp_servers", "chronomem"])
    with pytest.raises(ConfigFormatError, match="by hand"):
        toml_set_table("[mcp_servers]\nchronomem = { a = 1 }\n", ["mcp_servers", "chronomem"], {"a": 2}, "cfg")


def test_jsonc() -> None:
    data, comments = load_jsonc('{\n // c\n "a": "x//y", /* b */ "l": [1, 2,], "s": "a\\"/*"\n,}', "f")
    assert data == {"a": "x//y", "l": [1, 2], "s": 'a"/*'} and comments
    assert load_jsonc("", "f") == ({}, False)
    with pytest.raises(ConfigFormatError, match="line 1"):
        load_jsonc("{", "f")
    with pytest.raises(ConfigFormatError, match="object"):
        load_jsonc("[1]", "f")


def test_yaml_splice() -> None:
    base = "a: 1\nextensions:\n  dev:\n    enabled: true\n  # comment\n  other:\n    x: [1]\nb: 2\n"
    out = yaml_set_child(base, "extensions", "chronomem", {"cmd": "c", "args": ["--db", "x"], "ok": True}, "f")
    assert out == ("a: 1\nextensions:\n  dev:\n    enabled: true\n  # comment\n  other:\n    x: [1]\n"
                   '  chronomem:\n    cmd: "c"\n    args: ["--db", "x"]\n    ok: true\nb: 2\n')
    assert yaml_has_child(out, "extensions", "chronomem") and not yaml_has_child(base, "extensions", "chronomem")
    again = yaml_set_child(out, "extensions", "chronomem", {"cmd": "d"}, "f")
    assert again.count("chronomem:") == 1 and 'cmd: "d"' in again and "args" not in again
    assert yaml_remove_child(out, "extensions", "chronomem") == base
    assert yaml_set_child("", "extensions", "c", {"k": 1}, "f") == "extensions:\n  c:\n    k: 1\n"
    assert yaml_set_child("a: 1", "extensions", "c", {"k": 1}, "f") == "a: 1\nextensions:\n  c:\n    k: 1\n"
