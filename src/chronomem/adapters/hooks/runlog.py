"""Where the hook runtime keeps its state, and its log file.

A hook must never write to the agent's terminal, so everything it has to
say goes to ``hooks.log`` in the state folder: ``$CHRONOMEM_STATE_DIR``, else
``$XDG_STATE_HOME/chronomem``, else ``~/.local/state/chronomem`` (on Windows
``%LOCALAPPDATA%\\chronomem``). The log is bounded: past :data:`MAX_LOG_BYTES`
it is moved to ``hooks.log.1`` (the one older copy kept) and started afresh,
so it never holds more than about twice that. Several processes append to it
at once (every hook is its own process); each record is one ``write`` of one
line in append mode, and a rotation two processes race on loses at most a
few lines, never the file.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

__all__ = ["LOG_NAME", "MAX_LOG_BYTES", "FileLog", "log_to_file", "state_dir"]

LOG_NAME = "hooks.log"
MAX_LOG_BYTES = 1_000_000
_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def state_dir() -> Path:
    """The folder for the hook log and the ingest locks (not created here)."""
    explicit = os.environ.get("CHRONOMEM_STATE_DIR", "")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
            return Path(os.environ["LOCALAPPDATA"]) / "chronomem"
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "chronomem"


class FileLog(logging.Handler):
    """Appends records to ``path`` as single lines, rotating past ``max_bytes``."""

    def __init__(self, path: Path, max_bytes: int = MAX_LOG_BYTES) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self.max_bytes = max_bytes
        formatter = logging.Formatter(_FORMAT, "%Y-%m-%dT%H:%M:%SZ")
        formatter.converter = time.gmtime  # UTC, like every time chronomem shows
        self.setFormatter(formatter)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record).replace("\n", "\n    ") + "\n"  # a traceback stays one record
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                if self.path.stat().st_size > self.max_bytes:
                    os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            except FileNotFoundError:
                pass
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8", "backslashreplace"))
            finally:
                os.close(fd)
        except Exception:  # a log that cannot be written must not break the hook either
            pass


def log_to_file() -> FileLog:
    """Send the ``chronomem`` loggers to the hook log, and nowhere else (no
    record reaches stderr): this runtime's from INFO (what each hook did),
    the library's from WARNING (not every migration step)."""
    handler = FileLog(state_dir() / LOG_NAME)
    logger = logging.getLogger("chronomem")
    for old in list(logger.handlers):
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logging.getLogger("chronomem.hooks").setLevel(logging.INFO)
    return handler
