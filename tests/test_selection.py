"""A best choice when nothing is feasible: the utility, the fallback rule, which criteria conflict
and the decision margin, each on a case small enough to work out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import make_dataset

from memlab.core.conflicts import ConflictFinder, conflicts_of
from memlab.core.criteria import dataset_criteria
from memlab.core.decisions import decision_margin, question_decisions
from memlab.core.feasible import criterion_regions, region_patterns
from memlab.core.grid import Grid, parse_axis
from memlab.core.labels import Labels
from memlab.core.selection import FALLBACK, choose_streaming, select, utility, utility_kernel
from memlab.core.spec import RetrievalSpec
from memlab.core.sweep import sweep, sweep_chunks


def conflicting():
    """q0's current m0 scores 0.5, the no-hit q1's best memory 0.6, all of the same age: whatever the
    bonus (it adds alike to both), a threshold that lets m0 in lets q1's m1 in too. q2's current m2
    at 0.9 gets along with either."""
    ds = make_dataset([0, 0, 0], ["hit", "nohit", "hit"], [0, -1, 2], [[], [], []])
    raw = np.array([[0.5, 0.1, 0.0], [0.1, 0.6, 0.0], [0.0, 0.0, 0.9]])
    return ds, raw


def test_two_criteria_that_never_hold_together_are_named():
    ds, raw = conflicting()
    criteria = dataset_criteria(ds)
    assert [c.name for c in criteria] == ["nohit", "current_q0", "current_q2"]
    grid = Grid(bonus=parse_axis("0:0.1:0.01"), tau_days=(14.0,), threshold=parse_axis("0.3:0.95:0.05"))
    frames = sweep_chunks(raw, ds.ages(), Labels.from_dataset(ds), grid, criteria, chunk_rows=50)
    choice = choose_streaming(frames, "max-margin")
    found = choice.conflicts
    assert choice.feasible == 0 and choice.fell_back and choice.rule == FALLBACK
    assert not found.satisfiable and found.never == ()
    assert found.pairs == (("nohit", "current_q0"),) and found.smallest == (("nohit", "current_q0"),)
    assert found.text() == "pairs that never hold together: nohit + current_q0"
    # the closed form says the same at one threshold: nohit holds for bonus < 0.1 (0.6 + b < 0.7),
    # current_q0 for bonus >= 0.2 (0.5 + b >= 0.7), current_q2 everywhere
    regions = criterion_regions(
        raw, ds.ages(), Labels.from_dataset(ds), criteria, spec=RetrievalSpec(tau_days=14.0, threshold=0.7)
    )
    assert (regions["nohit"].lower, regions["nohit"].upper) == (0, pytest.approx(0.1))
    assert regions["current_q0"].lower == pytest.approx(0.2)
    assert conflicts_of(list(regions), region_patterns(regions)).pairs == (("nohit", "current_q0"),)


def test_conflicts_of_patterns_by_hand():
    names = ("a", "b", "c")
    # every two hold together somewhere, never the three: the smallest conflicting set is the triple
    triple = conflicts_of(names, np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], bool))
    assert (triple.never, triple.pairs, triple.smallest) == ((), (), (("a", "b", "c"),))
    assert triple.text() == "the smallest sets (3 criteria) that never hold together: a + b + c"
    # a never holds: it conflicts on its own
    alone = conflicts_of(names, np.array([[0, 1, 1], [0, 0, 1]], bool))
    assert alone.never == ("a",) and alone.smallest == (("a",),) and alone.pairs == ()
    assert conflicts_of(names, np.array([[1, 1, 1]], bool)).satisfiable
    # beyond triples, one minimal set by leaving criteria out in order: of five criteria each
    # pattern misses exactly one, so the five together fail and any four hold
    five = tuple("abcde")
    minimal = conflicts_of(five, ~np.eye(5, dtype=bool))
    assert minimal.smallest == (five,) and not minimal.exhaustive
    # streamed in pieces, with duplicates, the finder keeps the distinct patterns only
    finder = ConflictFinder(names)
    for rows in ([[1, 1, 0], [1, 1, 0]], [[0, 1, 1]], [[1, 0, 1], [1, 1, 0]]):
        finder.add_patterns(np.array(rows, bool))
    assert len(finder.patterns()) == 3 and finder.result() == triple


def rich():
    """Four memories of one age (bonus 0 below): q0 (hit, current m0) also sees the unlabelled m2
    at 0.3; q1 (no-hit) sees m1 at 0.6; q2 (contradiction, current m3 at 0.52, stale m2 at 0.55)."""
    ds = make_dataset([0, 0, 0, 0], ["hit", "nohit", "contradiction"], [0, -1, 3], [[], [], [2]])
    raw = np.array([[0.5, 0.0, 0.3, 0.0], [0.0, 0.6, 0.0, 0.0], [0.0, 0.0, 0.55, 0.52]])
    return ds, raw


def test_utility_of_hand_computed_configurations():
    """At threshold 0.25 (inject 3): q0 injects m0 and m2 (current +1, wrong +1), q1 m1 (no-hit
    +1), q2 m2 and m3 (current +1, stale +1): 2 - 1 - 1 - 1 = -1. At 0.45: m0; m1; m2 and m3:
    2 - 1 - 0 - 1 = 0. At 0.53: nothing for q0; m1; m2 only: 0 - 1 - 0 - 1 = -2. At 0.65:
    nothing anywhere: 0."""
    ds, raw = rich()
    grid = Grid(bonus=(0.0,), tau_days=(14.0,), threshold=(0.25, 0.45, 0.53, 0.65))
    table = sweep(raw, ds.ages(), Labels.from_dataset(ds), grid, dataset_criteria(ds))
    counts = table[["current_injected", "stale_injected", "wrong_injected", "injected_nohit"]]
    assert counts.to_numpy().tolist() == [[2, 1, 1, 1], [2, 1, 0, 1], [0, 1, 0, 1], [0, 0, 0, 0]]
    assert utility(table).tolist() == [-1, 0, -2, 0]
    assert utility(table, nohit_weight=2).tolist() == [-2, -1, -3, 0]
    assert utility_kernel(2, 1, 1, 1, nohit_weight=0.5) == -0.5
    assert not table["feasible"].any()
    # the feasible-only rules have nothing to pick; max-utility ranks every row. With weight 1,
    # 0.45 and 0.65 tie on the utility (0), so the weight decides: a no-hit injection that costs
    # 2 makes 0.65 (nothing injected) the best, one that costs 0.5 makes 0.45 (utility 0.5)
    assert select(table, "max-margin") is None
    assert select(table, "max-utility", nohit_weight=2) == 3  # no-hit injections cost more
    assert select(table, "max-utility", nohit_weight=0.5) == 1
    choice = choose_streaming([table.iloc[:2], table.iloc[2:]], "smallest-bonus", nohit_weight=2)
    assert choice.fell_back and choice.row.index.tolist() == [3] and choice.asked == "smallest-bonus"


def test_the_utility_needs_its_columns():
    with pytest.raises(ValueError) as e:
        select(
            pd.DataFrame({"bonus": [0.1], "tau_days": [1.0], "feasible": [False], "min_margin": [0.0]}),
            "max-utility",
        )
    assert str(e.value) == (
        "the utility needs column(s) current_injected, stale_injected, wrong_injected, injected_nohit, "
        "which the table lacks (the sweep's metric groups injected, stale, wrong)"
    )


def test_decision_margin_by_hand():
    # finals 0.62, 0.58, 0.57, 0.55 against 0.56, inject 2: 0.06 and 0.02 from the threshold, and
    # 0.57 reaches it too, so the cut between the 2nd and 3rd decides: 0.58 - 0.57 = 0.01
    finals = np.array([0.62, 0.58, 0.57, 0.55])
    got = question_decisions(finals, 0.56, 2)
    assert [(round(d, 10), k) for d, k, _, _ in got] == [
        (0.06, "threshold"),
        (0.02, "threshold"),
        (0.01, "cut"),
    ]
    # inject 3: 0.57 is decided by the threshold (0.01); the 4th (0.55) is below it: no cut
    assert [(round(d, 10), k) for d, k, _, _ in question_decisions(finals, 0.56, 3)] == [
        (0.06, "threshold"),
        (0.02, "threshold"),
        (0.01, "threshold"),
    ]
    # through the reference: m1 is 14 days old, so with bonus 0.05 and tau 14 its final is
    # 0.5 + 0.05/e = 0.518394, 0.001606 under the threshold 0.52; m0 (0.60, age 0: 0.65) is 0.13 over
    ds = make_dataset([0, 14 * 86400], ["hit"], [0], [[]])
    raw = np.array([[0.60, 0.50]])
    d = decision_margin(raw, ds.ages(), ds.memory_ids, RetrievalSpec(threshold=0.52), ds.question_ids)
    assert round(d.margin, 6) == round(0.52 - (0.5 + 0.05 / np.e), 6) == 0.001606
    assert d.question_id == "q0" and d.what == "m1 at the threshold (not injected, final 0.5184)"


def old_hybrid_choose(table: pd.DataFrame, labels: Labels, value: np.ndarray | None = None) -> int:
    """The hybrid comparison's utility and choice before they became the sweep's (an independent
    path); ``value``: an objective of a study's own in the utility's place (the held-out study's)."""
    with_current = [q for q, c in zip(labels.question_ids, labels.current, strict=True) if c >= 0]
    if value is None:
        value = (
            table[[f"injected_{q}" for q in with_current]].to_numpy(dtype=np.int64).sum(axis=1)
            - table["injected_nohit"].to_numpy(dtype=np.int64)
            - table["stale_injected"].to_numpy(dtype=np.int64)
        )
    keys = (
        np.arange(len(table)),
        table["tau_days"].to_numpy(dtype=float),
        table["bonus"].to_numpy(dtype=float),
        -np.nan_to_num(table["min_margin"].to_numpy(dtype=float), nan=-np.inf),
        ~table["feasible"].to_numpy(dtype=bool),
        -value,
    )
    return int(np.lexsort(keys)[0])


@pytest.mark.parametrize("name", ["seed16-time", "daily-lunch"])
def test_the_hybrid_comparison_chooses_as_before(name):
    """Every retriever's table on random scores: the sweep's max-utility with the comparison's
    wrong_weight 0 picks the row the comparison's own formula picked."""
    from memlab.datasets.schema import load_dataset
    from memlab.retrieval.inputs import build_inputs
    from memlab.retrieval.retrievers import RETRIEVERS
    from memlab.studies.hybrid import WRONG_WEIGHT, RetrieverGrid, sweep_retriever

    ds = load_dataset(name)
    grid = RetrieverGrid(
        alphas=(0.0, 0.5, 1.0), bonus=(0.0, 0.05, 0.1), tau_days=(3.0, 14.0), threshold_steps=21
    )
    for seed in (0, 1):
        raw = np.random.default_rng(seed).uniform(0.1, 0.6, (len(ds.questions), len(ds.memories)))
        inputs = build_inputs(ds, raw, lang="en")
        for retriever in RETRIEVERS.values():
            table = sweep_retriever(retriever, inputs, grid)
            assert select(table, "max-utility", wrong_weight=WRONG_WEIGHT) == old_hybrid_choose(
                table, inputs.labels
            ), (seed, retriever.name)
            objective = np.random.default_rng(seed).integers(-2, 3, len(table))
            assert select(table, "max-utility", value=objective) == old_hybrid_choose(
                table, inputs.labels, objective
            ), (seed, retriever.name)


@pytest.mark.parametrize("rule", ["smallest-bonus", "max-headroom", "max-margin", "max-utility"])
def test_every_rule_picks_what_a_full_sort_picks(rule):
    """select narrows to the best first key before sorting; a sort of every row (NaN last, ties to
    the earlier row) picks the same row, on tables full of ties and NaN."""
    from memlab.core.selection import SELECTION_RULES

    rng = np.random.default_rng(7)
    for _ in range(50):
        n = 40
        table = pd.DataFrame(
            {
                "bonus": rng.choice([0.0, 0.01, 0.02], n),
                "tau_days": rng.choice([1.0, 14.0], n),
                "headroom": np.where(rng.random(n) < 0.2, np.nan, rng.choice([-0.01, 0.0, 0.02], n)),
                "min_margin": np.where(rng.random(n) < 0.2, np.nan, rng.choice([-0.02, 0.0, 0.01], n)),
                "feasible": rng.random(n) < 0.5,
                "current_injected": rng.integers(0, 3, n),
                "stale_injected": rng.integers(0, 2, n),
                "wrong_injected": rng.integers(0, 2, n),
                "injected_nohit": rng.integers(0, 2, n),
            }
        )
        spec = SELECTION_RULES[rule]
        full = table.assign(utility=utility(table), _row=np.arange(n))
        if spec.feasible_only:
            full = full[full["feasible"]]
        keys = [c for c, _ in spec.keys] + ["_row"]
        ordered = full.sort_values(keys, ascending=[a for _, a in spec.keys] + [True], na_position="last")
        expected = None if ordered.empty else int(ordered["_row"].iloc[0])
        assert select(table, rule) == expected
