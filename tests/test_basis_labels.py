"""Labels follow the read's basis (issue 14, point 7): a past ``as_of`` says
"valid at 2019-06", "ended 2018-04", "starts 2022", never "now"; the JSON
twins name what a list holds (``valid_at_basis``) and give each fact its
``status_at_basis``, while ``Fact.current`` keeps meaning "true now"."""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

import chronomem
from chronomem import FakeClock, Memory
from chronomem.adapters.cli import main
from chronomem.adapters.web import create_app
from chronomem.core.basis import believed_at, status_at, status_label
from test_web_support import Client

UTC = _dt.timezone.utc


def ivy(mem: Memory) -> dict[str, str]:
    """Ivy's facts around the basis 2019-06: ended before it, valid at it (one
    still true now, one ended since), starting after it (one valid now, one in
    the future). Returns object -> fact id."""
    mem.define_predicate("works at", "one")
    facts = [
        mem.add_fact("Ivy", "works at", "Acme", valid_from="2015", valid_to="2018-04"),
        mem.add_fact("Ivy", "works at", "Globex", valid_from="2018-04", valid_to="2021"),
        mem.add_fact("Ivy", "lives in", "Lisbon", valid_from="2017"),
        mem.add_fact("Ivy", "mentors", "Kai", valid_from="2022"),
        mem.add_fact("Ivy", "plans", "Sabbatical", valid_from="2099"),
    ]
    return {str(f.object): f.id for f in facts}


#: status of each of Ivy's facts at each basis
AT_2019_06 = {"Acme": "ended", "Globex": "valid", "Lisbon": "valid", "Kai": "not_yet", "Sabbatical": "not_yet"}
AT_NOW = {"Acme": "ended", "Globex": "ended", "Lisbon": "valid", "Kai": "valid", "Sabbatical": "not_yet"}
#: their words at each basis
WORDS_2019_06 = {"Acme": "ended 2018-04 (before 2019-06)", "Globex": "valid at 2019-06",
                 "Lisbon": "valid at 2019-06", "Kai": "starts 2022 (after 2019-06)",
                 "Sabbatical": "starts 2099 (after 2019-06)"}
WORDS_NOW = {"Acme": "ended 2018-04", "Globex": "ended 2021", "Lisbon": "valid now", "Kai": "valid now",
             "Sabbatical": "starts 2099"}


# -- the pure helpers -------------------------------------------------------
def test_status_at_is_half_open() -> None:
    mem = chronomem.open(":memory:", clock=FakeClock("2025-01-01T00:00:00Z"))
    try:
        f = mem.add_fact("Ivy", "works at", "Globex", valid_from="2018-04", valid_to="2021")
        open_start = mem.add_fact("Ivy", "knows", "Kai")
    finally:
        mem.close()
    at = lambda s: _dt.datetime.fromisoformat(s).replace(tzinfo=UTC)  # noqa: E731
    assert status_at(f, at("2018-03-31T23:59:59.999999")) == "not_yet"
    assert status_at(f, at("2018-04-01T00:00:00")) == "valid"  # the start is inside
    assert status_at(f, at("2020-12-31T23:59:59.999999")) == "valid"
    assert status_at(f, at("2021-01-01T00:00:00")) == "ended"  # the end is not
    assert status_at(open_start, at("0001-01-01T00:00:00")) == "valid"
    assert status_at(open_start, at("9999-12-31T23:59:59")) == "valid"


def test_believed_at_reads_the_system_interval() -> None:
    clock = FakeClock("2025-01-01T00:00:00Z")
    mem = chronomem.open(":memory:", clock=clock)
    try:
        tea = mem.add_fact("Ivy", "likes", "Tea", valid_from="2019")
        clock.advance(days=1)
        mem.retract(tea.id, "misheard")
        version = next(f for f in mem.history("Ivy") if f.object == "Tea")
    finally:
        mem.close()
    assert version.system_to is not None
    assert believed_at(version, None) is False  # not believed now
    assert believed_at(version, version.system_from) is True
    assert believed_at(version, version.system_to) is False  # half-open on system time too
    assert believed_at(version, version.system_from - _dt.timedelta(microseconds=1)) is False


def test_status_label_words() -> None:
    kw: dict[str, Any] = {"valid_from": "2018-04", "valid_to": "2021"}
    assert status_label("valid", basis=None, **kw) == "valid now"
    assert status_label("valid", basis="2019-06", **kw) == "valid at 2019-06"
    assert status_label("ended", basis=None, **kw) == "ended 2021"
    assert status_label("ended", basis="2022", **kw) == "ended 2021 (before 2022)"
    assert status_label("ended", basis="2021", **kw) == "ended 2021"  # ended at the basis itself
    assert status_label("not_yet", basis=None, **kw) == "starts 2018-04"
    assert status_label("not_yet", basis="2017", **kw) == "starts 2018-04 (after 2017)"


# -- the web view -------------------------------------------------------------
@pytest.fixture
def web(tmp_path: Path) -> Iterator[tuple[Memory, Client, FakeClock]]:
    clock = FakeClock("2025-01-01T00:00:00Z")
    mem = chronomem.open(str(tmp_path / "ivy.db"), clock=clock)
    ivy(mem)
    yield mem, Client(create_app(mem)), clock
    mem.close()


