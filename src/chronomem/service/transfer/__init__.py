"""Moving a memory in and out: the portable record form, JSONL export and
import, CSV/TSV import, and copy (export piped into import)."""
