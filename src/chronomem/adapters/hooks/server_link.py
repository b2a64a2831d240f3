"""Asking a running ``chronomem serve`` for the recall instead of opening
the store.

A server holds the store open and the embedding model loaded, so it answers
with the *hybrid* recall (lexical and dense) in milliseconds, where a cold
hook process only has time for the lexical one. A hook finds the server of
its (database, namespace) by one small file: ``chronomem serve`` on a
loopback address writes ``servers/<key>.json`` in the state folder
(:func:`announce`: its URL and process id) and removes it when it stops.
:func:`find` reads it (one ``open``, no network probe) and drops it when its
process is gone; :func:`recall` asks ``GET /api/recall``. Any failure there
(refused, slow, an older server without the route) returns ``None`` and the
hook recalls locally. A server whose store has tokens answers a hook that
has one of its own in ``$CHRONOMEM_AGENT_TOKEN`` (the variable
``docs/team.md`` gives each agent), sent with the hook's namespace.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from .runlog import state_dir
from .target import db_key

__all__ = ["AGENT_TOKEN_ENV", "announce", "discovery_path", "find", "recall"]

#: where a hook finds its agent's token for a server whose store has tokens
AGENT_TOKEN_ENV = "CHRONOMEM_AGENT_TOKEN"

log = logging.getLogger("chronomem.hooks")


def discovery_path(db: str, namespace: str) -> Path:
    digest = hashlib.sha256(f"{db_key(db)}\0{namespace}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return state_dir() / "servers" / f"{digest}.json"


def _alive(pid: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover (no cheap check there; a dead server is refused quickly)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


@contextlib.contextmanager
def announce(db: str, namespace: str, url: str) -> Iterator[Path]:
    """While the block runs, hooks of ``db`` / ``namespace`` ask the server at
    ``url`` (an ``http://`` loopback URL ending in ``/``)."""
    path = discovery_path(db, namespace)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"url": url, "pid": os.getpid(), "db": db_key(db), "namespace": namespace}),
                   encoding="utf-8")
    os.replace(tmp, path)  # a hook reading it sees the old file or the new one, never half
    try:
        yield path
    finally:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():  # not a newer server's
                path.unlink()


def find(db: str, namespace: str) -> str | None:
    """The URL of the running server of ``db`` / ``namespace``, if any."""
    path = discovery_path(db, namespace)
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        log.info("unreadable server file %s: ignored", path)
        return None
    if not isinstance(info, dict):
        return None
    url, pid = info.get("url"), info.get("pid")
    if not isinstance(url, str) or not url.startswith("http://") or not isinstance(pid, int):
        return None
    if not _alive(pid):
        with contextlib.suppress(OSError):
            path.unlink()  # a server that died without cleaning up
        return None
    return url


def recall(url: str, question: str, budget_tokens: int, timeout: float, *, namespace: str | None = None,
           token: str | None = None) -> dict[str, Any] | None:
    """``Recall.to_dict()`` from the server, or ``None`` if it did not answer.
    ``namespace`` goes as ``X-Chronomem-Namespace`` (a server serves every
    namespace its tokens name), ``token`` as the bearer token."""
    import urllib.error
    import urllib.parse
    import urllib.request

    query = urllib.parse.urlencode({"q": question, "budget_tokens": budget_tokens})
    headers = {"Accept": "application/json"}
    if namespace is not None:
        headers["X-Chronomem-Namespace"] = namespace
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{url.rstrip('/')}/api/recall?{query}", headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    try:
        with opener.open(request, timeout=timeout) as response:
            data = json.loads(response.read())
    except (OSError, ValueError, urllib.error.URLError) as exc:
        log.info("server %s did not answer the recall (%s); recalling locally", url, exc)
        return None
    return data if isinstance(data, dict) and isinstance(data.get("items"), list) else None
