"""The tuning panel: a control change recomputes and updates the figure and the criteria."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memlab.app.panel import TuningPanel


def test_panel_updates_figure_criteria_and_prompt(seed):
    panel = TuningPanel(seed, source="published")
    view = panel.view()
    (controls, figure, criteria, prompt, values) = view.children
    assert figure is panel.figure and prompt is panel._widgets["prompt"]
    assert values is panel._widgets["values"] and criteria is panel._widgets["criteria"]
    assert [w.description for w in controls.children] == [
        "dataset",
        "source",
        "lang",
        "prompt for",
        "decay",
        "combine",
        "bonus",
        "tau (days)",
        "threshold",
        "candidates",
        "inject",
        "MMR pool",
        "diversity",
    ]
    assert panel.state.feasible
    before = list(panel.figure.data[1].y)
    panel.set(bonus=0.04)  # the seed's third candidate: (c) fails
    assert [c.passed for c in panel.state.criteria] == [True, True, False]
    assert "✗ FAIL" in panel._widgets["criteria"].value  # a symbol, not colour alone
    assert panel.figure.layout.title.text.startswith("bonus 0.04, tau 14 days")
    after = list(panel.figure.data[1].y)
    assert round(before[1], 3) == 0.455 and round(after[1], 3) == 0.445  # H2's article
    panel._widgets["threshold"].value = 0.50  # through the slider, as a user would
    assert panel.spec.threshold == 0.50
    assert [s.y0 for s in panel.figure.layout.shapes] == [0.5]
    assert panel.last_update_ms > 0


def test_decay_and_combine_dropdowns(seed):
    """H2's article: raw 0.408, one day old. gauss: 0.408 + 0.05 exp(-(1/14)^2) = 0.458;
    mult: 0.408 (1 + 0.05 exp(-1/14)) = 0.427, below the threshold: (c) fails."""
    panel = TuningPanel(seed, source="published")
    panel.view()
    panel._widgets["decay"].value = "gauss"
    assert panel.spec.decay == "gauss" and round(panel.figure.data[1].y[1], 3) == 0.458
    assert " · gauss/add · " in panel.figure.layout.title.text
    panel._widgets["decay"].value = "exp"
    panel._widgets["combine"].value = "mult"
    assert round(panel.figure.data[1].y[1], 3) == 0.427
    assert [c.passed for c in panel.state.criteria] == [True, True, False]


def test_prompt_follows_the_question_dropdown(seed):
    panel = TuningPanel(seed, source="published")
    panel.view()
    panel._widgets["question"].value = "N1"
    assert panel.prompt() == "(nothing injected for N1: no candidate reaches 0.45)"
    panel._widgets["question"].value = "C1"
    assert "2026-08-20: The user drinks coffee black." in panel.prompt()


def example():
    from memlab.datasets.schema import load_dataset

    return load_dataset(Path(__file__).resolve().parents[1] / "data" / "example-companion")


def test_slider_ranges_hold_the_values_and_the_sweep_axes():
    from memlab.app.panel import nice_step, slider_ranges
    from memlab.core.spec import RetrievalSpec

    assert [nice_step(x) for x in (0.3, 0.05, 12.0)] == [0.002, 0.0005, 0.1]
    raw = np.array([[0.80, 0.86], [0.82, np.nan]])  # bunched scores, as a multilingual e5 gives
    spec = RetrievalSpec(bonus=0.265, tau_days=1.0, threshold=0.87)
    r = slider_ranges(raw, spec, {"bonus": (0.0, 0.3), "threshold": (0.15, 0.45)})
    # the bonus reaches the sweep's 0.3 and past twice the spec's 0.265; the threshold spans
    # the sweep's 0.15 up to the best score plus the largest bonus (0.86 + 0.53)
    assert (r["bonus"].low, r["bonus"].high, r["bonus"].step) == (0.0, 0.53, 0.005)
    assert r["threshold"].low == 0.15 and r["threshold"].high == 1.39
    for name, value in (("bonus", 0.265), ("threshold", 0.87), ("tau_days", 1.0)):
        assert r[name].low <= value <= r[name].high


def test_panel_on_a_dataset_that_is_not_the_seed(monkeypatch):
    from memlab.app.panel import TuningPanel
    from memlab.core.spec import RetrievalSpec
    from memlab.scores.sources import ScoreTable

    ds = example()
    rng = np.random.default_rng(0)
    raw = rng.uniform(0.78, 0.9, size=(len(ds.questions), len(ds.memories)))
    table = ScoreTable(ds.question_ids, ds.memory_ids, raw, "embedded")
    monkeypatch.setattr("memlab.app.panel.load_scores", lambda *a, **k: table)
    panel = TuningPanel(ds, RetrievalSpec(bonus=0.02, tau_days=3.0, threshold=0.88), source="embedded")
    panel.view()
    w = panel._widgets
    assert panel.question == "q1" and w["question"].options[0] == ("q1: Which city do I live in now?", "q1")
    assert w["source"].options == ("embedded",) and w["lang"].options == ("en", "ja")
    assert w["threshold"].min <= 0.88 <= w["threshold"].max and w["bonus"].max >= 0.04
    y = tuple(panel.figure.layout.yaxis.range)
    w["bonus"].value = 0.05
    w["threshold"].value = 0.85
    assert tuple(panel.figure.layout.yaxis.range) == y  # the frame stays still
    # 11 questions across the panel's 920 px: lines of 11 characters, horizontal
    assert panel.figure.data[0].x[0] == "Which city<br>do I live<br>in now?<br>(q1)"
    assert "bonus: 0.05" in w["values"].value and "threshold: 0.85" in w["values"].value
    assert (
        f"--dataset {ds.path} --source embedded --lang en --bonus 0.05 --tau 3 --threshold 0.85 "
        "--candidates 8 --inject 3" in w["values"].value
    )
    assert "stale injected" in w["criteria"].value and "no_stale" in w["criteria"].value


def test_a_threshold_not_given_follows_the_new_scores(seed, monkeypatch):
    """The seed's published scores start at their 0.45; switched to a dataset without published
    scores the panel embeds, and the threshold becomes the default model's (0.845 English, 0.875
    Japanese), slider included, until it is moved by hand."""
    from memlab.embedding.models import MODELS
    from memlab.scores.sources import ScoreTable, load_scores

    ds = example()
    rng = np.random.default_rng(0)
    fake = ScoreTable(
        ds.question_ids,
        ds.memory_ids,
        rng.uniform(0.78, 0.9, (len(ds.questions), len(ds.memories))),
        "embedded",
    )

    def scores(source, dataset, options, lang):
        return load_scores(source, dataset, options, lang=lang) if source == "published" else fake

    monkeypatch.setattr("memlab.app.panel.load_scores", scores)
    cards = MODELS["multilingual-e5-small"].thresholds
    panel = TuningPanel(seed, source="published")
    assert panel.spec.threshold == 0.45 and panel.threshold_follows
    panel.view()
    w = panel._widgets
    w["dataset"].options = [*w["dataset"].options, str(ds.path)]
    w["dataset"].value = str(ds.path)  # as a user picks it
    assert (panel.source, panel.lang) == ("embedded", "en")
    assert panel.spec.threshold == cards["en"] == w["threshold"].value
    assert panel.figure.layout.shapes[0].y0 == cards["en"]  # the line drawn where it applies
    w["lang"].value = "ja"
    assert panel.spec.threshold == cards["ja"] == w["threshold"].value
    w["threshold"].value = 0.86  # moved by hand: it stays
    w["lang"].value = "en"
    assert panel.spec.threshold == 0.86 and not panel.threshold_follows
    # given at the start, it never follows
    fixed = TuningPanel(ds, {"threshold": 0.8}, source="embedded")
    assert fixed.spec.threshold == 0.8 and not fixed.threshold_follows
