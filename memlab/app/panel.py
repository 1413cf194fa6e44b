"""The live tuning panel: sliders and dropdowns over a plotly FigureWidget, for any dataset.

Moving a control re-runs the one-config reference on cached scores (no re-embedding: each
(dataset, source, lang) is scored once) and updates, in place, the per-question bars, the
pass/fail of each criterion, the headroom, the stale and wrong injections, the injected
B-format prompt and a "use these values" block (batch YAML and CLI flags, ready to paste).
``TuningPanel.state`` is computed eagerly, so the panel's numbers also exist when the notebook
runs headless under papermill.

Slider ranges come from the scores, not from the seed: the threshold spans the scores the
model produces plus the largest bonus, the bonus reaches past the spread of the scores, and
both always include the starting value and any sweep axes passed in ``ranges`` (an empty range
is the model's, as the sweep's). The y-axis is fixed per score table, so the bars move and the
frame does not.

A threshold not given follows the scores, as everywhere (``memlab.scores.problem``): the
model's for the dataset and language, again after the dataset, source or language is switched,
until the threshold is moved by hand. A tuned-spec file (``spec_file``, ``memlab sweep --save``)
gives every spec value not given beside it, and its model and dataset are checked against the
scores (``memlab.tuning.tuned.check_tuned``).
"""

from __future__ import annotations

import html
import math
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memlab.core.criteria import Criterion, dataset_criteria
from memlab.core.numbers import plural
from memlab.core.ranking import select_candidates
from memlab.core.spec import COMBINES, DECAYS, SPEC_FIELDS, RetrievalSpec
from memlab.datasets.schema import Dataset, load_dataset
from memlab.output.figures import OKABE_ITO, margin_bars, margin_frame, question_bars, question_frame
from memlab.output.prompt import b_format, memory_line
from memlab.scores.problem import RetrievalProblem
from memlab.scores.sources import ScoreOptions, ScoreTable, available_sources, load_scores
from memlab.tuning.evaluate import Evaluation, evaluate
from memlab.tuning.tuned import (
    check_tuned,
    dataset_reference,
    load_tuned,
    merge_spec,
    off_default,
    refuse_collection,
)

NOWRAP = "white-space:nowrap"  # "✓ PASS" on one line
PASS_MARK = f"<span class='memlab-pass' style='color:{OKABE_ITO['green']};{NOWRAP}'>✓ PASS</span>"
FAIL_MARK = f"<span class='memlab-fail' style='color:{OKABE_ITO['vermillion']};{NOWRAP}'>✗ FAIL</span>"
# The panel fits a notebook's output area at a 1,400 px window with JupyterLab's file browser
# open (about 960 px): the controls in a grid above, the figure at this width below them.
FIGURE_WIDTH = 920
CONTROL_WIDTH = "300px"


@dataclass(frozen=True)
class SliderRange:
    low: float
    high: float
    step: float


def slider_low(name: str, r: SliderRange) -> float:
    """A slider's lowest position: tau_days one step above 0 (a decay needs tau > 0)."""
    return max(r.step, r.low) if name == "tau_days" else r.low


def nice_step(span: float, steps: int = 200) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``steps`` positions."""
    if not span > 0:
        return 0.001
    raw = span / steps
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def slider_ranges(
    raw: np.ndarray, spec: RetrievalSpec, ranges: dict[str, tuple[float, float]] | None = None
) -> dict[str, SliderRange]:
    """Bonus, tau and threshold ranges from the score table, always holding the spec's values
    and the sweep's axes (``ranges``: name -> (low, high))."""
    ranges = ranges or {}
    finite = raw[np.isfinite(raw)]
    lo_s, hi_s = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    spread = max(hi_s - lo_s, 0.05)
    b_hi = max(spread, 2 * spec.bonus, ranges.get("bonus", (0, 0))[1])
    t_lo = min(lo_s, spec.threshold, ranges.get("threshold", (np.inf, 0))[0])
    t_hi = max(hi_s + b_hi, spec.threshold, ranges.get("threshold", (0, -np.inf))[1])
    tau_hi = max(60.0, 2 * spec.tau_days, ranges.get("tau_days", (0, 0))[1])
    out = {}
    for name, low, high in (("bonus", 0.0, b_hi), ("threshold", t_lo, t_hi), ("tau_days", 0.0, tau_hi)):
        step = nice_step(high - low) if name != "tau_days" else 0.5
        digits = max(0, -math.floor(math.log10(step))) + 1
        out[name] = SliderRange(
            round(math.floor(low / step) * step, digits), round(math.ceil(high / step) * step, digits), step
        )
    return out


