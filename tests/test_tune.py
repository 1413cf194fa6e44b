"""The tuning panel: a control change recomputes and updates the figure and the criteria."""

from __future__ import annotations

from memlab.app.panel import TuningPanel


def test_panel_updates_figure_criteria_and_prompt(seed):
    panel = TuningPanel(seed, source="published")
    view = panel.view()
    (row, prompt) = view.children
    (controls, figure) = row.children
    assert figure is panel.figure and prompt is panel._widgets["prompt"]
    assert [w.description for w in controls.children[:-1]] == [
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
    ]
    assert panel.state.feasible
    before = list(panel.figure.data[1].y)
    panel.set(bonus=0.04)  # the seed's third candidate: (c) fails
    assert [c.passed for c in panel.state.criteria] == [True, True, False]
    assert "FAIL" in panel._widgets["criteria"].value
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
