"""Evidence commands: ``remember``, ``search``, ``recall``, ``reindex``
and ``eval`` (``ingest`` is in :mod:`.ingest_cmds`).

``search`` here searches episodes (hybrid, with time views); ``--facts``
keeps the older substring search over fact names. The embedder's
dependencies (the ``evidence`` extra) are imported only when a command needs
them.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ...core.time import TimePoint
from ...errors import InvalidInputError
from ...service.evidence import SearchConfig
from ._common import console, emit, facts_out, json_option, nothing, read_at, state
from ._times import ReadTime

__all__ = ["register"]

log = logging.getLogger("chronomem.cli")
_F = TypeVar("_F", bound=Callable[..., Any])

_CHUNK = 2000


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=console(stderr=True), disable=not enabled, transient=False,
    )


@click.command("remember")
@click.argument("text", required=False)
@click.option("--file", "file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read the episode text from this file ('-' for stdin).")
@click.option("--at", "at", metavar="TIME", help="When it was said or happened (occurred_at).")
@click.option("--speaker", help="Who said it.")
@click.option("--session", help="Conversation or document it belongs to.")
@click.option("--source", help="Where it came from (free text).")
@json_option
def remember_cmd(text: str | None, file: Path | None, at: str | None, speaker: str | None, session: str | None,
                 source: str | None) -> None:
    """Store TEXT (or a file) verbatim as an episode, indexed for search."""
    if (text is None) == (file is None):
        raise InvalidInputError("give the text or --file, not both")
    if file is not None:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    assert text is not None
    ep = state().memory().add_episode(text, occurred_at=at, speaker=speaker, session=session, source=source)

    def human(con: Any) -> None:
        con.print(f"remembered {ep.id}")
        for m in ep.mentions:
            unsure = "" if m.certain else " (ambiguous)"
            con.print(f"  {m.phrase!r} -> {m.start.isoformat()} .. {m.end.isoformat()}{unsure}")

    emit(ep.to_dict(), human)


@click.command("search")
@click.argument("query")
@click.option("--view", type=click.Choice(["as_world", "as_recorded", "raw"]), default="as_world", show_default=True,
              help="as_world: said by --at and not superseded by then; as_recorded: stored by --at; raw: everything.")
@click.option("--at", "at", metavar="TIME", type=ReadTime("at"), help="The time the view is taken at (default now).")
@click.option("--known-at", "known_at", metavar="TIME", type=ReadTime("known_at"),
              help="System time: search as the memory knew at this time (default now).")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True, help="How many hits.")
@click.option("--session", help="Only episodes of this session.")
@click.option("--since", metavar="TIME", type=ReadTime("since"),
              help="Only episodes that occurred at or after this time.")
@click.option("--until", metavar="TIME", type=ReadTime("until"), help="Only episodes that occurred before this time.")
@click.option("--preset", type=click.Choice(list(SearchConfig.PRESETS)), default="hybrid", show_default=True,
              help="Search configuration preset (see SearchConfig.preset).")
@click.option("--explain", is_flag=True, help="Show the score parts (bm25, dense, fused, time, session) of each hit.")
@click.option("--facts", "facts_mode", is_flag=True,
              help="Search fact entity and predicate names instead of episodes (substring match).")
@click.option("--as-of", metavar="TIME", type=ReadTime("as_of"),
              help="Only facts valid at this time (implies --facts).")
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True,
              help="With --facts: at most this many.")
@json_option
def search_cmd(query: str, view: str, at: TimePoint | None, known_at: TimePoint | None, k: int,
               session: str | None, since: TimePoint | None, until: TimePoint | None, preset: str, explain: bool,
               facts_mode: bool, as_of: TimePoint | None, limit: int) -> None:
    """Hybrid search (BM25 + dense vectors) over episodes, in a time view."""
    mem = state().memory(create=False)
    if facts_mode or as_of is not None:
        facts_out(mem.search_facts(query, as_of=as_of, limit=limit), "matches", at=read_at(mem, as_of))
        return
    hits = mem.search(query, k=k, view=view, at=at, known_at=known_at, session=session, since=since, until=until,
                      config=preset)

    def human(con: Any) -> None:
        if not hits:
            nothing(con, "matching episodes")
            return
        for i, h in enumerate(hits, 1):
            ep = h.episode
            when = (ep.occurred_at or ep.recorded_at).isoformat()
            who = f"{ep.speaker}: " if ep.speaker else ""
            con.print(f"{i:>2}. [{when}] {who}{ep.text}")
            con.print(f"    id {ep.id}" + (f" · session {ep.session}" if ep.session else ""), style="dim")
            if explain:
                p = h.parts
                con.print(f"    fused {p.fused:.4f} · bm25 {_num(p.bm25)} (rank {p.bm25_rank or '-'}) · "
                          f"dense {_num(p.dense)} (rank {p.dense_rank or '-'}) · time {p.time:.4f} · "
                          f"session {p.session:.4f}", style="dim")
            for note in h.facts:
                kind = "fact" if note.current else "history"
                con.print(f"    {kind}{'' if note.link == 'cited' else ' (mentioned)'}: {note.line()}")

    emit([h.to_dict() for h in hits], human)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


@click.command("recall")
@click.argument("question")
@click.option("--at", "at", metavar="TIME", type=ReadTime("at"), help="Answer as of this time (default now).")
@click.option("--known-at", "known_at", metavar="TIME", type=ReadTime("known_at"),
              help="System time: answer as the memory knew at this time (default now).")
@click.option("--budget", "budget", type=click.IntRange(min=1), default=1500, show_default=True,
              help="Token budget of the packed context.")
@json_option
def recall_cmd(question: str, at: TimePoint | None, known_at: TimePoint | None, budget: int) -> None:
    """Facts and evidence for QUESTION, packed for a prompt with citations."""
    r = state().memory(create=False).recall(question, at=at, known_at=known_at, budget_tokens=budget)
    emit(r.to_dict(), lambda con: con.print(r.text or "nothing found"))


@click.command("reindex")
@click.option("--times", is_flag=True, help="Also re-resolve the time mentions of every episode.")
@click.option("--no-progress", is_flag=True, help="Do not draw a progress bar on stderr.")
@json_option
def reindex_cmd(times: bool, no_progress: bool) -> None:
    """Rebuild the lexical index and embed the episodes that lack a vector
    for the current embedder, then bring the dense-search files (the mapped
    vector file, the ANN index) up to date. Safe to interrupt and run again."""
    st = state()
    mem = st.memory(create=False)
    with _progress(not (no_progress or st.json)) as bar:
        task = bar.add_task("reindexing", total=None)
        counts = mem.reindex(times=times, progress=lambda d, t: bar.update(task, completed=d, total=t))
        bar.update(task, description="search files")
        prepared = mem.prepare_search()
    out = {**counts, **mem.evidence_stats(), "search_files": prepared}
    emit(out, lambda con: con.print(
        f"lexical rows {counts['lexical']} · new vectors {counts['vectors']} · time mentions {counts['times']}"
        f" · vectors mapped {prepared['vectors']}" + (" · ANN index current" if prepared["ann"] else "")))


@click.group("eval")
def eval_group() -> None:
    """Retrieval benchmarks (LoCoMo, LongMemEval)."""


@contextlib.contextmanager
def _eval_memories(store: str | None, prefix: str = "chronomem-eval-") -> Iterator[Callable[[str], Any]]:
    """``open_memory(namespace)`` on ``store``, a path or a URL (default: a
    temporary file, removed afterwards), with the group's ``--embedder``."""
    import chronomem

    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix=prefix)
        store = str(Path(tmp.name) / "eval.db")
    target = store
    choice = state().embedder_arg  # the group's --embedder
    try:
        yield lambda ns: chronomem.open(target, namespace=ns, embedder=choice)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _eval_run(store: str | None, run: Callable[[Callable[[str], Any]], Any]) -> None:
    """``run(open_memory)`` a benchmark on ``store`` and print its result."""
    with _eval_memories(store) as open_memory:
        res = run(open_memory)
    emit(res.summary, lambda con: click.echo(res.table()))


