"""Selection rules: which feasible configuration to adopt.

Each rule is a sort order over the feasible rows of a results table (one row per
configuration). Ties fall through the listed keys and finally to row order, so the choice is
deterministic:

- ``smallest-bonus`` (the seed's rule): smallest bonus; then larger headroom; then smaller tau;
- ``max-headroom``: larger headroom; then smaller bonus; then smaller tau;
- ``max-margin``: larger smallest criterion margin (``min_margin``); then smaller bonus; then
  smaller tau.

``select_streaming`` applies a rule to a sweep delivered in chunks: each chunk's winner is kept,
in chunk order, and the rule is applied once more to the winners, so ties still fall to the
earliest configuration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from memlab.core.errors import InputError
from memlab.core.registry import lookup

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
        SelectionRule(
            "max-margin",
            (("min_margin", False), ("bonus", True), ("tau_days", True)),
            "largest smallest-margin among the feasible",
        ),
    )
}


def select(table: pd.DataFrame, rule: str = "smallest-bonus") -> int | None:
    """Positional index of the row the rule picks among ``feasible`` rows, or None if none is."""
    spec = lookup(SELECTION_RULES, rule, "selection rule")
    feasible = np.flatnonzero(table["feasible"].to_numpy(dtype=bool))
    if feasible.size == 0:
        return None
    missing = [c for c, _ in spec.keys if c not in table.columns]
    if missing:
        raise InputError(
            f"selection rule {rule!r} needs column(s) {', '.join(missing)}, which the table lacks"
        )
    cand = table.iloc[feasible].assign(_row=feasible)
    cols = [c for c, _ in spec.keys] + ["_row"]
    asc = [a for _, a in spec.keys] + [True]
    ordered = cand.sort_values(cols, ascending=asc, kind="mergesort", na_position="last")
    return int(ordered["_row"].iloc[0])


def select_streaming(
    frames: Iterable[pd.DataFrame], rule: str = "smallest-bonus"
) -> tuple[pd.DataFrame, int, int]:
    """(the chosen row as a one-row frame, possibly empty; feasible count; total count)."""
    import pandas as pd

    winners, feasible, total = [], 0, 0
    for frame in frames:
        total += len(frame)
        feasible += int(frame["feasible"].sum())
        i = select(frame, rule)
        if i is not None:
            winners.append(frame.iloc[[i]])
    if not winners:
        return pd.DataFrame(), feasible, total
    best = pd.concat(winners)
    return best.iloc[[select(best, rule)]], feasible, total
