"""The exact feasible region in the bonus, for each tau and threshold, in closed form.

With the decay family, tau, threshold, candidates and inject fixed, a candidate's final score
is linear in the bonus: ``raw + bonus * s`` with slope ``s = w`` (combine ``add``) or
``s = raw * w`` (combine ``mult``: ``raw * (1 + bonus * w)``), ``w`` the decay's weight at the
memory's age. So every criterion holds on a set of bonus values that can be written down
exactly, for every decay family and both combines (no grid is needed):

- ``nohit_below``: every candidate of every no-hit question stays below the threshold, an
  intersection of half-lines ``bonus < (threshold - raw) / s`` (with ``mult``, a candidate with
  a negative raw score has a negative slope: its half-line points the other way, so the
  criterion is not monotone in the bonus, but still an intersection of half-lines);
- ``current_reaches``: ``bonus >= (threshold - raw_c) / s_c`` (empty if the memory is not a
  candidate);
- ``current_injected``: that, and the memory's rank after the re-sort is below ``inject``. Each
  other candidate overtakes it on a half-line ending where the two lines cross; the rank is
  piecewise constant between those crossings, so the set is a union of intervals;
- ``no_stale_injected``: the complement of every stale candidate's injected set;
- ``current_above_stale``: per stale candidate, it is not injected, or the current memory is
  injected and ahead of it (a half-line where the current line stays above the stale one).

The bonus is never negative: the region is intersected with ``[0, +inf)``. Intervals keep
their open and closed ends (``portion`` does the interval algebra).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import portion as P

from memlab.core import criteria as crit
from memlab.core.errors import InputError
from memlab.core.labels import Labels
from memlab.core.ranking import select_candidates
from memlab.core.registry import unknown_message
from memlab.core.spec import COMBINES, RetrievalSpec, rescore


@dataclass(frozen=True)
class Lines:
    """One question's candidates as lines in the bonus: ``final = raw + bonus * slope``."""

    index: np.ndarray  # memory index, in candidate order (raw desc, then fixture order)
    raw: np.ndarray
    weight: np.ndarray
    combine: str = "add"

    @property
    def slope(self) -> np.ndarray:
        return COMBINES[self.combine].slope(self.raw, self.weight)

    def final(self, i: int, bonus: float) -> float:
        """Candidate ``i``'s final score, computed as the reference computes it."""
        return rescore(self.raw[i], self.weight[i], bonus, self.combine)

    def position(self, memory: int) -> int:
        hit = np.flatnonzero(self.index == memory)
        return int(hit[0]) if hit.size else -1


def first_true(x: float, holds: Callable[[float], bool]) -> float:
    """The float nearest ``x`` at which a predicate that is False below and True above turns True.

    The closed forms ``(threshold - raw) / w`` are exact in real numbers; the reference compares
    floats (``rescore(raw, w, b) >= threshold``), which can flip one or two ulps away. Snapping
    each end makes membership in the region agree with the reference's own comparisons.
    """
    if not np.isfinite(x):
        return x
    b = float(x)
    for _ in range(256):
        if holds(b):
            below = float(np.nextafter(b, -np.inf))
            if not holds(below):
                return b
            b = below
        else:
            b = float(np.nextafter(b, np.inf))
    return b


def _from(x: float, holds: Callable[[float], bool]) -> P.Interval:
    """{b : holds(b)} for a predicate False below the real crossing ``x`` and True above."""
    if x == np.inf:
        return P.empty()
    return P.open(-P.inf, P.inf) if x == -np.inf else P.closed(first_true(x, holds), P.inf)


def _upto(x: float, holds: Callable[[float], bool]) -> P.Interval:
    """{b : holds(b)} for a predicate True below the real crossing ``x`` and False above."""
    if x == -np.inf:
        return P.empty()
    return P.open(-P.inf, P.inf) if x == np.inf else P.open(-P.inf, first_true(x, lambda b: not holds(b)))


def _side(slope: float, gap: float, holds: Callable[[float], bool], rising: bool) -> P.Interval:
    """{b : holds(b)} for a line ``raw + b * slope`` and ``gap = threshold - raw``: ``holds``
    turns True (``rising``) or False where ``b * slope`` crosses ``gap``."""
    if slope == 0:
        return P.open(-P.inf, P.inf) if holds(0.0) else P.empty()
    with np.errstate(over="ignore", divide="ignore"):
        x = float(np.float64(gap) / slope)
    return _from(x, holds) if rising == (slope > 0) else _upto(x, holds)


def _at_least(lines: Lines, i: int, threshold: float) -> P.Interval:
    """{b : final_i(b) >= threshold}, as the reference compares it."""
    holds = lambda b: lines.final(i, b) >= threshold  # noqa: E731
    return _side(lines.slope[i], threshold - lines.raw[i], holds, rising=True)


