"""A dataset written as a user would (tests/data/user-three-months: 20 memories over three months,
three changed facts, five no-hit questions, English and Japanese), at the defaults: through
`memlab run` and the panel with no parameter given it injects nothing on its no-hit questions, and
`memlab sweep --save` picks a configuration that `memlab spec --spec` exports unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from memlab.app.cli import main
from memlab.embedding.models import MODELS

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT / "tests" / "data" / "user-three-months"
THRESHOLDS = MODELS["multilingual-e5-small"].thresholds  # the default model's, per language

BATCH = """\
notebooks: [01_reproduce, 03_tune]
parameters:
  dataset: mine
  fig_formats: [html]
runs:
  - name: en
  - name: ja
    parameters: {lang: ja}
"""


def records(path: Path) -> list[dict]:
    return json.loads(path.read_text())


@pytest.mark.model
@pytest.mark.notebook
def test_memlab_run_and_the_panel_inject_nothing_on_no_hit_questions(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(cache_dir))
    shutil.copytree(DATASET, tmp_path / "mine")
    (tmp_path / "batch.yaml").write_text(BATCH)
    out = tmp_path / "out"
    argv = [
        "run",
        "--config",
        str(tmp_path / "batch.yaml"),
        "--out",
        str(out),
        "--notebooks",
        str(ROOT / "notebooks"),
    ]
    assert main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert {n["status"] for n in manifest["notebooks"]} == {"ok"}
    for lang in ("en", "ja"):
        report = json.loads((out / lang / "01_reproduce" / "report.json").read_text())
        assert report["parameters"]["threshold"] == THRESHOLDS[lang]  # the model's: none was given
        nohit = records(out / lang / "01_reproduce" / "tables" / "nohit.json")
        assert len(nohit) == 5 and all(r["max_after"] < THRESHOLDS[lang] for r in nohit)
        for notebook in ("01_reproduce", "03_tune"):
            criteria = {
                r["criterion"]: r["pass"] for r in records(out / lang / notebook / "tables" / "criteria.json")
            }
            assert criteria["nohit"] is True, (lang, notebook)

    from memlab.app.panel import TuningPanel
    from memlab.datasets.schema import load_dataset

    panel = TuningPanel(load_dataset(tmp_path / "mine"))  # no parameter given
    assert (panel.source, panel.lang, panel.spec.threshold) == ("embedded", "en", THRESHOLDS["en"])
    for lang in ("en", "ja"):
        panel.set(lang=lang)
        assert panel.spec.threshold == THRESHOLDS[lang]
        nohit = [r for r in panel.state.results if r.kind == "nohit"]
        assert len(nohit) == 5 and all(not r.injected for r in nohit), lang


@pytest.mark.model
def test_the_sweep_choice_exports_unchanged(tmp_path, cache_dir, monkeypatch, capsys):
    from memlab.core.grid import Grid
    from memlab.core.selection import utility
    from memlab.core.sweep import sweep
    from memlab.scores.problem import build_problem
    from memlab.scores.sources import ScoreOptions
    from memlab.tuning.tuned import load_tuned

    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(cache_dir))
    dataset = str(tmp_path / "mine")
    shutil.copytree(DATASET, dataset)
    for langs in ("en", "en,ja"):
        tuned = tmp_path / f"tuned-{langs.replace(',', '-')}.yaml"
        assert main(["sweep", "--dataset", dataset, "--lang", langs, "--save", str(tuned)]) == 0
        out = capsys.readouterr().out
        doc = yaml.safe_load(tuned.read_text())
        rule = doc["selection"]["rule"]
        assert rule in ("max-margin", "max-utility") and f"chosen ({rule}): " in out
        assert doc["languages"] == langs.split(",")
        assert main(["spec", "--spec", str(tuned), "--format", "json"]) == 0
        exported = json.loads(capsys.readouterr().out)
        assert {k: exported[k] for k in doc["spec"]} == doc["spec"]  # the saved numbers, unchanged
        # the utility the file records is the sum of each language's at that spec, computed apart
        spec = load_tuned(tuned).spec
        total = 0.0
        for lang in langs.split(","):
            problem = build_problem(dataset, ScoreOptions("embedded", lang))
            one = sweep(problem.raw, problem.ages(), problem.labels(), Grid.of(spec))
            total += float(utility(one)[0])
            assert doc["model"]["identity"] == dict(problem.model.identity)
        assert np.isclose(total, doc["selection"]["utility"])
