"""What the extractor's own labels say, learned on the tuning streams and used to correct it.

Content supersession (``memlab.drift.content_supersession``) judges each stream on its own: a
topic's centroid is the mean of a handful of that stream's memories, and nothing in one stream
says what a distractor reads like. But the extractor labels every memory it writes, in every
stream, with the same schema: a (topic key, type) and a type, ``event`` among them. Nine facts in
ten are filed under their own topic and four distractors in five are typed ``event``, so over the
tuning streams those labels, noisy as they are, describe the schema well:

- **key centroids**: the mean embedding of every tuning memory filed under each (topic key,
  type), ``event`` excepted. A memory is refiled under the centroid of its own type it is closest
  to, with a bonus ``KEY_TRUST`` for the key it was filed under. A misfiled "I work as a nurse"
  lands with the other job statements of 200 streams, not with the city key of its own.
- **event direction**: the Fisher discriminant between the memories typed ``event`` and those
  typed as facts (``(S_w + ridge I)^-1 (mean_event - mean_fact)``). The score is scaled so that
  the tuning facts average 0 and the tuning events 1: a memory typed like a fact whose score
  reaches a threshold (a tuned axis) reads like an event ("my cousin flew in from Chicago") and
  is treated as one.

It reads the extractor's labels (filed topic, type) and the embeddings of the tuning streams
only, never the generator's topic, value or kind, and nothing of the held-out streams but their
own memories' embeddings and labels. ``memlab.drift.signals`` measures how well the
direction generalises to a topic it was not fit on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EVENT_TYPE = "event"
KEY_TRUST = 0.05  # bonus for the extractor's own key when refiling by the learned centroids
RIDGE = 0.1  # added to the within-class covariance's diagonal (the unit vectors' scale)


@dataclass(frozen=True)
class ExtractorPrior:
    keys: tuple[tuple[str, str], ...]  # every (topic key, type) seen in the fit, events excepted
    centroids: np.ndarray  # (K, d) unit mean of the memories filed under each key
    event_direction: np.ndarray  # (d,) zeros when the fit saw no events or no facts
    fact_mean: float  # mean projection of the fit's facts (scaled to 0)
    event_mean: float  # mean projection of the fit's events (scaled to 1)


def fit_extractor_prior(vectors: np.ndarray, keys: Sequence[tuple[str, str]]) -> ExtractorPrior:
    """The prior from unit ``vectors`` (N, d) and each one's extractor key (topic key, type)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    types = np.array([t for _, t in keys])
    event = types == EVENT_TYPE
    names = tuple(sorted({k for k in keys if k[1] != EVENT_TYPE}))
    index = {k: i for i, k in enumerate(names)}
    filed = np.array([index.get(k, -1) for k in keys])
    sums = np.zeros((len(names), vectors.shape[1]))
    np.add.at(sums, filed[filed >= 0], vectors[filed >= 0])
    centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    direction = np.zeros(vectors.shape[1])
    fact_mean, event_mean = 0.0, 1.0
    if event.any() and (~event).any():
        mean_event, mean_fact = vectors[event].mean(axis=0), vectors[~event].mean(axis=0)
        within = np.concatenate([vectors[event] - mean_event, vectors[~event] - mean_fact])
        scatter = within.T @ within / max(len(within) - 2, 1)
        direction = np.linalg.solve(scatter + RIDGE * np.eye(len(direction)), mean_event - mean_fact)
        fact_mean, event_mean = float(mean_fact @ direction), float(mean_event @ direction)
    return ExtractorPrior(names, centroids, direction, fact_mean, event_mean)


def event_score(prior: ExtractorPrior, vectors: np.ndarray) -> np.ndarray:
    """How much each memory reads like an event: 0 at the fit's mean fact, 1 at its mean event."""
    spread = prior.event_mean - prior.fact_mean
    return (np.asarray(vectors) @ prior.event_direction - prior.fact_mean) / (spread if spread else 1.0)


def refiled_keys(
    prior: ExtractorPrior, vectors: np.ndarray, keys: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """Each memory's key after refiling by the learned centroids: the key of its own type whose
    centroid is closest, plus ``KEY_TRUST`` for its filed key (ties: the first in sorted order).
    Events, and memories of a type the fit never saw, keep the key they were filed under."""
    known_types = np.array([t for _, t in prior.keys])
    cos = np.asarray(vectors, dtype=np.float64) @ prior.centroids.T  # (M, K)
    out = []
    for m, key in enumerate(keys):
        own = known_types == key[1]
        if key[1] == EVENT_TYPE or not own.any():
            out.append(key)
            continue
        score = np.where(own, cos[m], -np.inf) + KEY_TRUST * np.array([k == key for k in prior.keys])
        out.append(prior.keys[int(np.argmax(score))])
    return out