def bar_floor(dataset: Dataset, raw: np.ndarray, spec: RetrievalSpec, margin: float = 0.03) -> float:
    """Where the bars' axis starts: ``margin`` under the lowest raw score a bar can show (the
    current memory's; for a question without one, the lowest of its ``candidates`` best) and under
    the threshold, never below 0. The seed's sweep range or a slider's far end does not move it."""
    lows = [spec.threshold]
    index = {m: j for j, m in enumerate(dataset.memory_ids)}
    for i, q in enumerate(dataset.questions):
        if q.current is not None and np.isfinite(raw[i, index[q.current]]):
            lows.append(float(raw[i, index[q.current]]))
        elif np.isfinite(raw[i]).any():
            lows.append(float(raw[i, select_candidates(raw[i], spec.candidates)].min()))
    return max(0.0, round(min(lows) - margin, 3))


def default_question(dataset: Dataset) -> str:
    """The question the prompt shows first: the first the dataset declares for a rerun table,
    else the first with a current memory, else the first."""
    if dataset.tables is not None and dataset.tables.reruns:
        return dataset.tables.reruns[0]
    return next((q.id for q in dataset.questions if q.current), dataset.question_ids[0])


def number(x: float) -> str:
    """A number as short as it reads back exactly: ``0.045``, ``15``, else its full repr."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def batch_yaml(dataset: str, source: str, lang: str, spec: RetrievalSpec) -> str:
    """The configuration as a run of a batch file (``memlab run --config``), written by a YAML
    dumper: a dataset folder with spaces, ``#``, ``:`` or quotes reads back as written."""
    import yaml

    parameters: dict[str, object] = {
        "dataset": dataset,
        "source": source,
        "lang": lang,
        **{k: float(number(getattr(spec, k))) for k in ("bonus", "tau_days", "threshold")},
        "candidates": int(spec.candidates),
        "inject": int(spec.inject),
    }
    if family(spec):
        parameters |= {"decay": spec.decay, "combine": spec.combine}
    doc = {"runs": [{"name": "tuned", "parameters": parameters}]}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False)


def cli_flags(dataset: str, source: str, lang: str, spec: RetrievalSpec) -> str:
    """The configuration as flags of ``memlab evaluate`` (and of every command that scores), each
    value quoted for a POSIX shell (``shlex.quote``)."""
    q = shlex.quote
    return (
        f"--dataset {q(dataset)} --source {q(source)} --lang {q(lang)} --bonus {number(spec.bonus)} "
        f"--tau {number(spec.tau_days)} --threshold {number(spec.threshold)} --candidates {spec.candidates} "
        f"--inject {spec.inject}"
        + (f" --decay {q(spec.decay)} --combine {q(spec.combine)}" if family(spec) else "")
        + (f" --mmr-pool {spec.mmr_pool} --diversity {number(spec.diversity)}" if spec.mmr else "")
    )


def family(spec: RetrievalSpec) -> bool:
    """The decay family differs from the default (exp, add): say it, else keep the line short."""
    return not spec.default_family


