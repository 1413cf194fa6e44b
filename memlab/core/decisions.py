"""The margin a configuration keeps from every decision it depends on.

For each question, the spec decides which memories go into the prompt through two kinds of
comparison (``memlab.core.ranking``: the re-sorted candidates, best first, ``f1 >= f2 >= ...``):

- the threshold: each of the first ``inject`` candidates is injected or not according to
  ``f_j >= threshold``, a decision ``|f_j - threshold|`` away from going the other way;
- the order at the cut: when the (inject+1)-th candidate also reaches the threshold, which of it
  and the inject-th goes in is decided by ``f_inject - f_(inject+1)``.

The decision margin is the smallest of these over every question: the amount by which any one
final score could move before an injection changes (0: a decision sits exactly on a tie).
Candidates past inject+1 decide nothing (they are not injected whichever way their score moves
by less than the margin), nor do questions without a candidate.

Under an MMR stage with diversity 0 the candidates are the top ones by raw score, as without MMR,
and the margin is the same. With diversity above 0 MMR's picks are decided by other numbers than
the final scores, and no one margin is exact: ``decision_margin`` refuses it
(``memlab.core.spec.MMR_NO_MARGIN`` says why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memlab.core.errors import InputError
from memlab.core.shards import Pool
from memlab.core.spec import MMR_NO_MARGIN, RetrievalSpec, retrieve


@dataclass(frozen=True)
class Decision:
    """The closest decision: its distance, the question (index and id) and what it decides."""

    margin: float  # inf when nothing is decided (no question has a candidate)
    question: int | None = None
    question_id: str | None = None
    what: str = ""  # e.g. "m3 at the threshold (injected)", "m3 over m5 at the cut"

    def text(self) -> str:
        if self.question is None:
            return "decision margin: none (no question has a candidate)"
        return f"decision margin {self.margin:.4g}: {self.question_id}, {self.what}"


def question_decisions(
    finals: np.ndarray, threshold: float, inject: int
) -> list[tuple[float, str, int, int]]:
    """(distance, kind, j, j2) for one question's re-sorted finals: each of the first ``inject``
    against the threshold (kind "threshold", candidate j), and the order at the cut when the
    (inject+1)-th reaches the threshold (kind "cut", candidates j and j2)."""
    out = [(abs(float(f) - threshold), "threshold", j, -1) for j, f in enumerate(finals[:inject])]
    if len(finals) > inject and finals[inject] >= threshold:
        out.append((float(finals[inject - 1] - finals[inject]), "cut", inject - 1, inject))
    return out


def decision_margin(
    raw: np.ndarray,
    ages: np.ndarray,
    memory_ids: tuple[str, ...],
    spec: RetrievalSpec,
    question_ids: tuple[str, ...] | None = None,
    pool: Pool | None = None,
) -> Decision:
    """The smallest distance from any decision of ``spec`` over every question (rows of ``raw``,
    NaN: not retrievable; ``ages`` per memory or per question and memory), with the one it is;
    ``pool``: the tenant filter and the shards the candidates come from."""
    if spec.mmr and spec.diversity > 0:
        raise InputError(MMR_NO_MARGIN)
    raw = np.asarray(raw, dtype=np.float64)
    ages = np.broadcast_to(np.asarray(ages, dtype=np.float64), raw.shape)
    best = Decision(math.inf)
    for q in range(raw.shape[0]):
        cands = retrieve(raw[q], ages[q], memory_ids, spec, pool)
        finals = np.array([c.final for c in cands])
        for distance, kind, j, j2 in question_decisions(finals, spec.threshold, spec.inject):
            if distance < best.margin:
                c = cands[j]
                what = (
                    f"{c.memory_id} at the threshold ({'injected' if c.injected else 'not injected'}, "
                    f"final {c.final:.4f})"
                    if kind == "threshold"
                    else f"{c.memory_id} over {cands[j2].memory_id} at the cut (inject {spec.inject})"
                )
                qid = question_ids[q] if question_ids is not None else str(q)
                best = Decision(distance, q, qid, what)
    return best
