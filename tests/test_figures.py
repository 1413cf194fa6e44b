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
