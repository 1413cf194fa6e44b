"""Criterion kernels on tiny arrays, with and without leading configuration axes."""

from __future__ import annotations

import numpy as np
import portion as P
import pytest

from memlab.core.criteria import SEED_CRITERIA, Criterion, QuestionSummary, check, headroom

IDS = ("C1", "H2", "N1", "N2")
KINDS = ("contradiction", "hit", "nohit", "nohit")


def test_seed_criteria_one_config():
    s = QuestionSummary(
        best_final=np.array([0.48, 0.47, 0.434, 0.427]),
        current_final=np.array([0.467, 0.455, np.nan, np.nan]),
        current_injected=np.array([True, False, False, False]),
    )
    crit = [
        Criterion("a", "nohit_below"),
        Criterion("b", "current_reaches", "C1"),
        Criterion("c", "current_reaches", "H2"),
        Criterion("d", "current_injected", "H2"),
    ]
    got = check(tuple(crit), s, IDS, KINDS, 0.45)
    assert {k: (float(v), bool(p)) for k, (v, p, _) in got.items()} == {
        "a": (0.434, True),
        "b": (0.467, True),
        "c": (0.455, True),
        "d": (0.455, False),
    }
    # margins: signed distance from the threshold, positive on the passing side
    assert {k: round(float(m), 3) for k, (_, _, m) in got.items()} == {
        "a": 0.016,
        "b": 0.017,
        "c": 0.005,
        "d": 0.0,  # reaches the threshold but is not injected: a failing check is never positive
    }
    assert float(headroom(s.best_final, np.array([k == "nohit" for k in KINDS]), 0.45)) == pytest.approx(
        0.016
    )


def test_kernels_broadcast_over_configurations():
    # two configurations x four questions; the current memory missing from the candidates fails
    s = QuestionSummary(
        best_final=np.array([[0.5, 0.5, 0.46, 0.1], [0.5, 0.5, 0.2, np.nan]]),
        current_final=np.array([[0.44, 0.5, np.nan, np.nan], [np.nan, 0.5, np.nan, np.nan]]),
        current_injected=np.zeros((2, 4), dtype=bool),
    )
    got = check(SEED_CRITERIA, s, IDS, KINDS, np.array([0.45, 0.45]))
    assert got["a"][0].tolist() == [0.46, 0.2] and got["a"][1].tolist() == [False, True]
    assert got["b"][1].tolist() == [False, False]
    assert got["c"][1].tolist() == [True, True]


def test_no_candidates_on_nohit_questions_is_minus_infinity_and_passes():
    s = QuestionSummary(np.array([0.5, 0.5, np.nan, np.nan]), np.full(4, np.nan), np.zeros(4, bool))
    value, ok, margin = check((SEED_CRITERIA[0],), s, IDS, KINDS, 0.45)["a"]
    assert value == -np.inf and ok and margin == np.inf
    # a current memory that is not a candidate fails with margin -inf
    _, ok, margin = check((SEED_CRITERIA[1],), s, IDS, KINDS, 0.45)["b"]
    assert not ok and margin == -np.inf


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: Criterion("x", "sometimes"),
            "criterion 'x': unknown kind 'sometimes'; available: nohit_below, current_reaches, current_injected, no_stale_injected, current_above_stale",
        ),
        (
            lambda: Criterion("b", "current_reaches"),
            "criterion 'b' of kind 'current_reaches' needs a question",
        ),
    ],
)
def test_bad_criteria(make, message):
    with pytest.raises(ValueError) as e:
        make()
    assert str(e.value) == message


def test_criterion_naming_an_unknown_question():
    s = QuestionSummary(np.zeros(4), np.zeros(4), np.zeros(4, bool))
    with pytest.raises(ValueError) as e:
        check((Criterion("z", "current_reaches", "Q9"),), s, IDS, KINDS, 0.45)
    assert str(e.value) == "criterion 'z' names question 'Q9', which is not in the dataset (C1, H2, N1, N2)"


def stale_case():
    """One contradiction: m0 is stale (raw 0.6, 10 days old), m1 current (raw 0.5, 1 day old);
    one hit question whose current m2 (0.7) comes with m0 at 0.5 (labelled nothing for it).
    tau 1 day: the weights are e^-10 and e^-1, so m1 passes m0 at b = 0.1 / (e^-1 - e^-10)."""
    from helpers import make_dataset, score_table

    dataset = make_dataset(
        [10 * 86400, 86400, 0], ["contradiction", "hit"], [1, 2], [(0,), ()], relevant=[(0, 1), (2,)]
    )
    raw = np.array([[0.6, 0.5, 0.1], [0.5, 0.2, 0.7]])
    return dataset, score_table(dataset, raw)


CROSS = 0.1 / (np.exp(-1) - np.exp(-10))  # 0.271862...