class TuningPanel:
    def __init__(
        self,
        dataset: Dataset,
        spec: RetrievalSpec | Mapping[str, Any] | None = None,
        *,
        source: str | None = None,
        lang: str | None = None,
        question: str | None = None,
        criteria: tuple[Criterion, ...] | None = None,
        score_options: ScoreOptions | dict[str, Any] | None = None,
        ranges: Mapping[str, tuple[float, float] | str] | None = None,
        datasets: tuple[str, ...] = (),
        spec_file: str | None = None,
    ):
        """``spec``: a whole spec (every value given), or spec fields (None: the default; a
        threshold not given follows the scores); ``spec_file``: a tuned spec whose values apply
        where ``spec`` gives none (spec fields at the spec's default count as none given, as a
        notebook's parameters do); ``ranges``: the sweep's axes the sliders must reach, as
        (low, high) or as the sweep's text ("" for the model's range)."""
        from memlab.app.parameters import parameter

        if isinstance(spec, RetrievalSpec):
            given = {k: getattr(spec, k) for k in SPEC_FIELDS}
        else:
            given = {k: v for k, v in dict(spec or {}).items() if v is not None}
        self.tuned = load_tuned(spec_file) if spec_file else None
        if self.tuned is not None:  # values at the spec's default take the file's (as a notebook's)
            refuse_collection(self.tuned, "the panel")
            given, notes = merge_spec(
                self.tuned, given if isinstance(spec, RetrievalSpec) else off_default(given)
            )
            source = source or self.tuned.source
            lang = lang or next((x for x in self.tuned.languages if x in dataset.languages), None)
            print(
                f"spec: from {self.tuned.label}"
                + (f"; given beside it, overriding the file: {', '.join(notes)}" if notes else ""),
                file=sys.stderr,
            )
        self.dataset = dataset
        self.dataset_name = dataset_reference(dataset)
        self.datasets = datasets  # others offered in the dataset dropdown (names or folders)
        self.threshold_follows = "threshold" not in given  # the model's, until moved by hand
        self.spec = RetrievalSpec(**given)
        self.source = source or parameter("source").default
        if self.source not in available_sources(dataset):
            self.source = "embedded"
        self.lang = lang or dataset.languages[0]
        self.question = question or default_question(dataset)
        self.given_criteria = criteria
        self.criteria = dataset_criteria(dataset) if criteria is None else criteria
        # how every (dataset, source, lang) is scored: the model, the server, the cache
        given_options = score_options or ScoreOptions()
        self.score_options = (
            given_options if isinstance(given_options, ScoreOptions) else ScoreOptions(**given_options)
        )
        self.ranges = dict(ranges or {})
        self._scores: dict[tuple[str, str, str], ScoreTable] = {}
        self.last_update_ms = 0.0
        self._follow_threshold()
        if self.tuned is not None:
            check_tuned(self.tuned, self.problem())
        self.state = self.compute()
        self._widgets: dict[str, Any] | None = None
        self.figure: Any = None

    # -- the model ------------------------------------------------------------------------
    def options(self) -> ScoreOptions:
        return replace(self.score_options, source=self.source, lang=self.lang)

    def scores(self) -> ScoreTable:
        key = (self.dataset_name, self.source, self.lang)
        if key not in self._scores:
            self._scores[key] = load_scores(self.source, self.dataset, self.score_options, lang=self.lang)
        return self._scores[key]

    def problem(self) -> RetrievalProblem:
        """The dataset, its scores and the panel's spec, as every command sees them."""
        return RetrievalProblem.of(self.dataset, self.scores(), self.spec, self.options())

    def logged_query(self, log: str, query: str, against: tuple[str, ...] = ()):
        """One query of a query log (``memlab explain``'s JSONL) replayed on the panel's store
        under its spec (and ``against``: tuned-spec files): (its explanation, the figure of its
        candidates with the step that decided each and the threshold)."""
        from memlab.datasets.querylog import load_log
        from memlab.output.figures import candidate_bars, candidate_frame
        from memlab.tuning.explain import replay
        from memlab.tuning.tuned import load_tuned

        specs = [(name, load_tuned(name).spec) for name in against]
        rep = replay(self.problem(), load_log(log), specs)
        e = rep.explain(query)
        text = e.query.text or "(a logged vector)"
        title = f"{html.escape(text[:60])} ({e.query.id}) · threshold {self.spec.threshold:g}"
        return e, candidate_bars(candidate_frame(e, self.dataset, self.lang), self.spec.threshold, title)

    def _follow_threshold(self) -> None:
        """A threshold not given is the one that follows these scores (the model's)."""
        if self.threshold_follows:
            self.spec = replace(self.spec, threshold=self.problem().defaults.threshold)

    def compute(self) -> Evaluation:
        return evaluate(self.dataset, self.scores(), self.spec, self.criteria, lang=self.lang)

    def sweep_ranges(self) -> dict[str, tuple[float, float]]:
        """The sweep's axes as (low, high); an axis given as text is parsed, "" being the
        model's range for these scores."""
        from memlab.core.grid import parse_axis

        out = {}
        for name, given in self.ranges.items():
            if isinstance(given, str):
                text = given or getattr(self.problem().defaults, f"{name.replace('_days', '')}_range", "")
                values = parse_axis(text, f"{name}_range") if text else ()
                if values:
                    out[name] = (float(min(values)), float(max(values)))
            else:
                out[name] = (float(given[0]), float(given[1]))
        return out

    def slider_ranges(self) -> dict[str, SliderRange]:
        return slider_ranges(self.scores().raw, self.spec, self.sweep_ranges())

    def y_range(self) -> tuple[float, float]:
        """The bars' y-axis for this score table, fixed while the sliders move: from just under
        the lowest score a bar can show (a question's current memory, else its candidates) and
        the threshold, up to the highest score plus the largest bonus."""
        r = self.slider_ranges()
        return (bar_floor(self.dataset, self.scores().raw, self.spec), r["threshold"].high + 0.02)

    def prompt(self, ev: Evaluation | None = None) -> str:
        ev = ev or self.state
        injected = ev.result(self.question).injected
        block = b_format(
            [memory_line(self.dataset.memory(c.memory_id), self.lang) for c in injected],
            ev.spec.reference_date,
            self.lang,
        )
        return block or f"(nothing injected for {self.question}: no candidate reaches {ev.spec.threshold:g})"

    def criteria_html(self, ev: Evaluation | None = None) -> str:
        ev = ev or self.state
        rows = "".join(
            f"<tr><td><b>{html.escape(c.name)}</b></td><td>{PASS_MARK if c.passed else FAIL_MARK}</td>"
            f"<td>{'-' if c.value is None else f'{c.value:.3f}'}</td>"
            f"<td>{html.escape(c.description)}</td></tr>"
            for c in ev.criteria
        )
        room = "-" if ev.headroom is None else f"{ev.headroom:.3f}"
        verdict = "all criteria hold" if ev.feasible else "fails " + ", ".join(ev.failing())
        return (
            "<div class='memlab-criteria'><table>"
            "<tr><th>criterion</th><th></th><th>value</th><th>meaning</th></tr>"
            f"{rows}</table><p>headroom <b class='memlab-headroom'>{room}</b> · "
            f"stale injected <b class='memlab-stale'>{ev.stale_injected}</b> · "
            f"wrong injected <b class='memlab-wrong'>{ev.wrong_injected}</b> · "
            f"<span class='memlab-verdict'>{verdict}</span> · update {self.last_update_ms:.1f} ms</p></div>"
        )

    def values_html(self) -> str:
        """ "Use these values": the configuration as batch YAML and as CLI flags."""
        yaml = batch_yaml(self.dataset_name, self.source, self.lang, self.spec)
        flags = cli_flags(self.dataset_name, self.source, self.lang, self.spec)
        return (
            "<div class='memlab-values'><b>use these values</b> · batch YAML:"
            f"<pre class='memlab-yaml'>{html.escape(yaml)}</pre>CLI flags:"
            f"<pre class='memlab-flags'>{html.escape(flags)}</pre></div>"
        )

    def title(self, ev: Evaluation | None = None) -> str:
        s = (ev or self.state).spec
        return (
            f"bonus {s.bonus:g}, tau {s.tau_days:g} {plural(s.tau_days, 'day')}, "
            f"threshold {s.threshold:g} · {s.decay}/{s.combine} · "
            + (f"MMR diversity {s.diversity:g} over {s.mmr_pool} · " if s.mmr else "")
            + f"{self.dataset.name} · {self.source}/{self.lang}"
        )

    def static_figure(self, ev: Evaluation | None = None):
        ev = ev or self.state
        frame = question_frame(ev, self.dataset)
        return question_bars(frame, ev.spec.threshold, self.title(ev), self.y_range(), width=FIGURE_WIDTH)

    def margin_figure(self, ev: Evaluation | None = None):
        """What the bars do not show at a glance: per question, how far the spec keeps it from
        the threshold on the side it needs, and which one a small change would flip first."""
        ev = ev or self.state
        title = f"Margin to the threshold per question<br><sup>{html.escape(self.title(ev))}</sup>"
        return margin_bars(margin_frame(ev, self.dataset), ev.spec.threshold, title)

    def set(self, **changes: Any) -> Evaluation:
        """Change controls (dataset, source, lang, question or any spec field) and recompute."""
        t0 = time.perf_counter()
        rescored = bool({"dataset", "source", "lang"} & set(changes))  # a new score table
        if "dataset" in changes:
            name = changes.pop("dataset")
            self.dataset = load_dataset(name)
            self.dataset_name = str(name)
            self.criteria = (
                dataset_criteria(self.dataset) if self.given_criteria is None else self.given_criteria
            )
            if self.lang not in self.dataset.languages:
                self.lang = self.dataset.languages[0]
            if self.source not in available_sources(self.dataset):
                self.source = "embedded"
            self.question = default_question(self.dataset)
        for key in ("source", "lang", "question"):
            if key in changes:
                setattr(self, key, changes.pop(key))
        if "threshold" in changes:
            self.threshold_follows = False  # moved by hand: it stays where it was put
        if changes.get("mmr_pool") == 0:  # MMR off: no diversity left to apply (the spec refuses one)
            changes["diversity"] = 0.0
        if changes:
            self.spec = replace(self.spec, **changes)
        if rescored:
            self._follow_threshold()
        self.state = self.compute()
        if self.figure is not None:
            self._refresh_widgets(rescored)
        self.last_update_ms = (time.perf_counter() - t0) * 1000
        if self._widgets is not None:
            self._widgets["criteria"].value = self.criteria_html()
            self._sync_mmr()
        return self.state

    def has_vectors(self) -> bool:
        """Whether these scores keep the memories' vectors (MMR's diversity needs them)."""
        return self.scores().vectors is not None

    def _sync_mmr(self) -> None:
        """The MMR sliders show the spec: diversity only with a pool and the vectors it needs."""
        w = self._widgets
        self._quiet = True
        try:
            w["mmr_pool"].value, w["diversity"].value = self.spec.mmr_pool, self.spec.diversity
            w["diversity"].disabled = not (self.spec.mmr and self.has_vectors())
        finally:
            self._quiet = False

    # -- the widgets ----------------------------------------------------------------------
    def _refresh_widgets(self, rescored: bool = False) -> None:
        if rescored:  # new questions, texts or score scale: rebuild the whole figure once
            fresh = self.static_figure()
            with self.figure.batch_update():
                for old, new in zip(self.figure.data, fresh.data, strict=True):
                    old.x, old.y, old.text, old.hovertext = new.x, new.y, new.text, new.hovertext
                self.figure.layout.shapes = fresh.layout.shapes
                self.figure.layout.annotations = fresh.layout.annotations
                self.figure.layout.title.text = fresh.layout.title.text
                self.figure.layout.yaxis.range = fresh.layout.yaxis.range
        else:  # a slider: only the bar heights, the labels, the title and the threshold line move
            frame = question_frame(self.state, self.dataset)
            thr = self.spec.threshold
            raw, final = self.figure.data
            with self.figure.batch_update():
                raw.y = frame["raw"].to_numpy()
                final.y = frame["final"].to_numpy()
                final.text = ["injected" if i else "" for i in frame["injected"]]
                self.figure.layout.title.text = self.title()
                self.figure.layout.shapes[0].update(y0=thr, y1=thr)
                self.figure.layout.annotations[0].update(y=thr, text=f"threshold {thr:g}")
        w = self._widgets
        w["prompt"].value = f"<pre class='memlab-prompt'>{html.escape(self.prompt())}</pre>"
        w["values"].value = self.values_html()
        if rescored:
            self._sync_controls()

    def _sync_controls(self) -> None:
        """After a dataset, source or language change: options and ranges follow the new scores."""
        w = self._widgets
        self._quiet = True
        try:
            w["lang"].options = list(self.dataset.languages)
            w["lang"].value = self.lang
            w["source"].options = list(available_sources(self.dataset))
            w["source"].value = self.source
            w["question"].options = self._question_options()
            w["question"].value = self.question
            for name, r in self.slider_ranges().items():
                s = w[name]
                s.max = max(s.max, r.high)  # widen first, so the value is never clamped
                s.min = slider_low(name, r)
                s.max, s.step = r.high, r.step
            w["threshold"].value = self.spec.threshold  # the new scores' default, when it follows
        finally:
            self._quiet = False

    def _question_options(self) -> list[tuple[str, str]]:
        from memlab.output.figures import short_text

        return [(f"{q.id}: {short_text(q.text(self.lang), 40)}", q.id) for q in self.dataset.questions]

    def view(self):
        """The panel: controls, the FigureWidget, criteria, the prompt and the values to paste."""
        import ipywidgets as W
        import plotly.graph_objects as go

        s = self.spec
        r = self.slider_ranges()
        self._quiet = False
        self.figure = go.FigureWidget(self.static_figure())
        datasets = list(dict.fromkeys([self.dataset_name, *self.datasets]))
        controls = {
            "dataset": W.Dropdown(options=datasets, value=self.dataset_name, description="dataset"),
            "source": W.Dropdown(
                options=list(available_sources(self.dataset)), value=self.source, description="source"
            ),
            "lang": W.Dropdown(options=list(self.dataset.languages), value=self.lang, description="lang"),
            "question": W.Dropdown(
                options=self._question_options(), value=self.question, description="prompt for"
            ),
            "decay": W.Dropdown(options=list(DECAYS), value=s.decay, description="decay"),
            "combine": W.Dropdown(options=list(COMBINES), value=s.combine, description="combine"),
            **{
                name: W.FloatSlider(
                    value=getattr(s, name),
                    min=slider_low(name, r[name]),
                    max=r[name].high,
                    step=r[name].step,
                    description=words,
                    continuous_update=False,
                    **({"readout_format": ".3f"} if name != "tau_days" else {}),
                )
                for name, words in (
                    ("bonus", "bonus"),
                    ("tau_days", "tau (days)"),
                    ("threshold", "threshold"),
                )
            },
            "candidates": W.IntSlider(
                value=s.candidates,
                min=1,
                max=max(len(self.dataset.memories), s.candidates),
                description="candidates",
                continuous_update=False,
            ),
            "inject": W.IntSlider(
                value=s.inject, min=1, max=max(8, s.inject), description="inject", continuous_update=False
            ),
            # MMR (Qdrant's mmr before the bonus): pool 0 is off; diversity needs a pool and vectors
            "mmr_pool": W.IntSlider(
                value=s.mmr_pool,
                min=0,
                max=max(len(self.dataset.memories), s.mmr_pool),
                description="MMR pool",
                continuous_update=False,
            ),
            "diversity": W.FloatSlider(
                value=s.diversity,
                min=0.0,
                max=1.0,
                step=0.05,
                readout_format=".2f",
                description="diversity",
                disabled=not (s.mmr and self.has_vectors()),
                continuous_update=False,
            ),
        }
        for name, control in controls.items():
            control.style.description_width = "90px"
            control.layout.width = CONTROL_WIDTH
            control.add_class(f"memlab-{name}")
            control.observe(lambda change, name=name: self._on_change(name, change["new"]), names="value")
        self._widgets = {
            **controls,
            "criteria": W.HTML(self.criteria_html()),
            "prompt": W.HTML(f"<pre class='memlab-prompt'>{html.escape(self.prompt())}</pre>"),
            "values": W.HTML(self.values_html()),
        }
        self._widgets["criteria"].add_class("memlab-criteria-box")
        grid = W.GridBox(
            list(controls.values()),
            layout=W.Layout(grid_template_columns=f"repeat(auto-fill, {CONTROL_WIDTH})", grid_gap="2px 12px"),
        )
        return W.VBox(
            [
                grid,
                self.figure,
                self._widgets["criteria"],
                self._widgets["prompt"],
                self._widgets["values"],
            ]
        )

    def _on_change(self, name: str, value: Any) -> None:
        if not self._quiet:
            self.set(**{name: value})
