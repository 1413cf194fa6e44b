"""Rates per condition and question kind, with bootstrap intervals over questions.

A question is the unit: its score under a condition is the mean over its repeats (a verdict left
unjudged counts in neither the numerator nor the denominator), and the rate of a condition and
kind is the mean of its questions' scores. The interval is the percentile interval of that mean
over questions resampled with replacement (``memlab.drift.intervals.bootstrap_ci``, the drift
study's, with questions as its streams), so repeats of one question never pass for independent
evidence.

The LLM judge's rows carry ``reliable``: whether its agreement with the checkable judge reaches
``memlab.answers.judge.KAPPA_FLOOR`` (None: no reply judged by both, so unchecked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from memlab.drift.intervals import bootstrap_ci

if TYPE_CHECKING:
    import pandas as pd

SCORES = {
    "judge": "the LLM judge's YES rate",
    "phrases": "the checkable judge's pass rate (expected phrases held, avoided ones absent)",
    "f1": "LoCoMo's token F1 against the reference answer",
}
ALL_KINDS = "all"


def rates(
    judged: pd.DataFrame,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    order: list[str] | None = None,
) -> pd.DataFrame:
    """One row per condition, kind (each, then ``all``) and score present in ``judged``: the
    questions scored, the replies scored and not (``unscored``: unjudged by the LLM judge, or
    without that check), the rate and its interval."""
    import pandas as pd

    conditions = order or list(dict.fromkeys(judged["condition"]))
    kinds = list(dict.fromkeys(judged["kind"]))
    out = []
    for score in (s for s in SCORES if s in judged.columns):
        values = pd.to_numeric(
            judged[score].map(lambda v: np.nan if v is None else float(v)), errors="coerce"
        )
        frame = judged.assign(_v=values)
        for condition in conditions:
            for kind in [*kinds, ALL_KINDS]:
                rows = frame[frame["condition"] == condition]
                if kind != ALL_KINDS:
                    rows = rows[rows["kind"] == kind]
                per_question = rows.groupby("question_id", sort=False)["_v"].mean().dropna()
                row = {
                    "condition": condition,
                    "kind": kind,
                    "score": score,
                    "questions": len(per_question),
                    "replies": int(rows["_v"].notna().sum()),
                    "unscored": int(rows["_v"].isna().sum()),
                    "rate": np.nan,
                    "lo": np.nan,
                    "hi": np.nan,
                }
                if len(per_question):
                    v = per_question.to_numpy(dtype=float)[:, None]
                    lo, hi = bootstrap_ci(v, n_boot, seed, level)[:, 0]
                    row.update(rate=float(v.mean()), lo=float(lo), hi=float(hi))
                # a check a question does not carry (no phrase, no reference answer) is no row;
                # replies the LLM judge left unjudged are counted
                if row["replies"] or (score == "judge" and row["unscored"]):
                    out.append(row)
    table = pd.DataFrame(out)
    if "judge" in judged.columns and len(table):
        from memlab.answers.judge import judge_agreement

        agreement = judge_agreement(judged, n_boot=0)
        reliable = None if agreement is None else agreement.reliable
        table["reliable"] = [reliable if s == "judge" else None for s in table["score"]]
    return table
