"""LoCoMo benchmark files (a JSON list of conversations, each with
``session_N`` turn lists and ``session_N_date_time``): one episode per turn,
``occurred_at`` the session's date plus one second per turn (order kept),
image captions in metadata. Key ``<sample_id>/<dia_id>``. The evaluation
harness (:mod:`chronomem.adapters.eval`) reads the same files with these
functions."""

from __future__ import annotations

import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from ....errors import InvalidInputError
from ..source import Item, Reader, ReadOptions, Skip, SourceMessage
from .inputs import one_file, read_head

__all__ = ["READER", "load_locomo", "locomo_episodes", "parse_locomo_date"]


def parse_locomo_date(text: str) -> _dt.datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime."""
    cleaned = re.sub(r"\s+", " ", text.strip())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return _dt.datetime.strptime(cleaned, fmt).replace(tzinfo=_dt.timezone.utc)
        except ValueError:
            continue
    raise InvalidInputError(f"cannot read the LoCoMo session date {text!r}")


def load_locomo(path: str | Path) -> list[dict[str, Any]]:
    """Read a LoCoMo JSON file (a list of conversations)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"path: {path} is not valid JSON: {exc}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(c, dict) and "conversation" in c for c in data):
        raise InvalidInputError(
            f"path: {path} is not in the LoCoMo format (a list of objects with 'conversation' and 'qa')")
    return data


def locomo_episodes(conv: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The episodes of one LoCoMo conversation, one per turn."""
    c = conv["conversation"]
    out: list[dict[str, Any]] = []
    sessions = sorted((int(m.group(1)), key) for key in c if (m := re.fullmatch(r"session_(\d+)", key)))
    for n, key in sessions:
        turns = c[key]
        date_text = c.get(f"{key}_date_time")
        if not isinstance(turns, list) or not date_text:
            continue
        base = parse_locomo_date(date_text)
        for i, turn in enumerate(turns):
            text = str(turn.get("text") or "").strip()
            if not text:
                continue
            meta: dict[str, Any] = {"dia_id": turn.get("dia_id")}
            if turn.get("blip_caption"):
                meta["caption"] = turn["blip_caption"]
            out.append({
                "text": text, "speaker": turn.get("speaker"), "session": f"session_{n}",
                "occurred_at": base + _dt.timedelta(seconds=i), "metadata": meta,
                "source": f"locomo:{conv.get('sample_id', '')}",
            })
    return out


class LocomoReader(Reader):
    name = "locomo"
    description = "a LoCoMo benchmark file (conversations with session_N turns)"

    def detect(self, path: Path) -> bool:
        if not path.is_file() or path.suffix.lower() != ".json":
            return False
        head = read_head(path, 4096)
        return b'"conversation"' in head and b"haystack_sessions" not in head

    def files(self, opts: ReadOptions) -> list[Path]:
        return one_file(opts.root, "LoCoMo JSON file")

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        for conv in load_locomo(file):
            sample = str(conv.get("sample_id", ""))
            try:
                episodes = locomo_episodes(conv)
            except InvalidInputError as exc:
                yield Skip(f"{file.name}:{sample}", f"invalid: {exc}")
                continue
            for ep in episodes:
                dia = ep["metadata"].get("dia_id")
                yield SourceMessage(
                    key=f"{sample}/{dia}", text=ep["text"], occurred_at=ep["occurred_at"], speaker=ep["speaker"],
                    session=f"{sample}/{ep['session']}" if sample else ep["session"],
                    context={k: v for k, v in ep["metadata"].items() if k != "dia_id"} | {"dia_id": dia},
                )


READER = LocomoReader()
