"""``chronomem ingest [FORMAT] PATH``: transcripts in other tools' formats
imported as episodes, incrementally (:meth:`chronomem.Memory.import_source`)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ...core.phrases import resolve_time
from ...errors import InvalidInputError
from ...io import IMPORT_FORMATS, ImportProgress
from ._common import console, emit, json_option, state

__all__ = ["register"]


def _bar(enabled: bool) -> Progress:
    return Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[messages]} messages"), TimeElapsedColumn(),
        console=console(stderr=True), disable=not enabled, transient=False,
    )


@click.command("ingest")
@click.argument("args", nargs=-1, required=True, metavar="[FORMAT] PATH")
@click.option("--format", "fmt_opt", type=click.Choice(["auto", *IMPORT_FORMATS]),
              help="The format (same as the FORMAT argument; default auto: detected).")
@click.option("--since", metavar="TIME",
              help="Only messages said at or after TIME (a time or phrase: '2024-06', '30 days ago').")
@click.option("--project", metavar="TEXT", help="Only messages whose project contains TEXT (case-insensitive).")
@click.option("--dry-run", is_flag=True, help="Read and count what would be added; write nothing.")
@click.option("--recorded-at", "recorded", type=click.Choice(["now", "original"]), default="now", show_default=True,
              help="now: stored at the store clock; original: recorded_at = each message's occurred_at "
                   "(importing history; a message without a time is stored now).")
@click.option("--keep-secrets", is_flag=True,
              help="Store the text as given: do not redact API keys, tokens, private keys and passwords.")
@click.option("--batch", type=click.IntRange(1, 10_000), default=500, show_default=True,
              help="Messages per transaction (an interrupted import keeps every committed batch).")
@click.option("--no-progress", is_flag=True, help="Do not draw a progress bar on stderr.")
@json_option
def ingest_cmd(args: tuple[str, ...], fmt_opt: str | None, since: str | None, project: str | None,
               dry_run: bool, recorded: str, keep_secrets: bool, batch: int, no_progress: bool) -> None:
    """Import transcripts as episodes, once each: FORMAT is one of
    claude-code, codex, chatgpt, claude-ai, slack, markdown, git, locomo,
    longmemeval, jsonl, or auto (detected; the default). PATH is a file or
    a folder (a Claude Code projects folder, a Slack export, a notes vault,
    a git repository ...).

    Re-running adds only what is new: a changed message becomes a new
    version of its episode, unchanged files are not read again, and an
    interrupted import resumes where its last committed batch ended.
    Secrets in the text are redacted unless --keep-secrets."""
    if len(args) > 2:
        raise click.UsageError("give at most FORMAT and PATH")
    fmt = args[0] if len(args) == 2 else (fmt_opt or "auto")
    if len(args) == 2 and fmt_opt is not None and fmt_opt != fmt:
        raise click.UsageError(f"FORMAT {fmt!r} and --format {fmt_opt!r} disagree")
    if fmt not in ("auto", *IMPORT_FORMATS):
        raise click.BadParameter(f"{fmt!r} is not one of auto, {', '.join(IMPORT_FORMATS)}", param_hint="FORMAT")
    path = Path(args[-1]).expanduser()
    # checked before the memory is opened: bad input creates no database
    if not path.exists():
        raise InvalidInputError(f"path: {str(path)!r} does not exist")
    if since is not None:
        resolve_time(since, "since", _dt.datetime.now(_dt.timezone.utc), _dt.timezone.utc)
    st = state()
    mem = st.memory()
    with _bar(not (no_progress or st.json)) as bar:
        files = bar.add_task("files", total=None, messages=0)
        embed = bar.add_task("embedding", total=None, messages="", visible=False)

        def on_progress(p: ImportProgress) -> None:
            bar.update(files, total=p.files, completed=p.files_done, messages=p.messages)

        def on_embed(done: int, total: int) -> None:
            bar.update(embed, total=total, completed=done, visible=done < total)

        summary = mem.import_source(path, fmt, since=since, project=project, dry_run=dry_run,
                                    keep_secrets=keep_secrets, recorded_at="original" if recorded == "original"
                                    else "now", batch=batch, progress=on_progress, embed_progress=on_embed)
    result = summary.to_dict()
    result["keep_secrets"] = keep_secrets

    def human(con: object) -> None:
        c = console()
        kept = "; secrets kept (--keep-secrets)" if keep_secrets else ""
        c.print(f"{summary.format} {summary.path}: {summary.line()}{kept}", markup=False, highlight=False)
        for skip in summary.skips[:5]:
            c.print(f"  skipped {skip['where']}: {skip['reason']}", style="dim", markup=False)
        if dry_run:
            c.print("dry run: nothing was written", style="dim")

    emit(result, human)


def register(main: click.Group) -> None:
    main.add_command(ingest_cmd)
