"""Reading and editing agent config files without new dependencies.

* JSON (and JSON with comments, as Zed and VS Code allow): parsed with the
  stdlib after stripping comments and trailing commas; written back with
  two-space indentation (comments are not preserved; the caller keeps a
  ``.bak``).
* TOML (Codex): read with :mod:`tomllib`; our one table is emitted by
  :func:`toml_table` and spliced into the original text, so everything else
  in the file keeps its exact bytes.
* YAML (Goose): the one block under ``extensions:`` is emitted by
  :func:`yaml_block` and spliced into the original text the same way.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from typing import Any, Mapping, Sequence

from ...errors import ConfigFormatError

__all__ = [
    "ConfigFormatError",
    "dump_json",
    "load_jsonc",
    "toml_remove_table",
    "toml_set_table",
    "toml_table",
    "toml_value",
    "yaml_block",
    "yaml_remove_child",
    "yaml_set_child",
]


# -- JSON / JSONC -------------------------------------------------------------
def _string_end(text: str, i: int) -> int:
    """The index of the quote that closes the JSON string opening at ``text[i]``
    (``len(text)`` or past it if it is not closed)."""
    j = i + 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j


def _strip_jsonc(text: str) -> tuple[str, bool]:
    """Remove // and /* */ comments and trailing commas outside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    had_comments = False
    while i < n:
        c = text[i]
        if c == '"':
            j = _string_end(text, i)
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            had_comments = True
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            had_comments = True
        else:
            out.append(c)
            i += 1
    cleaned = "".join(out)
    # trailing commas: a comma followed only by whitespace before } or ]
    result: list[str] = []
    i, n = 0, len(cleaned)
    while i < n:
        c = cleaned[i]
        if c == '"':
            j = _string_end(cleaned, i)
            result.append(cleaned[i:j + 1])
            i = j + 1
            continue
        if c == ",":
            j = i + 1
            while j < n and cleaned[j] in " \t\r\n":
                j += 1
            if j < n and cleaned[j] in "}]":
                i += 1
                continue
        result.append(c)
        i += 1
    return "".join(result), had_comments


def load_jsonc(text: str, where: str) -> tuple[dict[str, Any], bool]:
    """Parse a JSON(C) object; returns ``(data, had_comments)``."""
    if not text.strip():
        return {}, False
    cleaned, had_comments = _strip_jsonc(text)
    try:
        data = json.loads(cleaned)
    except json.JSONDecodeError as exc:
        raise ConfigFormatError(
            f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix or move it and retry"
        ) from None
    if not isinstance(data, dict):
        raise ConfigFormatError(f"{where} does not hold a JSON object; fix or move it and retry")
    return data, had_comments


def dump_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- TOML ----------------------------------------------------------------------
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_value(key)


def toml_value(value: Any) -> str:
    """One TOML value: strings, booleans, integers, floats, arrays, inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        # a TOML basic string uses JSON's escapes, except that TOML has no \/ and
        # forbids raw control characters: json.dumps escapes those as \uXXXX
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def toml_table(path: Sequence[str], values: Mapping[str, Any]) -> str:
    """``[a.b]`` followed by ``key = value`` lines (nested mappings inline)."""
    header = ".".join(_toml_key(p) for p in path)
    lines = [f"[{header}]"] + [f"{_toml_key(k)} = {toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


_HEADER = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(#.*)?$")


def _split_header(name: str) -> list[str]:
    parts: list[str] = []
    for m in re.finditer(r'\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)\s*(?:\.|$)', name):
        tok = m.group(1)
        if tok.startswith('"'):
            tok = json.loads(tok)
        elif tok.startswith("'"):
            tok = tok[1:-1]
        parts.append(tok)
    return parts


def toml_remove_table(text: str, path: Sequence[str]) -> str:
    """Remove table ``path`` and its sub-tables (header through the line before
    the next unrelated header). Other bytes are untouched."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    skipping = False
    target = list(path)
    for line in lines:
        m = _HEADER.match(line)
        if m is not None:
            parts = _split_header(m.group("name"))
            skipping = parts[: len(target)] == target
        if not skipping:
            out.append(line)
    return "".join(out)


def toml_set_table(text: str, path: Sequence[str], values: Mapping[str, Any], where: str) -> str:
    """``text`` with table ``path`` replaced by ``values`` (appended at the end).

    The result is parsed back with :mod:`tomllib`; if the table was defined in
    a form this splice cannot see (inline or dotted keys), that fails and a
    :class:`ConfigFormatError` asks the user to edit the file by hand.
    """
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFormatError(f"{where} is not valid TOML ({exc}); fix it and retry") from None
    body = toml_remove_table(text, path) if values is not None else text
    body = body.rstrip("\n")
    new = (body + "\n\n" if body else "") + toml_table(path, values)
    _check_toml(before, new, path, values, where)
    return new


def _check_toml(before: Mapping[str, Any], new: str, path: Sequence[str], values: Mapping[str, Any] | None,
                where: str) -> None:
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        raise ConfigFormatError(
            f"{where} defines [{'.'.join(path)}] in a form chronomem cannot edit safely (inline table or dotted "
            "keys); remove that entry by hand and retry"
        ) from None
    if _without(after, path) != _without(before, path):
        raise ConfigFormatError(f"editing {where} would change other settings; edit it by hand")
    node: Any = after
    for p in path:
        node = node.get(p, {}) if isinstance(node, dict) else {}
    if values is not None and node != dict(values):  # pragma: no cover - defensive
        raise ConfigFormatError(f"could not write [{'.'.join(path)}] to {where}; edit it by hand")