def _row_status(html: str, section: str) -> dict[str, tuple[str, str]]:
    """object -> (tag class, words) of each row of the fact table after the
    heading that starts with ``section``."""
    start = html.index(f"<h2>{section}")
    table = html[start: html.index("</table>", start)]
    out = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        obj = re.findall(r'<a href="/entity/[^"]*">([^<]*)</a>', row)[1]
        tag = re.search(r'<span class="tag ([^"]*)">([^<]*)</span>', row)
        assert tag is not None, row
        out[obj] = (tag.group(1), tag.group(2))
    return out


def test_entity_page_at_a_past_basis(web: tuple[Memory, Client, FakeClock]) -> None:
    _mem, client, _clock = web
    html = client.get("/entity/Ivy?as_of=2019-06").text
    data = client.get("/entity/Ivy.json?as_of=2019-06").json()
    assert data["basis"]["as_of"] == "2019-06" and data["basis"]["known_at"] is None
    # the list says what it holds, and its facts say they are valid at the basis
    assert "current" not in data
    valid = {f["object"]: f for f in data["valid_at_basis"]}
    assert set(valid) == {"Globex", "Lisbon"}
    assert {f["status_at_basis"] for f in valid.values()} == {"valid"}
    # Fact.current keeps its meaning: true now (Lisbon still is, Globex ended in 2021)
    assert valid["Lisbon"]["current"] is True and valid["Globex"]["current"] is False
    assert {f["object"]: f["status_at_basis"] for f in data["history"]} == AT_2019_06
    assert all(f["believed_at_basis"] for f in data["history"])
    # the page speaks of the basis, never of now
    assert "<h2>Facts valid at 2019-06 (2)</h2>" in html
    assert "now" not in html.split('<div class="basis"', 1)[1].split("</div>", 1)[1].split("<h2>Timeline", 1)[0]
    assert _row_status(html, "Facts valid at") == {o: ("valid", WORDS_2019_06[o]) for o in ("Globex", "Lisbon")}
    assert _row_status(html, "History") == {o: (AT_2019_06[o], w) for o, w in WORDS_2019_06.items()}
    assert "valid now" not in html and "not valid" not in html


def test_entity_page_at_now(web: tuple[Memory, Client, FakeClock]) -> None:
    _mem, client, _clock = web
    html = client.get("/entity/Ivy").text
    data = client.get("/entity/Ivy.json").json()
    assert data["basis"]["as_of"] is None
    assert {f["object"] for f in data["valid_at_basis"]} == {"Lisbon", "Kai"}
    assert all(f["current"] and f["status_at_basis"] == "valid" for f in data["valid_at_basis"])
    assert {f["object"]: f["status_at_basis"] for f in data["history"]} == AT_NOW
    assert "<h2>Facts valid now (2)</h2>" in html
    assert _row_status(html, "History") == {o: (AT_NOW[o], w) for o, w in WORDS_NOW.items()}


def test_a_pinned_known_at_labels_what_was_believed_then(web: tuple[Memory, Client, FakeClock]) -> None:
    mem, client, clock = web
    clock.advance(days=1)
    tea = mem.add_fact("Ivy", "likes", "Tea", valid_from="2019")
    believed = tea.system_from.isoformat()
    clock.advance(days=1)
    mem.retract(tea.id, "misheard")
    then = client.get("/entity/Ivy.json", params={"as_of": "2019-06", "known_at": believed}).json()
    row = next(f for f in then["history"] if f["object"] == "Tea")
    # closed later, but believed at known_at: the page shows its status then, not the retraction
    assert row["system_to"] is not None and row["believed_at_basis"] is True and row["status_at_basis"] == "valid"
    html = client.get("/entity/Ivy", params={"as_of": "2019-06", "known_at": believed}).text
    assert _row_status(html, "History")["Tea"] == ("valid", "valid at 2019-06")
    assert _row_status(html, "Facts valid at")["Tea"] == ("valid", "valid at 2019-06")
    # read now, the same version is retracted
    now = client.get("/entity/Ivy.json", params={"as_of": "2019-06"}).json()
    row = next(f for f in now["history"] if f["object"] == "Tea")
    assert row["believed_at_basis"] is False
    closed = row.get("ended_by") or "closed"  # how it was closed, not a valid-time status
    assert _row_status(client.get("/entity/Ivy?as_of=2019-06").text, "History")["Tea"] == (closed, closed)


