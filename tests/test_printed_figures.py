"""Printed figures that say what they are (issue 37): a criterion's value names what it measures,
calibrate's labelled threshold is not six decimals where all else prints three, and
--no-llm-judge's help says what the flag does."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from dataclasses import replace

import numpy as np
import pytest
from helpers import make_dataset, problem_of

from memlab.app.cli import build_parser, main
from memlab.app.cli.reference import _subparsers
from memlab.core.spec import RetrievalSpec
from memlab.datasets.locations import dataset_dir

pytestmark = pytest.mark.hostile


def test_evaluate_names_what_each_criterion_value_measures(capsys, tmp_path):
    """'no_stale 0.893 FAIL' did not say what 0.893 is: the best post-bonus score of a stale
    candidate. Each criterion's line now carries its kind's label."""
    assert main(["evaluate", "--source", "published"]) == 0
    lines = capsys.readouterr().out.splitlines()
    crit = lines[lines.index("criteria") + 1 :][:3]
    assert [x.split()[:4] for x in crit] == [
        ["a", "no-hit", "max", "0.434"],
        ["b", "current", "0.467", "pass"],
        ["c", "current", "0.455", "pass"],
    ]
    # without declared criteria: the generic ones, the stale kinds with theirs
    folder = tmp_path / "mine"
    shutil.copytree(dataset_dir("seed16"), folder)
    meta = json.loads((folder / "dataset.json").read_text())
    del meta["criteria"]
    (folder / "dataset.json").write_text(json.dumps(meta))
    assert main(["evaluate", "--dataset", str(folder), "--source", "published"]) == 0
    lines = capsys.readouterr().out.splitlines()
    by_name = {x.split()[0]: x for x in lines[lines.index("criteria") + 1 :] if x.startswith("  ")}
    assert re.match(
        r"^  no_stale +best stale +\d\.\d{3}  (pass|FAIL)  no memory labelled stale", by_name["no_stale"]
    )
    assert re.match(r"^  current_first +gap to stale +", by_name["current_first"])


@pytest.mark.parametrize("kinds", [["nohit", "hit"], ["hit", "hit"]])
def test_calibrate_prints_the_labelled_threshold_in_words_not_six_decimals(kinds):
    """The labelled threshold is the float just above the best no-hit score: printed beside it
    with the decimals that tell them apart it read 0.841469 where every other figure has 3."""
    from memlab.app.cli.calibrate import calibration_table
    from memlab.datasets.probes import load_probes
    from memlab.studies.calibration import calibrate

    rng = np.random.default_rng(1)

    def unit(n: int) -> np.ndarray:
        x = rng.normal(size=(n, 8))
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    n = 30
    current = [-1 if k == "nohit" else 1 for k in kinds]
    dataset = make_dataset(rng.integers(0, 30 * 86400, n), kinds, current, [[], []])
    spec = RetrievalSpec(bonus=0.02, tau_days=14, threshold=0.9)
    full = load_probes()
    probe_set = replace(full, probes=full.probes[:20])  # a GEV fit per probe: 20 are enough here
    cal = calibrate(
        problem_of(dataset, spec, memories=unit(n), questions=unit(2)),
        probe_set,
        unit(len(probe_set.probes)),
        basis=(unit(1000), rng.uniform(0, 365, 1000), "noise"),
        n_boot=20,
    )
    text = calibration_table(cal, 3)
    best = cal.labelled["nohit_max"]
    if best is None:  # no no-hit question: no labelled threshold
        assert "best no-hit score -, headroom at 0.9: -, labelled threshold -" in text
    else:
        want = f"labelled threshold just above {best:.3f} (the lowest that keeps every no-hit question out)"
        assert want in text
    # no figure with more than the calibrated thresholds' 4 decimals
    assert re.findall(r"\d\.\d{5,}", text) == []


def test_no_llm_judge_help_says_what_the_flag_does():
    """It read "ask the LLM judge" beside --no-llm-judge, the flag that does not ask it."""
    (action,) = [
        a for a in _subparsers(build_parser())["answer"]._actions if "--no-llm-judge" in a.option_strings
    ]
    assert isinstance(action, argparse._StoreFalseAction) and action.default is True
    assert " ".join(action.help.split()).startswith(
        "answers: skip the LLM judge (notebook 09: set llm_judge to False): only the checkable judge's "
        "phrases and the token F1 score the replies"
    )
