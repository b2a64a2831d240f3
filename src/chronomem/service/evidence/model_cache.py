"""Keeps the int8-rewritten model (:mod:`.int8_graph`) between processes.

Rewriting MiniLM takes ~35-50 ms; a cold CLI call or hook would pay that on
every run, so the result is written once to the cache folder and later
processes open the file. The file's name carries a key made of the source's
path, size and modification time and of the rewrite's version, so an
upgraded model or rewrite never reuses a stale file; older files of the same
model are removed when a new one is written. Writes are atomic (a temporary
file renamed over the target); a file that fails to load anyway is rewritten
(:func:`int8_model` with ``refresh=True``). When the folder cannot be
written, the rewritten bytes are returned instead and nothing is kept.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

from . import int8_graph

__all__ = ["cache_dir", "int8_model"]

log = logging.getLogger("chronomem.evidence.embed")


def cache_dir() -> Path:
    """``$CHRONOMEM_CACHE_DIR``, else ``$XDG_CACHE_HOME/chronomem`` (``~/.cache``
    when unset; ``%LOCALAPPDATA%`` on Windows). Not created here."""
    explicit = os.environ.get("CHRONOMEM_CACHE_DIR", "")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
            return Path(os.environ["LOCALAPPDATA"]) / "chronomem" / "cache"
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "chronomem"


def _target(source: str, stem: str) -> Path:
    st = os.stat(source)
    ident = f"{os.path.abspath(source)}\0{st.st_size}\0{st.st_mtime_ns}\0{int8_graph.VERSION}"
    return cache_dir() / "models" / f"{stem}-{hashlib.sha256(ident.encode()).hexdigest()[:16]}.onnx"


def int8_model(source: str, stem: str, np: Any, *, refresh: bool = False) -> str | bytes:
    """What to open for the model at ``source``: the cached rewritten file's
    path, the rewritten bytes (cache not writable), or ``source`` itself when
    the rewrite finds nothing to change. ``stem`` names the cached file.
    ``refresh`` rewrites even when a cached file exists. Raises ``OSError``
    when ``source`` cannot be read and ``ValueError`` when it is not a
    protobuf message."""
    target = _target(source, stem)
    if not refresh and target.is_file():
        return str(target)
    data, rewritten = int8_graph.rewrite(Path(source).read_bytes(), np)
    if not rewritten:
        return source
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.info("cannot keep the int8 model in %s (%s): rewriting it in every process", target.parent, exc)
        return data
    for old in target.parent.glob(f"{stem}-*.onnx"):
        if old != target:
            try:
                old.unlink()  # (a process that opened it has read it whole)
            except OSError:
                pass
    log.info("wrote the int8 model (%d nodes rewritten) to %s", rewritten, target)
    return str(target)
