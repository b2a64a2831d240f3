"""``chronomem mcp`` (MCP server over stdio), ``chronomem install`` and
``chronomem uninstall`` (register the server with coding agents).

The MCP SDK is imported inside ``mcp`` only, so the other commands work
without the ``mcp`` extra.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ._common import console, emit, json_option, state

__all__ = ["register"]

log = logging.getLogger("chronomem.cli")

_CLIENT_KEYS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini", "windsurf", "zed",
                "cline", "opencode", "goose")


@click.command("mcp")
def mcp_cmd() -> None:
    """Run the MCP server over stdio (what agents launch).

    Uses the global --db and --namespace. stdout carries only JSON-RPC
    messages; logs go to stderr (-v for more). Stops when stdin closes.
    """
    from ..mcp import run_stdio

    st = state()
    mem = st.memory()
    log.info("MCP server on stdio: %s (namespace %s)", st.db_path, st.namespace)
    try:
        run_stdio(mem)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass


def _outcome_human(out: Any) -> None:
    con = console()
    verb = "would change" if out.dry_run else ("wrote" if out.action == "install" else "updated")
    for c in out.changes:
        if not c.changed:
            state_text = "already configured" if out.action == "install" else "nothing to remove"
            con.print(Text(f"unchanged {c.path} ({state_text})", style="dim"))
            continue
        if out.dry_run:
            con.print(c.diff(), end="", markup=False, highlight=False)
        elif c.old is None:
            con.print(f"created {c.path}")
        else:
            con.print(f"{verb} {c.path} (previous version in {c.path.name}.bak)")
    for note in out.notes:
        con.print(Text(f"note: {note}", style="yellow"))
    if out.dry_run:
        con.print(Text("dry run: nothing was written", style="dim"))
    elif out.changed:
        action = "loads" if out.action == "install" else "drops"
        con.print(f"restart {out.label} so it {action} the chronomem MCP server")


def _list_human(rows: list[dict[str, Any]]) -> None:
    table = Table(title="MCP clients")
    table.add_column("client")
    table.add_column("detected", justify="center")
    table.add_column("user config", overflow="fold")
    table.add_column("project config", overflow="fold")

    def cell(info: dict[str, Any] | None) -> str:
        if info is None:
            return "-"
        mark = "✓ " if info["installed"] else ""
        return f"{mark}{info['path']}"

    for r in rows:
        table.add_row(r["client"], "yes" if r["detected"] else "", cell(r["scopes"].get("user")),
                      cell(r["scopes"].get("project")))
    con = console()
    con.print(table)
    con.print(Text("✓ = chronomem configured there", style="dim"))


_scope_option = click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
                             help="user: the client's global config; project: the config in --project.")
_project_option = click.option("--project", type=click.Path(file_okay=False, path_type=Path), default=None,
                               help="Project directory for --scope project (default: current directory).")
_dry_option = click.option("--dry-run", is_flag=True, help="Print the change as a diff; write nothing.")


@click.command("install")
@click.argument("client", required=False, type=click.Choice(_CLIENT_KEYS, case_sensitive=False), metavar="CLIENT")
@_scope_option
@_project_option
@_dry_option
@click.option("--hooks", is_flag=True, help="Also add hooks that run `chronomem hook claude-code` on "
                                            "UserPromptSubmit, Stop, PreCompact and SessionEnd (Claude Code).")
@click.option("--list", "list_", is_flag=True, help="Show which clients are detected and configured.")
@click.option("--command", "command", default=None, metavar="CMD",
              help="Executable the client runs (default: this chronomem, as an absolute path; with "
                   "--scope project a bare `chronomem`).")
@json_option
def install_cmd(client: str | None, scope: str, project: Path | None, dry_run: bool, hooks: bool, list_: bool,
                command: str | None) -> None:
    """Add the chronomem MCP server to CLIENT's config.

    CLIENT is one of: claude-code, claude-desktop, cursor, vscode, codex,
    gemini, windsurf, zed, cline, opencode, goose. The server runs
    `chronomem --db <this --db> mcp` with absolute paths; --scope project
    writes a shareable file instead (bare `chronomem`, the database relative
    to the project). Other servers in the file are kept, the previous file is
    saved as <file>.bak, and re-running is a no-op. See docs/install.md.
    """
    from ..install import detect, install

    if list_:
        rows = detect(project=project)
        emit(rows, lambda _con: _list_human(rows))
        return
    if client is None:
        raise click.UsageError("give a CLIENT (or --list to see them)")
    st = state()
    out = install(client, st.db_path, namespace=st.namespace, scope=scope,  # type: ignore[arg-type]
                  hooks=hooks, dry_run=dry_run, project=project, command=command)
    emit(out.to_dict(), lambda _con: _outcome_human(out))


@click.command("uninstall")
@click.argument("client", type=click.Choice(_CLIENT_KEYS, case_sensitive=False), metavar="CLIENT")
@_scope_option
@_project_option
@_dry_option
@json_option
def uninstall_cmd(client: str, scope: str, project: Path | None, dry_run: bool) -> None:
    """Remove the chronomem MCP server (and its hooks) from CLIENT's config."""
    from ..install import uninstall

    out = uninstall(client, scope=scope, dry_run=dry_run, project=project)  # type: ignore[arg-type]
    emit(out.to_dict(), lambda _con: _outcome_human(out))


def register(main: click.Group) -> None:
    main.add_command(mcp_cmd)
    main.add_command(install_cmd)
    main.add_command(uninstall_cmd)
