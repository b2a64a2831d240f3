"""What the format readers' tests share: the hand-made fixtures
(tests/data/import/<format>), reading a whole input, checking a reader
claims no other format's fixture, zipping a fixture, and streaming a large
generated input (bench/gen) while measuring peak memory."""

from __future__ import annotations

import importlib
import sys
import time
import tracemalloc
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from chronomem.service.ingest.source import Item, Reader, ReadOptions, SourceMessage

__all__ = ["DATA", "Streamed", "assert_claims_no_other_fixture", "generator", "messages", "read_all", "stream",
           "zip_folder"]

DATA = Path(__file__).parent / "data" / "import"
_REPO = Path(__file__).resolve().parents[1]


def generator(name: str) -> ModuleType:
    """The big-input generator ``bench/gen/<name>.py`` (bench is not an
    installed package: found from the repository root)."""
    if str(_REPO) not in sys.path:
        sys.path.insert(0, str(_REPO))
    return importlib.import_module(f"bench.gen.{name}")


def read_all(reader: Reader, root: Path, **options: Any) -> list[Item]:
    """Every item of every input the reader finds at ``root``, in order."""
    opts = ReadOptions(root=root, **options)
    return [item for file in reader.files(opts) for item in reader.read(file, opts)]


def messages(items: list[Item]) -> list[SourceMessage]:
    return [m for m in items if isinstance(m, SourceMessage)]


def assert_claims_no_other_fixture(reader: Reader, own: str) -> None:
    """``detect()`` is false on every other format's fixture folder and on
    every file and folder inside it."""
    others = [p for p in sorted(DATA.iterdir()) if p.name != own]
    assert others, "the other formats' fixtures are expected next to this one"
    for other in others:
        assert not reader.detect(other), other
        for path in sorted(other.rglob("*")):
            assert not reader.detect(path), path


def zip_folder(folder: Path, archive: Path, wrap: str = "") -> Path:
    """Zip every file under ``folder`` as an export zip holds it, inside a
    folder named ``wrap`` if given; returns ``archive``."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                zf.write(f, wrap + f.relative_to(folder).as_posix())
    return archive


@dataclass(frozen=True)
class Streamed:
    """What reading a large input took: how many messages and skips, the
    distinct keys (when asked for), peak traced memory and wall time."""

    messages: int
    skips: int
    peak: int
    seconds: float
    keys: int | None = None


def stream(reader: Reader, root: Path, keys: bool = False) -> Streamed:
    """Read every input at ``root`` under :mod:`tracemalloc`, keeping
    nothing but counts (and, if ``keys``, each message's key or skip's
    place, to count the distinct ones)."""
    opts = ReadOptions(root=root)
    files = reader.files(opts)
    seen: set[str] = set()
    count = skips = 0
    started = time.monotonic()
    tracemalloc.start()
    try:
        for file in files:
            for item in reader.read(file, opts):
                if isinstance(item, SourceMessage):
                    count += 1
                else:
                    skips += 1
                if keys:
                    seen.add(item.key if isinstance(item, SourceMessage) else item.where)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return Streamed(count, skips, peak, time.monotonic() - started, len(seen) if keys else None)