def _eval_progress(message: str) -> None:
    log.info("%s", message)


def _eval_inputs(default_out: str) -> Callable[[_F], _F]:
    """The PATH argument and the --out and --store options of a benchmark command."""
    def deco(f: _F) -> _F:
        f = click.option("--store", metavar="PATH|URL",
                         help="Database to ingest into: a file path or a postgresql:// URL "
                              "(default: a temporary file).")(f)
        f = click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=Path(default_out),
                         show_default=True, help="Directory for summary.json, candidates.tsv and misses.tsv.")(f)
        return click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))(f)

    return deco


@eval_group.command("locomo")
@_eval_inputs("eval-locomo")
@click.option("--conversations", type=click.IntRange(min=1), help="Only the first N conversations.")
@click.option("--view", "views", multiple=True, type=click.Choice(["as_world", "as_recorded", "raw"]),
              help="Views to score (repeatable; default all three).")
@click.option("--ranker", type=click.Choice(["fusion", "learned"]), default=None,
              help="Rank the hybrid search with today's fusion or the shipped learned ranker "
                   "(default: SearchConfig's). The learned ranker was fitted on the dev file: its "
                   "figure there is in fold; train-ranker prints the cross-validated one.")
@click.option("--diagnostics", type=click.Path(file_okay=False, path_type=Path),
              help="Write questions.jsonl here: per question the gold turns' ranks in the result and "
                   "in the pool, and the ranker's features of each gold turn.")
