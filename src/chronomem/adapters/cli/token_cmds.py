"""``chronomem token create|list|revoke``: the access tokens of ``chronomem
serve`` (store-wide; only their SHA-256 is stored). See docs/web.md#tokens."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from ...tokens import SCOPES
from ._common import emit, fmt_time, json_option, kv_table, state

__all__ = ["register"]


@click.group("token")
def token_group() -> None:
    """Access tokens for `chronomem serve`: each names the namespaces it may
    use and its scope (read < write < admin). Once any active token exists,
    the server asks every request for one."""


@token_group.command("create")
@click.option("--name", required=True, help="A unique name (letters, digits, . _ @ -); writes are recorded as it.")
@click.option("--namespace", "namespace", multiple=True, metavar="NAMESPACE",
              help="A namespace the token may use (repeatable; '*' = every namespace, admin only). "
                   "Default: the global --namespace.")
@click.option("--scope", type=click.Choice(SCOPES), default="read", show_default=True,
              help="read: every read; write: reads and writes; admin: writes and managing tokens over the API.")
@click.option("--expires", default=None, metavar="TIME",
              help="When it stops working: ISO ('2027-01-01') or a phrase ('in 30 days', 'next month').")
@json_option
def create_cmd(name: str, namespace: tuple[str, ...], scope: str, expires: str | None) -> None:
    """Create a token and print it once: it is stored only as a hash and
    cannot be shown again."""
    st = state()
    created = st.memory().tokens.create(name, list(namespace) or [st.namespace], scope, expires=expires)
    info = created.info

    def human(con: Console) -> None:
        con.print(created.token)
        err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)
        err.print(f"token {info.name!r} for {', '.join(info.namespaces)} ({', '.join(info.scopes)})"
                  + (f", expires {fmt_time(info.expires_at)}" if info.expires_at else "")
                  + ": copy it now, it cannot be shown again. Send it as 'Authorization: Bearer <token>'.")

    emit(created.to_dict(), human)


@token_group.command("list")
@json_option
def list_cmd() -> None:
    """Every token (revoked and expired ones too), never the tokens themselves."""
    items = state().memory().tokens.list()

    def human(con: Console) -> None:
        if not items:
            con.print("no tokens: `chronomem serve` on loopback needs none")
            return
        table = Table(show_edge=False, pad_edge=False)
        for col in ("name", "namespaces", "scope", "status", "created", "last used", "expires"):
            table.add_column(col)
        for t in items:
            table.add_row(t.name, ", ".join(t.namespaces), t.scopes[-1], t.status, fmt_time(t.created_at),
                          fmt_time(t.last_used_at, empty="never"), fmt_time(t.expires_at, empty="never"))
        con.print(table)

    emit({"tokens": [t.to_dict() for t in items]}, human)


@token_group.command("revoke")
@click.argument("name")
@json_option
def revoke_cmd(name: str) -> None:
    """Revoke the token NAME: refused from the next request on (the row stays)."""
    info = state().memory().tokens.revoke(name)
    emit(info.to_dict(), lambda con: con.print(kv_table([("revoked", info.name),
                                                         ("at", fmt_time(info.revoked_at))])))


def register(main: click.Group) -> None:
    main.add_command(token_group)
