"""Moving a memory in and out, as the public API: JSONL export and import
(lossless: facts, versions, entities, evidence), CSV/TSV import, copying
between stores, and importing transcripts in other tools' formats (Claude
Code, Codex, ChatGPT, Claude.ai, Slack, Markdown notes, git history) as
episodes. The work is done in :mod:`chronomem.service.transfer` and
:mod:`chronomem.service.ingest`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .service.ingest.formats import FORMATS
from .service.ingest.run import ImportProgress, ImportSummary
from .service.transfer.copy import CopyResult, copy_store
from .service.transfer.jsonl import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    ExportResult,
    ImportResult,
    export_jsonl,
    import_jsonl,
)
from .service.transfer.table import TABLE_FIELDS, import_table

if TYPE_CHECKING:  # pragma: no cover
    from .memory import Memory

__all__ = [
    "EXPORT_FORMAT",
    "IMPORT_FORMATS",
    "EXPORT_VERSION",
    "TABLE_FIELDS",
    "CopyResult",
    "ExportResult",
    "ImportProgress",
    "ImportResult",
    "ImportSummary",
    "copy_store",
    "export_jsonl",
    "import_jsonl",
    "import_source",
    "import_table",
]

#: the formats :func:`import_source` reads (``"auto"`` detects one of them)
IMPORT_FORMATS: tuple[str, ...] = tuple(FORMATS)


def import_source(mem: Memory, path: str | Path, format: str = "auto", **options: Any) -> ImportSummary:
    """Import transcripts into ``mem`` as episodes, incrementally: the same
    as :meth:`Memory.import_source` (its options and their meaning)."""
    return mem.import_source(path, format, **options)
