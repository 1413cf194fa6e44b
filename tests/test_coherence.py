"""Issue 39: the sweep study is one library function (the command prints what it returns), and a
notebook's parameters cell says a few words of its own, so adding a decay or a model rewrites no
notebook."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from memlab.app.notebooks import NOTEBOOKS
from memlab.app.parameters import NOTEBOOK_PARAMETERS, parameters_cell
from memlab.core import criteria as crit
from memlab.core import selection
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.spec import COMBINES, DECAYS
from memlab.core.sweep import sweep
from memlab.embedding.models import MODELS
from memlab.scores.problem import build_problem
from memlab.scores.sources import ScoreOptions
from memlab.tuning.sweep_study import sweep_study


@pytest.mark.parametrize("rule", ["max-margin", "smallest-bonus", "max-headroom", "max-utility"])
def test_sweep_study_chooses_what_the_whole_table_chooses(rule):
    problem = build_problem("seed16", ScoreOptions(source="published"))
    grid = Grid(
        bonus=np.round(np.arange(0, 0.101, 0.01), 3),
        tau_days=(3, 7, 14, 30),
        threshold=np.round(np.arange(0.4, 0.5, 0.005), 3),
    )
    criteria = crit.dataset_criteria(problem.dataset)
    out = sweep_study([problem], grid, criteria, rule, nohit_weight=1.0, langs=["en"])
    # the other path: the whole table at once (the notebook's), then the rule's row
    ds = problem.dataset
    whole = sweep(
        np.where(ds.visible(), problem.raw, np.nan), ds.ages(), Labels.from_dataset(ds), grid, criteria
    )
    i = selection.select(whole, rule, nohit_weight=1.0)
    assert out.choice.total == grid.size == len(whole)
    assert out.choice.feasible == int(whole.feasible.sum()) > 0
    for axis in ("bonus", "tau_days", "threshold"):
        assert out.row[axis] == pytest.approx(whole.iloc[i][axis])


def test_sweep_study_sees_every_chunk_through_its_sink():
    problem = build_problem("seed16", ScoreOptions(source="published"))
    grid = Grid(bonus=(0, 0.05), tau_days=(7, 14), threshold=(0.44, 0.45))
    seen = []
    out = sweep_study(
        [problem],
        grid,
        crit.dataset_criteria(problem.dataset),
        "max-margin",
        nohit_weight=1.0,
        langs=["en"],
        sink=seen.append,
    )
    assert sum(len(f) for f in seen) == out.choice.total == 8


def registry_words() -> set[str]:
    """What a new decay, combine or model would bring into a help text: names and formulas."""
    words = {m for m in MODELS} | {a for c in MODELS.values() for a in c.aliases}
    words |= {f"{k} " for k in (*DECAYS, *COMBINES)}  # "exp exp(−age / tau)", "add raw + ..."
    words |= {str(t) for c in MODELS.values() for t in c.thresholds.values()}
    words |= {c.threshold_range for c in MODELS.values() if c.threshold_range}
    return words


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_a_parameters_cell_names_no_decay_and_no_model(name):
    cell = parameters_cell(name)
    for line in cell.splitlines():
        m = re.fullmatch(r"(\w+): (\w+) = (.*?)  # (.+)", line)
        assert m, line
        comment = m.group(4)
        assert len(comment) <= 100, line
        assert len(line) <= 110, f"{line}: longer than ruff's line-length, which would rewrap it"
        hits = [w for w in registry_words() if w in comment]
        assert not hits, f"{line}: the comment names {hits}: adding one would rewrite the notebook"


def test_the_full_help_is_in_the_parameters_page_not_the_cells():
    page = Path("docs/parameters.md").read_text(encoding="utf-8")
    decay = next(p for p in NOTEBOOK_PARAMETERS if p.name == "decay")
    assert decay.text.replace("|", "/") in page and "gauss" in decay.text
    assert "gauss" not in decay.comment and decay.comment in decay.text


def test_one_list_of_date_formats():
    from memlab.datasets.records import DATE_FORMATS, READ_DATE_FORMATS, parse_instant
    from memlab.qdrant.query import CollectionSchema

    assert tuple(DATE_FORMATS) == ("iso", "epoch-s", "epoch-ms")
    assert READ_DATE_FORMATS == ("auto", "iso", "epoch-s", "epoch-ms")
    # what the query writes is what the reader reads back, in every stored format
    when = parse_instant("2026-09-10T12:00:00Z")
    for name in DATE_FORMATS:
        schema = CollectionSchema(date_format=name)
        assert parse_instant(schema.date_value(when), name) == when
    assert CollectionSchema(date_format="epoch-ms").date_value(when) == 1789041600000


def test_counted_words_are_numbers_plural():
    from memlab.core.numbers import counted, plural

    assert (plural(1.0, "day"), plural(2, "day"), plural(0, "memory")) == ("day", "days", "memories")
    assert counted(1, "repeat") == "1 repeat" and counted(3, "repeat") == "3 repeats"
