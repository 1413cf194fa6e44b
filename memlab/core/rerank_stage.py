"""The rerank stage: a deeper candidate pool, each (question, memory) pair scored by a reranker,
the final score blended with the reranker's, then the threshold and inject as the spec does.

The stage runs in the application, after the exported Qdrant query: the query returns the top
``depth`` memories by raw cosine (prefetch and limit ``depth``, no score threshold), each with
its post-bonus score (``final``), and the application scores each by the reranker and keeps

    blended = (1 - blend) * final + blend * rerank

then re-sorts on ``blended`` (ties: raw score, then dataset order, ``memlab.core.ranking``) and
injects the first ``inject`` at or above the stage's ``threshold``. Why a convex blend of the two
scores as they are: ``blend = 0`` is exactly the spec without reranking (at ``depth`` equal to
its candidates and its threshold), ``blend = 1`` is the reranker alone, and between them the
blended score moves linearly, so the sweep's threshold axis stays meaningful at every weight. A
rank fusion (RRF) would throw the scores away and with them what a threshold means; a product
would make a zero from either side a veto. The two scores sit on their own scales (cosines near
0.8, a probability in [0, 1], a reranking model's logit), so the threshold is tuned with the
blend, never carried over from the spec: the stage holds its own.

Arrays here are one row per question and one column per place in the pool, in candidate order
(raw descending, then dataset order: the order Qdrant's prefetch returns). The pool of depth
``d`` is the first ``d`` places of the pool of any larger depth, so one reranked pool of the
largest depth serves every depth of a sweep. A place past a question's known scores is NaN.

- ``RerankStage``: the stage as a record (what the tuned file holds);
- ``blend_scores``: the formula above, the one both paths call;
- ``stage_injected``: the one-config reference, question by question (``stage_order``: one
  question's injected places in order);
- ``stage_sweep_injected`` and ``stage_sweep``: every (depth, blend, threshold) at once,
  broadcast, held equal to the reference in tests/test_rerank_stage.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.ranking import rank_of, resort_order

if TYPE_CHECKING:
    import pandas as pd

RERANKERS = ("chat", "endpoint")  # the user's chat model (P(yes)), a /v1/rerank endpoint
MAX_DEPTH = 1000  # memories one question's pool may hold (each one is a reranker request's text)


def check_depth(depth: object, flag: str = "depth") -> int:
    return int(check_number(depth, flag, integer=True, minimum=1, maximum=MAX_DEPTH))


def check_blend(blend: object, flag: str = "blend") -> float:
    return float(check_number(blend, flag, minimum=0.0, maximum=1.0))


@dataclass(frozen=True)
class RerankStage:
    """A rerank stage after the exported query: which reranker (``RERANKERS``) and its model, the
    pool ``depth`` the query must return, the ``blend`` weight of the reranker's score, and the
    ``threshold`` on the blended score (the spec's ``inject`` still applies)."""

    reranker: str
    depth: int
    blend: float
    threshold: float
    model: str = ""  # the reranker's model, as the server named it ("" when not recorded)

    def __post_init__(self) -> None:
        if self.reranker not in RERANKERS:
            raise InputError(f"reranker: expected one of {', '.join(RERANKERS)}, got {self.reranker!r:.60}")
        check_depth(self.depth)
        check_blend(self.blend)
        check_number(self.threshold, "threshold")
        if not isinstance(self.model, str):
            raise InputError(f"model: expected a name, got {self.model!r:.60}")

    @classmethod
    def from_row(cls, row: Any, reranker: str, model: str = "") -> RerankStage:
        """The stage a row of ``stage_sweep`` (its depth, blend and threshold) chose, for this
        reranker and model."""
        return cls(reranker, int(row["depth"]), float(row["blend"]), float(row["threshold"]), model)

    def as_dict(self) -> dict[str, object]:
        return {
            "reranker": self.reranker,
            "model": self.model,
            "depth": self.depth,
            "blend": self.blend,
            "threshold": self.threshold,
        }

    def describe(self) -> str:
        """One line: where the stage runs and what it does."""
        model = f" ({self.model})" if self.model else ""
        return (
            f"rerank in the application after the query: the query returns {self.depth} candidates "
            f"(no score threshold), each scored by the {self.reranker} reranker{model}; score "
            f"(1 - {self.blend:g}) * final + {self.blend:g} * rerank, threshold {self.threshold:g}"
        )


def blend_scores(
    final: np.ndarray | float, rerank: np.ndarray | float, blend: np.ndarray | float
) -> np.ndarray:
    """``(1 - blend) * final + blend * rerank``: the stage's score (see the module's docstring)."""
    return (1.0 - np.asarray(blend, dtype=np.float64)) * final + np.asarray(blend, dtype=np.float64) * rerank


def _known(raw: np.ndarray) -> np.ndarray:
    return np.isfinite(raw)


def stage_injected(
    raw: np.ndarray,
    final: np.ndarray,
    rerank: np.ndarray,
    depth: int,
    blend: float,
    threshold: float,
    inject: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The one-config reference: (blended scores, injected mask), both (Q, P), for pools in
    candidate order (``raw``, ``final``, ``rerank``: NaN past a question's known scores). Question
    by question: the first ``depth`` known places, re-sorted on the blended score, the first
    ``inject`` of those at or above ``threshold``. A pool place whose reranker score is unknown
    (NaN) is refused: every candidate of the pool must be scored."""
    raw, final, rerank = (np.asarray(a, dtype=np.float64) for a in (raw, final, rerank))
    depth, blend = check_depth(depth), check_blend(blend)
    blended = blend_scores(final, rerank, blend)
    injected = np.zeros(raw.shape, dtype=bool)
    for q in range(raw.shape[0]):
        try:
            injected[q, stage_order(raw[q], blended[q], rerank[q], depth, threshold, inject)] = True
        except InputError as e:
            raise InputError(f"question {q}: {e}") from None
    return np.where(_known(raw), blended, np.nan), injected


def stage_order(
    raw: np.ndarray, blended: np.ndarray, rerank: np.ndarray, depth: int, threshold: float, inject: int
) -> list[int]:
    """One question's injected places, best first (the reference's rule, which ``stage_injected``
    applies per question and ``memlab.Retriever`` applies to the pool its query returned): the
    first ``depth`` known places, re-sorted on the blended score (ties: raw, then place), the
    first ``inject`` of those at or above ``threshold``."""
    pool = np.flatnonzero(_known(raw))[:depth]
    if not np.isfinite(rerank[pool]).all():
        raise InputError("a candidate of the pool has no reranker score")
    order = pool[resort_order(raw[pool], blended[pool])]
    return [int(i) for i in order if blended[i] >= threshold][:inject]


def stage_sweep_injected(
    raw: np.ndarray,
    final: np.ndarray,
    rerank: np.ndarray,
    depths: Sequence[int],
    blends: Sequence[float],
    thresholds: Sequence[float],
    inject: int,
) -> np.ndarray:
    """Every configuration's injected mask at once: (D, W, T, Q, P) for ``depths`` x ``blends`` x
    ``thresholds``. The same formula and rule as ``stage_injected``, broadcast: the blended score
    per (blend, question, place); the re-sort per (depth, blend) with the places outside the pool
    last; among the pool those reaching a threshold are a prefix of the re-sort (it is by the
    blended score first), so a place is injected when it reaches and its rank is below ``inject``."""
    raw, final, rerank = (np.asarray(a, dtype=np.float64) for a in (raw, final, rerank))
    d = np.array([check_depth(x) for x in depths], dtype=np.int64)
    w = np.array([check_blend(x) for x in blends], dtype=np.float64)
    t = np.asarray(thresholds, dtype=np.float64)
    known = _known(raw)
    place = np.cumsum(known, axis=-1) - 1  # a known place's position among the question's known ones
    pool = known & (place < d[:, None, None])  # (D, Q, P)
    deepest = pool[int(np.argmax(d))] if len(d) else known
    if not np.isfinite(np.where(deepest, rerank, 0.0)).all():
        raise InputError("a candidate of the pool has no reranker score")
    blended = blend_scores(final, np.where(known, rerank, 0.0), w[:, None, None])  # (W, Q, P)
    inside = pool[:, None]  # (D, 1, Q, P)
    b = np.where(inside, blended[None], -np.inf)
    r = np.where(inside, raw, -np.inf)
    ranks = rank_of(resort_order(r, b))  # (D, W, Q, P)
    reaches = inside[:, :, None] & (blended[None, :, None] >= t[None, None, :, None, None])
    return reaches & (ranks[:, :, None] < inject)


def stage_sweep(
    raw: np.ndarray,
    final: np.ndarray,
    rerank: np.ndarray,
    relevant: np.ndarray,
    nohit: np.ndarray,
    depths: Sequence[int],
    blends: Sequence[float],
    thresholds: Sequence[float],
    inject: int,
) -> pd.DataFrame:
    """One row per (depth, blend, threshold), in that nested order: ``answered`` (questions with a
    relevant memory injected; ``relevant``: (Q, P) per pool place), ``nohit_injected`` (no-hit
    questions, ``nohit``: (Q,), with any memory injected), ``utility`` (answered minus
    nohit_injected: the held-out study's objective), ``recall_any`` (answered over the questions
    that are not no-hit) and ``injected_mean`` (memories injected per question)."""
    import pandas as pd

    inj = stage_sweep_injected(raw, final, rerank, depths, blends, thresholds, inject)
    relevant = np.asarray(relevant, dtype=bool)
    nohit = np.asarray(nohit, dtype=bool)
    answered = (inj & relevant).any(axis=-1).sum(axis=-1)
    nohit_inj = (inj.any(axis=-1) & nohit).sum(axis=-1)
    labelled = int((~nohit).sum())
    d, w, t = np.meshgrid(np.asarray(depths), np.asarray(blends), np.asarray(thresholds), indexing="ij")
    return pd.DataFrame(
        {
            "depth": d.ravel().astype(np.int64),
            "blend": w.ravel().astype(np.float64),
            "threshold": t.ravel().astype(np.float64),
            "answered": answered.ravel().astype(np.int64),
            "nohit_injected": nohit_inj.ravel().astype(np.int64),
            "utility": (answered - nohit_inj).ravel().astype(np.int64),
            "recall_any": answered.ravel() / labelled if labelled else np.full(answered.size, np.nan),
            "injected_mean": inj.sum(axis=-1).mean(axis=-1).ravel() if inj.shape[-2] else 0.0,
        }
    )