def _below(lines: Lines, i: int, threshold: float) -> P.Interval:
    """{b : final_i(b) < threshold}, as the reference compares it."""
    holds = lambda b: lines.final(i, b) < threshold  # noqa: E731
    return _side(lines.slope[i], threshold - lines.raw[i], holds, rising=False)


def _overtakes(lines: Lines, p: int, c: int) -> P.Interval:
    """Bonus values where candidate ``p`` is ranked before candidate ``c`` after the re-sort.

    ``p`` comes first when its final score is higher, or equal and ``p`` is earlier in
    candidate order (higher raw score, then fixture order): the reference's tie rule.
    """
    rp, rc = lines.raw[p], lines.raw[c]
    wins_tie = p < c

    def beats(b: float) -> bool:
        fp, fc = lines.final(p, b), lines.final(c, b)
        return bool(fp > fc or (fp == fc and wins_tie))

    dw = lines.slope[p] - lines.slope[c]
    if dw == 0:
        return P.open(-P.inf, P.inf) if beats(0.0) else P.empty()
    with np.errstate(over="ignore", divide="ignore"):
        x = float(-(rp - rc) / dw)  # where the two lines cross
    if dw > 0:  # p gains on c as the bonus grows: beats turns True at the crossing
        return _from(x, beats)
    return _upto(x, beats)


def rank_below(lines: Lines, c: int, limit: int) -> P.Interval:
    """{b : fewer than ``limit`` candidates are ranked before candidate ``c``}."""
    others = [_overtakes(lines, p, c) for p in range(len(lines.index)) if p != c]
    if len(others) < limit:
        return P.open(-P.inf, P.inf)
    cuts = sorted({e for iv in others for a in iv for e in (a.lower, a.upper) if e not in (P.inf, -P.inf)})
    # the rank is constant on each cut point and on each open piece between cuts
    probes = [(x, P.singleton(x)) for x in cuts]
    edges = [-P.inf, *cuts, P.inf]
    for lo, hi in pairwise(edges):
        probes.append((_inside(lo, hi), P.open(lo, hi)))
    region = P.empty()
    for b, piece in probes:
        if sum(b in iv for iv in others) < limit:
            region |= piece
    return region


def _inside(lo: Any, hi: Any) -> float:
    """A point strictly inside the open interval (lo, hi)."""
    if lo == -P.inf and hi == P.inf:
        return 0.0
    if lo == -P.inf:
        return hi - max(1.0, abs(hi))
    if hi == P.inf:
        return lo + max(1.0, abs(lo))
    return (lo + hi) / 2


def _nohit_below(ctx: dict[str, Any], cols: np.ndarray) -> P.Interval:
    region = P.open(-P.inf, P.inf)
    for q in np.flatnonzero(cols):
        lines = ctx["lines"][q]
        for i in range(len(lines.index)):
            region &= _below(lines, i, ctx["threshold"])
    return region


def _current(ctx: dict[str, Any], cols: np.ndarray) -> tuple[Lines, int]:
    q = int(cols.argmax())
    lines = ctx["lines"][q]
    return lines, lines.position(int(ctx["labels"].current[q]))


def _current_reaches(ctx: dict[str, Any], cols: np.ndarray) -> P.Interval:
    lines, c = _current(ctx, cols)
    if c < 0:
        return P.empty()
    return _at_least(lines, c, ctx["threshold"])


def _current_injected(ctx: dict[str, Any], cols: np.ndarray) -> P.Interval:
    lines, c = _current(ctx, cols)
    return P.empty() if c < 0 else _injected(lines, c, ctx)


def _injected(lines: Lines, c: int, ctx: dict[str, Any]) -> P.Interval:
    """{b : candidate ``c`` reaches the threshold and is among the first ``inject``}."""
    return _at_least(lines, c, ctx["threshold"]) & rank_below(lines, c, ctx["inject"])


def _stale_positions(ctx: dict[str, Any], q: int) -> list[int]:
    labels, lines = ctx["labels"], ctx["lines"][q]
    stale = [lines.position(s) for s in labels.stale[q] if s != labels.current[q]]
    return [p for p in stale if p >= 0]  # a stale memory that is no candidate is never injected


def _no_stale_injected(ctx: dict[str, Any], cols: np.ndarray) -> P.Interval:
    """Outside every stale candidate's injected set."""
    region = P.open(-P.inf, P.inf)
    for q in np.flatnonzero(cols):
        lines = ctx["lines"][q]
        for s in _stale_positions(ctx, q):
            region &= ~_injected(lines, s, ctx)
    return region


def _current_above_stale(ctx: dict[str, Any], cols: np.ndarray) -> P.Interval:
    """For every stale candidate: not injected, or the current memory injected and ranked first."""
    region = P.open(-P.inf, P.inf)
    for q in np.flatnonzero(cols):
        lines = ctx["lines"][q]
        c = lines.position(int(ctx["labels"].current[q])) if ctx["labels"].current[q] >= 0 else -1
        current_in = _injected(lines, c, ctx) if c >= 0 else P.empty()
        for s in _stale_positions(ctx, q):
            first = _overtakes(lines, c, s) if c >= 0 else P.empty()
            region &= ~_injected(lines, s, ctx) | (current_in & first)
    return region


