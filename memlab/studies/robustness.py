"""How robust tuned values are: leave-one-question-out and bootstrap resamples.

For a chosen configuration (the whole spec: its decay family too), each resample of the
dataset asks: does the configuration still satisfy every criterion, where does the exact
feasible bonus interval (at that tau and threshold) begin and end, and what is the headroom?

Resamples:
- ``loqo``: every question left out once (criteria naming it are dropped with it);
- ``questions``: bootstrap over questions, drawn with replacement (seeded);
- ``memories``: bootstrap over the memories no label names (the distractors), drawn with
  replacement; labelled memories are always kept, so every criterion stays measurable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import portion as P

from memlab.core import criteria as crit
from memlab.core.errors import InputError
from memlab.core.feasible import feasible_bonus
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.numbers import check_number, check_work
from memlab.core.shards import narrow
from memlab.core.spec import RetrievalSpec
from memlab.core.sweep import sweep

if TYPE_CHECKING:
    import pandas as pd

    from memlab.scores.problem import RetrievalProblem


def _subset(raw, ages, labels: Labels, criteria, q_idx, m_idx):
    raw, ages = raw[np.ix_(q_idx, m_idx)], np.broadcast_to(ages, raw.shape)[np.ix_(q_idx, m_idx)]
    position = {m: j for j, m in enumerate(m_idx)}  # first copy of each memory
    sub = Labels(
        tuple(labels.question_ids[i] for i in q_idx),
        tuple(labels.kinds[i] for i in q_idx),
        np.array([position.get(labels.current[i], -1) if labels.current[i] >= 0 else -1 for i in q_idx]),
        tuple(tuple(position[s] for s in labels.stale[i] if s in position) for i in q_idx),
        None
        if labels.relevant is None
        else tuple(tuple(position[r] for r in labels.relevant[i] if r in position) for i in q_idx),
    )
    kept = tuple(c for c in criteria if c.question is None or c.question in sub.question_ids)
    # a criterion over every question of a kind needs one such question left in the resample
    kept = tuple(
        c
        for c in kept
        if c.question is not None
        or (c.kind == "nohit_below" and "nohit" in sub.kinds)
        or (c.kind != "nohit_below" and any(sub.stale))
    )
    return raw, ages, sub, kept


def _measure(raw, ages, labels, criteria, spec: RetrievalSpec) -> dict[str, float | bool]:
    row = sweep(raw, ages, labels, Grid.of(spec), criteria).iloc[0]
    region = feasible_bonus(raw, ages, labels, criteria, spec=spec)
    # the interval holding the chosen bonus, else the region's outer ends
    parts = [] if region.empty else list(region)
    around = next((a for a in parts if spec.bonus in a), None)

    def end(x) -> float:
        return np.inf if x == P.inf else -np.inf if x == -P.inf else float(x)

    lo = np.nan if not parts else end((around or parts[0]).lower)
    hi = np.nan if not parts else end((around or parts[-1]).upper)
    return {
        "feasible": bool(row["feasible"]),
        "lo": lo,
        "hi": hi,
        "headroom": float(row["headroom"]),
        "min_margin": float(row["min_margin"]),
    }


MAX_BOOT = 100_000  # resamples of each kind that finish in about 20 minutes on seed16


def robustness(
    problem: RetrievalProblem,
    criteria: tuple[crit.Criterion, ...] | None = None,
    n_boot: int = 200,
    seed: int = 0,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per resample of the problem's dataset, under its whole spec: kind, index, what was
    left out, feasible, lo, hi, headroom, min_margin."""
    import pandas as pd

    # a tenant filter leaves the other tenants' memories out (unknown scores), as in every command
    dataset, raw, spec = problem.dataset, narrow(problem.scores.raw, problem.pool), problem.spec
    if len(dataset.questions) < 2:
        raise InputError(
            f"robustness needs at least 2 questions, {dataset.name!r} has {len(dataset.questions)}: "
            "leaving one out would leave nothing to measure"
        )
    check_number(n_boot, "n_boot", integer=True, minimum=1)  # bootstrap resamples of each kind
    check_work(
        n_boot,
        "n_boot",
        MAX_BOOT,
        "bootstrap resamples of each kind",
        f"each is a whole feasible-region computation, about 5 ms on seed16: {MAX_BOOT:,} of each "
        "kind take about 20 minutes",
    )
    check_number(seed, "seed", integer=True, minimum=0)
    criteria = crit.dataset_criteria(dataset) if criteria is None else criteria
    raw = np.where(dataset.visible(), raw, np.nan)
    ages = dataset.ages()
    labels = Labels.from_dataset(dataset)
    n_q, n_m = raw.shape
    all_q, all_m = np.arange(n_q), np.arange(n_m)
    rows = [{"kind": "all", "index": 0, "left_out": "", **_measure(raw, ages, labels, criteria, spec)}]
    for i in all_q:
        q_idx = np.delete(all_q, i)
        sub = _subset(raw, ages, labels, criteria, q_idx, all_m)
        rows.append(
            {"kind": "loqo", "index": int(i), "left_out": labels.question_ids[i], **_measure(*sub, spec)}
        )
    rng = np.random.default_rng(seed)
    named = {m for i in all_q for m in (*labels.stale[i], labels.current[i]) if m >= 0}
    named |= {dataset.memory_index[m] for q in dataset.questions for m in q.relevant}
    # the memories a resample draws from: the tenant filter's only (another tenant's are no
    # memory of this store: drawn, they would thin it out)
    allowed = problem.pool.allowed
    free = np.array([m for m in all_m if m not in named and (allowed is None or allowed[m])])
    from tqdm.auto import tqdm

    bar = tqdm(total=2 * n_boot, desc="resamples", unit="resample", disable=not progress or n_boot < 1000)
    for b in range(n_boot):
        bar.update(1)
        q_idx = np.sort(rng.integers(0, n_q, n_q))
        sub = _subset(raw, ages, labels, criteria, q_idx, all_m)
        rows.append({"kind": "questions", "index": b, "left_out": "", **_measure(*sub, spec)})
    for b in range(n_boot if len(free) else 0):
        bar.update(1)
        m_idx = np.concatenate([np.array(sorted(named), dtype=int), np.sort(rng.choice(free, len(free)))])
        sub = _subset(raw, ages, labels, criteria, all_q, m_idx)
        rows.append({"kind": "memories", "index": b, "left_out": "", **_measure(*sub, spec)})
    bar.close()
    return pd.DataFrame(rows)


