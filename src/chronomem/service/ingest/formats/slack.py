"""A Slack workspace export (the folder Slack's "Export data" zip unpacks to,
or the ``.zip`` itself): ``users.json``, ``channels.json`` (``groups.json``,
``dms.json``, ``mpims.json``) and one folder per conversation of
``YYYY-MM-DD.json`` day files, each a JSON array of messages. See
docs/import/slack.md."""

from __future__ import annotations

import datetime as _dt
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, Iterator

from ....errors import InvalidInputError
from ..source import Item, Reader, ReadOptions, Skip, SourceMessage
from .jsonarray import iter_array, iter_objects

__all__ = ["READER", "SlackReader"]

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_TS = re.compile(r"^(\d{1,12})(?:\.(\d{1,9}))?$")
_LISTINGS = ("channels.json", "groups.json", "dms.json", "mpims.json")
_USERS = ("users.json", "org_users.json")  # org_users.json: Enterprise Grid exports
#: membership and channel-settings events: not something anyone said
_PLUMBING = frozenset({
    "channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name",
    "channel_archive", "channel_unarchive", "channel_convert_to_private", "channel_convert_to_public",
    "group_join", "group_leave", "group_topic", "group_purpose", "group_name", "group_archive",
    "group_unarchive", "bot_add", "bot_remove", "bot_enable", "bot_disable", "pinned_item",
    "unpinned_item", "reminder_add", "tombstone", "sh_room_created", "sh_room_shared",
})
_SUMMARY_MAX = 200
_MARKUP = re.compile(r"<([^<>\n]*)>")


@dataclass
class _Workspace:
    """Names from the export's listings: user id -> name, conversation
    folder -> (id, name), channel id -> name."""

    users: dict[str, str] = field(default_factory=dict)
    folders: dict[str, tuple[str, str]] = field(default_factory=dict)
    channels: dict[str, str] = field(default_factory=dict)


def _user_name(entry: Any) -> str | None:
    """real_name, then display_name, then the login name, from a users.json
    entry or a message's ``user_profile``."""
    if not isinstance(entry, dict):
        return None
    profile = _obj(entry.get("profile"))
    for k in ("real_name", "display_name", "name"):
        for src in (entry, profile):
            v = src.get(k)
            if isinstance(v, str) and v.strip():
                return v.strip()
    return None


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _parse_ts(ts: Any) -> _dt.datetime | None:
    """Slack's ``"1736478630.905399"``, exact to the microsecond (no float)."""
    m = _TS.match(ts if isinstance(ts, str) else "")
    if not m:
        return None
    micro = int((m.group(2) or "").ljust(6, "0")[:6])
    return _dt.datetime.fromtimestamp(int(m.group(1)), _dt.timezone.utc).replace(microsecond=micro)


def _one_line(kind: str, label: str) -> str:
    label = " ".join(label.split())
    if len(label) > _SUMMARY_MAX:
        label = label[:_SUMMARY_MAX - 1] + "…"
    return f"[{kind}: {label}]"