def test_api_and_other_twins_carry_the_basis_status(web: tuple[Memory, Client, FakeClock]) -> None:
    _mem, client, _clock = web
    api = client.get("/api/entities/Ivy", params={"as_of": "2019-06"}).json()
    assert api["basis"]["as_of"] == "2019-06"
    assert {f["object"]: f["status_at_basis"] for f in api["facts"]} == {"Globex": "valid", "Lisbon": "valid"}
    every = client.get("/api/facts", params={"subject": "Ivy"}).json()  # all of history, judged now
    assert {f["object"]: f["status_at_basis"] for f in every["facts"]} == AT_NOW
    found = client.get("/index.json", params={"q": "works", "as_of": "2019-06"}).json()
    assert {f["object"]: f["status_at_basis"] for f in found["results"]} == {"Globex": "valid"}
    diff = client.get("/diff.json", params={"t1": "2017", "t2": "2022", "subject": "Ivy"}).json()
    assert {f["object"]: f["status_at_basis"] for f in diff["added"]} == {"Kai": "valid"}  # judged now
    assert {f["object"]: f["status_at_basis"] for f in diff["removed"]} == {"Acme": "ended"}
    html = client.get("/diff", params={"t1": "2017", "t2": "2022", "subject": "Ivy", "as_of": "2019-06"}).text
    assert "starts 2022 (after 2019-06)" in html and "ended 2018-04 (before 2019-06)" in html
    # the changed table's columns are the two compared times, not "was"/"now"
    html = client.get("/diff", params={"t1": "2017", "t2": "2019-06", "subject": "Ivy"}).text
    assert "<th>at 2017</th><th>at 2019-06</th>" in html and ">Globex" in html.split('id="changed"')[1]


# -- the CLI ------------------------------------------------------------------
@pytest.fixture
def cli_db(tmp_path: Path) -> Path:
    path = tmp_path / "ivy.db"
    mem = chronomem.open(str(path))  # the real clock, like the CLI's
    ivy(mem)
    mem.close()
    return path


def cli(db: Path, *args: str) -> str:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--db", str(db), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _table_rows(text: str) -> dict[str, str]:
    """object -> the rest of its table row (interval, status, id)."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\s*Ivy -[^>]*-> (\w+)\s+(\[.*?\))\s+(.*?)\s+\S+$", line.rstrip())
        if m:
            rows[m.group(1)] = m.group(3)
    return rows


def test_cli_table_at_a_past_basis(cli_db: Path) -> None:
    out = cli(cli_db, "facts", "--subject", "Ivy", "--as-of", "2019-06")
    header = next(line for line in out.splitlines() if line.strip())
    assert header.split() == ["fact", "valid", "status", "id"] and "now" not in out
    assert _table_rows(out) == {"Globex": "valid at 2019-06", "Lisbon": "valid at 2019-06"}
    data = json.loads(cli(cli_db, "facts", "--subject", "Ivy", "--as-of", "2019-06", "--json"))
    assert {f["object"]: (f["status_at_basis"], f["current"]) for f in data} == {
        "Globex": ("valid", False), "Lisbon": ("valid", True)}


def test_cli_table_at_now(cli_db: Path) -> None:
    out = cli(cli_db, "facts", "--subject", "Ivy")  # all of history, each judged now
    assert _table_rows(out) == WORDS_NOW
    data = json.loads(cli(cli_db, "facts", "--subject", "Ivy", "--json"))
    assert {f["object"]: f["status_at_basis"] for f in data} == AT_NOW
    assert _table_rows(cli(cli_db, "current", "Ivy")) == {"Lisbon": "valid now", "Kai": "valid now"}
    assert _table_rows(cli(cli_db, "search", "Ivy", "--as-of", "2019-06")) == {
        "Globex": "valid at 2019-06", "Lisbon": "valid at 2019-06"}


# -- evidence pages -------------------------------------------------------------
def test_evidence_notes_speak_of_the_search_basis(web: tuple[Memory, Client, FakeClock]) -> None:
    mem, client, _clock = web
    said = mem.add_episode("Ivy volunteers at the Shelter on weekends.", occurred_at="2018-03-01")
    mem.add_fact("Ivy", "volunteers at", "Shelter", valid_from="2018", valid_to="2020-02", episode_id=said.id)
    plan = mem.add_episode("Ivy will coach the Team from 2030.", occurred_at="2019-05-01")
    mem.add_fact("Ivy", "coaches", "Team", valid_from="2030", episode_id=plan.id)

    def notes(params: dict[str, str]) -> tuple[dict[str, tuple[bool, str]], str]:
        data = client.get("/search.json", params={"q": "Ivy", "view": "raw", **params}).json()
        found = {n["fact"]["object"]: (n["current"], n["status_at_basis"]) for h in data["hits"] for n in h["facts"]}
        return found, client.get("/search", params={"q": "Ivy", "view": "raw", **params}).text

    then, html = notes({"at": "2019-06"})
    assert then == {"Shelter": (True, "valid"), "Team": (True, "not_yet")}
    assert '<span class="tag current">valid at 2019-06</span>' in html and ">starts 2030</span>" in html
    assert ">current</span>" not in html
    now, html = notes({})
    assert now == {"Shelter": (False, "ended"), "Team": (True, "not_yet")}
    assert ">history</span>" in html and ">starts 2030</span>" in html
    episode = client.get(f"/episode/{plan.id}.json").json()
    assert [n["status_at_basis"] for n in episode["facts"]] == ["not_yet"]
    assert ">starts 2030</span>" in client.get(f"/episode/{plan.id}").text
