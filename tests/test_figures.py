"""Figure builders and export, with and without a browser."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

from memlab.output import figures
from memlab.tuning.evaluate import evaluate

HAS_BROWSER = figures.find_browser() is not None


def bars(seed, published):
    return figures.question_bars(figures.question_frame(evaluate(seed, published), seed), 0.45)


def test_bars_carry_title_units_and_the_threshold(seed, published):
    fig = bars(seed, published)
    assert fig.layout.title.text == "Current memory (or best candidate) per question"
    assert fig.layout.yaxis.title.text == "cosine score"
    (line,) = [s for s in fig.layout.shapes if s.y0 == 0.45 and s.y1 == 0.45]
    assert line.line.dash == "dash"
    assert [a.text for a in fig.layout.annotations] == ["threshold 0.45"]
    assert [round(v, 3) for v in fig.data[1].y][:2] == [0.488, 0.455]  # H1 current, H2 current


def test_html_is_offline(tmp_path, seed, published, monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    written = figures.export_figure(bars(seed, published), tmp_path / "bars", ["html"])
    html = (tmp_path / "bars.html").read_text()
    assert '<script charset="utf-8" src="plotly.min.js"></script>' in html
    assert "cdn" not in html.lower()
    assert (tmp_path / "plotly.min.js").stat().st_size > 1_000_000
    assert [p.name for p in written] == ["bars.html", "bars.json"]


def test_without_a_browser_one_warning_and_html_only(tmp_path, seed, published, monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setattr(figures.export, "_warned", False)
    fig = bars(seed, published)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figures.export_figure(fig, tmp_path / "a", ["html", "png", "svg"])
        figures.export_figure(fig, tmp_path / "b", ["html", "png"])
    assert len(caught) == 1 and caught[0].category is RuntimeWarning
    assert str(caught[0].message).startswith("no Chrome or Chromium found")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.html",
        "a.json",
        "b.html",
        "b.json",
        "plotly.min.js",
    ]


@pytest.mark.skipif(not HAS_BROWSER, reason="no Chromium on this machine (CI installs Debian's chromium)")
def test_png_and_svg_through_kaleido(tmp_path, seed, published):
    figures.export_figure(bars(seed, published), tmp_path / "bars", ["html", "png", "svg"])
    png = (tmp_path / "bars.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 1800  # 900 px at scale 2
    svg = (tmp_path / "bars.svg").read_text()
    assert "<svg" in svg and "threshold 0.45" in svg


def test_unknown_format(tmp_path, seed, published):
    with pytest.raises(ValueError) as e:
        figures.export_figure(bars(seed, published), tmp_path / "x", ["pdf"])
    assert str(e.value) == "unknown figure format 'pdf'; available: html, json, png, svg"


def test_chromium_is_found_when_on_path():
    if shutil.which("chromium") is None:
        pytest.skip("chromium not installed here")
    assert figures.find_browser() == shutil.which("chromium")


def test_feasibility_axes_fit_a_sliver_of_a_wide_grid():
    import pandas as pd

    from memlab.output.figures.tuning import fitted_ranges

    xs, ys = np.round(np.arange(0, 0.3001, 0.005), 3), np.arange(1, 61, 1.0)
    z = np.zeros((len(ys), len(xs)))
    z[0:5, 48:58] = 1  # feasible only at tau 1-5 days, bonus 0.24-0.285
    x, y = fitted_ranges(pd.DataFrame(z, index=ys, columns=xs))
    # padded by half the region (at least three steps), clipped to the grid, half a cell outside
    assert x == pytest.approx([0.24 - 0.0225 - 0.0025, 0.3 + 0.0025])
    assert y == pytest.approx([1 - 0.5, 5 + 3 + 0.5])
    assert fitted_ranges(pd.DataFrame(np.ones((3, 3)), index=[1, 2, 3], columns=[0, 0.1, 0.2])) is None
    assert fitted_ranges(pd.DataFrame(np.zeros((3, 3)), index=[1, 2, 3], columns=[0, 0.1, 0.2])) is None


def test_units_agree_with_their_numbers():
    assert (figures.days(1), figures.days(14), figures.days(0.5)) == ("1 day", "14 days", "0.5 days")
    fig = figures.bonus_curve(0.265, 1.0)
    assert fig.layout.title.text == "Recency bonus 0.265 × exp(−age / 1 day)"


def test_question_labels_are_wrapped_and_kept_horizontal_in_both_languages():
    assert (
        figures.wrap_label("Which city do I live in these days?")
        == "Which city<br>do I live in<br>these days?"
    )
    # a CJK character counts two: six a line
    assert figures.wrap_label("今どこの街に住んでるんだっけ？") == "今どこの街に<br>住んでるんだ<br>っけ？"
    long = figures.wrap_label("ユーザーは最近どんなコーヒーを飲んでいるか教えてください")
    assert long == "ユーザーは最<br>近どんなコー<br>ヒーを飲ん…"
    assert all(figures.text_width(line) <= 12 for line in long.split("<br>"))
    assert figures.wrap_label("What coffee do I drink lately, and since when?") == (
        "What coffee<br>do I drink<br>lately, and…"
    )
    frame = pd.DataFrame(
        {
            "question": ["q1", "q2"],
            "text": ["今どこの街に住んでるんだっけ？", "最近どんなコーヒーを飲んでる？"],
            "role": ["current", "current"],
            "memory": ["m1", "m2"],
            "raw": [0.8, 0.7],
            "final": [0.85, 0.72],
            "injected": [True, False],
        }
    )
    fig = figures.question_bars(frame, 0.75)
    assert fig.layout.xaxis.tickangle == 0 and fig.layout.width == 900
    assert list(fig.data[0].x) == [
        "今どこの街に住んでるんだっけ？<br>(q1)",
        "最近どんなコーヒーを飲んでる？<br>(q2)",
    ]
    wide = figures.question_bars(pd.concat([frame] * 10, ignore_index=True), 0.75)
    assert wide.layout.width == 100 + 80 * 20  # many questions: wider, not rotated


def test_bars_axis_starts_under_the_lowest_bar_not_at_a_slider_end():
    from helpers import make_dataset

    from memlab.app.panel import bar_floor
    from memlab.core.spec import RetrievalSpec

    ds = make_dataset([0, 0, 0], ["hit", "nohit"], [0, -1], [[], []])
    raw = np.array([[0.86, 0.80, 0.10], [0.83, 0.82, 0.81]])
    # q0's current memory 0.86; q1 (no current) its 2 best candidates, the lower 0.82; threshold 0.845
    assert bar_floor(ds, raw, RetrievalSpec(threshold=0.845, candidates=2)) == 0.79
    assert bar_floor(ds, raw, RetrievalSpec(threshold=0.845, candidates=3)) == 0.78
    assert bar_floor(ds, raw, RetrievalSpec(threshold=0.5, candidates=2)) == 0.47


def test_every_drift_system_has_its_own_colour_and_marker():
    from memlab.drift.memory_systems import READ_SYSTEMS

    systems = list(READ_SYSTEMS)
    rows = [
        {
            "system": s,
            "write_policy": "store-everything",
            "budget": b,
            "oracle": READ_SYSTEMS[s].oracle,
            **{k: 0.5 for k in ("recall", "recall_lo", "recall_hi")},
        }
        for s in systems
        for b in (32, 64)
    ]
    fig = figures.budget_curves(pd.DataFrame(rows), "recall")
    looks = {t.name: (t.line.color, t.marker.symbol, t.line.dash) for t in fig.data}
    assert len(looks) == len(systems) >= 12
    assert len({(c, m) for c, m, _ in looks.values()}) == len(systems)  # no two share colour and marker
    assert len({m for _, m, _ in looks.values()}) == len(systems)  # nor a marker (told apart without colour)
    no_memory, oracle = looks["no-memory"], looks["oracle"]
    assert no_memory[0] != oracle[0] and no_memory[1] != oracle[1]
    assert {s for s, (_, _, dash) in looks.items() if dash == "dash"} == {
        s for s in systems if READ_SYSTEMS[s].oracle
    }
    assert "#F0E442" not in {c for c, _, _ in looks.values()}  # no faint yellow on white


def test_without_arial_the_text_falls_back_to_a_sans_serif_not_a_monospace():
    families = [f.strip().strip('"') for f in figures.FONT["family"].split(",")]
    assert families[:3] == ["Arial", "Liberation Sans", "DejaVu Sans"]
    assert families.index("DejaVu Sans") < families.index("IPAGothic") and families[-1] == "sans-serif"


def scale_rows():
    n = [16, 100, 1000]
    return pd.DataFrame(
        {
            "n": n,
            "nohit_max": [0.84, 0.85, 0.86],
            "nohit_max_real": [0.84, 0.85, np.nan],
            "predicted_nohit_max": [0.84, 0.86, 0.88],
            "predicted_lo": [0.83, 0.85, 0.86],
            "predicted_hi": [0.85, 0.87, 0.9],
        }
    )


def drift_rows():
    return pd.DataFrame(
        [
            {"system": s, "write_policy": "store-everything", "budget": b, "oracle": False, "recall": 0.5}
            | {"recall_lo": 0.4, "recall_hi": 0.6}
            for s in ("top-k", "dedup")
            for b in (32, 64)
        ]
    )


def sweep_rows():
    """Bonus 0..0.1 by 0.01 x tau 1..4 days x thresholds 0.44, 0.45: feasible from bonus 0.05 up."""
    rows = [
        {"bonus": b, "tau_days": t, "threshold": thr, "feasible": b >= 0.05, "headroom": 0.01}
        | {"min_margin": b - 0.045}
        for b in np.round(np.arange(0, 0.1001, 0.01), 2)
        for t in (1.0, 2.0, 3.0, 4.0)
        for thr in (0.44, 0.45)
    ]
    return pd.DataFrame(rows)


BANDS = pd.DataFrame({"tau_days": [1.0, 2.0, 3.0, 4.0], "intervals": [[(0.05, 0.1)]] * 4})


def figure_builders(seed, published):
    ev = evaluate(seed, published)
    chosen = {"bonus": 0.1, "tau_days": 1.0, "threshold": 0.45}
    return {
        "scale_curve": figures.scale_curve(scale_rows(), 0.845, 500.0, "16 dataset memories, then 500 " * 5),
        "budget_curves": figures.budget_curves(drift_rows(), "recall"),
        "question_bars": bars(seed, published),
        "margin_bars": figures.margin_bars(figures.margin_frame(ev, seed), 0.45),
        "feasibility": figures.feasibility_heatmap(sweep_rows(), 0.45, BANDS, chosen),
        "headroom": figures.headroom_heatmap(sweep_rows(), 0.45, BANDS, chosen),
        "threshold_bonus": figures.threshold_bonus_plane(sweep_rows(), 1.0, chosen=chosen),
    }


@pytest.mark.hostile
def test_axis_titles_fit_along_their_axes(seed, published):
    """A y title longer than the plot is tall ran past the figure's top (04_scale's "best
    post-bonus cosine on no-hit questions", 42 characters, about 390 px in DejaVu Sans, on a
    plot 380 px tall); each title is wrapped onto the lines it needs."""
    from memlab.output.figures.style import plot_area, title_length

    for name, fig in figure_builders(seed, published).items():
        width, height = plot_area(fig)
        for axis, room in ((fig.layout.xaxis, width), (fig.layout.yaxis, height)):
            if axis.title.text:
                assert title_length(axis.title.text) <= room, (name, axis.title.text, room)
    fig = figure_builders(seed, published)["scale_curve"]
    assert fig.layout.yaxis.title.text == "best post-bonus cosine<br>on no-hit questions"  # even lines
    # 600 px less 70 + 150 of margins: 380 px; 42 characters at 0.62 x 15 px: 390.6 px, too long
    assert plot_area(fig) == (800, 380) and title_length("best post-bonus cosine on no-hit questions") > 380
    # a title that fits is left alone
    assert bars(seed, published).layout.yaxis.title.text == "cosine score"


@pytest.mark.hostile
@pytest.mark.parametrize("name", ["feasibility", "headroom", "threshold_bonus"])
def test_a_chosen_point_at_the_grids_corner_is_drawn_whole_and_named_in_the_legend(seed, published, name):
    """The published run's star sat at (0.1, 2), the grid's corner: half of it outside the plot
    and its label over the band's edge. The axis now reaches past it and its values are in the
    legend, which sits under the plot, clear of the title."""
    fig = figure_builders(seed, published)[name]
    (star,) = [t for t in fig.data if t.name and t.name.startswith("chosen")]
    assert star.mode == "markers" and star.text is None  # nothing written over the band
    tau = "threshold 0.45" if name == "threshold_bonus" else "tau 1 day"
    assert star.name == f"chosen: bonus 0.1, {tau}"
    # the bands' bonus range 0..0.1 ended at the star; now 4% of it beyond. Without bands the
    # cells' own edges (half a cell, 0.005, beyond) already leave the star's 0.0044 of room
    expected = 0.104 if name != "threshold_bonus" else 0.105
    assert fig.layout.xaxis.range[1] == pytest.approx(expected)
    if name != "threshold_bonus":  # tau 1 day, the lowest row: its cells' edge at 0.5 holds it
        assert list(fig.layout.yaxis.range) == pytest.approx([0.5, 4.5])
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"


@pytest.mark.hostile
def test_03s_margins_say_what_01s_bars_do_not(seed, published):
    """01_reproduce and 03_tune drew the same bars; 03's figure is now each question's margin to
    the threshold on the side it needs, and why one does not get what it should."""
    ev = evaluate(seed, published)
    assert ev.spec.threshold == 0.45
    frame = figures.margin_frame(ev, seed).set_index("question")
    # C1: the current memory m01 at 0.467 clears 0.45 by 0.017, but stale m02 is injected beside it
    assert round(frame.loc["C1", "margin"], 4) == 0.0173 and not frame.loc["C1", "ok"]
    assert frame.loc["C1", "why"] == "stale injected"
    assert round(frame.loc["H2", "margin"], 4) == 0.0046 and frame.loc["H2", "ok"]  # criterion c's
    # a no-hit question: the threshold minus its best candidate (N1: 0.45 - 0.434)
    assert round(frame.loc["N1", "margin"], 4) == 0.0157 and frame.loc["N1", "ok"]
    # H3's current memory m09 has no published score: the bars showed the best candidate instead
    assert np.isnan(frame.loc["H3", "margin"]) and frame.loc["H3", "why"] == "m09 not a candidate"
    fig = figures.margin_bars(frame.reset_index(), 0.45)
    assert [a.text for a in fig.layout.annotations] == ["threshold 0.45"]
    assert [s.x0 for s in fig.layout.shapes] == [0]
    ok, not_ok = fig.data
    assert (ok.name, not_ok.name) == ("gets what it should", "does not")
    assert ok.marker.color != not_ok.marker.color
    assert "How do I take my coffee again? (C1)" in not_ok.y
    assert "+0.017 · stale injected" in not_ok.text
    assert fig.layout.xaxis.title.text == "margin to the threshold (cosine units)"
    assert (
        figures.question_bars(figures.question_frame(ev, seed), 0.45).layout.title.text
        != fig.layout.title.text
    )
