"""Selection rules: which feasible configuration to adopt.

Each rule is a sort order over the feasible rows of a results table (one row per
configuration). Ties fall through the listed keys and finally to row order, so the choice is
deterministic:

- ``smallest-bonus`` (the seed's rule): smallest bonus; then larger headroom; then smaller tau;
- ``max-headroom``: larger headroom; then smaller bonus; then smaller tau.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class SelectionRule:
    name: str
    keys: tuple[tuple[str, bool], ...]  # (column, ascending) in priority order
    meaning: str


SELECTION_RULES: dict[str, SelectionRule] = {
    r.name: r
    for r in (
        SelectionRule(
            "smallest-bonus",
            (("bonus", True), ("headroom", False), ("tau_days", True)),
            "smallest bonus that satisfies every criterion",
        ),
        SelectionRule(
            "max-headroom",
            (("headroom", False), ("bonus", True), ("tau_days", True)),
            "largest headroom among the feasible",
        ),
    )
}


def select(table: pd.DataFrame, rule: str = "smallest-bonus") -> int | None:
    """Positional index of the row the rule picks among ``feasible`` rows, or None if none is."""
    try:
        spec = SELECTION_RULES[rule]
    except KeyError:
        raise ValueError(
            f"unknown selection rule {rule!r}; available: {', '.join(SELECTION_RULES)}"
        ) from None
    feasible = np.flatnonzero(table["feasible"].to_numpy(dtype=bool))
    if feasible.size == 0:
        return None
    cand = table.iloc[feasible].assign(_row=feasible)
    cols = [c for c, _ in spec.keys if c in cand.columns] + ["_row"]
    asc = [a for c, a in spec.keys if c in cand.columns] + [True]
    ordered = cand.sort_values(cols, ascending=asc, kind="mergesort", na_position="last")
    return int(ordered["_row"].iloc[0])
