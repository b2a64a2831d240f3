"""Parse JSON text that must be one object (a line of a file, an option's value)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInputError

__all__ = ["load_object"]


def load_object(text: str | bytes, prefix: str, *, invalid: str = "is not valid JSON",
                not_object: str = "must be a JSON object") -> dict[str, Any]:
    """``text`` parsed as a JSON object. Otherwise :class:`InvalidInputError`:
    ``"{prefix} {invalid} (reason)"`` for text that is not JSON, and
    ``"{prefix} {not_object}"`` for any other JSON value, where ``{type}`` in
    ``not_object`` stands for the value's Python type name (``list``, ``int``…)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{prefix} {invalid} ({exc.msg})") from None
    except RecursionError:  # nested deeper than the parser goes: no value of chronomem's is
        raise InvalidInputError(f"{prefix} {invalid} (nested too deeply)") from None
    if not isinstance(value, dict):
        raise InvalidInputError(f"{prefix} {not_object.replace('{type}', type(value).__name__)}")
    return value
