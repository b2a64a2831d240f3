"""LongMemEval files (a JSON list of questions, each with its haystack
sessions): one episode per turn of each distinct session, ``occurred_at``
from ``haystack_dates``. Key ``<session id>/<turn index>``: a session shared
by several questions is stored once. The file is streamed a question at a
time (LongMemEval-M is gigabytes)."""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any, Iterator

from ..source import Item, Reader, ReadOptions, Skip, SourceMessage
from .inputs import one_file, read_head
from .jsonarray import iter_objects

__all__ = ["READER", "lme_date"]


def lme_date(text: Any) -> _dt.datetime | None:
    """``"2023/05/20 (Sat) 02:21"`` -> an aware UTC datetime (None if unreadable)."""
    if not isinstance(text, str):
        return None
    m = re.match(r"(\d{4})/(\d{2})/(\d{2})(?:\s*\([A-Za-z]+\))?\s*(\d{2}):(\d{2})", text.strip())
    if not m:
        return None
    y, mo, d, h, mi = (int(x) for x in m.groups())
    return _dt.datetime(y, mo, d, h, mi, tzinfo=_dt.timezone.utc)


class LongMemEvalReader(Reader):
    name = "longmemeval"
    description = "a LongMemEval file (questions with haystack_sessions)"

    def detect(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() == ".json" and b"haystack_sessions" in read_head(path, 65536)

    def files(self, opts: ReadOptions) -> list[Path]:
        return one_file(opts.root, "LongMemEval JSON file")

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        seen: set[str] = set()  # session ids only: a few thousand strings
        with file.open("rb") as fp:
            for got in iter_objects(fp, file.name, "invalid: not a question object"):
                if isinstance(got, Skip):
                    yield got
                else:
                    yield from self._sessions(got[1], seen)

    @staticmethod
    def _sessions(element: dict[str, Any], seen: set[str]) -> Iterator[Item]:
        """The turns of the question's sessions not read before."""
        for sid, date, session in zip(element.get("haystack_session_ids", []),
                                      element.get("haystack_dates", []),
                                      element.get("haystack_sessions", []), strict=False):
            if str(sid) in seen:
                continue
            seen.add(str(sid))
            when = lme_date(date)
            for i, turn in enumerate(session or []):
                text = str((turn or {}).get("content") or "")
                if not text.strip():
                    yield Skip(f"{sid}/{i}", "empty")
                    continue
                yield SourceMessage(key=f"{sid}/{i}", text=text, occurred_at=when, speaker=turn.get("role"),
                                    session=str(sid))


READER = LongMemEvalReader()
