"""Name and schema commands: alias, merge, unmerge, predicate define/list,
doctor and the demo."""

from __future__ import annotations

import importlib

import click
from rich.console import Console

from ...errors import ChronomemError
from ._common import FOLD, emit, json_option, kv_table, plural, rows_out, state


@click.command("alias")
@click.argument("name")
@click.argument("alias")
@json_option
def alias_cmd(name: str, alias: str) -> None:
    """Make ALIAS another name of entity NAME (created if missing)."""
    e = state().memory().alias(name, alias)
    emit(e.to_dict(), lambda con: con.print(f"{alias} → {e.name} (aliases: {', '.join(e.aliases)})"))


@click.command("merge")
@click.argument("keep")
@click.argument("fold")
@json_option
def merge_cmd(keep: str, fold: str) -> None:
    """Fold entity FOLD into KEEP; prints an operation id for `unmerge`."""
    op_id = state().memory(create=False).merge(keep, fold)

    def human(con: Console) -> None:
        con.print(f"merged {fold} into {keep}")
        click.echo(op_id)

    emit({"op_id": op_id, "keep": keep, "fold": fold}, human)


@click.command("unmerge")
@click.argument("op_id")
@json_option
def unmerge_cmd(op_id: str) -> None:
    """Undo the merge OP_ID."""
    state().memory(create=False).unmerge(op_id)
    emit({"op_id": op_id, "undone": True}, lambda con: con.print(f"undid merge {op_id}"))


@click.group("predicate")
def predicate_group() -> None:
    """Declare and list predicates."""


@predicate_group.command("define")
@click.argument("name")
@click.option("--cardinality", type=click.Choice(["one", "many"]), default="many", show_default=True,
              help="one: a new value supersedes the old; many: values coexist.")
@click.option("--inverse", help="Name of the inverse predicate.")
@click.option("--alias", "aliases", multiple=True, help="Another name of the predicate (repeatable).")
@click.option("--description", help="What the predicate means.")
@json_option
def predicate_define_cmd(name: str, cardinality: str, inverse: str | None, aliases: tuple[str, ...],
                         description: str | None) -> None:
    """Declare predicate NAME."""
    p = state().memory().define_predicate(name, cardinality, inverse, list(aliases), description)
    emit(p.to_dict(), lambda con: con.print(kv_table(
        [("name", p.name), ("cardinality", p.cardinality), ("inverse", p.inverse),
         ("aliases", ", ".join(p.aliases)), ("description", p.description)], title="predicate")))


@predicate_group.command("list")
@json_option
def predicate_list_cmd() -> None:
    """List the predicates of the namespace."""
    preds = state().memory(create=False).predicates()
    rows_out(preds, "predicates",
             dict.fromkeys(("name", "cardinality", "inverse", "aliases", "declared", "description"), FOLD),
             lambda p: (p.name, p.cardinality, p.inverse or "", ", ".join(p.aliases), "yes" if p.declared else "",
                        p.description or ""))


@click.command("demo")
@click.option("--in-memory", is_flag=True, help="Use a throwaway in-memory store instead of --db.")
@json_option
@click.pass_context
def demo_cmd(ctx: click.Context, in_memory: bool) -> None:
    """A guided tour of bi-temporal memory on a small story.

    The story is written into --db (a fresh namespace if the current one
    holds data), so you can explore it afterwards with the other commands.
    """
    try:
        demo = importlib.import_module("chronomem.adapters.demo")
    except ModuleNotFoundError as exc:
        if exc.name != "chronomem.adapters.demo":
            raise
        raise ChronomemError("the demo is not available in this installation of chronomem") from None
    st = state()
    if in_memory:
        st.db = ":memory:"
    code = demo.run_demo(st.memory(), Console(), st.json)
    ctx.exit(int(code or 0))


@click.command("doctor")
@click.option("--repair", is_flag=True,
              help="Fix what can be fixed without losing data (index rows, vectors, time mentions).")
@json_option
@click.pass_context
def doctor_cmd(ctx: click.Context, repair: bool) -> None:
    """Check the memory: file integrity, migrations, stored times, JSON
    values, lexical index and vectors; each problem names the command that
    fixes it. Exit status 1 while problems remain.

    --repair rebuilds derived rows only; fixes that would change or drop
    stored data are refused and listed.
    """
    report = state().memory(create=False).doctor(repair=repair)

    def human(con: Console) -> None:
        con.print(kv_table(list(report.checks.items()), title=f"doctor · {report.url} · {report.namespace}"))
        for line in report.repaired:
            con.print(f"repaired: {line}")
        for p in report.problems:
            con.print(f"[bold]{p.check}[/bold] {p.code}: {p.count} × {p.message}", markup=True, highlight=False)
            for example in p.examples:
                con.print(f"  {example}", markup=False, highlight=False)
            con.print(f"  fix: {p.fix}" + ("" if p.repairable else " (not done by --repair: it changes stored data)"),
                      markup=False, highlight=False)
        for line in report.refused:
            con.print(f"refused: {line}", markup=False, highlight=False)
        con.print("ok" if report.ok else f"{plural(len(report.problems), 'problem')} left")

    emit(report.to_dict(), human)
    if not report.ok:
        ctx.exit(1)


def register(main: click.Group) -> None:
    for cmd in (alias_cmd, merge_cmd, unmerge_cmd, predicate_group, doctor_cmd, demo_cmd):
        main.add_command(cmd)
