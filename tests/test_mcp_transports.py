"""Real transports: ``chronomem mcp`` as a subprocess over stdio, the
streamable-HTTP app under uvicorn on 127.0.0.1, two servers sharing one
database file, and (when it exists) ``chronomem serve`` mounting /mcp."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import anyio
import pytest

pytest.importorskip("mcp")
uvicorn = pytest.importorskip("uvicorn")

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

import chronomem  # noqa: E402
from chronomem.adapters.mcp import build_http_app  # noqa: E402

_SCRIPT = Path(sys.executable).with_name("chronomem")
# the installed console script when present (what agents run), else the module
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "chronomem.adapters.cli"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CHRONOMEM_DB", None)
    env.pop("CHRONOMEM_NAMESPACE", None)
    return env


def stdio_params(db: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=CLI[0], args=[*CLI[1:], "--db", str(db), *extra, "mcp"], env=_env())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def text(r: CallToolResult) -> str:
    return "\n".join(getattr(b, "text", "") for b in r.content)


@contextlib.contextmanager
def http_server(db: Path) -> Iterator[str]:
    """The MCP HTTP app on its own Memory, served by uvicorn in a thread."""
    mem = chronomem.open(db)
    port = free_port()
    config = uvicorn.Config(build_http_app(mem), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
        mem.close()


def test_stdio_subprocess_end_to_end(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"

    async def main() -> None:
        async with Client(stdio_params(db), mode="legacy") as c:
            assert "fact_add" in (c.instructions or "")
            tools = await c.list_tools()
            assert len(tools.tools) == 14
            r = await c.call_tool("fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice",
                                               "valid_from": "2020"})
            assert not r.is_error and r.structured_content is not None
            assert r.structured_content["fact"]["valid_from"] == "2020"
            r = await c.call_tool("facts", {"subject": "Acme"})
            assert text(r).startswith("Acme -ceo-> Alice [2020, …) (current) [")
            bad = await c.call_tool("fact_invalidate", {"subject": "Acme", "predicate": "ceo", "object": "Zed"})
            assert bad.is_error and "no fact Acme -ceo-> Zed" in text(bad)
            res = await c.read_resource("chronomem://stats")
            assert "1 facts" in res.contents[0].text  # type: ignore[union-attr]
            r = await c.call_tool("remember", {"text": "Acme picked Postgres for the billing service.",
                                               "facts": [{"subject": "Billing", "predicate": "database",
                                                          "object": "Postgres"}]})
            assert not r.is_error and r.structured_content is not None
            ep_id = r.structured_content["episode"]["id"]
            r = await c.call_tool("recall", {"question": "Which database does Billing use?"})
            assert not r.is_error and "Billing -database-> Postgres" in text(r) and f"[{ep_id}]" in text(r)

    anyio.run(main)
    with chronomem.open(db) as mem:  # the write reached the file
        assert [f.object for f in mem.facts("Acme", "ceo")] == ["Alice"]


def test_stdio_uses_the_global_namespace(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"

    async def main() -> None:
        async with Client(stdio_params(db, "--namespace", "work"), mode="legacy") as c:
            r = await c.call_tool("fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice"})
            assert not r.is_error
            r = await c.call_tool("stats", {})
            assert r.structured_content is not None and r.structured_content["namespace"] == "work"

    anyio.run(main)
    with chronomem.open(db, namespace="work") as work, chronomem.open(db) as default:
        assert len(work.facts("Acme")) == 1 and default.facts("Acme") == []


def test_stdio_stdout_carries_only_jsonrpc(tmp_path: Path) -> None:
    """Every line the server writes to stdout is a JSON-RPC message, even with
    -vv logging and a failing tool call; logs go to stderr."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    version = sorted(HANDSHAKE_PROTOCOL_VERSIONS)[-1]
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "fact_add", "arguments": {"subject": "A", "predicate": "p", "object": "B"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "fact_add", "arguments": {"subject": "A"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "chronomem://entity/A"}},
    ]
    proc = subprocess.Popen(
        [*CLI, "-vv", "--db", str(tmp_path / "m.db"), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    responses: dict[int, Any] = {}
    for m in msgs:
        proc.stdin.write((json.dumps(m) + "\n").encode())
        proc.stdin.flush()
        if "id" in m:
            while m["id"] not in responses:
                line = proc.stdout.readline()
                assert line, "server closed stdout early"
                got = json.loads(line)  # every stdout line must parse as JSON-RPC
                assert got.get("jsonrpc") == "2.0"
                if "id" in got:
                    responses[got["id"]] = got
    rest, err = proc.communicate(timeout=20)  # closes stdin: the server must exit cleanly
    for line in rest.decode().splitlines():
        assert json.loads(line).get("jsonrpc") == "2.0"
    assert proc.returncode == 0, err.decode()
    assert responses[1]["result"]["serverInfo"]["name"] == "chronomem"
    assert len(responses[2]["result"]["tools"]) == 14
    assert responses[3]["result"]["isError"] is False
    assert responses[4]["result"]["isError"] is True
    assert "missing required argument 'predicate'" in responses[4]["result"]["content"][0]["text"]
    assert responses[5]["error"]["code"] == -32602  # an unknown tool is a protocol error
    assert "no_such_tool" in responses[5]["error"]["message"]
    assert "started" in responses[6]["result"]["contents"][0]["text"] or "recorded" in \
        responses[6]["result"]["contents"][0]["text"]
    assert b"DEBUG" in err or b"INFO" in err  # -vv logging went to stderr


def test_stdio_bad_database_reports_on_stderr(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = subprocess.run([*CLI, "--db", str(blocker / "sub" / "m.db"), "mcp"], input=b"", capture_output=True,
                          env=_env(), timeout=30)
    assert proc.returncode != 0
    assert proc.stdout == b""
    assert b"error:" in proc.stderr and b"Traceback" not in proc.stderr


def test_http_transport_under_uvicorn(tmp_path: Path) -> None:
    with http_server(tmp_path / "mem.db") as url:
        async def main() -> None:
            async with Client(url) as c:
                r = await c.call_tool("fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice",
                                                   "valid_from": "yesterday"})
                assert not r.is_error, text(r)
                assert "valid_from='yesterday'" in text(r)
                r = await c.call_tool("facts", {"subject": "Acme", "as_of": "now"})
                assert r.structured_content is not None and r.structured_content["count"] == 1
                bad = await c.call_tool("facts", {"direction": "up"})
                assert bad.is_error and "argument 'direction'" in text(bad)

        anyio.run(main)


def test_http_rejects_foreign_host_header(tmp_path: Path) -> None:
    import httpx

    with http_server(tmp_path / "mem.db") as url:
        resp = httpx.post(url, headers={"Host": "evil.example:80", "Content-Type": "application/json",
                                        "Accept": "application/json, text/event-stream"},
                          content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
        assert resp.status_code in (400, 421)


def test_two_servers_on_one_db_see_each_others_writes(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with http_server(db) as url:
        async def main() -> None:
            async with Client(stdio_params(db), mode="legacy") as a, Client(url) as b:
                r = await a.call_tool("fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice"})
                assert not r.is_error
                seen = await b.call_tool("facts", {"subject": "Acme"})
                assert seen.structured_content is not None
                assert [f["object"] for f in seen.structured_content["facts"]] == ["Alice"]
                r = await b.call_tool("fact_invalidate", {"subject": "Acme", "predicate": "ceo", "object": "Alice"})
                assert not r.is_error, text(r)
                seen = await a.call_tool("facts", {"subject": "Acme", "as_of": "now"})
                assert seen.structured_content is not None and seen.structured_content["count"] == 0
                hist = await a.call_tool("facts", {"subject": "Acme"})
                assert hist.structured_content is not None
                assert hist.structured_content["facts"][0]["current"] is False

        anyio.run(main)


def test_chronomem_serve_mounts_mcp(tmp_path: Path) -> None:
    try:
        import chronomem.adapters.web.server  # noqa: F401
        from chronomem.adapters.cli import web_cmds  # noqa: F401
    except ImportError:
        pytest.skip("chronomem serve is not available in this build")
    port = free_port()
    proc = subprocess.Popen([*CLI, "--db", str(tmp_path / "m.db"), "serve", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.05)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as c:
                r = await c.call_tool("fact_add", {"subject": "Acme", "predicate": "ceo", "object": "Alice"})
                assert not r.is_error, text(r)
                r = await c.call_tool("stats", {})
                assert r.structured_content is not None and r.structured_content["facts"] == 1

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(10)