@pytest.mark.parametrize(
    ("bonus", "inject", "no_stale", "first", "stale_n", "wrong_n"),
    [
        (0.0, 1, False, False, 1, 0),  # m0 (0.6) before m1 (0.5): only the stale memory gets in
        (0.0, 2, False, False, 1, 1),  # both, stale first; the hit question also takes m0
        (0.3, 1, True, True, 0, 0),  # m1 at 0.5 + 0.3/e = 0.6104 passes m0 at 0.6000136
        (0.3, 2, False, True, 1, 1),  # m0 still gets in, but after the current memory
    ],
)
def test_stale_criteria_on_paper(bonus, inject, no_stale, first, stale_n, wrong_n):
    from memlab.core.spec import RetrievalSpec
    from memlab.tuning.evaluate import evaluate

    dataset, scores = stale_case()
    criteria = (Criterion("s", "no_stale_injected"), Criterion("f", "current_above_stale"))
    spec = RetrievalSpec(candidates=3, inject=inject, threshold=0.45, bonus=bonus, tau_days=1.0)
    ev = evaluate(dataset, scores, spec, criteria)
    got = {c.name: c for c in ev.criteria}
    assert (got["s"].passed, got["f"].passed) == (no_stale, first)
    assert (ev.stale_injected, ev.wrong_injected) == (stale_n, wrong_n)
    assert got["s"].value == pytest.approx(0.6 + bonus * np.exp(-10))  # the stale candidate's final
    if bonus == 0.0 and inject == 1:
        # -inf: a stale memory in, the current one out
        assert got["f"].value is None and got["f"].margin is None
    if bonus == 0.3 and inject == 1:
        assert got["f"].value is None  # +inf: no stale memory injected
    if bonus == 0.3 and inject == 2:
        assert got["f"].value == pytest.approx(0.5 + 0.3 * np.exp(-1) - (0.6 + 0.3 * np.exp(-10)))


def test_stale_regions_on_paper():
    from memlab.core.feasible import feasible_bonus
    from memlab.core.labels import Labels
    from memlab.core.spec import RetrievalSpec, age_days

    dataset, scores = stale_case()
    ages = age_days(dataset.memory_dates(), dataset.reference_date)
    labels = Labels.from_dataset(dataset)
    one = {"spec": RetrievalSpec(tau_days=1.0, threshold=0.45, candidates=3, inject=1)}
    s = feasible_bonus(scores.raw, ages, labels, (Criterion("s", "no_stale_injected"),), **one)
    f = feasible_bonus(scores.raw, ages, labels, (Criterion("f", "current_above_stale"),), **one)
    # m1 ahead of m0 from the crossing on: closed at the first float where the reference ranks
    # m1 first (at an exact tie m0 would win, being earlier in candidate order)
    assert s == f
    assert s.lower == pytest.approx(CROSS) and s.left == P.CLOSED and s.upper == P.inf
    from memlab.tuning.evaluate import evaluate

    for b, passes in ((s.lower, True), (float(np.nextafter(s.lower, 0)), False)):
        spec = RetrievalSpec(candidates=3, inject=1, threshold=0.45, bonus=b, tau_days=1.0)
        assert evaluate(dataset, scores, spec, (Criterion("s", "no_stale_injected"),)).feasible is passes
    two = {"spec": RetrievalSpec(tau_days=1.0, threshold=0.45, candidates=3, inject=2)}
    # with two slots m0 stays in until m2 (raw 0.1, written today: weight 1) passes it too, at
    # 0.1 + b = 0.6 + b e^-10
    s2 = feasible_bonus(scores.raw, ages, labels, (Criterion("s", "no_stale_injected"),), **two)
    assert s2.lower == pytest.approx(0.5 / (1 - np.exp(-10))) and s2.upper == P.inf
    f2 = feasible_bonus(scores.raw, ages, labels, (Criterion("f", "current_above_stale"),), **two)
    assert f2.lower == pytest.approx(CROSS)


def test_generic_criteria_fail_a_stale_injection():
    """A dataset that declares no criteria: the max-margin sweep pick used to pass while the stale
    memory was injected; the generic set now includes the stale criteria and fails it."""
    from memlab.core.criteria import dataset_criteria
    from memlab.core.spec import RetrievalSpec
    from memlab.tuning.evaluate import evaluate

    dataset, scores = stale_case()
    names = [c.name for c in dataset_criteria(dataset)]
    assert names == ["current_q0", "current_q1", "no_stale", "current_first"]
    ev = evaluate(
        dataset, scores, RetrievalSpec(candidates=3, inject=2, threshold=0.45, bonus=0.0, tau_days=1.0)
    )
    assert ev.failing() == ["no_stale", "current_first"]
