"""What the chat export readers (ChatGPT, Claude.ai) share: both exports
are a ``conversations.json`` array (in a folder or a ``.zip``), told apart
by the shape their first conversation opens with, and read a conversation
at a time. A file holding one conversation object (single-chat exporters),
or ``{"conversations": [...]}``, is read too."""

from __future__ import annotations

import datetime as _dt
import re
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ....errors import InvalidInputError
from ..source import Item, Reader, ReadOptions, Skip
from .jsonarray import export_files, head, iter_export

__all__ = ["ExportReader"]

#: format -> (its label, what its conversations open with)
_SHAPES = {
    "chatgpt": ("ChatGPT", re.compile(r'"mapping"\s*:\s*\{')),
    "claude-ai": ("Claude.ai", re.compile(r'"chat_messages"\s*:\s*\[')),
}


def _first_shape(text: str) -> str | None:
    """The format whose conversation shape comes first in ``text``."""
    found = [(m.start(), name) for name, (_, shape) in _SHAPES.items() if (m := shape.search(text))]
    return min(found)[1] if found else None


class ExportReader(Reader):
    """A chat export: subclasses set ``beside`` (the files the service puts
    next to an empty ``conversations.json``) and ``id_field`` (how a
    skip names a conversation's missing id), and read one conversation."""

    beside: tuple[str, ...] = ()
    id_field = "an id"

    @abstractmethod
    def conversation_id(self, conv: Mapping[str, Any]) -> str | None:
        """The conversation's id, ``None`` if it has none."""

    @abstractmethod
    def older(self, conv: Mapping[str, Any], since: _dt.datetime) -> bool:
        """Was the conversation last updated before ``since``?"""

    @abstractmethod
    def messages(self, conv: Mapping[str, Any], conv_id: str, where: str) -> Iterator[Item]:
        """The messages of one conversation (``where`` names it)."""

    def detect(self, path: Path) -> bool:
        try:
            text = head(path)
            if not text.lstrip().startswith(("[", "{")):
                return False
            shape = _first_shape(text)
            if shape is not None:
                return shape == self.name
            # an empty export: tell it by the files the service puts beside it
            folder = path if path.is_dir() else path.parent
            return text.strip().replace(" ", "") == "[]" and any((folder / f).is_file() for f in self.beside)
        except OSError:
            return False

    def files(self, opts: ReadOptions) -> list[Path]:
        label = _SHAPES[self.name][0]
        found = export_files(opts.root, label)
        text = head(found[0])
        if not text.lstrip().startswith(("[", "{")):
            raise InvalidInputError(f"path: {str(found[0])!r} is not a {label} export (not JSON)")
        shape = _first_shape(text)
        if shape is not None and shape != self.name:
            raise InvalidInputError(f"path: {str(found[0])!r} is a {_SHAPES[shape][0]} export; use: ingest {shape}")
        return found

    def read(self, file: Path, opts: ReadOptions) -> Iterator[Item]:
        for item in iter_export(file):
            if isinstance(item, Skip):
                yield item
                continue
            where, index, conv = item
            at = f"{where}[{index}]"
            if not isinstance(conv, Mapping):
                yield Skip(at, "not a conversation object")
                continue
            conv_id = self.conversation_id(conv)
            if conv_id is None:
                yield Skip(at, f"conversation without {self.id_field}")
                continue
            if opts.since is not None and self.older(conv, opts.since):
                continue  # nothing in it is newer: prune (the service filters again anyway)
            yield from self.messages(conv, conv_id, at)
