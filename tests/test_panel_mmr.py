"""The tuning panel's MMR sliders (pool depth, diversity) drive the one reference: after each
move the panel's evaluation, bars and pasteable values are ``evaluate``'s at the spec the
sliders give; diversity is off without a pool and without the vectors it needs."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.app.panel import TuningPanel
from memlab.core.errors import InputError
from memlab.core.spec import RetrievalSpec
from memlab.output.figures import question_frame
from memlab.tuning.evaluate import evaluate


def injected(ev) -> list[list[int]]:
    return [[c.index for c in r.injected] for r in ev.results]


def test_the_pool_slider_on_published_scores(seed):
    panel = TuningPanel(seed, source="published", spec={"candidates": 6})
    panel.view()
    w = panel._widgets
    assert w["mmr_pool"].value == 0 and w["diversity"].disabled  # off by default
    plain = injected(panel.state)
    w["mmr_pool"].value = 3  # a pool shallower than candidates: MMR keeps the top 3 alone
    assert panel.spec.mmr_pool == 3 and panel.spec.diversity == 0.0
    assert w["diversity"].disabled  # published scores keep no vectors
    want = evaluate(
        seed, panel.scores(), RetrievalSpec(**{**panel.spec.as_row(), "mmr_pool": 3}), panel.criteria
    )
    assert injected(panel.state) == injected(want)
    assert all(len(r.candidates) <= 3 for r in panel.state.results)
    assert "--mmr-pool 3 --diversity 0" in w["values"].value
    assert "MMR diversity 0 over 3" in panel.figure.layout.title.text
    w["mmr_pool"].value = 0  # off again: the panel is what it was
    assert not panel.spec.mmr and injected(panel.state) == plain
    with pytest.raises(InputError, match="needs the memories' vectors"):
        panel.set(mmr_pool=8, diversity=0.5)


@pytest.mark.model
def test_the_sliders_drive_the_reference_on_embedded_scores(seed):
    panel = TuningPanel(seed, source="embedded", spec={"candidates": 5, "inject": 3, "threshold": 0.0})
    panel.view()
    w = panel._widgets
    plain = injected(panel.state)
    w["mmr_pool"].value = 16
    assert not w["diversity"].disabled  # a pool and the vectors: diversity can move
    changed = 0
    for d in (0.3, 0.6, 0.95):
        w["diversity"].value = d
        assert panel.spec.mmr_pool == 16 and panel.spec.diversity == d
        want = evaluate(panel.problem())  # the reference, at the spec the sliders give
        assert injected(panel.state) == injected(want)
        assert [c.passed for c in panel.state.criteria] == [c.passed for c in want.criteria]
        bars = question_frame(want, seed)["final"].to_numpy()  # the bars the reference draws
        np.testing.assert_array_equal(np.asarray(panel.figure.data[1].y, dtype=float), bars.astype(float))
        changed += injected(want) != plain
    assert changed > 0  # high diversity injects other memories than the plain top candidates
    w["mmr_pool"].value = 0  # off: diversity goes back to 0, and is disabled again
    assert panel.spec.diversity == 0.0 and w["diversity"].value == 0.0 and w["diversity"].disabled
    assert injected(panel.state) == plain