def _without(data: Mapping[str, Any], path: Sequence[str]) -> dict[str, Any]:
    out = json.loads(json.dumps(data, default=str))
    node = out
    for p in path[:-1]:
        node = node.get(p) if isinstance(node, dict) else None
        if node is None:
            return dict(out)
    if isinstance(node, dict):
        node.pop(path[-1], None)
        # an emptied parent table equals an absent one
        if not node and len(path) > 1:
            parent = out
            for p in path[:-2]:
                parent = parent[p]
            parent.pop(path[-2], None)
    return dict(out)


def toml_unset_table(text: str, path: Sequence[str], where: str) -> str:
    """``text`` without table ``path`` (other bytes untouched)."""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFormatError(f"{where} is not valid TOML ({exc}); fix it and retry") from None
    new = toml_remove_table(text, path)
    new = re.sub(r"\n{3,}", "\n\n", new)
    new = new.rstrip("\n") + "\n" if new.strip() else ""
    _check_toml(before, new, path, None, where)
    return new


# -- YAML (the block-structured subset Goose writes) ---------------------------
def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if value is None:
        return "null"
    # a JSON string is a valid YAML double-quoted scalar
    return json.dumps(str(value), ensure_ascii=False)


def yaml_block(key: str, values: Mapping[str, Any], indent: int, step: int = 2) -> str:
    """``key:`` and its mapping, indented ``indent`` spaces, children ``step``
    more (lists and mappings inline)."""
    pad = " " * indent
    inner = " " * (indent + step)
    lines = [f"{pad}{key}:"]
    for k, v in values.items():
        if isinstance(v, (list, tuple)):
            rendered = "[" + ", ".join(_yaml_scalar(x) for x in v) + "]"
        elif isinstance(v, Mapping):
            rendered = "{" + ", ".join(f"{json.dumps(str(a))}: {_yaml_scalar(b)}" for a, b in v.items()) + "}"
        else:
            rendered = _yaml_scalar(v)
        lines.append(f"{inner}{k}: {rendered}")
    return "\n".join(lines) + "\n"


_TOP_KEY = re.compile(r"^(?P<key>[A-Za-z0-9_\-\"']+)\s*:(?P<rest>.*)$")


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_blank(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith("#")


def _section(lines: list[str], parent: str) -> tuple[int, int, str] | None:
    """(header index, end index exclusive, rest-of-header-line) of top-level ``parent:``."""
    for i, line in enumerate(lines):
        m = _TOP_KEY.match(line.rstrip("\n"))
        if m is not None and m.group("key").strip("\"'") == parent:
            j = i + 1
            while j < len(lines) and (_is_blank(lines[j]) or _indent_of(lines[j]) > 0):
                j += 1
            # trailing blank lines belong to what follows
            while j > i + 1 and not lines[j - 1].strip():
                j -= 1
            return i, j, m.group("rest").strip()
    return None


def _child_span(lines: list[str], start: int, end: int, child: str) -> tuple[int, int, int] | None:
    """(first line, end exclusive, indent) of ``child:`` directly under a section."""
    indent = None
    for i in range(start, end):
        if _is_blank(lines[i]):
            continue
        ind = _indent_of(lines[i])
        if indent is None:
            indent = ind
        if ind != indent:
            continue
        m = _TOP_KEY.match(lines[i].strip())
        if m is not None and m.group("key").strip("\"'") == child:
            j = i + 1
            while j < end and (_is_blank(lines[j]) or _indent_of(lines[j]) > indent):
                j += 1
            while j > i + 1 and not lines[j - 1].strip():
                j -= 1
            return i, j, indent
    return None


def _child_indent(lines: list[str], start: int, end: int) -> int:
    for i in range(start, end):
        if not _is_blank(lines[i]):
            return _indent_of(lines[i])
    return 2


def yaml_set_child(text: str, parent: str, child: str, values: Mapping[str, Any], where: str) -> str:
    """``text`` with ``parent: {child: values}`` set, everything else untouched."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    sec = _section(lines, parent)
    if sec is None:
        return "".join(lines) + f"{parent}:\n" + yaml_block(child, values, 2)
    head, end, rest = sec
    if rest and rest not in ("{}", "null", "~") and not rest.startswith("#"):
        raise ConfigFormatError(
            f"{where} writes '{parent}:' in flow style; chronomem can only edit block style, so add the "
            f"{child!r} entry by hand (see docs/mcp.md)"
        )
    if rest in ("{}", "null", "~"):
        lines[head] = f"{parent}:\n"
    span = _child_span(lines, head + 1, end, child)
    if span is not None:
        first, stop, indent = span
        return "".join(lines[:first]) + yaml_block(child, values, indent, indent) + "".join(lines[stop:])
    indent = _child_indent(lines, head + 1, end)
    return "".join(lines[:end]) + yaml_block(child, values, indent, indent) + "".join(lines[end:])


def yaml_remove_child(text: str, parent: str, child: str) -> str:
    """``text`` without ``parent.child`` (unchanged if absent)."""
    lines = text.splitlines(keepends=True)
    sec = _section(lines, parent)
    if sec is None:
        return text
    head, end, _rest = sec
    span = _child_span(lines, head + 1, end, child)
    if span is None:
        return text
    first, stop, _indent = span
    return "".join(lines[:first]) + "".join(lines[stop:])


def yaml_has_child(text: str, parent: str, child: str) -> bool:
    lines = text.splitlines(keepends=True)
    sec = _section(lines, parent)
    return sec is not None and _child_span(lines, sec[0] + 1, sec[1], child) is not None
