"""Intervals of the drifting-facts study: per system, and paired between systems.

A per-system interval says how sure the mean is; it cannot say whether system A is less stale
than system B at equal recall, because the streams that are hard for A are hard for B too. The
paired interval resamples streams once and takes both systems' means on the same resample: it
is the percentile interval of the mean per-stream difference.

The target of the drift study (issue 18): at a budget, a memory system *meets* it when the lower
end of its paired recall difference to naive top-k under store-everything is at least
``-RECALL_GAP`` and its staleness is at most ``MAX_STALENESS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number

if TYPE_CHECKING:
    import pandas as pd

REFERENCE = ("top-k", "store-everything")  # the naive baseline the differences are taken against
RECALL_GAP = 0.02
MAX_STALENESS = 0.05
ORACLE = "oracle"  # the ceiling line the frontier reports beside the best memory system


def resample_counts(n_streams: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, S) multinomial counts: how often each stream is drawn in each resample."""
    check_number(n_boot, "n_boot", integer=True, minimum=1)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_streams, np.full(n_streams, 1.0 / n_streams), size=n_boot)


def bootstrap_ci(
    per_stream: np.ndarray, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> np.ndarray:
    """Percentile intervals of the mean over streams: ``per_stream`` (S, B) -> (2, B).

    Resamples are drawn as multinomial counts over streams, so the means are one matrix product.
    """
    s = per_stream.shape[0]
    means = resample_counts(s, n_boot, seed) @ per_stream / s  # (n_boot, B)
    tail = (1 - level) / 2 * 100
    return np.percentile(means, [tail, 100 - tail], axis=0)


def paired_bootstrap_ci(
    system: np.ndarray, reference: np.ndarray, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> np.ndarray:
    """Percentile interval of ``mean(system) - mean(reference)``, both on the same resampled
    streams: (S, B) twice -> (2, B). Equal to ``bootstrap_ci`` of the per-stream differences with
    the same seed, since a mean of differences is the difference of the means."""
    if system.shape != reference.shape:
        raise InputError(f"paired streams must match: {system.shape} against {reference.shape}")
    return bootstrap_ci(system - reference, n_boot, seed, level)


def frontier(table: pd.DataFrame) -> pd.DataFrame:
    """Per budget, the memory system (oracle lines excluded) that meets the target with the
    highest recall, or, when none does, the one with the highest recall at staleness <=
    ``MAX_STALENESS``; its paired differences to the reference, whether it meets the target, and
    the oracle's recall and staleness at that budget (NaN when not run).

    ``table`` is ``DriftResult.table``. Ties: the row listed first.
    """
    import pandas as pd

    out = []
    for budget, rows in table.groupby("budget", sort=True):
        systems = rows[~rows["oracle"]]
        clean = systems[systems["staleness"] <= MAX_STALENESS + 1e-12]
        meeting = clean[clean["recall_diff_lo"] >= -RECALL_GAP - 1e-12]
        oracle = rows[rows["system"] == ORACLE]
        row = {"budget": int(budget)}
        pool = meeting if len(meeting) else clean
        if len(pool):
            best = pool.loc[pool["recall"].idxmax()]
            row.update(
                system=best["system"],
                write_policy=best["write_policy"],
                recall=best["recall"],
                staleness=best["staleness"],
                recall_diff=best["recall_diff"],
                recall_diff_lo=best["recall_diff_lo"],
                recall_diff_hi=best["recall_diff_hi"],
                staleness_diff=best["staleness_diff"],
                meets=bool(len(meeting)),
            )
        else:
            row.update(system="", write_policy="", meets=False)
        row["oracle_recall"] = float(oracle["recall"].iloc[0]) if len(oracle) else np.nan
        row["oracle_staleness"] = float(oracle["staleness"].iloc[0]) if len(oracle) else np.nan
        out.append(row)
    return pd.DataFrame(out)
