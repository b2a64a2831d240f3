"""Tool input schemas: compact for the listing, closed, and enforced as listed.

pydantic's schemas carry a ``title`` per property, ``anyOf`` branches for
every optional value and ``default: null``; :func:`compact` writes the same
constraints in fewer characters (the full ``tools/list`` must fit a context
window) and closes every object (``additionalProperties: false``) because the
tools reject unknown arguments. :func:`schema_error` checks a call against the
listed schema with ``jsonschema`` (a dependency of the ``mcp`` SDK), so what
the schema forbids is refused even where pydantic would coerce it (a nested
``confidence: "0.5"``).
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

__all__ = ["compact", "json_type", "schema_error", "validator"]

_DATA = frozenset({"default", "enum", "const", "examples"})


def _plain_type(branch: Any) -> str | None:
    """The type of a branch that states nothing but its type (an open object counts)."""
    if not isinstance(branch, dict):
        return None
    rest = {k: v for k, v in branch.items() if not (k == "additionalProperties" and v is True)}
    kind = rest.get("type")
    return kind if isinstance(kind, str) and set(rest) == {"type"} else None


def _compact(node: Any) -> Any:
    if isinstance(node, list):
        return [_compact(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default" and value is None:
            continue  # not required already says it may be omitted
        if key in _DATA:
            out[key] = value  # values, not schemas: kept verbatim
            continue
        if key == "title":
            continue  # the property name says it
        if key == "additionalProperties" and value is True:
            continue  # the JSON Schema default
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _compact(sub) for name, sub in value.items()}
            continue
        if key == "$defs" and isinstance(value, dict):
            out[key] = {name: _compact(sub) for name, sub in value.items()}
            continue
        out[key] = _compact(value)
    branches = out.get("anyOf")
    if isinstance(branches, list):
        types = [_plain_type(b) for b in branches]
        if all(types):
            del out["anyOf"]
            out["type"] = types[0] if len(types) == 1 else types
        elif len(branches) == 2 and types[1] == "null" and isinstance(branches[0], dict) \
                and isinstance(branches[0].get("type"), str) and not set(branches[0]) & (set(out) | _DATA):
            # {"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]}: number keywords ignore null
            del out["anyOf"]
            out.update(branches[0], type=[branches[0]["type"], "null"])
    if out.get("type") == "object" and "properties" in out:
        out["additionalProperties"] = False
    return out


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without titles, ``default: null`` and one-type ``anyOf``
    branches, every object with properties closed."""
    result: dict[str, Any] = _compact(schema)
    if result.get("type") == "object":
        result["additionalProperties"] = False
    return result


def validator(schema: dict[str, Any]) -> Any:
    """A checker for :func:`schema_error` (build it once per tool)."""
    return Draft202012Validator(schema)


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (``true`` is a boolean, not an integer)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", dict: "object", list: "array"}.get(type(value), type(value).__name__)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def schema_error(checker: Any, arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` break the checker's schema, naming the argument path
    (``facts[0].confidence``) in the words the other argument errors use; or
    None. A missing required argument is left to pydantic's wording."""
    errors = [e for e in checker.iter_errors(arguments) if e.validator != "required"]
    if not errors:
        return None
    err = min(errors, key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    path = ""
    for part in err.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = set(err.schema.get("properties", {}))
        extra = sorted(k for k in err.instance if k not in known)
        names = [f"{path}.{k}" if path else k for k in extra]
        plural = "s" if len(names) > 1 else ""
        return (f"unknown argument{plural} {', '.join(map(repr, names))}; valid arguments there are: "
                f"{', '.join(sorted(known))}")
    if err.validator == "type":
        want = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        kinds = [t for t in want if t != "null"] + ["null"] * ("null" in want)
        return f"argument {path!r} must be a JSON {_or(kinds)}, not {json_type(err.instance)} {_short(err.instance)}"
    if err.validator == "enum":
        return f"argument {path!r}: Input should be {_or([repr(v) for v in err.validator_value])} " \
               f"(got {_short(err.instance)})"
    bound = _BOUNDS.get(str(err.validator))
    if bound is not None:  # pydantic's wording, which the bound errors of plain values use too
        return f"argument {path!r}: Input should be {bound} {err.validator_value} (got {_short(err.instance)})"
    msg = str(err.message)
    return f"argument {path!r}: {msg if len(msg) <= 160 else msg[:159] + '…'}"


_BOUNDS = {"minimum": "greater than or equal to", "maximum": "less than or equal to",
           "exclusiveMinimum": "greater than", "exclusiveMaximum": "less than"}
