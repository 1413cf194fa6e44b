"""The seed write-up's tables, rebuilt from an Evaluation as tidy DataFrames."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from memlab.datasets.model import Dataset
    from memlab.tuning.evaluate import Evaluation


def rerun_table(ev: Evaluation, dataset: Dataset, question_id: str) -> pd.DataFrame:
    """One question's candidates: memory, date, text, raw, bonus, final, verdict."""
    import pandas as pd

    thr = ev.spec.threshold
    rows = []
    for c in ev.result(question_id).candidates:
        m = dataset.memory(c.memory_id)
        verdict = (
            ("injected" if c.injected else f"{thr:g} or higher, not injected")
            if c.reaches
            else (f"under {thr:g}")
        )
        rows.append(
            {
                "memory": c.memory_id,
                "date": f"{m.date:%Y-%m-%d}",
                "text": m.text(ev.lang),
                "raw": c.raw,
                "bonus": c.bonus,
                "final": c.final,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows, columns=["memory", "date", "text", "raw", "bonus", "final", "verdict"])


def nohit_table(ev: Evaluation) -> pd.DataFrame:
    """Per no-hit question: the best score before and after the bonus, and which memory."""
    import pandas as pd

    rows = []
    for r in ev.results:
        if r.kind != "nohit":
            continue
        before = max(r.candidates, key=lambda c: c.raw, default=None)
        after = r.candidates[0] if r.candidates else None
        rows.append(
            {
                "question": r.question_id,
                "text": r.text,
                "max_before": np.nan if before is None else before.raw,
                "memory_before": None if before is None else before.memory_id,
                "max_after": np.nan if after is None else after.final,
                "memory_after": None if after is None else after.memory_id,
                "headroom_after": np.nan if after is None else ev.spec.threshold - after.final,
                "injected": len(r.injected),
            }
        )
    return pd.DataFrame(rows)


def criteria_table(ev: Evaluation) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "criterion": c.name,
                "kind": c.kind,
                "question": c.question,
                "value": c.value,
                "margin": c.margin,
                "pass": c.passed,
                "meaning": c.description,
            }
            for c in ev.criteria
        ]
    )
