"""Edge cases found in review: each was a wrong result or an unclear failure before."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.app.runner import load_batch, parse_overrides
from memlab.core.files import atomic_write_text
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.selection import select
from memlab.core.spec import RetrievalSpec, age_days
from memlab.core.sweep import sweep
from memlab.datasets.criteria_file import load_criteria
from memlab.datasets.schema import DatasetError, load_dataset
from memlab.studies.scale import TopK
from memlab.tuning.evaluate import candidate_table


def test_max_margin_on_the_candidate_table(seed, published):
    """The table carries min_margin, so max-margin really ranks by it (0.06 beats 0.05 and 0.07)."""
    table = candidate_table(seed, published, [(0.05, 14), (0.06, 14), (0.07, 14)], rule="max-margin")
    assert table["chosen"].tolist() == [False, True, False]
    assert round(table.loc[1, "min_margin"], 4) == 0.0096


def test_a_rule_without_its_column_is_an_error():
    import pandas as pd

    with pytest.raises(ValueError) as e:
        select(pd.DataFrame({"bonus": [0.1], "tau_days": [1.0], "feasible": [True]}), "max-headroom")
    assert str(e.value) == "selection rule 'max-headroom' needs column(s) headroom, which the table lacks"


def test_an_empty_threshold_is_the_models():
    """-p threshold=0.85 gives one; -p threshold= (or none) leaves it to the model, as papermill
    reads the cell's default None."""
    assert parse_overrides(["threshold=0.85", "bonus_range=0:0.1:0.01"]) == {
        "threshold": 0.85,
        "bonus_range": "0:0.1:0.01",
    }
    assert parse_overrides(["threshold=", "threshold_range="]) == {"threshold": None, "threshold_range": ""}


def test_parameters_keep_their_declared_types(tmp_path):
    assert parse_overrides(["tau_range=1:30:1", "lang=no", "bonus_range=0.05", "pool=300"]) == {
        "tau_range": "1:30:1",
        "lang": "no",
        "bonus_range": "0.05",
        "pool": 300,
    }
    with pytest.raises(ValueError) as e:
        parse_overrides(["bonus=lots"])
    assert str(e.value) == "-p: bonus: expected float, got 'lots'"
    batch = tmp_path / "b.yaml"
    batch.write_text("runs:\n  - name: a\n    parameters: {tau_range: 1:30:1, bonus: 0.04, lang: no}\n")
    assert load_batch(batch).runs[0].parameters == {"tau_range": "1:30:1", "bonus": 0.04, "lang": "no"}


def test_no_criteria_means_nothing_fails():
    raw = np.array([[0.9, 0.1]])
    labels = Labels(("q",), ("hit",), np.array([0]), ((),))
    row = sweep(raw, np.zeros(2), labels, Grid(), ()).iloc[0]
    assert bool(row["feasible"]) and row["min_margin"] == np.inf


def test_local_time_dates_keep_their_own_calendar_date(dataset_copy):
    root, edit = dataset_copy
    edit("memories.jsonl", 2, date="2026-09-01T08:00:00+09:00")  # 2026-08-31 in UTC
    ds = load_dataset(root)
    assert ds.memory("m02").date == datetime(2026, 8, 31, 23, 0, tzinfo=UTC)


def test_a_zoned_reference_is_the_same_instant():
    dates = np.array(["2026-09-01"], dtype="datetime64[s]")
    tokyo = datetime(2026, 9, 10, 9, 0, tzinfo=timezone(timedelta(hours=9)))  # 2026-09-10 00:00 UTC
    assert age_days(dates, tokyo).tolist() == [9.0]


def test_distractors_are_aged_from_each_questions_own_date():
    """Distractors are dated before each question's own date (the scale study's N counts what a
    question can see): a question asked long before the reference date sees every one of them,
    at the age it has for that question."""
    q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    top = TopK(q, 8)
    top.add(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32), np.array([0.0, 3.0]))
    assert not np.isneginf(top.raw).any()
    spec = RetrievalSpec(bonus=0.3, tau_days=1.0)
    assert top.best_final(spec).tolist() == pytest.approx([1.0 + 0.3, 1.0 + 0.3 * np.exp(-3.0)])


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"languages": None}, "dataset.json: languages: expected a list of codes including 'en', got []"),
        ({"date_prefix": "false"}, "dataset.json: date_prefix: expected true or false, got 'false'"),
        (
            {"criteria": [{"name": "b", "kind": "current_reaches", "question": ["C1"]}]},
            "dataset.json: criteria[1]: question: expected a question id, got ['C1']",
        ),
    ],
)
def test_dataset_json_fields_are_type_checked(dataset_copy, change, problem):
    root, _ = dataset_copy
    meta = json.loads((root / "dataset.json").read_text())
    meta.update(change)
    (root / "dataset.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert f"{root}/{problem}" in e.value.problems


def test_yaml_null_question_is_none(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("- name: b\n  kind: current_reaches\n  question: null\n")
    with pytest.raises(ValueError) as e:
        load_criteria(p)
    assert str(e.value) == f"{p}:1: question: criterion 'b' of kind 'current_reaches' needs a question"


def test_atomic_files_get_the_usual_mode(tmp_path):
    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "out.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_import_reference_date_is_checked_before_writing(tmp_path):
    from qdrant_client import QdrantClient, models

    from memlab.importers.qdrant import import_qdrant

    client = QdrantClient(path=str(tmp_path / "q"))
    client.create_collection(
        "mem", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    client.upsert(
        "mem", points=[models.PointStruct(id=1, vector=[1.0, 0.0], payload={"d": "2026-09-05", "t": "x"})]
    )
    client.close()
    for ref, message in (
        ("last week", "--reference-date: 'last week' is not a date (YYYY-MM-DD or ISO 8601)"),
        ("2026-09-01", "--reference-date 2026-09-01 is before the newest memory (2026-09-05T00:00:00+00:00)"),
    ):
        with pytest.raises(ValueError) as e:
            import_qdrant(
                path=str(tmp_path / "q"),
                collection="mem",
                date_field="d",
                text_field="t",
                out=tmp_path / "ds",
                reference_date=ref,
            )
        assert str(e.value) == message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q"]


@pytest.mark.notebook
def test_a_failed_rerun_never_shows_the_earlier_results(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(
        "notebooks: [01_reproduce]\nparameters: {fig_formats: [html], source: published}\nruns:\n  - {name: r}\n"
    )
    bad = tmp_path / "bad.yaml"
    # daily-lunch has no published scores: the notebook fails
    bad.write_text(
        "notebooks: [01_reproduce]\nruns:\n  - {name: r, parameters: {source: published, dataset: daily-lunch}}\n"
    )
    out = tmp_path / "out"
    assert main(["run", "--config", str(good), "--out", str(out)]) == 0
    assert "bonus_curve" in (out / "index.html").read_text()
    assert main(["run", "--config", str(bad), "--out", str(out)]) == 1
    capsys.readouterr()
    assert "bonus_curve" not in (out / "index.html").read_text()
    assert not (out / "r" / "01_reproduce" / "report.json").exists()
    # no earlier figure or table left beside it (the failed notebook wrote none of its own)
    assert [p for p in (out / "r" / "01_reproduce").rglob("*") if p.is_file()] == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []  # lock and staging gone
