"""The results page reads like a finished tool: numbers for people, a table of contents, no Python
values in cells (checked on paper, then in headless Chromium on a real run)."""

from __future__ import annotations

import json
import re

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
        page.screenshot(path=str(tmp_path / "index.png"), full_page=False)
        browser.close()
    assert (out / "plotly.min.js").is_file()
    assert len(list(out.rglob("plotly.min.js"))) == 1  # one shared copy per results folder
