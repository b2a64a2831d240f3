"""Store commands: ``copy`` (a whole memory between backends) and ``migrate``.

Both work on any backend: a file path, ``sqlite:///path`` or
``postgresql://user@host/db[?schema=name]`` (with the ``postgres`` extra).
"""

from __future__ import annotations

import logging

import click
from rich.console import Console

from ._common import emit, json_option, kv_table, state

__all__ = ["register"]

log = logging.getLogger("chronomem.cli")


@click.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--only", "only", multiple=True, metavar="NAMESPACE",
              help="Copy only this namespace (repeatable; default: every namespace).")
@json_option
def copy_cmd(src: str, dst: str, only: tuple[str, ...]) -> None:
    """Copy the whole memory at SRC into DST (created if missing), e.g.
    `chronomem copy memory.db postgresql://me@db-host/team`.

    Both time axes, fact ids and versions, provenance, entities with their
    aliases, predicates, merges (so `unmerge` works in DST) and episodes
    (times, mentions, supersessions, erasure tombstones, vectors) are copied
    as stored, as `export` writes them; every copied namespace must be empty
    in DST. The erasure log is not copied.
    """
    from ...copy import copy_store
    from ...store import open_store

    source = open_store(src)
    try:
        target = open_store(dst)
        try:
            def progress(namespace: str, versions: int) -> None:
                log.info("copying %s: %d versions", namespace, versions)

            result = copy_store(source, target, list(only) or None, progress=progress, timezone=state().timezone)
        finally:
            target.close()
    finally:
        source.close()
    data = {"source": source.url, "destination": target.url, **result.to_dict()}

    def human(con: Console) -> None:
        con.print(kv_table([
            ("from", source.url), ("to", target.url), ("namespaces", ", ".join(result.namespaces) or "none"),
            ("entities", str(result.entities)), ("predicates", str(result.predicates)),
            ("facts", str(result.facts)), ("versions", str(result.versions)), ("sources", str(result.sources)),
            ("episodes", str(result.episodes)), ("erased episodes", str(result.tombstones)),
            ("vectors", str(result.vectors)),
            ("merges", str(result.operations)),
        ]))

    emit(data, human)


@click.command("migrate")
@json_option
def migrate_cmd() -> None:
    """Create the database behind --db or bring its schema up to date (opening
    a memory does the same; this command lets a deploy step do it once)."""
    from ...store import open_store

    st = state()
    store = open_store(st.db_path)
    try:
        version = store.schema_version()
        url = store.url
    finally:
        store.close()
    emit({"database": url, "schema_version": version},
         lambda con: con.print(f"{url}: schema version {version}"))


def register(main: click.Group) -> None:
    main.add_command(copy_cmd)
    main.add_command(migrate_cmd)
