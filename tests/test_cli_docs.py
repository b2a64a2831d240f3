"""docs/cli.md documents every command and option (its reference part is
generated from the click commands and must be up to date)."""

from __future__ import annotations

from pathlib import Path

import click

from chronomem.adapters.cli import main
from chronomem.adapters.cli._docgen import BEGIN, END, reference

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _commands(cmd: click.Command, path: str) -> list[tuple[str, click.Command]]:
    out = [(path, cmd)]
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            out += _commands(sub, f"{path} {name}")
    return out


def test_reference_is_up_to_date() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    generated = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert generated == reference(main).strip(), (
        "docs/cli.md is out of date: run `python -m chronomem.adapters.cli._docgen docs/cli.md`"
    )


def test_every_command_and_option_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for path, cmd in _commands(main, "chronomem"):
        assert f"### `{path}`" in text, f"{path} is not documented"
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden:
                for opt in param.opts:
                    assert f"`{opt}" in text, f"{path} {opt} is not documented"


def test_quick_tour_commands_run(tmp_path: Path) -> None:
    """The `$ chronomem ...` lines of the first console block run as written
    (pipes and comments dropped) and succeed."""
    import shlex

    from click.testing import CliRunner

    text = DOC.read_text(encoding="utf-8")
    block = text.split("```console\n", 1)[1].split("```", 1)[0]
    commands = [line[2:].split(" | ")[0].split("  #")[0] for line in block.splitlines() if line.startswith("$ ")]
    assert len(commands) >= 5
    runner = CliRunner()
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "chronomem"
        result = runner.invoke(main, ["--db", str(tmp_path / "tour.db"), *argv[1:]])
        assert result.exit_code == 0, (command, result.output)