REGIONS: dict[str, Callable[[dict[str, Any], np.ndarray], P.Interval]] = {
    "nohit_below": _nohit_below,
    "current_reaches": _current_reaches,
    "current_injected": _current_injected,
    "no_stale_injected": _no_stale_injected,
    "current_above_stale": _current_above_stale,
}


MMR_NO_REGION = (
    "no exact feasible region under MMR with diversity > 0: MMR picks the candidates by their "
    "vectors' similarity to earlier picks, not by a line in the bonus; sweep MMR as axes instead "
    "(memlab sweep --mmr-pool ... --diversity ...; docs/sweep.md)"
)


def feasible_bonus(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    criteria: tuple[crit.Criterion, ...] | None = None,
    *,
    spec: RetrievalSpec,
) -> P.Interval:
    """The exact set of bonus values >= 0 where every criterion holds, the rest of ``spec`` fixed
    (its own bonus is not read)."""
    return intersect(criterion_regions(raw, ages, labels, criteria, spec=spec))


def intersect(regions: dict[str, P.Interval]) -> P.Interval:
    """Where every criterion's region holds, within ``[0, +inf)``."""
    region = P.closed(0, P.inf)
    for part in regions.values():
        region &= part
    return region


def criterion_regions(
    raw: np.ndarray,
    ages: np.ndarray,
    labels: Labels,
    criteria: tuple[crit.Criterion, ...] | None = None,
    *,
    spec: RetrievalSpec,
) -> dict[str, P.Interval]:
    """Per criterion (by name, in order), the exact set of bonus values >= 0 where it holds, the
    rest of ``spec`` fixed (its own bonus is not read; the spec checked its fields)."""
    if spec.mmr and spec.diversity > 0:
        # the regions are cut from each question's fixed candidate lines; MMR with diversity picks
        # its candidates by the vectors' similarities, which no line in the bonus describes
        raise InputError(MMR_NO_REGION)
    criteria = labels.criteria() if criteria is None else criteria
    ages = np.broadcast_to(np.asarray(ages, dtype=np.float64), raw.shape)
    weight = spec.weight(ages)
    lines = []
    for q in range(raw.shape[0]):
        idx = select_candidates(raw[q], spec.candidates)  # the reference's own candidate order
        lines.append(Lines(idx, raw[q, idx], weight[q, idx], spec.combine))
    ctx = {"lines": lines, "labels": labels, "threshold": spec.threshold, "inject": spec.inject}
    out = {}
    for c in criteria:
        if c.kind not in REGIONS:
            raise InputError(
                f"criterion {c.name!r}: no closed-form region: "
                f"{unknown_message('criterion kind', [c.kind], REGIONS)}"
            )
        cols = crit.question_mask(c, labels.question_ids, labels.kinds)
        out[c.name] = P.closed(0, P.inf) & REGIONS[c.kind](ctx, cols)
    return out


def region_patterns(regions: dict[str, P.Interval]) -> np.ndarray:
    """Which criteria hold on each piece of the bonus axis ``[0, +inf)`` (pieces x criteria): the
    axis cut at every interval end of every region, each end and each open piece between two ends
    sampled once. Every pass pattern the bonus can produce is a row
    (``memlab.core.conflicts.conflicts_of`` reads them)."""
    ends = sorted(
        {0.0}
        | {
            float(x)
            for region in regions.values()
            for atom in region
            if not atom.empty
            for x in (atom.lower, atom.upper)
            if x not in (P.inf, -P.inf)
        }
    )
    samples = [*ends, *(0.5 * (a + b) for a, b in pairwise(ends)), ends[-1] + 1.0]
    return np.array([[x in region for region in regions.values()] for x in samples], dtype=bool).reshape(
        len(samples), len(regions)
    )


def intervals_json(region: P.Interval) -> dict[str, list]:
    """``{"intervals": [[lo, hi], ...], "closed": [[lo_closed, hi_closed], ...]}``; +inf is null."""

    def num(x: Any) -> float | None:
        return None if x in (P.inf, -P.inf) else float(x)

    parts = [] if region.empty else list(region)
    return {
        "intervals": [[num(a.lower), num(a.upper)] for a in parts],
        "closed": [[a.left == P.CLOSED, a.right == P.CLOSED] for a in parts],
    }


def intervals_text(region: P.Interval, digits: int = 6) -> str:
    if region.empty:
        return "empty"

    def end(x: Any) -> str:
        return "+inf" if x == P.inf else f"{float(x):.{digits}g}"

    def one(a: P.Interval) -> str:
        left = "[" if a.left == P.CLOSED else "("
        right = "]" if a.right == P.CLOSED else ")"
        return f"{left}{end(a.lower)}, {end(a.upper)}{right}"

    return " | ".join(one(a) for a in region)
