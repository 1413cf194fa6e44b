"""Checked in a real browser: headless Debian Chromium driven by Playwright (no browser download)."""

from __future__ import annotations

import io
import itertools
import json
import os

import pytest
from lab import ARGS, jupyterlab_server, run_all_cells

from memlab.app.cli import main
from memlab.output.figures import find_browser

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    path = find_browser()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (.ci/run does)")
        pytest.skip("no Chromium here")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=ARGS)
        yield b
        b.close()


def not_blank(png: bytes) -> int:
    """How many distinct colours the screenshot has (a blank page has one)."""
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    return len(img.getcolors(maxcolors=1 << 20) or [])


@pytest.mark.notebook
def test_index_and_a_figure_page_render(browser, tmp_path):
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "notebooks: [01_reproduce]\nparameters: {fig_formats: [html, png]}\n"
        "runs:\n  - {name: published, parameters: {source: published}}\n"
    )
    out = tmp_path / "out"
    assert main(["run", "--config", str(batch), "--out", str(out)]) == 0
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto((out / "index.html").as_uri())
    assert page.locator("figure img").count() == 2  # the PNGs
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    assert not_blank(page.screenshot(full_page=True)) > 50
    report = json.loads((out / "published" / "01_reproduce" / "report.json").read_text())
    drawn = [e for e in report["entries"] if e["type"] == "table" or isinstance(e.get("value"), dict)]
    assert len(drawn) >= 6  # four-candidate, two reruns, no-hit, criteria tables; the injections
    assert page.locator("table.data").count() == len(drawn)

    page.goto((out / "published" / "01_reproduce" / "figures" / "bonus_curve.html").as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg")
    assert (
        page.locator(".js-plotly-plot .gtitle").text_content() == "Recency bonus 0.05 × exp(−age / 14 days)"
    )
    assert page.locator(".js-plotly-plot .scatterlayer .trace").count() == 2
    assert not_blank(page.screenshot()) > 20
    page.close()


@pytest.fixture
def jupyterlab(tmp_path):
    with jupyterlab_server(tmp_path) as url:
        yield url


LAYOUT = """() => {
  const plot = document.querySelector('.js-plotly-plot');
  const area = plot.closest('.jp-OutputArea-output').getBoundingClientRect();
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; };
  const parts = {};
  for (const s of ['.gtitle', '.legend', '.xtitle', '.ytitle']) parts[s] = box(plot.querySelector(s));
  return {area: [area.left, area.right], width: window.innerWidth, parts,
          ticks: [...plot.querySelectorAll('.xtick text')].map(box),
          marks: [...document.querySelectorAll('.memlab-pass, .memlab-fail')].map(e => e.getClientRects().length)};
}"""


def test_jupyterlab_slider_moves_the_figure_and_the_criteria(browser, jupyterlab, tmp_path):
    stored = {s: (tmp_path / f"03_tune{s}").read_text(encoding="utf-8") for s in (".ipynb", ".py")}
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(jupyterlab)
    run_all_cells(page, tmp_path)
    # at a 1,400 px window with the file browser open, nothing of the figure is cut off: its
    # title, legend, axis titles and every question's label lie inside the output area and the
    # window, the labels side by side (horizontal); "✓ PASS" stays on one line
    layout = page.evaluate(LAYOUT)
    left, right = max(layout["area"][0], 0), min(layout["area"][1], layout["width"])
    for name, (x0, x1, _, _) in layout["parts"].items():
        assert left <= x0 and x1 <= right, (name, layout)
    ticks = layout["ticks"]
    assert len(ticks) == 10 and all(left <= t[0] and t[1] <= right for t in ticks), layout
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ticks)), ticks  # no two labels overlap
    assert layout["marks"] and all(n == 1 for n in layout["marks"])
    title = page.locator(".js-plotly-plot .gtitle").first
    criteria = page.locator(".memlab-criteria-box").first
    assert title.text_content() == "bonus 0.05, tau 14 days, threshold 0.45 · exp/add · seed16 · published/en"
    assert "all criteria hold" in criteria.text_content()
    bar_before = page.locator(".js-plotly-plot .barlayer .trace").nth(1).inner_html()

    page.locator(".memlab-bonus .noUi-handle").first.click()
    for _ in range(10):  # 10 steps of 0.001: bonus 0.05 -> 0.04
        page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "document.querySelector('.js-plotly-plot .gtitle').textContent.startsWith('bonus 0.04,')",
        timeout=30_000,
    )
    assert title.text_content() == "bonus 0.04, tau 14 days, threshold 0.45 · exp/add · seed16 · published/en"
    page.wait_for_function("document.querySelector('.memlab-criteria-box').textContent.includes('fails c')")
    assert "headroom 0.022" in criteria.text_content()
    assert page.locator(".js-plotly-plot .barlayer .trace").nth(1).inner_html() != bar_before
    # saving the used notebook (as autosave does) leaves both files as they were stored (the
    # repository's, with the published source the test's copy sets)
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    page.wait_for_function("!window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    page.close()
    for suffix in (".ipynb", ".py"):
        assert (tmp_path / f"03_tune{suffix}").read_text(encoding="utf-8") == stored[suffix], suffix
