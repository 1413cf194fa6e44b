"""The live tuning panel: sliders and dropdowns over a plotly FigureWidget.

Moving a control re-runs the one-config reference on cached scores (no re-embedding: each
(source, lang) is scored once) and updates, in place, the per-question bars, the pass/fail of each
criterion, the headroom and the injected B-format prompt. ``TuningPanel.state`` is computed
eagerly, so the panel's numbers also exist when the notebook runs headless under papermill.
"""

from __future__ import annotations

import html
import time
from dataclasses import replace
from typing import Any

from memlab.core.criteria import Criterion, dataset_criteria
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec
from memlab.datasets.model import Dataset
from memlab.output.figures import question_bars, question_frame
from memlab.output.prompt import b_format
from memlab.scoring.sources import SOURCES, ScoreTable, load_scores
from memlab.tuning.evaluate import Evaluation, evaluate


class TuningPanel:
    def __init__(
        self,
        dataset: Dataset,
        spec: RetrievalSpec | None = None,
        *,
        source: str = "published",
        lang: str = "en",
        question: str = "C1",
        criteria: tuple[Criterion, ...] | None = None,
        score_options: dict[str, Any] | None = None,
    ):
        self.dataset = dataset
        self.spec = spec or RetrievalSpec()
        self.source, self.lang, self.question = source, lang, question
        self.criteria = dataset_criteria(dataset) if criteria is None else criteria
        self.score_options = score_options or {}
        self._scores: dict[tuple[str, str], ScoreTable] = {}
        self.last_update_ms = 0.0
        self.state = self.compute()
        self._widgets: dict[str, Any] | None = None
        self.figure: Any = None

    # -- the model ------------------------------------------------------------------------
    def scores(self) -> ScoreTable:
        key = (self.source, self.lang)
        if key not in self._scores:
            self._scores[key] = load_scores(self.source, self.dataset, lang=self.lang, **self.score_options)
        return self._scores[key]

    def compute(self) -> Evaluation:
        return evaluate(self.dataset, self.scores(), self.spec, self.criteria, lang=self.lang)

    def prompt(self, ev: Evaluation | None = None) -> str:
        ev = ev or self.state
        injected = ev.result(self.question).injected
        block = b_format(
            [self.dataset.memory(c.memory_id).text(self.lang) for c in injected],
            ev.spec.reference_date,
            self.lang,
        )
        return block or f"(nothing injected for {self.question}: no candidate reaches {ev.spec.threshold:g})"

    def criteria_html(self, ev: Evaluation | None = None) -> str:
        ev = ev or self.state
        rows = "".join(
            f"<tr><td><b>{c.name}</b></td><td class='{'pass' if c.passed else 'fail'}'>"
            f"{'pass' if c.passed else 'FAIL'}</td><td>{'-' if c.value is None else f'{c.value:.3f}'}</td>"
            f"<td>{html.escape(c.description)}</td></tr>"
            for c in ev.criteria
        )
        room = "-" if ev.headroom is None else f"{ev.headroom:.3f}"
        verdict = "all criteria hold" if ev.feasible else "fails " + ", ".join(ev.failing())
        return (
            "<div class='memlab-criteria'><table>"
            "<tr><th>criterion</th><th></th><th>value</th><th>meaning</th></tr>"
            f"{rows}</table><p>headroom <b class='memlab-headroom'>{room}</b> · "
            f"<span class='memlab-verdict'>{verdict}</span> · update {self.last_update_ms:.1f} ms</p></div>"
        )

    def static_figure(self, ev: Evaluation | None = None):
        ev = ev or self.state
        title = (
            f"bonus {ev.spec.bonus:g}, tau {ev.spec.tau_days:g} days, threshold {ev.spec.threshold:g}"
            f" · {ev.spec.decay}/{ev.spec.combine} · {self.source}/{self.lang}"
        )
        return question_bars(question_frame(ev, self.dataset), ev.spec.threshold, title)

    def set(self, **changes: Any) -> Evaluation:
        """Change controls (source, lang, question or any spec field) and recompute."""
        t0 = time.perf_counter()
        for key in ("source", "lang", "question"):
            if key in changes:
                setattr(self, key, changes.pop(key))
        if changes:
            self.spec = replace(self.spec, **changes)
        self.state = self.compute()
        if self.figure is not None:
            self._refresh_widgets()
        self.last_update_ms = (time.perf_counter() - t0) * 1000
        if self._widgets is not None:
            self._widgets["criteria"].value = self.criteria_html()
        return self.state

    # -- the widgets ----------------------------------------------------------------------
    def _refresh_widgets(self) -> None:
        fresh = self.static_figure()
        with self.figure.batch_update():
            for old, new in zip(self.figure.data, fresh.data, strict=True):
                old.x, old.y, old.text = new.x, new.y, new.text
            self.figure.layout.shapes = fresh.layout.shapes
            self.figure.layout.annotations = fresh.layout.annotations
            self.figure.layout.title.text = fresh.layout.title.text
            self.figure.layout.yaxis.range = fresh.layout.yaxis.range
        w = self._widgets
        w["criteria"].value = self.criteria_html()
        w["prompt"].value = f"<pre class='memlab-prompt'>{html.escape(self.prompt())}</pre>"

    def view(self):
        """The panel: controls, the FigureWidget, criteria and the injected prompt."""
        import ipywidgets as W
        import plotly.graph_objects as go

        s = self.spec
        self.figure = go.FigureWidget(self.static_figure())
        self.figure.layout.width = 760
        controls = {
            "source": W.Dropdown(options=list(SOURCES), value=self.source, description="source"),
            "lang": W.Dropdown(options=list(self.dataset.languages), value=self.lang, description="lang"),
            "question": W.Dropdown(
                options=list(self.dataset.question_ids), value=self.question, description="prompt for"
            ),
            "decay": W.Dropdown(options=list(DECAYS), value=s.decay, description="decay"),
            "combine": W.Dropdown(options=list(COMBINES), value=s.combine, description="combine"),
            "bonus": W.FloatSlider(
                value=s.bonus,
                min=0.0,
                max=0.15,
                step=0.001,
                readout_format=".3f",
                description="bonus",
                continuous_update=False,
            ),
            "tau_days": W.FloatSlider(
                value=s.tau_days,
                min=0.5,
                max=60.0,
                step=0.5,
                description="tau (days)",
                continuous_update=False,
            ),
            "threshold": W.FloatSlider(
                value=s.threshold,
                min=0.0,
                max=0.8,
                step=0.005,
                readout_format=".3f",
                description="threshold",
                continuous_update=False,
            ),
            "candidates": W.IntSlider(
                value=s.candidates,
                min=1,
                max=len(self.dataset.memories),
                description="candidates",
                continuous_update=False,
            ),
            "inject": W.IntSlider(
                value=s.inject, min=1, max=8, description="inject", continuous_update=False
            ),
        }
        for name, control in controls.items():
            control.style.description_width = "90px"
            control.add_class(f"memlab-{name}")
            control.observe(lambda change, name=name: self.set(**{name: change["new"]}), names="value")
        self._widgets = {
            **controls,
            "criteria": W.HTML(self.criteria_html()),
            "prompt": W.HTML(f"<pre class='memlab-prompt'>{html.escape(self.prompt())}</pre>"),
        }
        self._widgets["criteria"].add_class("memlab-criteria-box")
        left = W.VBox(
            [*controls.values(), self._widgets["criteria"]], layout=W.Layout(width="380px", min_width="380px")
        )
        return W.VBox(
            [W.HBox([left, self.figure], layout=W.Layout(align_items="flex-start")), self._widgets["prompt"]]
        )
