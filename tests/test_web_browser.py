"""A real browser against a real ``chronomem serve``: headless Chromium (from
Debian's packages) renders the entity timeline and drives the graph's time
slider over the DevTools protocol (``--remote-debugging-pipe``: JSON messages
separated by NUL bytes on fds 3/4, so no websocket client is needed)."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from test_web_support import ACME_BARS, story

CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-quic", "--hide-scrollbars"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        msg = "headless Chromium is not installed: apt-get install -y chromium (CI installs it in .ci/run)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli() -> list[str]:
    script = Path(sys.executable).with_name("chronomem")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from chronomem.adapters.cli import main; sys.exit(main())"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "demo.db"
    story(db).close()
    port = free_port()
    env = {**os.environ, "CHRONOMEM_TOKEN": ""}
    errlog = tmp_path / "serve.err"
    with errlog.open("wb") as err_fh:
        proc = subprocess.Popen(cli() + ["--db", str(db), "serve", "--host", "127.0.0.1", "--port", str(port),
                                         "--json"], stdout=subprocess.PIPE, stderr=err_fh, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline() or b"{}")
        assert info.get("url") == base + "/" and info.get("auth") == "none (loopback only)", info
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(base + "/api/openapi.json", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chronomem serve did not start: {errlog.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def run_chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), *CHROME_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=90)


class DevTools:
    """A tiny Chrome DevTools Protocol client over ``--remote-debugging-pipe``."""

    def __init__(self, profile: Path) -> None:
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        # the child's ends go above 3/4 so that "3<&N 4>&M" cannot clobber one with the other
        child_r, child_w = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 64), fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 64)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        cmd = " ".join(shlex.quote(a) for a in [chromium(), *CHROME_FLAGS, f"--user-data-dir={profile}",
                                                 "--remote-debugging-pipe", "--window-size=1200,1100", "about:blank"])
        bash = shutil.which("bash") or "/bin/bash"  # dash only takes one-digit fds in redirections
        self.proc = subprocess.Popen([bash, "-c", f"exec {cmd} 3<&{child_r} 4>&{child_w}"],
                                     pass_fds=(child_r, child_w), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(child_r)
        os.close(child_w)
        self._buf = b""
        self._id = 0
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = True,
             timeout: float = 30) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._r], [], [], left)[0]:
                    raise TimeoutError(f"no answer to {method}")
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
            raw, _, self._buf = self._buf.partition(b"\0")
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete' && !!document.getElementById('graph')")

    def eval(self, expr: str) -> Any:
        res = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expr}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait_for(self, expr: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not self.eval(f"!!({expr})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {expr}")
            time.sleep(0.05)

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"]))

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False, timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)


def test_entity_timeline_renders_in_chromium(server: str, tmp_path: Path) -> None:
    url = f"{server}/entity/Acme?as_of=2019-06"
    dom = run_chromium(["--dump-dom", url], tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    bars = re.findall(r'<rect class="bar (\w+)" data-fact-id="([^"]+)"', dom.stdout)
    assert len(bars) == ACME_BARS, dom.stdout[:3000]
    # at 2019-06: Alice, Paris, Globex, Dave valid; Bob and Erin start later; Carol was retracted
    assert sorted(s for s, _ in bars) == ["not_yet"] * 2 + ["retracted"] + ["valid"] * 4
    assert 'class="cursor"' in dom.stdout and "as of <b>2019-06</b>" in dom.stdout
    shot = tmp_path / "entity-acme.png"
    res = run_chromium([f"--screenshot={shot}", "--window-size=1200,1000", url], tmp_path / "profile-shot")
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_graph_slider_changes_the_graph(server: str, tmp_path: Path) -> None:
    tools = DevTools(tmp_path / "profile-cdp")
    try:
        tools.open(f"{server}/entity/Acme/graph?as_of=2019-06&hops=2")
        names = "Array.from(document.querySelectorAll('#graph .node')).map(n => n.dataset.name).sort()"
        before = tools.eval(names)
        assert "Alice" in before and "Bob" not in before
        edges_before = tools.eval("document.querySelectorAll('#graph line.edge').length")
        tools.screenshot(tmp_path / "graph-2019.png")
        day = int(time.mktime((2022, 6, 1, 12, 0, 0, 0, 0, 0)) // 86400)
        tools.eval(f"(() => {{ const s = document.getElementById('slider'); s.value = {day};"
                   "s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); return true; })()")
        tools.wait_for("document.body.dataset.asOf === '2022-06-01'")
        tools.wait_for("document.getElementById('graph').getAttribute('aria-label').includes('2022-06-01')")
        after = tools.eval(names)
        assert after != before
        assert "Bob" in after and "Alice" not in after and "Berlin" in after
        assert tools.eval("location.search").find("as_of=2022-06-01") >= 0
        assert tools.eval("document.getElementById('slider-date').textContent") == "2022-06-01"
        assert tools.eval("document.querySelectorAll('#graph line.edge').length") >= 1
        assert edges_before >= 1
        tools.screenshot(tmp_path / "graph-2022.png")
        assert (tmp_path / "graph-2022.png").stat().st_size > 10_000
    finally:
        tools.close()
