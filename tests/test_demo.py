"""The worked demo (``chronomem demo``) and the runnable examples in the README and docs."""

from __future__ import annotations

import doctest
import io
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import chronomem
from chronomem.adapters.demo import run_demo

REPO = Path(__file__).resolve().parents[1]


def _console() -> Console:
    return Console(record=True, file=io.StringIO(), width=220, color_system=None)


def _run_json(mem: chronomem.Memory) -> dict[str, Any]:
    console = _console()
    assert run_demo(mem, console, json_output=True) == 0
    doc = json.loads(console.export_text())
    assert isinstance(doc, dict)
    return doc


def _answers(doc: dict[str, Any], section: str) -> list[tuple[str, str, list[str]]]:
    return [(q["question"], q["known_at_label"], q["answer"]) for q in doc[section]]


def test_text_output_shows_the_key_answers(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    with chronomem.open(db) as mem:
        console = _console()
        assert run_demo(mem, console) == 0
    lines = console.export_text().splitlines()

    def rows(*needles: str) -> list[str]:
        return [line for line in lines if all(n in line for n in needles)]

    # as-of (valid time): the out-of-order interim CEO is spliced between Alice and Bob
    ceo_2021 = rows("Who was CEO of Acme Corp in 2021-06?")
    assert "Carla Diaz [2020-09, 2022-01)" in ceo_2021[0]  # the as-of table comes first
    assert "Alice Ng [2015-03, 2020-09)" in rows("Who was CEO of Acme Corp in 2016-06?")[0]
    assert "Bob Okafor [2022-01, …)" in rows("Who is CEO of Acme Corp now?")[0]
    # known-at (system time): before the filing arrived, Alice's term ran until Bob
    assert "Alice Ng [2015-03, 2022-01)" in rows("before the archived filing was recorded")[0]
    # before the correction the store believed the wrong value
    assert "Kafka [2023-04, …)" in rows("before the correction")[0]
    assert "Amazon SQS [2023-04, …)" in rows("Which queue does the Payments team use now?", " now ", "SQS")[0]
    # before the retraction it believed Paris; now Berlin is restored
    assert "Paris [2023-02, …)" in rows("before the retraction")[0]
    assert any("Berlin [2021-05-15, …)" in r for r in rows("Where does Dana Lee live now?"))
    # diff and timeline
    assert "Alice Ng [2015-03, 2020-09)" in rows("changed", "Acme Corp", "ceo")[0]
    assert "Bob Okafor" in rows("changed", "Acme Corp", "ceo")[0]
    assert rows("2020-09", "valid", "started: Acme Corp -ceo-> Carla Diaz")
    assert rows("2020-09", "valid", "ended: Acme Corp -ceo-> Alice Ng [2015-03, 2020-09): superseded by Carla Diaz")
    # the story lives in the file: the closing hint names it
    assert rows(f"chronomem --db {db} history", "Dana Lee")

    # the answers are reads of the store, which a fresh connection sees too
    with chronomem.open(db) as again:
        assert [f.object for f in again.facts("Acme Corp", "ceo", as_of="2021-06")] == ["Carla Diaz"]
        history = again.history("Dana Lee", "lives in")
        assert [f.ended_by for f in history if f.object == "Paris"] == ["retracted"]
        queue = again.history("Payments team", "message queue")
        kafka = [f for f in queue if f.object == "Kafka"]
        sqs = [f for f in queue if f.object == "Amazon SQS"]
        assert [f.ended_by for f in kafka] == ["corrected"]
        assert [(f.id, f.version, f.system_to) for f in sqs] == [(kafka[0].id, 2, None)]


def test_json_output_is_one_document_with_derived_answers(tmp_path: Path) -> None:
    with chronomem.open(tmp_path / "demo.db") as mem:
        doc = _run_json(mem)
    assert doc["namespace"] == "default" and doc["moved_from_namespace"] is None
    as_of = {q: a for q, _label, a in _answers(doc, "as_of_questions")}
    assert as_of == {
        "Who was CEO of Acme Corp in 2016-06?": ["Alice Ng"],
        "Who was CEO of Acme Corp in 2021-06?": ["Carla Diaz"],
        "Who is CEO of Acme Corp now?": ["Bob Okafor"],
        "Which queue did the Payments team use in 2020?": ["RabbitMQ"],
        "Which queue does the Payments team use now?": ["Amazon SQS"],
        "Where did Dana Lee live in 2020-01?": ["Lisbon"],
        "Where does Dana Lee live now?": ["Berlin"],
        "Where did Dana Lee work in 2024-12?": ["Globex"],
    }
    assert _answers(doc, "known_at_questions") == [
        ("Who was CEO of Acme Corp in 2021-06?", "before the archived filing was recorded", ["Alice Ng"]),
        ("Who was CEO of Acme Corp in 2021-06?", "now", ["Carla Diaz"]),
        ("Which queue does the Payments team use now?", "before the correction", ["Kafka"]),
        ("Which queue does the Payments team use now?", "now", ["Amazon SQS"]),
        ("Where does Dana Lee live now?", "before the retraction", ["Paris"]),
        ("Where does Dana Lee live now?", "now", ["Berlin"]),
    ]
    steps = {s["key"]: s for s in doc["steps"]}
    times = [s["system_time"] for s in doc["steps"]]
    assert times == sorted(times) and len(set(times)) == len(times)
    # each known-at instant is one microsecond before the step it refers to
    before_fix = doc["known_at_questions"][2]["known_at"]
    assert before_fix < steps["queue-fix"]["system_time"] and before_fix > steps["carla"]["system_time"]
    assert steps["carla"]["fact"]["interval"] == "[2020-09, 2022-01)"
    assert steps["paris-retracted"]["fact"]["ended_by"] == "retracted"
    assert steps["paris-retracted"]["fact"]["ended_reason"] == "the chat message was a joke"
    assert steps["dana-leaves"]["fact"]["interval"] == "[2019-01, 2024-06)"
    changed = {(c["subject"], c["predicate"]): (c["old"]["object"], c["new"]["object"]) for c in doc["diff"]["changed"]}
    assert changed == {
        ("Acme Corp", "ceo"): ("Alice Ng", "Bob Okafor"),
        ("Dana Lee", "lives in"): ("Lisbon", "Berlin"),
        ("Payments team", "message queue"): ("RabbitMQ", "Amazon SQS"),
    }
    assert [f["object"] for f in doc["diff"]["added"]] == ["Globex"]
    assert [f["object"] for f in doc["diff"]["removed"]] == ["Acme Corp"]
    events = [(e["at"], e["text"]) for e in doc["timeline"]["events"] if e["axis"] == "valid"]
    assert ("2020-09", "started: Acme Corp -ceo-> Carla Diaz") in events
    assert doc["timeline"]["entity"] == "Acme Corp"


def test_running_twice_on_one_db_uses_a_fresh_namespace(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    with chronomem.open(db) as mem:
        first = _run_json(mem)
        before = mem.stats()
        second = _run_json(mem)
        third = _run_json(mem)
        after = mem.stats()
        assert (after.facts, after.versions, after.entities) == (before.facts, before.versions, before.entities)
    assert second["moved_from_namespace"] == "default"
    assert len({first["namespace"], second["namespace"], third["namespace"]}) == 3
    for later in (second, third):
        assert _answers(later, "as_of_questions") == _answers(first, "as_of_questions")
        assert _answers(later, "known_at_questions") == _answers(first, "known_at_questions")
    with chronomem.open(db, namespace=second["namespace"]) as mem:
        assert [f.object for f in mem.current("Acme Corp", "ceo")] == ["Bob Okafor"]


def test_story_dates_are_read_and_shown_in_the_memory_timezone(tmp_path: Path) -> None:
    with chronomem.open(tmp_path / "demo.db", timezone="America/New_York") as mem:
        doc = _run_json(mem)
        ceo = mem.facts("Acme Corp", "ceo", as_of="2020-09")
    assert [f.object for f in ceo] == ["Carla Diaz"]
    assert ceo[0].valid_from is not None and ceo[0].valid_from.hour == 0  # "2020-09" is a calendar month: UTC
    steps = {s["key"]: s for s in doc["steps"]}
    assert steps["carla"]["fact"]["interval"] == "[2020-09, 2022-01)"


# -- runnable documentation ---------------------------------------------------

DOC_FILES = ["README.md", "docs/quickstart.md", "docs/concepts/time.md", "docs/python-api.md"]
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```", re.S | re.M)


def _doctest_text(markdown: str) -> str:
    """The ``>>>`` examples of every fenced python block, blank lines between
    blocks, at their original line numbers (so failures point at the file)."""
    out = [""] * (markdown.count("\n") + 1)
    for m in _FENCE.finditer(markdown):
        if m.group("lang") not in ("python", "pycon", "py") or ">>>" not in m.group("body"):
            continue
        first = markdown.count("\n", 0, m.start("body"))
        for i, line in enumerate(m.group("body").splitlines()):
            out[first + i] = line
    return "\n".join(out)


@pytest.mark.parametrize("name", DOC_FILES)
def test_documentation_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = REPO / name
    assert path.exists(), f"{name} is missing"
    monkeypatch.chdir(tmp_path)  # examples that open "memory.db" write here
    text = _doctest_text(path.read_text(encoding="utf-8"))
    test = doctest.DocTestParser().get_doctest(text, {"__name__": "__doc_example__"}, name, str(path), 0)
    assert test.examples, f"{name} has no runnable examples"
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=report.write, clear_globs=True)
    assert result.failed == 0, report.getvalue()


CLI_DOC_FILES = ["README.md", "docs/quickstart.md"]


def _shell_lines(markdown: str) -> list[str]:
    """The ``$ ...`` lines of every console/sh block."""
    lines: list[str] = []
    for m in _FENCE.finditer(markdown):
        if m.group("lang") in ("console", "shell-session"):
            lines += [ln[2:].strip() for ln in m.group("body").splitlines() if ln.startswith("$ ")]
    return lines


@pytest.mark.parametrize("name", CLI_DOC_FILES)
def test_documented_cli_commands_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from chronomem.adapters.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    env: dict[str, str] = {}
    ran = 0
    for line in _shell_lines((REPO / name).read_text(encoding="utf-8")):
        words = shlex.split(line)
        if words[0] == "export":
            key, _, value = words[1].partition("=")
            env[key] = value
            continue
        if words[0] != "chronomem":
            continue  # make / pip: covered by the Makefile itself
        result = CliRunner().invoke(main, words[1:], env=env, catch_exceptions=False)
        assert result.exit_code == 0, f"{line!r} failed:\n{result.output}"
        ran += 1
    assert ran > 0, f"{name} documents no chronomem commands"


_LINK = re.compile(r"\]\((?P<target>[^)#\s]*)(?:#(?P<anchor>[^)\s]+))?\)")


def _anchors(markdown: str) -> set[str]:
    out = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


@pytest.mark.parametrize("name", DOC_FILES + ["docs/architecture.md"])
def test_documentation_links_resolve(name: str) -> None:
    path = REPO / name
    text = path.read_text(encoding="utf-8")
    for m in _LINK.finditer(text):
        target, anchor = m.group("target"), m.group("anchor")
        if target.startswith(("http://", "https://")):
            continue
        dest = (path.parent / target).resolve() if target else path
        assert dest.exists(), f"{name} links to missing {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest.read_text(encoding="utf-8")), (
                f"{name} links to missing #{anchor} in {target}")
