"""Criterion kernels on tiny arrays, with and without leading configuration axes."""

from __future__ import annotations

import numpy as np
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
            "criterion 'x': unknown kind 'sometimes'; available: nohit_below, current_reaches, current_injected",
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