def _low(s: pd.Series) -> float:
    """The 5% quantile, a resample's own value (the one below): an interval end may be infinite,
    and interpolating between two infinite ends is no number."""
    return s.quantile(0.05, interpolation="lower")


def _high(s: pd.Series) -> float:
    """The 95% quantile, a resample's own value (the one above)."""
    return s.quantile(0.95, interpolation="higher")


def robustness_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per kind of resample: how often the configuration stays feasible, and quantiles (NaN where
    no resample has a feasible bonus interval)."""
    out = df.groupby("kind", sort=False).agg(
        resamples=("feasible", "size"),
        feasible_share=("feasible", "mean"),
        lo_median=("lo", "median"),
        lo_p05=("lo", _low),
        lo_p95=("lo", _high),
        hi_median=("hi", "median"),
        hi_p05=("hi", _low),
        hi_p95=("hi", _high),
        headroom_median=("headroom", "median"),
        headroom_p05=("headroom", _low),
    )
    return out.reset_index()


@dataclass(frozen=True)
class RobustnessStudy:
    """The robustness study of one spec: every resample, the summary per kind, and the questions
    whose leaving out moves the feasible bonus interval."""

    resamples: pd.DataFrame  # robustness(): one row per resample
    summary: pd.DataFrame  # robustness_summary()
    moved: pd.DataFrame  # the leave-one-question-out rows whose interval is not the whole set's

    @property
    def feasible(self) -> bool:
        """The spec is feasible on the whole set of questions (it has a bonus interval)."""
        return not bool(self.summary["lo_median"].isna().iloc[0])


def moved_intervals(df: pd.DataFrame) -> pd.DataFrame:
    """The leave-one-question-out rows whose bonus interval moved, or is gone (NaN ends), from
    the whole set's (the first row)."""
    import pandas as pd

    loqo = df[df["kind"] == "loqo"]
    # NaN != NaN would call every infeasible one moved
    same = loqo["lo"].eq(df["lo"].iloc[0]) | (loqo["lo"].isna() & pd.isna(df["lo"].iloc[0]))
    same &= loqo["hi"].eq(df["hi"].iloc[0]) | (loqo["hi"].isna() & pd.isna(df["hi"].iloc[0]))
    return loqo[~same]


def robustness_study(
    problem: RetrievalProblem,
    criteria: tuple[crit.Criterion, ...] | None = None,
    n_boot: int = 200,
    seed: int = 0,
    progress: bool = False,
) -> RobustnessStudy:
    """``robustness`` of the problem's spec with its summary and the moved intervals: what
    ``memlab robustness`` prints and notebook 05 shows."""
    df = robustness(problem, criteria, n_boot=n_boot, seed=seed, progress=progress)
    return RobustnessStudy(df, robustness_summary(df), moved_intervals(df))
