"""The CLI's top-level error handling: one ``error:`` line for every failure
(exit 1 for data errors and unexpected failures, 2 for usage errors), a
traceback only with ``-v``, and lone surrogates printed as escapes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chronomem.adapters.cli import main
from chronomem.memory import Memory


def run(db: Path, *args: str) -> Result:
    return CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--db", str(db), *args])


def one_error_line(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    assert run(path, "add", "Acme", "ceo", "Bob").exit_code == 0
    return path


def test_an_unexpected_failure_is_one_line_and_the_traceback_needs_v(db: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Memory, *args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(Memory, "facts", boom)
    line = one_error_line(run(db, "facts"), 1)
    assert "internal error (ZeroDivisionError): a bug" in line and "-v" in line
    verbose = run(db, "-v", "facts")
    assert verbose.exit_code == 1
    assert "Traceback" in verbose.stderr and "ZeroDivisionError" in verbose.stderr
    assert verbose.stderr.strip().splitlines()[-1].startswith("error: internal error")


@pytest.mark.parametrize("args", [
    ["facts", "--direction", "sideways"],
    ["facts", "--limit", "-1"],
    ["add", "Acme", "ceo"],
    ["--bogus"],
    ["nonsense"],
    ["predicate", "define", "x", "--cardinality", "two"],
])
def test_a_usage_error_is_one_line_naming_the_help(db: Path, args: list[str]) -> None:
    line = one_error_line(run(db, *args), 2)
    assert line.endswith("--help')")


def test_no_arguments_still_prints_the_help() -> None:
    result = CliRunner().invoke(main, [])
    assert "Usage:" in result.output and "Commands:" in result.output
    group = CliRunner().invoke(main, ["predicate"])
    assert "Usage:" in group.output and "define" in group.output


def test_a_data_error_is_one_line_exit_1(db: Path) -> None:
    one_error_line(run(db, "add", "Acme", "ceo", "Carol", "--from", "2025-13-45"), 1)
    one_error_line(run(db, "add", "Acme", "ceo", "Carol", "--properties", '{"a":' * 5000 + "1" + "}" * 5000), 1)


def test_undecodable_arguments_are_printed_escaped(db: Path) -> None:
    """A real process: argv bytes that are not UTF-8 become lone surrogates,
    which the strict UTF-8 stderr could not print (UnicodeEncodeError)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "COLUMNS": "200"}
    for argv, code in (([b"facts", b"extra\xff"], 2), ([b"entity", b"Ac\xffme"], 1)):
        proc = subprocess.run([os.fsencode(sys.executable), b"-m", b"chronomem.adapters.cli", b"--db", os.fsencode(db),
                               b"--embedder", b"none", *argv], capture_output=True, env=env, timeout=60)
        err = proc.stderr.decode("utf-8")
        assert proc.returncode == code, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
        assert "\\udcff" in lines[0] or "\\xff" in lines[0], lines[0]
