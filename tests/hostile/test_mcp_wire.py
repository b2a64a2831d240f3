"""The MCP stdio server (``chronomem mcp``, a real process) answers every
line: malformed JSON, a lone surrogate escape, arguments nested past the
JSON reader's depth and a JSON value that is no JSON-RPC message each get a
JSON-RPC error (with the request's id when it can be read), the cause is
logged on stderr, and the server keeps serving."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from chronomem.adapters.mcp.wire import wire_error  # noqa: E402

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def call(id_: int, args: str) -> bytes:
    return (f'{{"jsonrpc":"2.0","id":{id_},"method":"tools/call","params":{{"name":"fact_add",'
            f'"arguments":{args}}}}}').encode()


def deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


#: (line, expected id, expected JSON-RPC error code)
BAD: list[tuple[bytes, Any, int]] = [
    (call(1, '{"subject":"\\ud800","predicate":"p","object":"x"}'), 1, -32700),
    (call(2, '{"subject":"A","predicate":"p","object":"x","properties":' + deep(600) + "}"), 2, -32700),
    (call(3, '{"subject":"A","predicate":"p","object":"x","properties":' + deep(100_000) + "}"), 3, -32700),
    (b'{"jsonrpc":"2.0","id":4,"method":', 4, -32700),
    (b'{"jsonrpc":"2.0","id":"five","method":5}', "five", -32600),
    (b"[1, 2]", None, -32600),
    (b"\xff\xfe garbage", None, -32700),
    (b'"just a string"', None, -32600),
]


class Server:
    def __init__(self, db: Path) -> None:
        env = {**os.environ, "COLUMNS": "200"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "chronomem.adapters.cli", "--db", str(db), "--embedder", "none", "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 20.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no JSON-RPC response (the client would hang)"
        return json.loads(self.proc.stdout.readline())  # type: ignore[no-any-return]

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return self.proc.stderr.read().decode("utf-8", "replace")


def test_each_unreadable_line_gets_its_own_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    server = Server(tmp_path / "wire.db")
    try:
        server.send(json.dumps(INIT).encode())
        assert server.receive()["id"] == 0
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for line, id_, code in BAD:
            server.send(line)
            answer = server.receive()
            assert answer.get("id") == id_ and answer["error"]["code"] == code, (line[:80], answer)
            assert answer["error"]["message"]
        server.send(call(9, '{"subject":"Acme","predicate":"p","object":"x"}'))
        ok = server.receive()
        assert ok["id"] == 9 and not ok["result"].get("isError"), ok
    finally:
        stderr = server.close()
    assert stderr.count("unreadable JSON-RPC message") >= len(BAD), stderr[-2000:]
    assert "Traceback" not in stderr


def test_wire_error_without_a_line() -> None:
    """An exception that carries no line (a transport failure) is still an answer."""
    err = wire_error(RuntimeError("the pipe broke"))
    assert err.id is None and err.error.code == -32700 and "pipe broke" in err.error.message
