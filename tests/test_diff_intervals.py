"""A change of the interval alone shows the intervals, on every surface.

On the system axis a fact whose valid interval was cut (here: invalidated
at 2024-01) is "changed" with the same object before and after; the CLI
printed ``Helix → Helix`` and the web page two equal cells. Each surface now
shows each side with its interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner
from mcp import Client as McpClient

import chronomem
from chronomem import FakeClock
from chronomem.adapters.cli import main
from chronomem.adapters.mcp import build_server
from chronomem.adapters.web import create_app
from test_web_support import Client

T1, T2 = "2025-02-01T00:00:00Z", "2025-04-01T00:00:00Z"
OLD, NEW = "Helix [2020, …)", "Helix [2020, 2024-01)"


def _store(path: Path) -> chronomem.Memory:
    clock = FakeClock("2025-01-01T00:00:00Z")
    mem = chronomem.open(path, clock=clock)
    mem.add_fact("Priya", "works_at", "Helix", "2020")
    mem.add_fact("Priya", "lives_in", "Kyoto", "2019")  # unchanged: not listed
    clock.set("2025-03-01T00:00:00Z")
    mem.invalidate("Priya", "works_at", "Helix", "2024-01", reason="resigned")
    return mem


def test_the_system_diff_of_an_interval_change(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with _store(path) as mem:
        d = mem.diff(T1, T2, axis="system")
        assert [(c.old.interval_text, c.new.interval_text, c.old.object, c.new.object) for c in d.changed] == [
            ("[2020, …)", "[2020, 2024-01)", "Helix", "Helix")]
        assert not d.added and not d.removed

        # CLI
        out = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--db", str(path), "diff", T1, T2, "--axis", "system"],
                                                       catch_exceptions=False)
        assert out.exit_code == 0, out.output
        assert f"~ Priya -works_at->: {OLD} → {NEW}" in out.stdout
        assert "Helix → Helix" not in out.stdout

        # MCP
        async def ask() -> Any:
            async with McpClient(build_server(mem), mode="legacy") as client:
                return await client.call_tool("diff", {"t1": T1, "t2": T2, "axis": "system"})

        r = anyio.run(ask)
        lines = "\n".join(getattr(b, "text", "") for b in r.content).splitlines()
        (change,) = [ln for ln in lines if ln.startswith("~ ")]
        assert f"-works_at-> {OLD}" in change and f"-works_at-> {NEW}" in change

        # web
        html = Client(create_app(mem)).get(f"/diff?t1={T1}&t2={T2}&axis=system").text
        table = html[html.index('<table id="changed">'):]
        table = table[:table.index("</table>")]
        assert f"<td>{OLD}</td>" in table and f"<td>{NEW}</td>" in table
