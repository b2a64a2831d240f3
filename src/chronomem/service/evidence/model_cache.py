"""Keeps the int8-rewritten model (:mod:`.int8_graph`) between processes.

Rewriting MiniLM takes ~35-50 ms; a cold CLI call or hook would pay that on
every run, so the result is written once to the cache folder and later
processes open the file. The file's name carries a key made of the source's
path, size and modification time and of the rewrite's version, so an
upgraded model or rewrite never reuses a stale file; older files of the same
model are removed when a new one is written; a model with nothing to
rewrite leaves an empty ``.asis`` file, so later processes skip the parse.
Writes are atomic (a temporary
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
    the rewrite finds nothing to change (remembered by an empty ``.asis``
    file: reading and parsing bge-small to find that out took 70-300 ms).
    ``stem`` names the cached file. ``refresh`` rewrites even when a cached
    file exists. Raises ``OSError`` when ``source`` cannot be read and
    ``ValueError`` when it is not a protobuf message."""
    target = _target(source, stem)
    asis = target.with_suffix(".asis")
    if not refresh and target.is_file():
        return str(target)
    if not refresh and asis.is_file():
        return source
    data, rewritten = int8_graph.rewrite(Path(source).read_bytes(), np)
    if not _keep(asis if not rewritten else target, b"" if not rewritten else data, stem):
        return data if rewritten else source
    if rewritten:
        log.info("wrote the int8 model (%d nodes rewritten) to %s", rewritten, target)
        return str(target)
    return source


def _keep(path: Path, data: bytes, stem: str) -> bool:
    """Write ``path`` atomically (a temporary file renamed over it) and
    remove the other files of ``stem``; ``False`` when the folder cannot be
    written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        log.info("cannot keep the int8 model in %s (%s): rewriting it in every process", path.parent, exc)
        return False
    for old in path.parent.glob(f"{stem}-*"):
        if old != path and old.suffix in (".onnx", ".asis"):
            try:
                old.unlink()  # (a process that opened it has read it whole)
            except OSError:
                pass
    return True
