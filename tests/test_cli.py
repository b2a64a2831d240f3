"""The chronomem CLI through click's CliRunner, on real SQLite files."""

from __future__ import annotations

import datetime as _dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

import chronomem
from chronomem.adapters.cli import main

BAD_TIME = "2025-13-45"


def run(db: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    runner = CliRunner(env={"COLUMNS": "200", **(env or {})})
    return runner.invoke(main, ["--db", str(db), *args], catch_exceptions=False)


def ok(db: Path, *args: str) -> Result:
    result = run(db, *args)
    assert result.exit_code == 0, result.output
    return result


def js(db: Path, *args: str) -> Any:
    return json.loads(ok(db, *args, "--json").stdout)


def assert_error(result: Result, *fragments: str) -> None:
    """Exit 1 with exactly one ``error:`` line on stderr and nothing on stdout."""
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def state_of(db: Path) -> list[tuple[Any, ...]]:
    """Every stored version (both axes), to check that nothing was written."""
    mem = chronomem.open(db)
    try:
        return sorted((f.id, f.version, f.system_to is None, f.valid_to_text, f.ended_reason)
                      for e in mem.entities() for f in mem.history(e.name, direction="both"))
    finally:
        mem.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A memory with a small CEO story, written through the CLI."""
    path = tmp_path / "m.db"
    ok(path, "predicate", "define", "ceo", "--cardinality", "one", "--alias", "chief executive",
       "--description", "who runs it")
    ok(path, "add", "Acme", "ceo", "Alice", "--from", "2015-03", "--source", "report")
    ok(path, "add", "Acme", "chief executive", "Bob", "--from", "2022-01")
    ok(path, "add", "Dana", "works at", "Acme", "--from", "2019", "--to", "2021")
    ok(path, "add", "Dana", "lives in", "Lisbon", "--from", "2018")
    return path


def fact_id(db: Path, subject: str, obj: str) -> str:
    facts = js(db, "facts", "--subject", subject)
    return next(f["id"] for f in facts if f["object"] == obj)


def test_every_command_has_json_and_help() -> None:
    def leaves(cmd: click.Command, path: str) -> list[tuple[str, click.Command]]:
        if isinstance(cmd, click.Group):
            return [leaf for name, sub in cmd.commands.items() for leaf in leaves(sub, f"{path} {name}")]
        return [(path, cmd)]

    found = leaves(main, "chronomem")
    names = {p for p, _ in found}
    for expected in ("add", "invalidate", "correct", "retract", "erase", "facts", "current", "history", "timeline",
                     "diff", "conflicts", "volatility", "neighbors", "path", "alias", "merge", "unmerge",
                     "predicate define", "predicate list", "entity", "search", "stats", "import", "export", "demo"):
        assert f"chronomem {expected}" in names
    for path, cmd in found:
        # the stdio MCP server speaks JSON-RPC on stdout already; a hook's stdout
        # is the JSON its client reads (docs/hooks.md)
        if path in ("chronomem mcp", "chronomem hook"):
            continue
        assert any("--json" in p.opts for p in cmd.params), f"{path} has no --json"
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0 and "facts" in result.stdout


def test_add_and_facts_json(tmp_path: Path) -> None:
    db = tmp_path / "new" / "m.db"
    added = js(db, "add", "Acme", "hq", "Paris", "--from", "2020-06", "--to", "2024", "--source", "s",
               "--episode", "e1", "--confidence", "0.8", "--properties", '{"page": 3}')
    assert (added["subject"], added["object"], added["valid_from"], added["valid_to"]) == ("Acme", "Paris", "2020-06",
                                                                                           "2024")
    assert (added["confidence"], added["source"], added["episode_id"], added["properties"]) == (0.8, "s", "e1",
                                                                                               {"page": 3})
    (fact,) = js(db, "facts", "--as-of", "2021")
    assert fact["id"] == added["id"]
    assert js(db, "facts", "--as-of", "2025") == []
    human = ok(db, "facts").stdout
    # tables show the short id (the id's last 8 characters), which every command takes
    assert "Acme" in human and "[2020-06, 2024)" in human and added["id"][-8:] in human and added["id"] not in human


def test_typed_literals(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert js(db, "add", "Bob", "age", "41", "--type", "int")["object"] == 41
    assert js(db, "add", "Bob", "remote", "yes", "--type", "bool")["object"] is True
    assert js(db, "add", "Bob", "nick", "Bobby", "--literal")["literal"] is True
    # a date keeps its written form, in JSON and in the table
    assert js(db, "add", "Bob", "born", "1984-02", "--type", "date")["object"] == "1984-02"
    assert js(db, "add", "Bob", "wed", "2010-06-12", "--type", "date")["object"] == "2010-06-12"
    assert "2010-06-12" in ok(db, "--timezone", "Asia/Tokyo", "facts", "--subject", "Bob").stdout
    assert_error(run(db, "add", "Bob", "age", "forty", "--type", "int"), "not a valid int")


@pytest.mark.parametrize("args", [
    ["add", "Acme", "ceo", "Carol", "--from", BAD_TIME],
    ["add", "Acme", "ceo", "Carol", "--to", BAD_TIME],
    ["invalidate", "Dana", "lives in", "Lisbon", "--ended", BAD_TIME],
    ["facts", "--as-of", BAD_TIME],
    ["facts", "--known-at", BAD_TIME],
    ["facts", "--as-of", BAD_TIME, "--sql"],
    ["timeline", "Acme", "--start", BAD_TIME],
    ["diff", BAD_TIME, "2024"],
    ["conflicts", "--as-of", BAD_TIME],
    ["volatility", "--start", BAD_TIME],
    ["neighbors", "Acme", "--as-of", BAD_TIME],
    ["path", "Dana", "Bob", "--as-of", BAD_TIME],
    ["search", "Acme", "--as-of", BAD_TIME],
])
def test_bad_time_is_one_error_line_and_writes_nothing(db: Path, args: list[str]) -> None:
    before = state_of(db)
    result = run(db, *args)
    assert_error(result, BAD_TIME)
    assert state_of(db) == before


def test_correct_with_bad_time_writes_nothing(db: Path) -> None:
    fid = fact_id(db, "Dana", "Lisbon")
    before = state_of(db)
    assert_error(run(db, "correct", fid, "--from", BAD_TIME), BAD_TIME)
    assert_error(run(db, "correct", fid, "--from", "2020", "--to", "2019"), "must be after")
    assert_error(run(db, "correct", fid), "nothing to correct")
    assert_error(run(db, "correct", fid, "--from", "2020", "--unknown-start"), "either")
    assert state_of(db) == before


@pytest.mark.parametrize("args, fragment", [
    (["retract", "no-such-id"], "no-such-id"),
    (["correct", "no-such-id", "--object", "X"], "no-such-id"),
    (["invalidate", "Dana", "lives in", "Paris"], "Paris"),
    (["entity", "Nobody"], "Nobody"),
    (["timeline", "Nobody"], "Nobody"),
    (["neighbors", "Nobody"], "Nobody"),
    (["path", "Nobody", "Acme"], "Nobody"),
    (["merge", "Acme", "Nobody"], "Nobody"),
    (["unmerge", "no-such-op"], "no-such-op"),
    (["erase", "no-such-id", "--yes"], "no-such-id"),
    (["erase", "--entity", "Nobody", "--yes"], "Nobody"),
    (["add", "Acme", "ceo", "Carol", "--confidence", "2"], "confidence"),
    (["add", "Acme", "ceo", "Carol", "--from", "2020", "--to", "2019"], "must be after"),
    (["add", "Acme", "ceo", "Carol", "--properties", "[1, 2]"], "JSON object"),
    (["add", "Acme", "ceo", "Carol", "--properties", "{oops"], "not valid JSON"),
    (["add", "  ", "ceo", "Carol"], "empty"),
    (["add", "Acme", "ceo", "Carol", "--no-supersede"], "single-valued"),
    (["alias", "Dana", "Acme"], "already names another entity"),
    (["merge", "Acme", "Acme"], "same entity"),
    (["search", "  "], "non-empty"),
    (["diff", "2020", "2024", "--predicate", "ceo", "--subject", "Nobody"], None),
])
def test_bad_input_is_one_error_line(db: Path, args: list[str], fragment: str | None) -> None:
    before = state_of(db)
    result = run(db, *args)
    if fragment is None:  # a valid query about nothing: empty, not an error
        assert result.exit_code == 0 and json.loads(run(db, *args, "--json").stdout)["added"] == []
        return
    assert_error(result, fragment)
    assert state_of(db) == before


@pytest.mark.parametrize("args", [
    ["add", "Acme", "ceo"],
    ["facts", "--direction", "sideways"],
    ["facts", "--limit", "-1"],
    ["predicate", "define", "x", "--cardinality", "two"],
    ["nonsense"],
])
def test_usage_errors_exit_2(db: Path, args: list[str]) -> None:
    result = run(db, *args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_read_commands_refuse_a_missing_database(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    for args in (["facts"], ["stats"], ["history", "X"], ["export", str(tmp_path / "out.jsonl")]):
        assert_error(run(missing, *args), "no memory database")
    assert not missing.exists()


def test_default_database_location_and_env(tmp_path: Path) -> None:
    runner = CliRunner(env={"XDG_DATA_HOME": str(tmp_path / "xdg"), "CHRONOMEM_DB": None})
    assert runner.invoke(main, ["add", "A", "p", "B"]).exit_code == 0
    assert (tmp_path / "xdg" / "chronomem" / "memory.db").exists()
    runner = CliRunner(env={"XDG_DATA_HOME": None, "HOME": str(tmp_path / "home"), "CHRONOMEM_DB": None})
    assert runner.invoke(main, ["add", "A", "p", "B"]).exit_code == 0
    assert (tmp_path / "home" / ".local" / "share" / "chronomem" / "memory.db").exists()
    env_db = tmp_path / "env.db"
    runner = CliRunner(env={"CHRONOMEM_DB": str(env_db), "CHRONOMEM_NAMESPACE": "team"})
    assert runner.invoke(main, ["add", "A", "p", "B"]).exit_code == 0
    mem = chronomem.open(env_db, namespace="team")
    assert [f.object for f in mem.facts("A")] == ["B"]
    assert "team" in mem.stats().namespaces
    mem.close()


def test_namespaces_are_separate(db: Path) -> None:
    ok(db, "--namespace", "other", "add", "X", "p", "Y")
    assert js(db, "--namespace", "other", "facts") != []
    assert all(f["subject"] != "X" for f in js(db, "facts"))


def test_timezone_reads_and_shows_local_times(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    fact = js(db, "--timezone", "Europe/Berlin", "add", "A", "meets", "B", "--from", "2024-03-05T10:00")
    assert fact["valid_from"] == "2024-03-05T10:00+01:00"
    (utc,) = js(db, "facts")
    assert utc["valid_from"] == "2024-03-05T09:00Z"
    assert "2024-03-05T10:00+01:00" in ok(db, "--timezone", "Europe/Berlin", "facts").stdout
    assert_error(run(db, "--timezone", "Mars/Olympus", "facts"), "unknown timezone")


def test_sql_prints_the_query_instead_of_running_it(db: Path) -> None:
    out = ok(db, "facts", "--subject", "Acme", "--as-of", "2020", "--sql").stdout
    assert out.startswith("SELECT") and "FROM facts" in out and "-- params:" in out
    assert "Alice" not in out
    got = js(db, "facts", "--subject", "Acme", "--predicate", "ceo", "--sql")
    assert got["sql"].startswith("SELECT") and isinstance(got["params"], list)


def test_facts_filters(db: Path) -> None:
    assert [f["object"] for f in js(db, "facts", "-s", "Acme", "-p", "ceo", "--as-of", "2020")] == ["Alice"]
    assert [f["object"] for f in js(db, "facts", "-s", "Acme", "-p", "chief executive", "--as-of", "2023")] == ["Bob"]
    incoming = js(db, "facts", "-s", "Acme", "--direction", "in")
    assert [(f["subject"], f["predicate"]) for f in incoming] == [("Dana", "works at")]
    assert len(js(db, "facts", "--limit", "1")) == 1
    assert [f["subject"] for f in js(db, "facts", "-o", "Lisbon")] == ["Dana"]


def test_write_lifecycle_and_system_time(db: Path) -> None:
    before = js(db, "facts", "-s", "Dana", "-p", "lives in")[0]["system_from"]
    ended = js(db, "invalidate", "Dana", "lives in", "Lisbon", "--ended", "2021-05", "--reason", "moved")
    assert ended["valid_to"] == "2021-05"
    fid = fact_id(db, "Dana", "Acme")
    corrected = js(db, "correct", fid, "--from", "2019-02", "--open-end")
    assert (corrected["valid_from"], corrected["valid_to"], corrected["version"]) == ("2019-02", None, 2)
    # the old version is still what was believed before the correction
    just_before = _dt.datetime.fromisoformat(corrected["system_from"]) - _dt.timedelta(microseconds=1)
    (old,) = js(db, "facts", "-s", "Dana", "-p", "works at", "--known-at", just_before.isoformat())
    assert (old["valid_from"], old["valid_to"]) == ("2019", "2021")
    retracted = js(db, "retract", fid, "--reason", "typo")
    assert retracted["id"] == fid
    assert js(db, "facts", "-s", "Dana", "-p", "works at") == []
    history = js(db, "history", "Dana")
    assert {h["ended_by"] for h in history} >= {"corrected", "retracted"}
    assert {h["ended_reason"] for h in history if h["ended_by"] == "retracted"} == {"typo"}
    assert any(h["system_from"] == before for h in history)
    assert "retracted" in ok(db, "history", "Dana").stdout


def test_erase_needs_yes(db: Path) -> None:
    fid = fact_id(db, "Dana", "Lisbon")
    before = state_of(db)
    assert_error(run(db, "erase", fid), "--yes")
    assert_error(run(db, "erase", "--entity", "Dana"), "--yes")
    assert_error(run(db, "erase", fid, "--entity", "Dana", "--yes"), "either")
    assert state_of(db) == before
    assert js(db, "erase", fid, "--yes", "--reason", "gdpr")["erased_versions"] == 1
    assert all(f["id"] != fid for f in js(db, "history", "Dana"))
    assert "erased" in ok(db, "erase", "--entity", "Dana", "--yes").stdout
    assert_error(run(db, "entity", "Dana"), "Dana")


def test_alias_merge_unmerge(db: Path) -> None:
    assert "ACME Inc" in js(db, "alias", "Acme", "ACME Inc")["aliases"]
    ok(db, "add", "Acme Corporation", "based in", "Paris")
    result = ok(db, "merge", "Acme", "Acme Corporation")
    op_id = result.stdout.strip().splitlines()[-1]
    assert [f["object"] for f in js(db, "facts", "-s", "Acme", "-p", "based in")] == ["Paris"]
    assert js(db, "entity", "Acme Corporation")["entity"]["name"] == "Acme"
    assert js(db, "unmerge", op_id) == {"op_id": op_id, "undone": True}
    assert [f["subject"] for f in js(db, "facts", "-p", "based in")] == ["Acme Corporation"]
    assert_error(run(db, "unmerge", op_id), "already undone")
    op2 = js(db, "merge", "Acme", "Acme Corporation")["op_id"]
    assert op2 != op_id


def test_predicates(db: Path) -> None:
    (ceo,) = [p for p in js(db, "predicate", "list") if p["name"] == "ceo"]
    assert (ceo["cardinality"], ceo["aliases"], ceo["description"], ceo["declared"]) == (
        "one", ["chief executive"], "who runs it", True)
    defined = js(db, "predicate", "define", "parent of", "--inverse", "child of")
    assert defined["inverse"] == "child of"
    assert "chief executive" in ok(db, "predicate", "list").stdout
    assert_error(run(db, "predicate", "define", "boss", "--alias", "ceo"), "already names")


def test_read_commands(db: Path) -> None:
    current = js(db, "current", "Acme")
    assert [f["object"] for f in current] == ["Bob"]
    assert [f["object"] for f in js(db, "current", "Dana", "lives in")] == ["Lisbon"]
    assert js(db, "current", "Nobody") == []
    assert "no current facts" in ok(db, "current", "Nobody").stdout
    events = js(db, "timeline", "Acme", "--start", "2015", "--end", "2023")
    assert [e["kind"] for e in events if e["axis"] == "valid"][:2] == ["started", "started"]
    assert "started: Acme -ceo-> Alice" in ok(db, "timeline", "Acme").stdout
    diff = js(db, "diff", "2020", "2023", "--subject", "Acme")
    assert [(c["old"]["object"], c["new"]["object"]) for c in diff["changed"]] == [("Alice", "Bob")]
    assert "Alice [2015-03, 2022-01) → Bob [2022-01, …)" in ok(db, "diff", "2020", "2023").stdout
    system_diff = js(db, "diff", "2000", "2100", "--axis", "system")
    assert len(system_diff["added"]) == 4
    assert js(db, "conflicts") == []
    ok(db, "add", "Dana", "lives in", "Porto", "--from", "2019", "--no-supersede", "--json")
    (conflict,) = [c for c in js(db, "conflicts") if c["predicate"] == "lives in"]
    assert {f["object"] for f in conflict["facts"]} == {"Lisbon", "Porto"}
    assert "review" in ok(db, "conflicts").stdout
    vol = js(db, "volatility", "--top", "1")
    assert (vol[0]["subject"], vol[0]["predicate"], vol[0]["values"]) == ("Acme", "ceo", 2)
    assert all(v["changes"] == 0 for v in js(db, "volatility", "--start", "2016", "--end", "2017"))
    neighbors = {n["entity"]: n["hops"] for n in js(db, "neighbors", "Dana", "--hops", "2", "--as-of", "2020")}
    assert neighbors == {"Acme": 1, "Lisbon": 1, "Porto": 1, "Alice": 2}
    paths = js(db, "path", "Dana", "Alice", "--as-of", "2020")
    assert paths[0]["entities"] == ["Dana", "Acme", "Alice"] and paths[0]["hops"] == 2
    assert js(db, "path", "Dana", "Bob", "--as-of", "2016") == []
    assert "2 hops" in ok(db, "path", "Dana", "Alice", "--as-of", "2020").stdout
    found = js(db, "search", "--facts", "acm")
    assert {f["subject"] for f in found} >= {"Acme", "Dana"}
    entity = js(db, "entity", "acme")
    assert entity["entity"]["name"] == "Acme"
    assert [f["object"] for f in entity["facts"] if f["subject"] == "Acme"] == ["Bob"]
    assert "current facts" in ok(db, "entity", "Acme").stdout
    stats = js(db, "stats")
    assert (stats["entities"], stats["predicates"], stats["namespaces"]) == (6, 3, ["default"])
    assert "entities" in ok(db, "stats").stdout


def test_verbose_logs_go_to_stderr(db: Path) -> None:
    result = run(db, "-vv", "facts", "--json")
    assert result.exit_code == 0
    json.loads(result.stdout)
    assert "DEBUG chronomem" in result.stderr
    quiet = run(db, "facts", "--json")
    assert quiet.stderr == ""


def test_failure_with_verbose_still_one_error_line_on_stdout_free(db: Path) -> None:
    result = run(db, "-v", "retract", "nope")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")


def test_demo_command(tmp_path: Path) -> None:
    pytest.importorskip("chronomem.adapters.demo", reason="the demo module is not installed")
    db = tmp_path / "demo.db"
    out = js(db, "demo", "--in-memory")
    assert isinstance(out, dict)
    assert not db.exists()


def test_each_command_s_module_is_the_one_that_registers_it() -> None:
    """The command line imports only the module of the command it runs
    (``COMMAND_MODULES``): that map must name, for every command, the module
    whose ``register`` provides it when all of them are registered in order."""
    import importlib

    from chronomem.adapters import cli

    owner: dict[str, str] = {}
    for module in cli._MODULES:
        try:
            mod = importlib.import_module(f"chronomem.adapters.cli.{module}")
        except ModuleNotFoundError:
            continue
        group = click.Group()
        mod.register(group)
        owner.update({name: module for name in group.commands})
    assert cli.COMMAND_MODULES == owner
    assert sorted(main.commands) == sorted(owner)


def test_running_one_command_imports_only_its_module() -> None:
    code = ("import sys; from chronomem.adapters.cli import main\n"
            "try:\n    main(['--db', ':memory:', 'stats', '--json'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('chronomem.adapters.cli.')"
            " and m.endswith('_cmds')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['read_cmds']"
