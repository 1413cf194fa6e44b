"""A user's own dataset end to end: every notebook through `memlab run`, in English and Japanese.

The dataset is data/example-companion (not seed-shaped: other ids, other kinds in other
proportions, dated questions, two languages), copied beside a batch file that names it by a
relative path, as a user would write it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlab.app.cli import main

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ["01_reproduce", "02_sweep", "03_tune", "04_scale", "05_robustness", "06_hybrid_time", "07_drift"]

BATCH = """\
notebooks: [01_reproduce, 02_sweep, 03_tune, 04_scale, 05_robustness, 06_hybrid_time, 07_drift]
parameters:
  dataset: my-device
  hybrid_datasets: my-device
  source: embedded
  fig_formats: [html]
  bonus_range: "0:0.1:0.02"
  tau_range: "1,3,7"
  threshold_range: "0.1:0.9:0.05"
  n_range: "12,112,1012"
  pool: 1000
  boot: 10
  streams: 4
  seed_range: "1000:1004"
  tune_range: "0:4"
  budgets: "64,128"
  hybrid_bonus_range: "0,0.05"
  hybrid_tau_range: "3"
  alpha_range: "0,0.5,1"
  rrf_k_range: "60"
runs:
  - name: en
    parameters: {lang: en}
  - name: ja
    notebooks: [01_reproduce, 02_sweep, 03_tune, 05_robustness, 06_hybrid_time]
    parameters: {lang: ja}
"""


@pytest.mark.model
@pytest.mark.notebook
def test_every_notebook_runs_on_a_users_dataset(tmp_path, cache_dir, monkeypatch, capsys):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(cache_dir))
    shutil.copytree(ROOT / "data" / "example-companion", tmp_path / "my-device")
    (tmp_path / "batch.yaml").write_text(BATCH)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the dataset path is relative to the batch file, not to here
    out = tmp_path / "out"
    code = main(
        [
            "run",
            "--config",
            str(tmp_path / "batch.yaml"),
            "--out",
            str(out),
            "--notebooks",
            str(ROOT / "notebooks"),
        ]
    )
    manifest = json.loads((out / "manifest.json").read_text())
    failed = {(n["run"], n["notebook"]): n["error"] for n in manifest["notebooks"] if n["status"] != "ok"}
    assert code == 0 and not failed, failed
    assert [(n["run"], n["notebook"]) for n in manifest["notebooks"]] == [
        *(("en", nb) for nb in NOTEBOOKS),
        *(("ja", nb) for nb in ["01_reproduce", "02_sweep", "03_tune", "05_robustness", "06_hybrid_time"]),
    ]
    # each notebook got only its own parameters
    params = {(n["run"], n["notebook"]): n["parameters"] for n in manifest["notebooks"]}
    assert "streams" not in params["en", "01_reproduce"] and "dataset" not in params["en", "07_drift"]
    assert params["en", "01_reproduce"]["dataset"] == str(tmp_path / "my-device")

    for lang in ("en", "ja"):
        tables = out / lang / "01_reproduce" / "tables"
        # no seed tables on this dataset: one table per question kind instead
        assert not (tables / "four_candidates.json").exists()
        assert sorted(p.name for p in tables.glob("questions_*.json")) == [
            "questions_contradiction.json",
            "questions_hit.json",
            "questions_time.json",
        ]
        contradiction = json.loads((tables / "questions_contradiction.json").read_text())
        assert [r["question"] for r in contradiction] == ["q1", "q2"]
        criteria = {r["criterion"] for r in json.loads((tables / "criteria.json").read_text())}
        assert {"nohit", "no_stale", "current_first", "current_q1"} <= criteria
        bars = json.loads((out / lang / "01_reproduce" / "figures" / "question_bars.json").read_text())
        first = bars["data"][0]["x"][0]
        assert first.endswith("<br>(q1)") and first != "q1"  # the question's words, not only its id
    assert json.loads((out / "ja" / "01_reproduce" / "figures" / "question_bars.json").read_text())["data"][
        0
    ]["x"][0].startswith("今どこの街")
    for lang in ("en", "ja"):  # nothing said about the seed on a dataset that is not it
        report = json.loads((out / lang / "01_reproduce" / "report.json").read_text())
        assert not [e["caption"] for e in report["entries"] if "seed" in e.get("caption", "")]
    view = json.loads((out / "en" / "03_tune" / "figures" / "margins.json").read_text())
    assert "example-companion" in view["layout"]["title"]["text"]
