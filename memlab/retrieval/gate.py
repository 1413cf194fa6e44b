"""Time as a gate (seed 002): only memories dated inside the range a question names."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memlab.retrieval.inputs import RetrievalInputs


@dataclass(frozen=True)
class Gate:
    mask: np.ndarray  # (Q, M) memories that may be candidates
    gated: np.ndarray  # (Q,) the question named a time
    widened: np.ndarray  # (Q,) its window held nothing and was widened by one day each side


def time_gate(inputs: RetrievalInputs) -> Gate:
    """Only memories dated inside a question's named range; an empty window widens once by a day."""
    days = np.broadcast_to(inputs.memory_days(), inputs.ages.shape)
    visible = inputs.visible
    mask = visible.copy()
    gated = np.zeros(len(inputs.question_ids), dtype=bool)
    widened = np.zeros_like(gated)
    for q, rng in enumerate(inputs.time_ranges):
        if rng is None:
            continue
        gated[q] = True
        lo, hi = rng.start.toordinal(), rng.end.toordinal()
        inside = (days[q] >= lo) & (days[q] <= hi) & visible[q]
        if not inside.any():
            widened[q] = True
            inside = (days[q] >= lo - 1) & (days[q] <= hi + 1) & visible[q]
        mask[q] = inside
    return Gate(mask, gated, widened)
