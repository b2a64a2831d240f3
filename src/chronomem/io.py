"""Moving a memory in and out, as the public API: JSONL export and import
(lossless: facts, versions, entities, evidence), CSV/TSV import and copying
between stores. The work is done in :mod:`chronomem.service.transfer`."""

from __future__ import annotations

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

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "TABLE_FIELDS",
    "CopyResult",
    "ExportResult",
    "ImportResult",
    "copy_store",
    "export_jsonl",
    "import_jsonl",
    "import_table",
]
