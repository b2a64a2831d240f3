"""The hook's fast start: ``chronomem [GLOBAL OPTIONS] hook claude-code
[--budget N] [--time-limit S]`` run without click, rich and the other
command modules, which cost about 100 ms of a cold start that must stay
under 300 ms.

:func:`main` reads exactly that command line (the global options
``--db``, ``--namespace``, ``--timezone``, ``--embedder`` and their
environment variables, as the ``chronomem`` group reads them) and runs the
hook; any other command line, or one it does not fully understand, goes to
the click command line unchanged, so both give the same result. Used by
``python -m chronomem.adapters.hooks`` and usable as the ``chronomem``
console script itself (``docs/hooks.md``, "Speed").
"""

from __future__ import annotations

import atexit
import os
import sys
from dataclasses import dataclass
from typing import Sequence

from . import claude_code

__all__ = ["HookArgs", "main", "parse_hook_argv"]

_GLOBAL = {"--db": "db", "--namespace": "namespace", "--timezone": "timezone", "--embedder": "embedder"}
_HOOK = {"--budget": "budget", "--time-limit": "time_limit"}
_EMBEDDERS = ("auto", "minilm", "bge-small", "e5-multilingual", "none")


@dataclass
class HookArgs:
    client: str
    db: str
    namespace: str = "default"
    timezone: str = "UTC"
    embedder: str = "auto"
    budget: int | None = None
    time_limit: float | None = None


def _options(args: Sequence[str], i: int, names: dict[str, str], into: dict[str, str]) -> int | None:
    """Read ``--name value`` / ``--name=value`` options from ``args[i:]``
    into ``into``; the index after them, or ``None`` on one not in ``names``."""
    while i < len(args) and args[i].startswith("-"):
        name, eq, value = args[i].partition("=")
        if name not in names:
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 1
        into[names[name]] = value
        i += 1
    return i


def parse_hook_argv(args: Sequence[str]) -> HookArgs | None:
    """The hook command line ``args`` holds, or ``None`` for anything else."""
    found: dict[str, str] = {}
    i = _options(args, 0, _GLOBAL, found)
    if i is None or args[i:i + 1] != ["hook"] or i + 1 >= len(args):
        return None
    client = args[i + 1]
    if client != "claude-code":
        return None
    j = _options(args, i + 2, {**_HOOK, **_GLOBAL}, found)  # global options may follow the command too
    if j is None or j != len(args):
        return None
    db = found.get("db") or os.environ.get("CHRONOMEM_DB")
    if not db:
        return None  # the default database path is the command line's to decide
    embedder = found.get("embedder") or os.environ.get("CHRONOMEM_EMBEDDER") or "auto"
    if embedder not in _EMBEDDERS:
        return None
    try:
        budget = int(found["budget"]) if "budget" in found else None
        limit = float(found["time_limit"]) if "time_limit" in found else None
    except ValueError:
        return None
    low, high = claude_code.BUDGET_RANGE
    if (budget is not None and not low <= budget <= high
            or limit is not None and not 0 < limit <= claude_code.MAX_TIME_LIMIT):
        return None  # the click command line says what is wrong with it
    return HookArgs(client=client, db=db,
                    namespace=found.get("namespace") or os.environ.get("CHRONOMEM_NAMESPACE") or "default",
                    timezone=found.get("timezone") or os.environ.get("CHRONOMEM_TIMEZONE") or "UTC",
                    embedder=embedder, budget=budget, time_limit=limit)


def _exit_now(code: object) -> None:
    """Exit without the interpreter's teardown once onnxruntime is loaded:
    unloading it and its model took ~70 ms of a ~0.6 s cold search. The
    ``atexit`` handlers still run (an index build the search started gets
    its time, logs are flushed), and so does every flush; the store's
    writes were committed (a commit survives a kill, let alone this)."""
    if "onnxruntime" not in sys.modules:
        return
    run = getattr(atexit, "_run_exitfuncs", None)
    if run is None:  # (not CPython: the normal exit)
        return
    run()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    status = code if isinstance(code, int) else (0 if code is None else 1)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int | None:
    args = list(sys.argv[1:] if argv is None else argv)
    parsed = parse_hook_argv(args)
    if parsed is None:
        from ..cli import main as cli

        try:
            code = cli.main(args=args, prog_name="chronomem")
        except SystemExit as exc:
            code = exc.code
        if argv is None:  # (the process's own command line, not a caller's)
            _exit_now(code)
        return code  # type: ignore[no-any-return]
    return claude_code.run(
        parsed.db, parsed.namespace, stdin=sys.stdin.buffer, stdout=sys.stdout, timezone=parsed.timezone,
        budget_chars=parsed.budget if parsed.budget is not None else claude_code.DEFAULT_BUDGET_CHARS,
        time_limit=parsed.time_limit if parsed.time_limit is not None else claude_code.DEFAULT_TIME_LIMIT,
        embedder=parsed.embedder)
