"""The vectorised sweep on a dataset: its ages, its labels, its criteria, its visibility."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core import criteria as crit
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.sweep import sweep
from memlab.datasets.schema import Dataset

if TYPE_CHECKING:
    import pandas as pd


def sweep_dataset(
    dataset: Dataset,
    raw: np.ndarray,
    grid: Grid,
    criteria: tuple[crit.Criterion, ...] | None = None,
    **kwargs: Any,
) -> pd.DataFrame:
    """``sweep`` with ages and labels taken from a dataset."""
    criteria = crit.dataset_criteria(dataset) if criteria is None else criteria
    raw = np.where(dataset.visible(), raw, np.nan)  # not retrievable before it was written
    return sweep(raw, dataset.ages(), Labels.from_dataset(dataset), grid, criteria, **kwargs)
