"""Robustness of the seed's choice, with ends that can be checked on paper."""

from __future__ import annotations

import json
import math

from memlab.app.cli import main
from memlab.core.spec import RetrievalSpec
from memlab.scores.problem import RetrievalProblem
from memlab.studies.robustness import robustness, robustness_summary


def test_leave_one_question_out_moves_the_ends_as_on_paper(seed, published):
    df = robustness(RetrievalProblem.of(seed, published, RetrievalSpec()), n_boot=20, seed=1)
    loqo = df[df["kind"] == "loqo"].set_index("left_out")
    full = df.iloc[0]
    assert math.isclose(full["lo"], (0.45 - 0.408) / math.exp(-1 / 14))  # (c), H2's article
    assert math.isclose(full["hi"], (0.45 - 0.404) / math.exp(-7 / 14))  # (a), N1's keyboard
    # without H2, (b) sets the lower end: C1's café au lait, 9 days old
    assert math.isclose(loqo.loc["H2", "lo"], (0.45 - 0.441) / math.exp(-9 / 14))
    # without N1, N2's fall anime (5 days old) sets the upper end
    assert math.isclose(loqo.loc["N1", "hi"], (0.45 - 0.392) / math.exp(-5 / 14))
    assert round(loqo.loc["N1", "headroom"], 3) == 0.023  # 0.45 - 0.427
    assert loqo["feasible"].all() and len(loqo) == 10


def test_resamples_are_seeded_and_summarised(seed, published):
    a = robustness(RetrievalProblem.of(seed, published, RetrievalSpec()), n_boot=30, seed=4)
    b = robustness(RetrievalProblem.of(seed, published, RetrievalSpec()), n_boot=30, seed=4)
    assert a.equals(b)
    s = robustness_summary(a).set_index("kind")
    assert list(s.index) == ["all", "loqo", "questions", "memories"]
    assert s.loc["questions", "resamples"] == 30 and s.loc["all", "feasible_share"] == 1.0
    # (0.04, 14) fails (c) on the full set; some question resamples drop H2 and pass
    c = robustness_summary(
        robustness(RetrievalProblem.of(seed, published, RetrievalSpec(bonus=0.04)), n_boot=60, seed=4)
    ).set_index("kind")
    assert c.loc["all", "feasible_share"] == 0.0 and 0 < c.loc["questions", "feasible_share"] < 1


def test_robustness_command(capsys):
    code = main(["robustness", "--source", "published", "--boot", "10", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["spec"]["bonus"] == 0.05
    assert [r["kind"] for r in doc["summary"]] == ["all", "loqo", "questions", "memories"]
    assert len(doc["resamples"]) == 1 + 10 + 10 + 10


def test_one_question_is_refused_with_a_reason(seed, published):
    from dataclasses import replace

    one = replace(seed, questions=seed.questions[:1])
    table = replace(published, question_ids=published.question_ids[:1], raw=published.raw[:1])
    try:
        robustness(RetrievalProblem.of(one, table, RetrievalSpec()), n_boot=5)
    except ValueError as e:
        assert str(e) == (
            "robustness needs at least 2 questions, 'seed16' has 1: leaving one out would leave nothing to measure"
        )
    else:
        raise AssertionError("one question was not refused")


def test_an_infeasible_spec_is_said_in_words_and_infinite_ends_are_no_warning(capsys, recwarn):
    """At threshold 0.9 no bonus meets every criterion on the whole fixture: its row says so, the
    questions whose removal opens an interval are listed, and the resamples' unbounded upper
    ends (inf) make a 95% quantile of inf, not a numpy warning and a "-"."""
    import numpy as np
    import pandas as pd

    assert main(["robustness", "--source", "published", "--threshold", "0.9", "--boot", "20"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert err == "" and not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert lines[2].split()[:3] == ["all", "1", "0.0%"] and lines[2].endswith(
        "no feasible bonus in any resample   0.466, 0.466"
    )
    assert "  without C1: bonus interval [0.528, 0.639)" in lines
    assert lines[-1].startswith("the spec is not feasible on all the questions")
    # the quantiles are resample values: the 95% of [1, 2, inf, inf] is inf, the 5% is 1
    s = robustness_summary(
        pd.DataFrame(
            {
                "kind": ["q"] * 4,
                "feasible": [True] * 4,
                "lo": [1.0, 2.0, 3.0, 4.0],
                "hi": [1.0, 2.0, np.inf, np.inf],
                "headroom": [0.1] * 4,
            }
        )
    ).iloc[0]
    assert (s["hi_p95"], s["hi_p05"], s["lo_p05"], s["lo_p95"]) == (np.inf, 1.0, 1.0, 4.0)
