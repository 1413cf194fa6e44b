"""Selection rules: which configuration to adopt.

Each rule is a sort order over the rows of a results table (one row per configuration): the
feasible rows only, except for ``max-utility``, which ranks every row. Ties fall through the
listed keys and finally to row order, so the choice is deterministic:

- ``smallest-bonus`` (the seed's rule): smallest bonus; then larger headroom; then smaller tau;
- ``max-headroom``: larger headroom; then smaller bonus; then smaller tau;
- ``max-margin``: larger smallest criterion margin (``min_margin``); then smaller bonus; then
  smaller tau;
- ``max-utility``: larger ``utility`` (``utility``: current memories injected, minus stale
  injections, minus wrong injections, minus ``nohit_weight`` times the memories injected on no-hit
  questions); then feasible before not; then larger ``min_margin``; then smaller bonus; then
  smaller tau. It is the rule a sweep falls back to when nothing is feasible (``FALLBACK``).

``select_streaming`` applies a rule to a sweep delivered in chunks: each chunk's winner is kept,
in chunk order, and the rule is applied once more to the winners, so ties still fall to the
earliest configuration. ``choose_streaming`` does the same for a rule and its fallback at once,
and collects which criteria conflict (``memlab.core.conflicts``) on the way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memlab.core.conflicts import ConflictFinder, Conflicts
from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.registry import lookup

if TYPE_CHECKING:
    import pandas as pd


# the columns the utility reads, and the metric groups of memlab.core.sweep that write them
UTILITY_COLUMNS = ("current_injected", "stale_injected", "wrong_injected", "injected_nohit")
UTILITY_METRICS = ("injected", "stale", "wrong")
UTILITY_FORMULA = (
    "current memories injected - stale injections - wrong injections "
    "- nohit_weight x memories injected on no-hit questions"
)
DEFAULT_NOHIT_WEIGHT = 1.0


def utility_kernel(
    current, stale, wrong, nohit, nohit_weight: float = DEFAULT_NOHIT_WEIGHT, wrong_weight: float = 1.0
) -> np.ndarray:
    """``current - stale - wrong_weight * wrong - nohit_weight * nohit``, per configuration: each
    current memory in the prompt counts +1, each stale one -1, each wrong one ``-wrong_weight``
    (1 for a sweep) and each memory injected on a no-hit question ``-nohit_weight``."""
    current, stale, wrong, nohit = (np.asarray(x, dtype=np.float64) for x in (current, stale, wrong, nohit))
    return current - stale - wrong_weight * wrong - nohit_weight * nohit


def utility(
    table: pd.DataFrame, nohit_weight: float = DEFAULT_NOHIT_WEIGHT, wrong_weight: float = 1.0
) -> np.ndarray:
    """The utility of every row of a sweep's table (``utility_kernel`` over its columns
    ``current_injected``, ``stale_injected``, ``wrong_injected`` and ``injected_nohit``; a column
    the table lacks is an error naming it)."""
    check_number(nohit_weight, "nohit_weight", minimum=0)
    check_number(wrong_weight, "wrong_weight", minimum=0)
    missing = [c for c in UTILITY_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(
            f"the utility needs column(s) {', '.join(missing)}, which the table lacks "
            f"(the sweep's metric groups {', '.join(UTILITY_METRICS)})"
        )
    return utility_kernel(
        *(table[c].to_numpy() for c in UTILITY_COLUMNS), nohit_weight=nohit_weight, wrong_weight=wrong_weight
    )


@dataclass(frozen=True)
class SelectionRule:
    name: str
    keys: tuple[tuple[str, bool], ...]  # (column, ascending) in priority order
    meaning: str
    feasible_only: bool = True  # ranks the feasible rows only (else every row)
    metrics: tuple[str, ...] = field(default=())  # the sweep's metric groups its columns come from


SELECTION_RULES: dict[str, SelectionRule] = {
    r.name: r
    for r in (
        SelectionRule(
            "smallest-bonus",
            (("bonus", True), ("headroom", False), ("tau_days", True)),
            "smallest bonus that satisfies every criterion",
            metrics=("headroom",),
        ),
        SelectionRule(
            "max-headroom",
            (("headroom", False), ("bonus", True), ("tau_days", True)),
            "largest headroom among the feasible",
            metrics=("headroom",),
        ),
        SelectionRule(
            "max-margin",
            (("min_margin", False), ("bonus", True), ("tau_days", True)),
            "largest smallest-margin among the feasible",
        ),
        SelectionRule(
            "max-utility",
            (
                ("utility", False),
                ("feasible", False),
                ("min_margin", False),
                ("bonus", True),
                ("tau_days", True),
            ),
            f"largest utility ({UTILITY_FORMULA}) over every configuration, feasible or not",
            feasible_only=False,
            metrics=UTILITY_METRICS,
        ),
    )
}
FALLBACK = "max-utility"  # the rule a sweep uses when nothing is feasible
DEFAULT_RULE = "max-margin"  # the rule a sweep chooses by when none is named


def rule_metrics(*rules: str) -> tuple[str, ...]:
    """The sweep's metric groups the rules read (in the order first named)."""
    return tuple(
        dict.fromkeys(m for r in rules for m in lookup(SELECTION_RULES, r, "selection rule").metrics)
    )


