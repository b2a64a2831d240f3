"""``import`` and ``export``: thin wrappers over :mod:`chronomem.io`."""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from ... import io as cio
from ...errors import InvalidInputError
from ._common import console, emit, json_option, plural, state

_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv"}


def _format_of(path: Path, given: str | None) -> str:
    if given is not None:
        return given
    fmt = _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InvalidInputError(
            f"cannot tell the format of {path.name!r} from its extension (.jsonl, .csv or .tsv); pass --format"
        )
    return fmt


def _parse_map(values: tuple[str, ...]) -> dict[str, str] | None:
    if not values:
        return None
    out: dict[str, str] = {}
    for value in values:
        for part in value.split(","):
            field, sep, column = part.partition("=")
            if not sep or not field.strip() or not column.strip():
                raise click.BadParameter(f"expected FIELD=COLUMN, got {part!r}", param_hint="--map")
            out[field.strip()] = column.strip()
    return out


class _Bar:
    """A rich progress bar over the bytes of the input file (on stderr)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.progress: Progress | None = None
        if enabled:
            self.progress = Progress(
                TextColumn("importing"), BarColumn(), DownloadColumn(), TextColumn("{task.fields[rows]} rows"),
                TimeRemainingColumn(), console=Console(stderr=True), transient=False,
            )
            self.task = self.progress.add_task("import", total=total, rows=0)

    def __call__(self, done_bytes: int, done_rows: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=done_bytes, rows=f"{done_rows:,}")

    def __enter__(self) -> "_Bar":
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "tsv"]),
              help="File format (default: from the extension).")
@click.option("--map", "mapping", multiple=True, metavar="FIELD=COLUMN,...",
              help="CSV/TSV: which column holds each field (subject, predicate, object, valid_from, valid_to, "
                   "source, confidence, episode_id): a header name or a column number from 1.")
@click.option("--no-header", is_flag=True, help="CSV/TSV: the file has no header row (map columns by number).")
@click.option("--inclusive-end", is_flag=True,
              help="CSV/TSV: an end is the last period of validity (end 2011 -> valid until 2012-01-01).")
@click.option("--literal", is_flag=True, help="CSV/TSV: objects are literal strings, not entities.")
@click.option("--source", help="CSV/TSV: the source of rows without a source column value.")
@click.option("--strict", is_flag=True, help="Fail on the first invalid row (nothing is written) "
                                             "instead of skipping invalid rows.")
@click.option("--batch-size", type=click.IntRange(min=1), default=50_000, show_default=True,
              help="Rows per transaction.")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar on stderr (default: when stderr is a terminal; never with --json).")
@json_option
def import_cmd(file: Path, fmt: str | None, mapping: tuple[str, ...], no_header: bool, inclusive_end: bool,
               literal: bool, source: str | None, strict: bool, batch_size: int, progress: bool | None) -> None:
    """Import FILE: a chronomem JSONL export, plain JSON fact lines, or a CSV/TSV table."""
    st = state()
    kind = _format_of(file, fmt)
    columns = _parse_map(mapping)
    if kind == "jsonl" and (columns or no_header or inclusive_end or literal or source):
        raise InvalidInputError("--map, --no-header, --inclusive-end, --literal and --source apply to CSV/TSV files")
    show = False if st.json else (progress if progress is not None else Console(stderr=True).is_terminal)
    mem = st.memory()
    bar = _Bar(file.stat().st_size, show)
    with ExitStack() as stack:
        stack.enter_context(bar)
        if kind == "jsonl":
            fp = stack.enter_context(file.open("rb"))
            result = cio.import_jsonl(mem, fp, strict=strict, batch_size=batch_size, progress=bar)
        else:
            result = cio.import_table(
                mem, file, delimiter="\t" if kind == "tsv" else ",", columns=columns, header=not no_header,
                inclusive_end=inclusive_end, literal=literal, source=source, strict=strict,
                batch_size=batch_size, progress=bar,
            )

    def human(con: Console) -> None:
        if result.format == "export":
            con.print(f"restored {plural(result.versions, 'fact version')} ({plural(result.facts, 'fact')}), "
                      f"{result.entities:,} entities, {plural(result.predicates, 'predicate')} and "
                      f"{plural(result.episodes + result.tombstones, 'episode')} into namespace {mem.namespace!r}")
        else:
            # what was new, not what was read: a second import of one file adds nothing
            skipped = f", {result.skipped:,} skipped (invalid)" if result.skipped else ""
            con.print(f"read {plural(result.rows, 'row')}: {result.added:,} added as new facts, "
                      f"{result.present:,} already present{skipped}")
        if result.skipped:
            err = console(stderr=True)
            err.print(f"warning: skipped {plural(result.skipped, 'invalid row')}:")
            for msg in result.errors[:5]:
                err.print(f"  {msg}")
            if result.skipped > 5:
                err.print(f"  ... (use --json for the first {len(result.errors)} messages)")

    emit(result.to_dict(), human)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@click.command("export")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=str))
@json_option
def export_cmd(file: str) -> None:
    """Write the namespace to FILE as JSONL (a lossless backup; '-' for stdout).

    Every fact version is kept with both time axes, the merges and every
    episode (text, times, mentions, supersessions, erasure tombstones and
    vectors): `chronomem import FILE` into an empty namespace gives the same
    facts, history, episodes, search and recall answers at any valid and
    system time, without re-embedding, and `unmerge` works there by the
    original operation id.
    """
    st = state()
    mem = st.memory(create=False)
    if file == "-":
        if st.json:
            raise InvalidInputError("--json cannot be combined with exporting to stdout ('-')")
        result = cio.export_jsonl(mem, sys.stdout)
        console(stderr=True).print(f"exported {plural(result.versions, 'fact version')} and "
                                   f"{plural(result.episodes + result.tombstones, 'episode')}")
        return
    target = Path(file)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent.resolve())
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fp:
            result = cio.export_jsonl(mem, fp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    emit(result.to_dict(), lambda con: con.print(
        f"exported {plural(result.versions, 'fact version')}, {result.entities:,} entities, "
        f"{plural(result.predicates, 'predicate')}, {plural(result.sources, 'source')} and "
        f"{plural(result.episodes + result.tombstones, 'episode')} to {file}"))


def register(main: click.Group) -> None:
    main.add_command(import_cmd)
    main.add_command(export_cmd)
