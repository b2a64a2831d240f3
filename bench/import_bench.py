"""Import throughput and memory per format (issue 17; docs/import/README.md).

For each format a large input is generated with ``bench/gen/<format>.py``;
then, each in a fresh subprocess (so peak RSS is that run's own):

* ``read``: the chronomem reader alone (parse, no store);
* ``floor``: the reader plus plain ``sqlite3`` storing each message once
  (``INSERT OR IGNORE`` of key and text into one table, one transaction per
  500): the least work the same answer needs;
* ``import``: ``Memory.import_source`` on a fresh SQLite file, lexical only
  (``embedder=None``: this measures the import, not the embedding model;
  with MiniLM the embedder sets the pace, see docs/evidence.md);
* ``rerun``: the same import again (files unchanged: skipped unread);
* ``reread``: again after touching every input (read, every message unchanged);
* ``peer``: ``mempalace.normalize.normalize`` (mempalace 3.11.0, stdlib only)
  on the same file where it reads the format, when mempalace is installed
  (``make bench`` installs it; otherwise the column says so).

    .venv/bin/python bench/import_bench.py [--messages 20000] [--formats claude-code,chatgpt] [--big-mb 0]

``--big-mb N`` also generates one Claude Code log of about N MB and reports
the import's peak RSS on it (the constant-memory figure).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

FORMATS = ("claude-code", "codex", "chatgpt", "claude-ai", "slack", "markdown", "git")
PEER_FILE = {"claude-code": "*.jsonl", "codex": "*.jsonl", "chatgpt": "conversations.json",
             "claude-ai": "conversations.json"}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(kind: str, fmt: str, path: str, db: str) -> dict[str, Any]:
    from chronomem.service.ingest.formats import reader
    from chronomem.service.ingest.source import ReadOptions, SourceMessage

    base = _rss_mb()
    t0 = time.perf_counter()
    messages = 0
    if kind in ("read", "floor"):
        rd = reader(fmt)
        opts = ReadOptions(root=Path(path))
        con = sqlite3.connect(db) if kind == "floor" else None
        if con is not None:
            con.execute("CREATE TABLE IF NOT EXISTS m (key TEXT PRIMARY KEY, text TEXT NOT NULL)")
        rows: list[tuple[str, str]] = []
        for file in rd.files(opts):
            for item in rd.read(file, opts):
                if isinstance(item, SourceMessage):
                    messages += 1
                    if con is not None:
                        rows.append((item.key, item.text))
                        if len(rows) >= 500:
                            with con:
                                con.executemany("INSERT OR IGNORE INTO m VALUES (?, ?)", rows)
                            rows = []
        if con is not None:
            with con:
                con.executemany("INSERT OR IGNORE INTO m VALUES (?, ?)", rows)
            con.close()
    elif kind == "peer":
        from mempalace.normalize import normalize  # type: ignore[import-not-found]

        files = [Path(path)] if Path(path).is_file() else sorted(Path(path).rglob(PEER_FILE[fmt]))
        for f in files:
            messages += normalize(str(f)).count("\n> ")  # its transcript marks each user turn with "> "
    else:
        import chronomem

        with chronomem.open(db, embedder=None) as mem:
            s = mem.import_source(path, fmt)
            messages = s.added + s.updated + s.unchanged
    seconds = time.perf_counter() - t0
    return {"messages": messages, "seconds": seconds, "rss_mb": _rss_mb(), "base_rss_mb": base}


def _run(kind: str, fmt: str, path: Path, db: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", kind, fmt, str(path), str(db)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _touch(path: Path) -> None:
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        if p.is_file():
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _size_mb(path: Path) -> float:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return sum(p.stat().st_size for p in files) / 1e6


def _rate(r: dict[str, Any]) -> str:
    if "error" in r:
        return "error"
    return f"{r['messages'] / r['seconds']:,.0f}/s" if r["seconds"] else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=20_000)
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--big-mb", type=int, default=0)
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--child", nargs=4, metavar=("KIND", "FORMAT", "PATH", "DB"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    try:
        importlib.import_module("mempalace.normalize")
        peer_ok = True
    except ImportError:
        peer_ok = False
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        work = Path(tmp)
        head = (f"{'format':<12} {'input':>8} {'msgs':>7} | {'read':>9} {'floor':>9} {'import':>9} "
                f"{'import/floor':>12} | {'rerun s':>7} {'reread':>9} | {'RSS MB':>6} | {'peer':>9} {'peer RSS':>8}")
        print(head)
        print("-" * len(head))
        for fmt in args.formats.split(","):
            gen = importlib.import_module(f"bench.gen.{fmt.replace('-', '_')}")
            src = gen.write(work / fmt, args.messages)
            row: dict[str, Any] = {"input_mb": round(_size_mb(src), 1)}
            for kind in ("read", "floor", "import", "rerun"):
                row[kind] = _run(kind, fmt, src, work / f"{fmt}-{'floor' if kind == 'floor' else 'cm'}.db")
            _touch(src)
            row["reread"] = _run("import", fmt, src, work / f"{fmt}-cm.db")
            row["peer"] = (_run("peer", fmt, src, work / "none") if peer_ok and fmt in PEER_FILE
                           else {"error": "n/a" if fmt not in PEER_FILE else "not installed"})
            results[fmt] = row
            imp, floor = row["import"], row["floor"]
            ratio = (f"{imp['seconds'] / floor['seconds']:.1f}x" if "error" not in imp and "error" not in floor
                     else "-")
            peer = row["peer"]
            peer_s = f"{peer['seconds']:.2f}s" if "error" not in peer else str(peer["error"])
            peer_rss = f"{peer['rss_mb']:.0f}" if "error" not in peer else "-"
            rerun_s = row["rerun"].get("seconds", 0)
            print(f"{fmt:<12} {row['input_mb']:>6.1f}MB {imp.get('messages', 0):>7} | {_rate(row['read']):>9} "
                  f"{_rate(floor):>9} {_rate(imp):>9} {ratio:>12} | {rerun_s:>7.2f} "
                  f"{_rate(row['reread']):>9} | {imp.get('rss_mb', 0):>6.0f} | {peer_s:>9} {peer_rss:>8}", flush=True)
        if args.big_mb:
            gen = importlib.import_module("bench.gen.claude_code")
            # the generator's entries average ~1.6 KB: aim at the size asked for
            src = gen.write(work / "big" / "session.jsonl", args.big_mb * 620)
            mb = _size_mb(src)
            r = _run("import", "claude-code", src, work / "big.db")
            results["big"] = {"input_mb": mb, **r}
            print(f"\nbig Claude Code log {mb:,.0f} MB: {r.get('messages', 0):,} messages in "
                  f"{r.get('seconds', 0):.0f} s ({_rate(r)}), peak RSS {r.get('rss_mb', 0):.0f} MB "
                  f"(after imports {r.get('base_rss_mb', 0):.0f} MB)")
            if peer_ok:
                p = _run("peer", "claude-code", src, work / "none")
                said = (f"{p.get('seconds', 0):.0f} s, peak RSS {p.get('rss_mb', 0):.0f} MB" if "error" not in p
                        else str(p["error"]))
                print(f"  mempalace normalize on it: {said}")
                results["big_peer"] = p
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