def select(
    table: pd.DataFrame,
    rule: str = "smallest-bonus",
    *,
    nohit_weight: float = DEFAULT_NOHIT_WEIGHT,
    wrong_weight: float = 1.0,
    value: np.ndarray | None = None,
) -> int | None:
    """Positional index of the row the rule picks (among the ``feasible`` rows, unless the rule
    ranks every row), or None if there is none to pick; the weights are the utility's, and
    ``value`` (one per row) stands for the utility where a study ranks by an objective of its own
    (``memlab.studies.heldout``)."""
    spec = lookup(SELECTION_RULES, rule, "selection rule")
    rows = (
        np.flatnonzero(table["feasible"].to_numpy(dtype=bool))
        if spec.feasible_only
        else np.arange(len(table))
    )
    if rows.size == 0:
        return None
    needed = [c for c, _ in spec.keys if c != "utility"]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise InputError(
            f"selection rule {rule!r} needs column(s) {', '.join(missing)}, which the table lacks"
        )
    if value is None and any(c == "utility" for c, _ in spec.keys):
        value = utility(table, nohit_weight, wrong_weight)
    elif value is not None:
        value = np.asarray(value, dtype=np.float64)
    # only the rows at the best value of the first key can come first (NaN sorts last): the sort
    # over the rest is the same, on far fewer rows
    first, ascending = spec.keys[0]
    keys = np.asarray(value if first == "utility" else table[first].to_numpy(), dtype=np.float64)[rows]
    known = ~np.isnan(keys)
    if known.any():
        rows = rows[keys == (keys[known].min() if ascending else keys[known].max())]
    cand = table[needed].iloc[rows].assign(_row=rows)  # the few columns first: a take of every column costs
    if value is not None:
        cand["utility"] = value[rows]
    cols = [c for c, _ in spec.keys] + ["_row"]
    asc = [a for _, a in spec.keys] + [True]
    ordered = cand.sort_values(cols, ascending=asc, kind="mergesort", na_position="last")
    return int(ordered["_row"].iloc[0])


def select_streaming(
    frames: Iterable[pd.DataFrame],
    rule: str = "smallest-bonus",
    *,
    nohit_weight: float = DEFAULT_NOHIT_WEIGHT,
) -> tuple[pd.DataFrame, int, int]:
    """(the chosen row as a one-row frame, possibly empty; feasible count; total count)."""
    choice = choose_streaming(frames, rule, fallback=None, nohit_weight=nohit_weight, conflicts=False)
    return choice.row, choice.feasible, choice.total


@dataclass(frozen=True)
class Choice:
    """What a sweep delivered in chunks chose: the row (a one-row frame, empty when no rule could
    pick one), the rule that picked it (the fallback when nothing was feasible), the counts, and
    which criteria conflict (None when not collected)."""

    row: pd.DataFrame
    rule: str
    asked: str  # the rule asked for
    feasible: int
    total: int
    conflicts: Conflicts | None = None

    @property
    def fell_back(self) -> bool:
        return self.rule != self.asked


def choose_streaming(
    frames: Iterable[pd.DataFrame],
    rule: str = DEFAULT_RULE,
    *,
    fallback: str | None = FALLBACK,
    nohit_weight: float = DEFAULT_NOHIT_WEIGHT,
    conflicts: bool = True,
    criteria: Iterable[str] | None = None,
) -> Choice:
    """One pass over a sweep's chunks: the rule's choice and, in case nothing is feasible, the
    fallback rule's (None: no fallback); with ``conflicts``, the criteria that cannot hold together
    anywhere on the grid, from the ``<name>_pass`` columns of ``criteria`` (default: every
    ``*_pass`` column)."""
    import pandas as pd

    lookup(SELECTION_RULES, rule, "selection rule")
    if fallback is not None:
        lookup(SELECTION_RULES, fallback, "selection rule")
    check_number(nohit_weight, "nohit_weight", minimum=0)
    rules = list(dict.fromkeys([rule] + ([fallback] if fallback is not None else [])))
    winners: dict[str, list[pd.DataFrame]] = {r: [] for r in rules}
    feasible, total = 0, 0
    finder: ConflictFinder | None = None
    for frame in frames:
        total += len(frame)
        before, feasible = feasible, feasible + int(frame["feasible"].sum())
        if conflicts and finder is None:
            names = list(criteria) if criteria is not None else [c[:-5] for c in frame if c.endswith("_pass")]
            finder = ConflictFinder(tuple(names))
        if finder is not None and not feasible:  # once one configuration holds, nothing conflicts
            finder.add(frame)
        for r in rules:
            if r != rule and before:  # something was feasible: the rule chooses, never the fallback
                continue
            i = select(frame, r, nohit_weight=nohit_weight)
            if i is not None:
                winners[r].append(frame.iloc[[i]])
    used = rule if winners[rule] or fallback is None else fallback
    found = None if finder is None else finder.result() if not feasible else Conflicts.none(finder.names)
    if not winners[used]:
        return Choice(pd.DataFrame(), used, rule, feasible, total, found)
    best = pd.concat(winners[used])
    return Choice(
        best.iloc[[select(best, used, nohit_weight=nohit_weight)]], used, rule, feasible, total, found
    )
