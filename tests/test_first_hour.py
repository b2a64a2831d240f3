"""A first hour without friction (issue 17, point 7), tried as a new user
would: the demo's closing commands run as printed, short fact ids work
everywhere an id does, the global options follow any command, an unknown
entity gets "did you mean", and an import says what was new."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import chronomem
from chronomem import EntityNotFoundError, Memory
from chronomem.adapters.cli import main
from chronomem.adapters.cli._common import short_ids
from chronomem.adapters.demo import invocation
from chronomem.core.ids import short_id

CHRONOMEM = Path(sys.executable).with_name("chronomem")


def cli(*args: str, columns: int = 200, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env={"COLUMNS": str(columns), **(env or {})}).invoke(main, list(args), catch_exceptions=False)


def ok(*args: str, columns: int = 200) -> Result:
    result = cli(*args, columns=columns)
    assert result.exit_code == 0, result.output
    return result


def error_line(result: Result) -> str:
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output, result.output
    return lines[0]


def people(db: Path) -> Memory:
    mem = chronomem.open(db)
    mem.add_fact("Priya Shah", "works at", "Acme Corp", "2019-01")
    mem.add_fact("Dana Lee", "works at", "Acme Corp", "2019-01", "2024-06")
    mem.add_fact("Dana Lee", "lives in", "Berlin", "2021-05-15")
    return mem


# -- 1. the demo's explore commands ------------------------------------------
def _explore_lines(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Explore the story yourself"))
    return [line.strip() for line in lines[start + 1:] if line.strip()]


@pytest.mark.skipif(not CHRONOMEM.is_file(), reason="needs the installed chronomem script")
@pytest.mark.parametrize("on_path", [False, True])
def test_demo_explore_commands_run_as_printed(tmp_path: Path, on_path: bool) -> None:
    """Run the demo as `.venv/bin/chronomem` (off PATH) and as `chronomem` (on
    PATH), then paste every printed command into a shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    bin_dir = str(CHRONOMEM.parent)
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.realpath(p) != os.path.realpath(bin_dir)]
    env["PATH"] = os.pathsep.join(([bin_dir] if on_path else []) + rest)
    env["COLUMNS"] = "400"  # one command per line, as a terminal this wide shows it
    exe = "chronomem" if on_path else str(CHRONOMEM)
    demo = subprocess.run([exe, "--db", "demo.db", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert demo.returncode == 0, demo.stderr
    lines = _explore_lines(demo.stdout)
    commands = [line for line in lines if not line.startswith("#")]
    assert len(commands) == 4
    if on_path:
        assert all(c.startswith("chronomem --db ") for c in commands) and len(lines) == 4
    else:
        assert all(c.startswith(f"{CHRONOMEM} --db ") for c in commands)
        assert "not on your PATH" in lines[0] and "activate" in lines[0]
    elsewhere = tmp_path / "elsewhere"  # the database is named by its absolute path
    elsewhere.mkdir()
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=elsewhere, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{command!r}: {done.stderr}"
        assert done.stdout.strip() and "no facts" not in done.stdout
    assert not (elsewhere / "demo.db").exists()


def test_invocation_names_what_this_shell_can_run(tmp_path: Path) -> None:
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    script = venv_bin / "chronomem"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (venv_bin / "activate").write_text("")
    assert invocation(str(script), path=str(venv_bin)) == ("chronomem", None)
    command, note = invocation(str(script), path=str(tmp_path))
    assert command == str(script) and note is not None and f"source {venv_bin / 'activate'}" in note
    # `python -m chronomem` (argv[0] is the module's file): the same again
    command, note = invocation(str(tmp_path / "__main__.py"), path="")
    assert command == f"{shlex.quote(sys.executable)} -m chronomem" and note is None


# -- 2. short fact ids ---------------------------------------------------------
def test_tables_show_short_ids_that_every_command_takes(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    mem = people(db)
    ids = {f.object: f.id for f in mem.facts(direction="out")}
    mem.close()
    table = ok("--db", str(db), "facts", "-s", "Dana Lee", columns=80).stdout
    assert max(len(line) for line in table.splitlines()) <= 80
    assert "Dana Lee -lives in-> Berlin" in table  # the statement fits on its line
    for obj in ("Berlin", "Acme Corp"):
        assert short_id(ids[obj]) in table and ids[obj] not in table
    history = ok("--db", str(db), "history", "Dana Lee", columns=80).stdout
    assert short_id(ids["Berlin"]) in history
    # the short id, or any unique start of 8+, wherever a fact id goes
    shown = short_id(ids["Berlin"])
    fixed = json.loads(ok("--db", str(db), "correct", shown, "--from", "2021-06", "--json").stdout)
    assert fixed["id"] == ids["Berlin"]
    assert json.loads(ok("--db", str(db), "retract", shown, "--json").stdout)["version"] == 2
    erased = json.loads(ok("--db", str(db), "erase", ids["Acme Corp"][-12:], "--yes", "--json").stdout)
    assert erased["erased_versions"] >= 1


def test_ambiguous_and_short_ids_on_the_command_line(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with chronomem.open(db) as mem:
        ids = sorted(mem.add_facts([("Kai", "likes", f"tea{i}") for i in range(3)]))
    line = error_line(cli("--db", str(db), "retract", ids[0][:8]))
    assert "AmbiguousIdError" not in line and "ambiguous" in line and all(i in line for i in ids)
    line = error_line(cli("--db", str(db), "retract", ids[0][-6:]))
    assert "at least 8 characters" in line


def test_a_table_widens_short_ids_that_would_clash(tmp_path: Path) -> None:
    with chronomem.open(tmp_path / "m.db") as mem:
        f = mem.add_fact("Kai", "likes", "tea")
    a = dataclasses.replace(f, id="01a232d7-7637-713b-8f93-000012345678")
    b = dataclasses.replace(f, id="01a232d7-7637-713b-8f93-000112345678")
    c = dataclasses.replace(f, id="01a232d7-7637-713b-8f93-999999999999")
    assert short_ids([a, c]) == {a.id: "12345678", c.id: "99999999"}
    assert short_ids([a, b]) == {a.id: "000012345678", b.id: "000112345678"}
    imported = dataclasses.replace(f, id="fact-1")
    assert short_ids([imported]) == {"fact-1": "fact-1"}  # not a chronomem id: shown whole


def test_http_and_mcp_take_short_ids(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    pytest.importorskip("mcp")
    import anyio
    import httpx
    from mcp import Client

    from chronomem.adapters.mcp import build_server
    from chronomem.adapters.web import create_app

    mem = people(tmp_path / "m.db")
    ids = {f.object: f.id for f in mem.facts()}

    async def http() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=create_app(mem))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            done = await client.post(f"/api/facts/{short_id(ids['Berlin'])}/retract", json={})
            vague = await client.post(f"/api/facts/{ids['Berlin'][:8]}/retract", json={})
            return done, vague

    done, vague = anyio.run(http)
    assert done.status_code == 200 and done.json()["fact"]["id"] == ids["Berlin"]
    assert vague.status_code == 400 and vague.json()["error"]["type"] == "AmbiguousIdError"

    async def tool() -> Any:
        async with Client(build_server(mem), mode="legacy") as client:
            return await client.call_tool("fact_correct", {"fact_id": short_id(ids["Acme Corp"]), "confidence": 0.5})

    result = anyio.run(tool)
    assert not result.is_error, result.content
    assert mem.fact(ids["Acme Corp"]).confidence == 0.5
    mem.close()


# -- 3. global options after the command ---------------------------------------
def test_global_options_follow_any_command(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ok("add", "Kai", "lives in", "Lisbon", "--from", "2020-01-01T10:00", "--db", str(db), "--namespace", "n1")
    before = json.loads(ok("--db", str(db), "--namespace", "n1", "stats", "--json").stdout)
    after = json.loads(ok("stats", "--json", "--db", str(db), "--namespace", "n1").stdout)
    assert before == after and after["facts"] == 1 and after["namespace"] == "n1"
    # after the command wins over before it, as `serve` always did
    assert json.loads(ok("--namespace", "other", "stats", "--db", str(db), "--namespace", "n1", "--json")
                      .stdout)["facts"] == 1
    shown = ok("facts", "--db", str(db), "--namespace", "n1", "--timezone", "Asia/Tokyo", "--json").stdout
    assert json.loads(shown)[0]["valid_from"] == "2020-01-01T19:00+09:00"
    assert "DEBUG" not in cli("add", "Kai", "likes", "tea", "--db", str(db), "-v").stderr
    assert "DEBUG chronomem: add_fact Kai likes tea" in cli("-v", "add", "Kai", "likes", "tea", "--db", str(db),
                                                             "-v").stderr  # -v before and after: -vv
    listed = json.loads(ok("predicate", "list", "--db", str(db), "--namespace", "n1", "--json").stdout)
    assert [p["name"] for p in listed] == ["lives in"]
    for command in (["mcp"], ["serve"], ["eval", "locomo"], ["predicate", "define"]):
        assert "--db PATH" in ok(*command, "--help").stdout, command


@pytest.mark.skipif(not CHRONOMEM.is_file(), reason="needs the installed chronomem script")
def test_mcp_takes_db_after_the_command(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")  # where the default database would go
    db = tmp_path / "agent.db"
    client = {"name": "t", "version": "1"}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}}
    done = subprocess.run([str(CHRONOMEM), "mcp", "--db", str(db), "--namespace", "agents"],
                          input=json.dumps(hello) + "\n", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["id"] == 1
    assert db.exists() and not (tmp_path / "xdg").exists()
    with chronomem.open(db) as mem:
        assert "agents" in mem.store.namespaces()


# -- 4. "did you mean" ---------------------------------------------------------
def test_unknown_entities_get_did_you_mean_in_every_command(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    people(db).close()
    # the commands that need the entity fail, naming the close names
    for args in (["entity", "Prya Shah"], ["merge", "Dana Lee", "Prya Shah"],
                 ["erase", "--entity", "Prya Shah", "--yes"], ["timeline", "Prya Shah"], ["neighbors", "Prya Shah"],
                 ["path", "Prya Shah", "Acme Corp"]):
        line = error_line(cli("--db", str(db), *args))
        assert "no entity named 'Prya Shah'" in line and "did you mean 'Priya Shah'?" in line, (args, line)
    # a filter that matches nothing is still an answer, with the same note on stderr
    for args in (["facts", "-s", "Prya Shah"], ["facts", "-s", "Prya Shah", "--direction", "in"],
                 ["current", "Prya Shah"], ["history", "prya shah", "works at"]):
        human = cli("--db", str(db), *args)
        assert human.exit_code == 0 and "no " in human.stdout, (args, human.output)
        assert "did you mean 'Priya Shah'?" in human.stderr and human.stderr.startswith("note: no entity named")
        machine = cli("--db", str(db), *args, "--json")
        assert machine.exit_code == 0 and json.loads(machine.stdout) == [] and "did you mean" in machine.stderr
    # a wrong first letter is found too; nothing close: no suggestion; a known entity: no note
    assert "did you mean 'Dana Lee'?" in cli("--db", str(db), "current", "Lana Lee").stderr
    assert "did you mean" not in cli("--db", str(db), "current", "Zebulon").stderr
    known = cli("--db", str(db), "current", "Berlin")
    assert "no current facts" in known.stdout and known.stderr == ""


def test_did_you_mean_in_the_python_api(tmp_path: Path) -> None:
    mem = people(tmp_path / "m.db")
    with pytest.raises(EntityNotFoundError, match=r"did you mean 'Dana Lee'\?"):
        mem.entity("Dana Le")
    with pytest.raises(EntityNotFoundError, match=r"did you mean 'Priya Shah'\?"):
        mem.merge("Priya Sah", "Dana Lee")
    assert mem.facts("Prya Shah") == []  # a filter that matches nothing, as documented
    mem.close()


# -- 5. what an import added ---------------------------------------------------
def test_import_reports_added_present_and_skipped(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    table = tmp_path / "facts.csv"
    with table.open("w", newline="") as fp:
        out = csv.writer(fp)
        out.writerow(["subject", "predicate", "object", "valid_from"])
        out.writerows([["Kai", "likes", "tea", "2020"], ["Kai", "likes", "coffee", "2021"],
                       ["Kai", "likes", "tea", "2020"], ["Kai", "", "juice", "2020"]])
    first = cli("--db", str(db), "import", str(table))
    assert first.exit_code == 0, first.output
    assert "read 4 rows: 2 added as new facts, 1 already present, 1 skipped (invalid)" in first.stdout
    again = json.loads(ok("--db", str(db), "import", str(table), "--json").stdout)
    assert (again["rows"], again["added"], again["present"], again["skipped"]) == (4, 0, 3, 1)
    lines = tmp_path / "facts.jsonl"
    lines.write_text(json.dumps({"subject": "Kai", "predicate": "likes", "object": "tea", "valid_from": "2020"}) + "\n"
                     + json.dumps({"subject": "Kai", "predicate": "likes", "object": "milk"}) + "\n")
    mixed = json.loads(ok("--db", str(db), "import", str(lines), "--json").stdout)
    assert (mixed["added"], mixed["present"], mixed["facts"]) == (1, 1, 2)
    with chronomem.open(db) as mem:
        assert sorted(str(f.object) for f in mem.facts("Kai")) == ["coffee", "milk", "tea"]