class SlackReader(Reader):
    name = "slack"
    description = "a Slack workspace export (folder or .zip): one episode per message, threads as sessions"

    def __init__(self) -> None:
        self._cache: dict[tuple[str, tuple[float, ...]], _Workspace] = {}

    # -- finding the inputs -------------------------------------------------

    def detect(self, path: Path) -> bool:
        try:
            if path.is_dir():
                return any((path / u).is_file() for u in _USERS) and (path / "channels.json").is_file() \
                    or (path / "users.json").is_file() and any((path / n).is_file() for n in _LISTINGS)
            if path.suffix.lower() == ".zip" and zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as zf:
                    return self._zip_prefix(zf) is not None
        except (OSError, zipfile.BadZipFile):
            pass
        return False

    def files(self, opts: ReadOptions) -> list[Path]:
        root = opts.root
        if not root.exists():
            raise InvalidInputError(f"path: {str(root)!r} does not exist")
        if root.is_file():
            if not self.detect(root):
                raise InvalidInputError(f"path: {str(root)!r} is not a Slack export zip "
                                        "(no users.json / channels.json inside)")
            return [root]
        if not self.detect(root):
            raise InvalidInputError(f"path: {str(root)!r} is not a Slack export folder "
                                    "(needs users.json and channels.json)")
        cutoff = (opts.since - _dt.timedelta(days=1)).date().isoformat() if opts.since else ""
        return [day for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
                for day in sorted(folder.iterdir()) if _DAY.match(day.name) and day.stem >= cutoff]

    @staticmethod
    def _zip_prefix(zf: zipfile.ZipFile) -> str | None:
        """The folder inside the zip that holds users.json and a listing ("" at
        the top; a re-zipped export often has one wrapping folder)."""
        for name in sorted(zf.namelist(), key=len):
            p = PurePosixPath(name)
            if p.name in _USERS and len(p.parts) <= 2:
                prefix = "" if len(p.parts) == 1 else p.parts[0] + "/"
                if any(prefix + n in zf.NameToInfo for n in _LISTINGS):
                    return prefix
        return None

    # -- reading --------------------------------------------------------------

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        if file.suffix.lower() == ".zip":
            yield from self._read_zip(file)
            return
        ws = self._workspace_dir(file.parent.parent)
        with open(file, "rb") as fp:
            yield from self._read_day(fp, f"{file.parent.name}/{file.name}", ws)

    def _read_zip(self, file: Path) -> Iterator[Item]:
        with zipfile.ZipFile(file) as zf:
            prefix = self._zip_prefix(zf) or ""
            ws = _Workspace()
            for n in (*_USERS, *_LISTINGS):
                if prefix + n in zf.NameToInfo:
                    with zf.open(prefix + n) as fp:
                        self._load_listing(ws, n, fp)
            days = sorted(n[len(prefix):] for n in zf.namelist() if n.startswith(prefix))
            for rel in days:
                parts = PurePosixPath(rel).parts
                if len(parts) == 2 and _DAY.match(parts[1]):
                    with zf.open(prefix + rel) as fp:
                        yield from self._read_day(fp, rel, ws)

    def _workspace_dir(self, root: Path) -> _Workspace:
        """The listings of an export folder, read once per change of them."""
        present = [n for n in (*_USERS, *_LISTINGS) if (root / n).is_file()]
        sig = tuple((root / n).stat().st_mtime for n in present)
        key = (str(root), sig)
        if key not in self._cache:
            ws = _Workspace()
            for n in present:
                with open(root / n, "rb") as fp:
                    self._load_listing(ws, n, fp)
            self._cache = {key: ws}  # one export at a time: keep memory flat
        return self._cache[key]

    @staticmethod
    def _load_listing(ws: _Workspace, name: str, fp: IO[bytes]) -> None:
        for item in iter_array(fp, name):  # a broken listing only costs names, never the import
            if isinstance(item, Skip):
                continue
            entry = _obj(item[1])
            ident = _str(entry.get("id"))
            if not ident:
                continue
            if name in _USERS:
                ws.users[ident] = _user_name(entry) or ident
            else:
                label = _str(entry.get("name")) or ident
                ws.folders[label] = (ident, label)
                ws.channels[ident] = label

    def _read_day(self, fp: IO[bytes], where: str, ws: _Workspace) -> Iterator[Item]:
        folder, day = where.split("/")[0], where.split("/")[1][:-5]
        chan_id, chan = ws.folders.get(folder, (folder, folder))
        for item in iter_objects(fp, where, "not a message object"):
            if isinstance(item, Skip):
                yield item
                continue
            index, msg = item
            yield self._message(msg, f"{where}[{index}]", chan_id, chan, day, ws)

    def _message(self, msg: dict[str, Any], where: str, chan_id: str, chan: str, day: str,
                 ws: _Workspace) -> Item:
        when = _parse_ts(msg.get("ts"))
        if when is None:
            return Skip(where, "no valid ts")
        key = f"{chan_id}/{msg['ts']}"
        subtype = _str(msg.get("subtype")) or ""
        if subtype in _PLUMBING or msg.get("type", "message") != "message":
            return Skip(key, f"plumbing: {subtype or msg.get('type')}")
        if msg.get("hidden") is True:
            return Skip(key, "hidden")
        bot = subtype == "bot_message" or ("bot_id" in msg and "user" not in msg)
        speaker = self._speaker(msg, bot, ws)
        lines = [self._render(msg["text"], ws)] if isinstance(msg.get("text"), str) else []
        # "file" (one dict) is the pre-2019 shape of "files"
        for f in _list(msg.get("files")) or [msg.get("file")]:
            if isinstance(f, dict):
                title, fname = str(f.get("title") or ""), str(f.get("name") or "")
                label = f"{title} ({fname})" if title and fname and title != fname else title or fname
                lines.append(_one_line("file", label or str(f.get("id") or "?")))
        for a in _list(msg.get("attachments")):
            if isinstance(a, dict):
                label = a.get("title") or a.get("fallback") or a.get("text") or a.get("from_url") or "?"
                lines.append(_one_line("attachment", self._render(str(label), ws)))
        text = "\n".join(s for s in lines if s.strip()).strip()
        if not text:
            return Skip(key, "empty")
        thread = _str(msg.get("thread_ts"))
        context: dict[str, Any] = {"channel": chan}
        if thread:
            context["thread"] = thread
        if isinstance(msg.get("edited"), dict):
            context["edited"] = True
        if bot:
            context["bot"] = True
        return SourceMessage(key=key, text=text, occurred_at=when, speaker=speaker,
                             session=f"#{chan}/{thread or day}", context=context)

    @staticmethod
    def _speaker(msg: dict[str, Any], bot: bool, ws: _Workspace) -> str | None:
        if bot:
            prof = _obj(msg.get("bot_profile"))
            for v in (msg.get("username"), prof.get("name")):
                if isinstance(v, str) and v.strip():
                    return v.strip()
        uid = _str(msg.get("user")) or _str(msg.get("bot_id"))
        if not uid:
            return None
        if uid in ws.users:
            return ws.users[uid]
        # a user missing from users.json; not remembered for mentions, so a
        # message renders the same whichever files were read before it
        return _user_name(msg.get("user_profile")) or uid

    @staticmethod
    def _render(text: str, ws: _Workspace) -> str:
        """Slack's mrkdwn markup made readable: mentions by name, links as
        ``label (url)``, then the three entities Slack escapes."""
        def sub(m: re.Match[str]) -> str:
            body, _, label = m.group(1).partition("|")
            if body.startswith("@"):
                return "@" + (label or ws.users.get(body[1:], body[1:]))
            if body.startswith("#"):
                return "#" + (label or ws.channels.get(body[1:], body[1:]))
            if body.startswith("!"):  # <!here>, <!subteam^S1|@team>, <!date^...|fallback>
                return label if label else "@" + body[1:].split("^")[0]
            if label and label != body and label != body.split(":", 1)[-1]:
                return f"{label} ({body})"
            return label or body
        out = _MARKUP.sub(sub, text)
        return out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


READER = SlackReader()
