"""A large Slack export folder for the reader's streaming and speed checks:
``write(path, messages, seed)`` writes users.json, channels.json and day
files (each a JSON array, written element by element), with threads across
days, joins, bots, files, edits, unknown users and a non-UTF-8 byte."""

from __future__ import annotations

import datetime as _dt
import json
import random
import sys
from pathlib import Path

__all__ = ["write"]

_WORDS = ("deploy build release plan budget review meeting notes bug fix ticket customer latency "
          "database index cache retry timeout migration schema alice bob friday tomorrow ship").split()
_DAY0 = 1704067200  # 2024-01-01T00:00:00Z


def write(path: Path, messages: int, seed: int = 0, per_day: int = 400, channels: int = 4) -> Path:
    """Write an export of ``messages`` messages under ``path``; returns ``path``."""
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    users = [{"id": f"U{i:06d}", "name": f"user{i}", "deleted": i % 17 == 0, "real_name": f"User {i}",
              "profile": {"real_name": f"User {i}", "display_name": f"u{i}"}} for i in range(60)]
    (path / "users.json").write_text(json.dumps(users, indent=4), encoding="utf-8")
    chans = [{"id": f"C{i:06d}", "name": f"chan-{i}", "created": _DAY0, "members": []} for i in range(channels)]
    (path / "channels.json").write_text(json.dumps(chans, indent=4), encoding="utf-8")
    written, day = 0, 0
    threads: list[str] = []
    while written < messages:
        chan = f"chan-{day % channels}"
        folder = path / chan
        folder.mkdir(exist_ok=True)
        stamp = _DAY0 + (day // channels) * 86400
        name = folder / f"{_dt.datetime.fromtimestamp(stamp, _dt.timezone.utc).date()}.json"
        with open(name, "wb") as fp:
            fp.write(b"[\n")
            for n in range(min(per_day, messages - written)):
                ts = f"{stamp + n * 86400 // max(per_day, 1)}.{n % 1000000:06d}"
                fp.write((b",\n" if n else b"") + _message(rng, ts, threads))
                written += 1
            fp.write(b"\n]\n")
        day += 1
    return path


def _message(rng: random.Random, ts: str, threads: list[str]) -> bytes:
    uid = f"U{rng.randrange(64):06d}"  # a few ids are not in users.json
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 120)))
    msg: dict[str, object] = {"client_msg_id": f"m-{ts}", "type": "message", "user": uid, "text": text, "ts": ts,
                              "team": "T0001", "user_profile": {"real_name": f"User {uid}", "display_name": uid}}
    r = rng.random()
    if r < 0.03:
        msg["subtype"] = "channel_join"
    elif r < 0.06:
        msg = {"type": "message", "subtype": "bot_message", "bot_id": "B0001", "username": "ci", "ts": ts,
               "text": "build passed", "attachments": [{"fallback": "build log " + text[:300]}]}
    elif r < 0.09:
        msg["files"] = [{"id": "F1", "name": "report.pdf", "title": "Report " + text[:40]}]
        msg["text"] = ""
    elif r < 0.12:
        msg["edited"] = {"user": uid, "ts": ts}
    elif r < 0.20:
        threads.append(ts)
        msg.update(thread_ts=ts, reply_count=2, replies=[])
    elif r < 0.35 and threads:
        msg.update(thread_ts=rng.choice(threads[-50:]), parent_user_id=uid)
    raw = json.dumps(msg, indent=4, ensure_ascii=False).encode()
    return raw.replace(b"fix", b"f\xffx", 1) if r > 0.995 else raw


if __name__ == "__main__":
    print(write(Path(sys.argv[1]), int(sys.argv[2])))
