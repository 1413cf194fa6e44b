"""The results page reads like a finished tool: numbers for people, a table of contents, no Python
values in cells (checked on paper, then in headless Chromium on a real run)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memlab.output.index_page import fmt_cell, fmt_interval, fmt_number, table_html


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.2448454177037211, "0.245"),
        (91.7733525833, "91.8"),
        (2.009e-10, "2.01e-10"),
        (1234567.0, "1,234,567"),
        (0.0451097400900845, "0.0451"),
        (3, "3"),
        (True, "✓"),
        (False, "✗"),
        (None, ""),
        (float("nan"), ""),
        (float("inf"), ""),
        ([], ""),
        ([[True, False]], "✓, ✗"),
        ("[0.1, 0.2]", "0.1, 0.2"),
        ("q1", "q1"),
    ],
)
def test_cells_for_people(value, text):
    assert fmt_cell(value) == text


def test_numbers_and_intervals():
    assert [fmt_number(x) for x in (0.5, 12.26, 0.001234, 150.0)] == ["0.5", "12.3", "0.00123", "150"]
    assert fmt_interval(0.2448454177037211, 0.28519994889384576) == "[0.245, 0.285)"
    assert fmt_interval(0.1, None, (False, False)) == "(0.1, +∞)"


def test_interval_columns_become_one_readable_column(tmp_path):
    path = tmp_path / "bands.json"
    path.write_text(
        json.dumps(
            [
                {
                    "tau_days": 14.0,
                    "intervals": "[[0.0451097400900845, 0.0758411784522059]]",
                    "closed": "[[true, false]]",
                },
                {"tau_days": 30.0, "intervals": "[]", "closed": "[]"},
            ]
        )
    )
    html = table_html(path)
    assert "<th>feasible bonus</th>" in html and "[0.0451, 0.0758)" in html and ">empty<" in html
    assert "True" not in html and "[[" not in html


@pytest.mark.browser
@pytest.mark.notebook
def test_the_index_in_a_real_browser(tmp_path):
    from lab import ARGS

    from memlab.app.cli import main
    from memlab.output.figures import find_browser

    path = find_browser()
    if path is None:
        pytest.skip("no Chromium here")
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "notebooks: [01_reproduce, 02_sweep]\nparameters: {fig_formats: [html, png], source: published, "
        'bonus_range: "0:0.1:0.01", tau_range: "7,14,30", threshold_range: "0.44,0.45"}\n'
        "runs:\n  - {name: published}\n"
    )
    out = tmp_path / "out"
    assert main(["run", "--config", str(batch), "--out", str(out)]) == 0
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto((out / "index.html").as_uri())
        links = page.locator("nav.toc a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert links == ["#published", "#published-01_reproduce", "#published-02_sweep"]
        for href in links:  # every anchor lands somewhere
            assert page.locator(href).count() == 1
        cells = page.locator("td, li, p, h4").all_text_contents()
        python = [c for c in cells if re.search(r"\[\[|\bnan\b|\bNone\b|\bTrue\b|\bFalse\b", c)]
        assert python == []
        assert page.locator("figure p.about").count() >= 4  # what each figure shows
        # tables fit: nothing wider than the page body
        widths = page.evaluate(
            "[document.body.clientWidth, ...[...document.querySelectorAll('table.data')].map("
            "t => t.closest('.scroll') ? t.closest('.scroll').clientWidth : t.clientWidth)]"
        )
        assert max(widths[1:]) <= widths[0]
        # one figure per notebook, a PNG (no iframe), drawn in a full-page screenshot
        assert page.locator("iframe").count() == 0
        page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
        boxes = page.evaluate(SHOWN_FIGURES)
        assert len(boxes) == 2 and all(h > 300 for *_, h in boxes)
        assert min(drawn_in(page.screenshot(full_page=True), boxes)) > 20
        assert page.locator("details").count() == 2
        browser.close()
    assert (out / "plotly.min.js").is_file()
    assert len(list(out.rglob("plotly.min.js"))) == 1  # one shared copy per results folder


def test_bootstrap_columns_and_parameters_read_as_text(tmp_path):
    path = tmp_path / "drift.json"
    path.write_text(
        json.dumps(
            [
                {
                    "system": "store-everything",
                    "recall": 0.6873,
                    "recall_lo": 0.6494,
                    "recall_hi": 0.7235,
                    "parameters": '{"alpha": 1.0, "retire_gate": "-inf", "supersede_cosine": 0.6}',
                },
                {
                    "system": "no-memory",
                    "recall": 0.0,
                    "recall_lo": 0.0,
                    "recall_hi": 0.0,
                    "parameters": "{}",
                },
            ]
        )
    )
    html = table_html(path)
    assert "<th>recall</th>" in html and "recall_lo" not in html and "recall_hi" not in html
    assert "<td class=num>0.687 [0.649, 0.724]</td>" in html and "<td class=num>0 [0, 0]</td>" in html
    nb = "\u00a0=\u00a0"  # each "key = value" on one line; the list breaks after its commas
    assert f"<td>alpha{nb}1, retire_gate{nb}-inf, supersede_cosine{nb}0.6</td>" in html and "{" not in html
    assert "<td class=word>store-everything</td>" in html  # one word: never broken inside
    css = re.search(r"table\.data td,table\.data th\{[^}]*\}", __import__("memlab").output.index_page.CSS)
    assert "anywhere" not in css.group(0)  # no mid-word breaks to squeeze a column


def fake_run(tmp_path, statics=()):
    """A results folder written as the notebooks write it (real figures, tables, a skipped and a
    failed notebook), without running a kernel; returns the manifest and the reports."""
    import pandas as pd
    import plotly.graph_objects as go

    from memlab.output.report import Report

    out = tmp_path / "out"
    notebooks = []
    reports = []

    def add(nb, status="ok", error=None):
        notebooks.append(
            {
                "run": "r",
                "notebook": nb,
                "status": status,
                "error": error,
                "duration_s": 1.0,
                "output": str(out / "r" / f"{nb}.ipynb"),
                "out_dir": str(out / "r" / nb),
            }
        )
        return Report(out / "r" / nb, ["html", *statics])

    rep = add("02_sweep")
    for name in ("headroom", "feasibility", "chosen_bars"):
        fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2], marker_color="#0072B2"))
        rep.figure(name, fig.update_layout(title=name, width=600, height=400), f"{name} caption")
    rep.table("sweep_summary", pd.DataFrame({"bonus": [0.05], "feasible": [True]}), "summary")
    rep.value("headroom_value", 0.0123, "headroom at the choice")
    rep.value("chosen", {"bonus": 0.05, "tau_days": 14.0}, "the choice")
    rep.finish()
    add("08_benchmark").skip(
        "no benchmark file given",
        fill={"benchmark_file": "data/external/locomo10.json"},
        how="download LoCoMo's locomo10.json",
    )
    broken = add("01_reproduce", "failed", "ValueError: boom")
    broken.table("criteria", pd.DataFrame({"criterion": ["a"], "pass": [True]}), "criteria before it failed")
    for nb in notebooks:
        reports.append(json.loads((Path(nb["out_dir"]) / "report.json").read_text()))
    manifest = {
        "notebooks": notebooks,
        "started": "now",
        "duration_s": 3.0,
        "status": "failed",
        "batch": "b.yaml",
        "git_commit": "abc",
    }
    return manifest, reports, out


def test_one_figure_per_section_the_rest_behind_a_disclosure(tmp_path, monkeypatch):
    from memlab.app.notebooks import figure_notes
    from memlab.output.index_page import render_index

    monkeypatch.setenv("MEMLAB_PLOTLY_JS", str(tmp_path / "out" / "plotly.min.js"))
    manifest, reports, out = fake_run(tmp_path)
    page = render_index(manifest, reports, out, figure_notes())
    shown, hidden = page.split("<details>", 1)[0], page.split("<details>", 1)[1].split("</details>", 1)[0]
    # 02_sweep's registry lists feasibility first: that one is shown, though written second
    assert shown.count("<figure>") == 1 and "feasibility caption" in shown
    assert "headroom at the choice</b>: 0.0123" in shown  # a single value: one line, shown
    assert "<summary>2 more figures · 1 table · 1 result</summary>" in page
    assert hidden.count("<figure>") == 2 and "summary" in hidden and "the choice" in hidden
    # no iframes; the figures without a PNG are drawn by one plotly bundle loaded once
    assert "<iframe" not in page and page.count("src='plotly.min.js'") == 1
    assert page.count("class='plot'") == 3 and page.count("type='application/json'") == 3
    # a skipped notebook is one line; a failed one shows what it wrote before it failed
    assert (
        "<p id='r-08_benchmark' class='skipped'><b>08_benchmark</b> · skipped: no benchmark file given. "
        "To fill it: download LoCoMo&#x27;s locomo10.json, then run<br>"
        "<code>memlab run --config b.yaml -p benchmark_file=data/external/locomo10.json</code></p>" in page
    )
    assert "<h3 id='r-08_benchmark'" not in page
    failed = page.split("<h3 id='r-01_reproduce'>", 1)[1]
    assert "ValueError: boom" in failed and "what the notebook wrote before it failed" in failed
    assert "criteria before it failed" in failed
    assert reports[2]["finished"] is False and reports[0]["finished"] is True


@pytest.mark.hostile
@pytest.mark.parametrize(
    "batch, fill, how, line",
    [
        # the batch the run read, the parameter with its example value
        (
            "notebooks/batch.yaml",
            {"chat_url": "http://127.0.0.1:8080/v1"},
            "serve a chat model",
            "To fill it: serve a chat model, then run<br>"
            "<code>memlab run --config notebooks/batch.yaml -p chat_url=http://127.0.0.1:8080/v1</code>",
        ),
        # no batch file (memlab run's defaults): no --config; a value with a space is quoted
        (
            "(defaults)",
            {"benchmark_file": "my data/locomo10.json"},
            "",
            "To fill it: run<br><code>memlab run -p &#x27;benchmark_file=my data/locomo10.json&#x27;</code>",
        ),
        # words only, and a reason alone (as before)
        ("b.yaml", {}, "give it a log", "To fill it: give it a log</p>"),
        ("b.yaml", {}, "", "skipped: nothing to do</p>"),
    ],
)
def test_a_skipped_notebooks_line_says_what_fills_it(tmp_path, batch, fill, how, line):
    """08_benchmark and 09_answers were lines saying only that they were skipped; a user reading
    the page is now told what to provide and the command that runs them with it."""
    from memlab.output.index_page import render_index
    from memlab.output.report import Report

    out = tmp_path / "out"
    Report(out / "r" / "nb", ["html"]).skip("nothing to do", {"x": ""}, fill=fill, how=how)
    report = json.loads((out / "r" / "nb" / "report.json").read_text())
    assert report.get("fill") == ({"parameters": fill, "how": how} if fill or how else None)
    manifest = {
        "notebooks": [
            {"run": "r", "notebook": "nb", "status": "ok", "output": str(out / "r" / "nb.ipynb")}
            | {"out_dir": str(out / "r" / "nb"), "duration_s": 1.0}
        ],
        "started": "now",
        "duration_s": 1.0,
        "status": "ok",
        "batch": batch,
    }
    page = render_index(manifest, [report], out)
    assert line in page and "<p id='r-nb' class='skipped'><b>nb</b> · skipped: nothing to do" in page


def test_a_figure_json_cannot_end_its_script_element(tmp_path, monkeypatch):
    import plotly.graph_objects as go

    from memlab.output.index_page import render_index
    from memlab.output.report import Report

    monkeypatch.setenv("MEMLAB_PLOTLY_JS", str(tmp_path / "out" / "plotly.min.js"))
    out = tmp_path / "out"
    rep = Report(out / "r" / "nb", ["html"])
    rep.figure("f", go.Figure(go.Bar(x=["</script><b>x"], y=[1])), "c")
    rep.finish()
    nb = {
        "run": "r",
        "notebook": "nb",
        "status": "ok",
        "output": str(out / "r" / "nb.ipynb"),
        "out_dir": str(out / "r" / "nb"),
    }
    manifest = {"notebooks": [nb], "started": "", "duration_s": 0, "status": "ok", "batch": "b"}
    page = render_index(manifest, [json.loads((out / "r" / "nb" / "report.json").read_text())], out)
    data = page.split("type='application/json' id='memlab-fig-1-data'>", 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["data"][0]["x"] == ["</script><b>x"]  # the same JSON, read back whole


SHOWN_FIGURES = """() => [...document.querySelectorAll('figure')]
  .filter(f => !f.closest('details:not([open])'))
  .map(f => { const r = f.querySelector('img, .plot').getBoundingClientRect();
              return [r.left + scrollX, r.top + scrollY, r.width, r.height]; })"""


def drawn_in(png: bytes, boxes, scale: float = 1.0) -> list[int]:
    """Distinct colours inside each box of a full-page screenshot (a blank box has one or two)."""
    import io

    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    out = []
    for x, y, w, h in boxes:
        crop = img.crop((int(x * scale), int(y * scale), int((x + w) * scale), int((y + h) * scale)))
        out.append(len(crop.getcolors(maxcolors=1 << 20) or []))
    return out


@pytest.mark.browser
def test_figures_without_a_png_are_drawn_inline_and_visible_in_a_full_page_screenshot(tmp_path, monkeypatch):
    from lab import ARGS

    from memlab.app.notebooks import figure_notes
    from memlab.output.figures import find_browser
    from memlab.output.index_page import render_index

    path = find_browser()
    if path is None:
        pytest.skip("no Chromium here")
    monkeypatch.setenv("MEMLAB_PLOTLY_JS", str(tmp_path / "out" / "plotly.min.js"))
    manifest, reports, out = fake_run(tmp_path)
    (out / "index.html").write_text(render_index(manifest, reports, out, figure_notes()), encoding="utf-8")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto((out / "index.html").as_uri())
        assert page.locator("iframe").count() == 0
        assert page.evaluate("[...document.scripts].filter(s => s.src).length") == 1  # one plotly bundle
        page.wait_for_selector("div.plot .main-svg")
        # drawn at load, not when scrolled to: the full-page screenshot shows it
        boxes = page.evaluate(SHOWN_FIGURES)
        assert len(boxes) == 1 and boxes[0][3] >= 400  # its own height, not a lazy frame
        assert min(drawn_in(page.screenshot(full_page=True), boxes)) > 20
        assert page.locator("details div.plot.js-plotly-plot").count() == 0  # hidden ones wait to be opened
        page.locator("details > summary").first.click()
        page.wait_for_function("document.querySelectorAll('details div.plot.js-plotly-plot').length == 2")
        boxes = page.evaluate(SHOWN_FIGURES)
        assert len(boxes) == 3 and min(drawn_in(page.screenshot(full_page=True), boxes)) > 20
        assert page.evaluate("document.documentElement.scrollHeight") < 4000
        browser.close()