@json_option
def eval_locomo_cmd(path: Path, out: Path, store: str | None, conversations: int | None,
                    views: tuple[str, ...], ranker: str | None, diagnostics: Path | None) -> None:
    """Score turn- and session-level recall (mean share, any, all @1,5,10,20,50),
    hit and nDCG@1,5,10 and the pool's recall on a LoCoMo file; categories 1-4
    together as the headline, adversarial apart. With --store, a store kept
    from an earlier run is reused (no re-embedding)."""
    from ..eval import run_locomo

    config = SearchConfig(ranker="learned" if ranker == "learned" else "fusion") if ranker else None
    _eval_run(store, lambda open_memory: run_locomo(
        open_memory, path, out_dir=out, views=views or ("as_world", "as_recorded", "raw"),
        limit_conversations=conversations, progress=_eval_progress, config=config, diagnostics=diagnostics))


@eval_group.command("train-ranker")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the model file here (the shipped one is "
                   "src/chronomem/service/evidence/data/ranker.json). Without it, only the "
                   "cross-validation is printed, with whether the model equals the shipped one.")
@click.option("--store", metavar="PATH|URL",
              help="Database to ingest into (a file path or a postgresql:// URL), or one kept from an "
                   "earlier eval run (default: a temporary file).")
@json_option
def eval_train_ranker_cmd(path: Path, out: Path | None, store: str | None) -> None:
    """Fit the learned ranker on a LoCoMo file (every question's search pool,
    labelled by its gold turns) and print leave-one-conversation-out
    cross-validation: per held-out conversation, today's fusion, the model fitted
    on every conversation (in fold) and the one fitted without it (out of fold),
    recall@10 for categories 1-4 together, each category and adversarial apart.
    The same file gives the same model file, byte for byte."""
    import hashlib

    from ..ranker_train import train_ranker

    with _eval_memories(store, "chronomem-train-") as open_memory:
        res = train_ranker(open_memory, path, progress=_eval_progress)
    digest = hashlib.sha256(res.text.encode()).hexdigest()
    try:
        shipped = res.text == _shipped_text()  # (before --out may overwrite it)
    except OSError:
        shipped = False
    if out is not None:
        out.write_text(res.text, encoding="utf-8")
    summary = {"cv": res.cv, "sha256": digest, "out": str(out) if out else None, "same_as_shipped": shipped}

    def human(con: Any) -> None:
        click.echo(res.table())
        click.echo(f"model sha256 {digest}" + (f", written to {out}" if out else "")
                   + ("; identical to the shipped model" if shipped else "; differs from the shipped model"))

    emit(summary, human)


def _shipped_text() -> str:
    from importlib import resources

    return resources.files("chronomem.service.evidence").joinpath("data/ranker.json").read_text("utf-8")


@eval_group.command("longmemeval")
@_eval_inputs("eval-longmemeval")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N questions.")
@json_option
def eval_lme_cmd(path: Path, out: Path, store: str | None, limit: int | None) -> None:
    """Score session-level recall/hit/nDCG@1,5,10 on a LongMemEval file."""
    from ..eval import run_longmemeval

    _eval_run(store, lambda open_memory: run_longmemeval(open_memory, path, out_dir=out, limit=limit,
                                                         progress=_eval_progress))


def register(main: click.Group) -> None:
    """Add the evidence commands (``search`` replaces the fact-name search,
    which stays available as ``search --facts``)."""
    for cmd in (remember_cmd, search_cmd, recall_cmd, reindex_cmd, eval_group):
        main.add_command(cmd)
