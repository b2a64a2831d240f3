"""Every command of the CLI, found by walking the click group: its
``--help`` works, it takes the global options after its name, and where it
prints a result ``--json`` gives one JSON document (run on a real store).
A handful run in real subprocesses, as a user's shell runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import click
import pytest
from click.testing import CliRunner, Result

import chronomem
from chronomem.adapters.cli import GLOBAL_OPTIONS, main
from chronomem.core.ids import short_id

CHRONOMEM = Path(sys.executable).with_name("chronomem")

#: commands without ``--json``, and why
NO_JSON = {
    "mcp": "its stdout is the MCP protocol itself",
    "hook": "its stdout is the agent's hook contract (tests/test_hooks.py)",
}
#: commands with ``--json`` this walk does not run, and why
NOT_RUN = {
    "serve": "serves until Ctrl-C (tests/test_web_api.py runs it)",
    "eval locomo": "needs the LoCoMo data set (tests/test_eval.py)",
    "eval longmemeval": "needs a LongMemEval file (tests/test_eval.py)",
    "eval train-ranker": "needs a LoCoMo-format file (tests/test_ranker.py runs it on its fixture)",
    "ingest": "rewritten separately; tests/test_import_*.py run it",
    "watch": "follows files until Ctrl-C (tests/test_hooks.py runs --once)",
}


def commands(cmd: click.Command = main, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``cmd``, groups included, with its path of names."""
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.commands):
            yield from commands(cmd.commands[name], (*path, name))


def leaves() -> dict[str, click.Command]:
    return {" ".join(p): c for p, c in commands() if p and not isinstance(c, click.Group)}


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    runner = CliRunner(env={"COLUMNS": "120", **(env or {})})
    return runner.invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("path", [" ".join(p) for p, _ in commands()] or ["(none)"])
def test_every_command_has_help(path: str) -> None:
    words = path.split()
    result = invoke(*words, "--help")
    assert result.exit_code == 0, result.output
    usage = result.stdout.splitlines()[0]
    assert usage.startswith("Usage: ") and usage.split()[2:2 + len(words)] == words, usage
    cmd = main
    for w in words:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[w]
    if words:  # the global options follow every command
        flags = {o for p in cmd.params for o in p.opts}
        assert {"--db", "--namespace", "--timezone", "--embedder", "--verbose"} <= flags, path
        assert {p.name for p in cmd.params} >= set(GLOBAL_OPTIONS)


def test_json_everywhere_but_the_protocol_server() -> None:
    without = {name for name, cmd in leaves().items() if not any("--json" in p.opts for p in cmd.params)}
    assert without == set(NO_JSON) & set(leaves())  # an exempt command may not be registered yet


def _json(result: Result, what: str) -> object:
    assert result.exit_code == 0, f"{what}: {result.output}"
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"{what} --json printed no JSON document:\n{result.stdout}") from None


def test_every_json_command_prints_one_json_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    db = tmp_path / "m.db"
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "xdg"), "XDG_CONFIG_HOME": str(home / "cfg")}
    ran: set[str] = set()

    def run(*args: str) -> object:
        name = " ".join(args[:2]) if " ".join(args[:2]) in leaves() else args[0]
        ran.add(name)
        # globals after the command, with --embedder none: no model is loaded
        return _json(invoke(*args, "--json", "--db", str(db), "--embedder", "none", env=env), name)

    run("predicate", "define", "lives in", "--cardinality", "one")
    run("add", "Kai", "lives in", "Lisbon", "--from", "2020")
    lisbon = run("add", "Kai", "lives in", "Berlin", "--from", "2022")
    job = run("add", "Kai", "works at", "Acme", "--from", "2019")
    run("add", "Bo", "works at", "Acme Inc", "--from", "2021")
    assert isinstance(lisbon, dict) and isinstance(job, dict)
    for args in (["predicate", "list"], ["facts", "-s", "Kai"], ["current", "Kai"], ["history", "Kai"],
                 ["timeline", "Kai"], ["diff", "2019", "2023"], ["conflicts"], ["volatility"],
                 ["neighbors", "Kai"], ["path", "Kai", "Acme"], ["entity", "Kai"], ["stats"],
                 ["alias", "Kai", "K."], ["doctor"], ["migrate"], ["demo", "--in-memory"],
                 ["remember", "Kai said the move to Berlin went well", "--at", "2022-02-01"],
                 ["search", "Berlin"], ["recall", "where does Kai live?"], ["reindex", "--no-progress"],
                 ["install", "--list"], ["uninstall", "claude-code", "--dry-run"]):
        run(*args)
    merged = run("merge", "Acme", "Acme Inc")
    assert isinstance(merged, dict)
    run("unmerge", merged["op_id"])
    run("invalidate", "Kai", "works at", "Acme", "--ended", "2024")
    run("correct", short_id(job["id"]), "--confidence", "0.5")
    run("retract", short_id(lisbon["id"]))
    run("export", str(tmp_path / "backup.jsonl"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"subject": "Ana", "predicate": "likes", "object": "tea"}) + "\n")
    run("import", str(rows))
    run("copy", str(db), str(tmp_path / "copy.db"))
    run("erase", short_id(job["id"]), "--yes")
    created = run("token", "create", "--name", "every-command", "--scope", "write")
    assert isinstance(created, dict) and created["token"].startswith("cm_")
    run("token", "list")
    run("token", "revoke", "every-command")
    scenarios = tmp_path / "scenarios.jsonl"
    scenarios.write_text(json.dumps({"id": "s", "ops": [{"op": "assert", "at": "2025-01-01", "ref": "a",
                                                        "subject": "Kai", "predicate": "likes", "object": "tea"}],
                                     "questions": [{"ask": "values", "rule": "open-end", "subject": "Kai",
                                                    "predicate": "likes", "as_of": "9999", "expect": ["tea"]}]}))
    run("bench", "temporal", "--scenarios", str(scenarios), "--systems", "chronomem", "--no-invariants")
    expected = set(leaves()) - set(NO_JSON) - set(NOT_RUN)
    assert ran == expected, f"not run: {sorted(expected - ran)}; unknown: {sorted(ran - expected)}"
    with chronomem.open(tmp_path / "copy.db") as copied:
        assert copied.stats().facts > 0


# -- a handful in real subprocesses -------------------------------------------
@pytest.mark.skipif(not CHRONOMEM.is_file(), reason="needs the installed chronomem script")
@pytest.mark.parametrize("args", [["--help"], ["facts", "--help"], ["predicate", "list", "--help"],
                                  ["--version"]])
def test_help_in_a_real_process(args: list[str]) -> None:
    done = subprocess.run([str(CHRONOMEM), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() and not done.stderr, done.stderr


@pytest.mark.skipif(not CHRONOMEM.is_file(), reason="needs the installed chronomem script")
def test_json_in_a_real_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    db = str(tmp_path / "m.db")
    added = subprocess.run([str(CHRONOMEM), "add", "Kai", "likes", "tea", "--db", db, "--json"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stderr
    fact = json.loads(added.stdout)
    for args in (["facts", "--json"], ["stats", "--json"], ["predicate", "list", "--json"]):
        done = subprocess.run([str(CHRONOMEM), *args, "--db", db], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        json.loads(done.stdout)
    module = subprocess.run([sys.executable, "-m", "chronomem", "retract", short_id(fact["id"]), "--db", db,
                             "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert module.returncode == 0 and json.loads(module.stdout)["id"] == fact["id"], module.stderr
