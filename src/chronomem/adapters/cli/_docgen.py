"""Generate the command reference in ``docs/cli.md`` from the click commands.

``python -m chronomem.adapters.cli._docgen docs/cli.md`` rewrites the part of the file
between the two marker lines; ``tests/test_cli_docs.py`` checks that it is up
to date, so every command and option is documented.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

BEGIN = "<!-- BEGIN GENERATED REFERENCE (python -m chronomem.adapters.cli._docgen docs/cli.md) -->"
END = "<!-- END GENERATED REFERENCE -->"

__all__ = ["BEGIN", "END", "reference", "update"]


def _walk(cmd: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    out = [(path, cmd)]
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.commands):
            out += _walk(cmd.commands[name], path + [name])
    return out


def _usage(ctx: click.Context, cmd: click.Command) -> str:
    pieces = cmd.collect_usage_pieces(ctx)
    return " ".join([ctx.command_path] + pieces)


def _option_line(ctx: click.Context, param: click.Option) -> str:
    names = ", ".join(f"`{n}`" for n in param.opts + param.secondary_opts)
    if not param.is_flag and not param.count:
        metavar = param.make_metavar(ctx)
        names = ", ".join(f"`{n} {metavar}`" for n in param.opts) + "".join(
            f", `{n}`" for n in param.secondary_opts
        )
    text = " ".join((param.help or "").split())
    if param.show_default and param.default is not None and not param.is_flag:
        text += f" Default: `{param.default}`."
    return f"- {names}: {text}".rstrip()


def reference(main: click.Group) -> str:
    """The markdown reference of ``main`` and all its subcommands."""
    lines: list[str] = []
    root = click.Context(main, info_name="chronomem")
    for path, cmd in _walk(main, []):
        ctx = root
        group: click.Command = main
        for name in path:
            assert isinstance(group, click.Group)
            group = group.commands[name]
            ctx = click.Context(group, info_name=name, parent=ctx)
        title = " ".join(["chronomem"] + path)
        lines += [f"### `{title}`", "", "```", _usage(ctx, cmd), "```", ""]
        help_text = (cmd.help or "").strip()
        if help_text:
            paragraphs = [" ".join(p.split()) for p in help_text.split("\n\n")]
            lines += ["\n\n".join(paragraphs), ""]
        options = [p for p in cmd.params if isinstance(p, click.Option) and not p.hidden]
        if options:
            lines += [_option_line(ctx, p) for p in options]
            lines += ["- `-h`, `--help`: Show the help and exit.", ""]
    return "\n".join(lines).rstrip() + "\n"


def update(doc: Path, main: click.Group) -> bool:
    """Rewrite the generated part of ``doc``; returns whether it changed."""
    text = doc.read_text(encoding="utf-8")
    head, sep, rest = text.partition(BEGIN)
    _old, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{doc}: marker lines not found")
    new = f"{head}{BEGIN}\n\n{reference(main)}\n{END}{tail}"
    if new != text:
        doc.write_text(new, encoding="utf-8")
        return True
    return False


if __name__ == "__main__":  # pragma: no cover
    from . import main as _main

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/cli.md")
    print(f"{target}: {'updated' if update(target, _main) else 'up to date'}")
