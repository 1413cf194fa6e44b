"""memlab run: a batch of parameter sets, a failing notebook that keeps the others' results."""

from __future__ import annotations

import json

import nbformat
import pytest

from memlab.app.cli import main
from memlab.app.parameters import NOTEBOOK_PARAMETERS
from memlab.app.runner import NOTEBOOKS, load_batch, parse_overrides

KNOWN = ", ".join(sorted(p.name for p in NOTEBOOK_PARAMETERS))


@pytest.mark.notebook
def test_failing_notebook_keeps_the_others_and_exits_non_zero(tmp_path, capsys):
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "notebooks: [01_reproduce]\n"
        "parameters: {fig_formats: [html]}\n"
        "runs:\n"
        "  - {name: good, parameters: {source: published}}\n"
        "  - {name: broken, parameters: {source: published, dataset: daily-lunch}}\n"
        "  - {name: also-good, parameters: {source: published, bonus: 0.04}}\n"
    )
    out = tmp_path / "out"
    code = main(["run", "--config", str(batch), "--out", str(out), "-p", "tau_days=30"])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == f"open in a browser: {out.resolve()}/index.html\n"
    assert "memlab: 1 of 3 notebooks failed: broken/01_reproduce" in captured.err
    assert "] broken/01_reproduce failed in" in captured.err

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    status = {(n["run"], n["notebook"]): n for n in manifest["notebooks"]}
    assert [n["status"] for n in status.values()] == ["ok", "failed", "ok"]
    assert status["broken", "01_reproduce"]["error"].startswith(
        "MissingFileError: dataset 'daily-lunch' has no published_scores.jsonl"
    )
    assert status["also-good", "01_reproduce"]["parameters"]["bonus"] == 0.04
    assert all(n["parameters"]["tau_days"] == 30 for n in status.values())  # -p applies to every run
    for key in ("git_commit", "packages", "started", "finished", "duration_s"):
        assert key in manifest
    assert manifest["packages"]["papermill"]

    # the good runs' results are all there; the broken notebook is saved with its error
    good = json.loads((out / "good" / "01_reproduce" / "tables" / "criteria.json").read_text())
    assert [r["pass"] for r in good] == [True, True, True]  # 0.05 at 30 days lies in [0.0434, 0.0581)
    also = json.loads((out / "also-good" / "01_reproduce" / "tables" / "criteria.json").read_text())
    assert [r["pass"] for r in also] == [True, True, False]  # the seed's row (0.04, 30): fails (c)
    assert round(also[2]["value"], 3) == 0.447
    assert (out / "also-good" / "01_reproduce" / "figures" / "bonus_curve.html").is_file()
    broken = nbformat.read(out / "broken" / "01_reproduce.ipynb", as_version=4)
    errors = [o for c in broken.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors and errors[0]["ename"] == "MissingFileError"

    index = (out / "index.html").read_text()
    assert index.count("executed notebook") == 3
    assert "good/01_reproduce.ipynb" in index and "broken/01_reproduce.ipynb" in index
    assert "good/01_reproduce/figures/bonus_curve.html" in index


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["bonus"], "-p 'bonus': expected key=value"),
        (
            ["colour=red"],
            "-p colour: unknown parameter; notebook parameters: " + KNOWN,
        ),
    ],
)
def test_override_errors(pairs, message):
    with pytest.raises(ValueError) as e:
        parse_overrides(pairs)
    assert str(e.value) == message


def test_override_values_are_yaml():
    assert parse_overrides(["bonus=0.04", "fig_formats=[html, svg]", "source=embedded"]) == {
        "bonus": 0.04,
        "fig_formats": ["html", "svg"],
        "source": "embedded",
    }
    # a list parameter also takes a comma list
    assert parse_overrides(["fig_formats=html,png"]) == {"fig_formats": ["html", "png"]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("runs:\n  - {parameters: {bonus: 1}}\n", "{p}: runs[1]: needs a name"),
        (
            "runs:\n  - {name: a, parameters: {bonsu: 1}}\n",
            "{p}: runs[1] (a): unknown parameter(s) bonsu; known: " + KNOWN,
        ),
        ("runs:\n  - {name: a}\n  - {name: a}\n", "{p}: runs[2]: duplicate name 'a'"),
        ("jobs: []\n", "{p}: unknown key(s) jobs (allowed: notebooks, parameters, runs)"),
        (
            "runs:\n  - {name: a, notebooks: [06_magic]}\n",
            "{p}: runs[1] (a): unknown notebook(s) 06_magic; notebooks: " + ", ".join(NOTEBOOKS),
        ),
    ],
)
def test_batch_errors(tmp_path, text, message):
    p = tmp_path / "b.yaml"
    p.write_text(text)
    with pytest.raises(ValueError) as e:
        load_batch(p)
    assert str(e.value) == message.format(p=p)


def test_default_batch_file_loads():
    batch = load_batch("notebooks/batch.yaml")
    assert batch.notebooks == NOTEBOOKS  # every notebook runs on embedded scores
    assert [r.name for r in batch.runs] == ["embedded-en", "embedded-ja", "published"]
    en, ja, published = batch.runs
    assert en.parameters["source"] == ja.parameters["source"] == "embedded"
    assert (en.parameters["lang"], ja.parameters["lang"]) == ("en", "ja")
    # no hand-copied thresholds or ranges: each notebook takes the model's, as every command does
    for run in batch.runs:
        assert not {"threshold", "threshold_range", "bonus_range", "bonus", "tau_days"} & set(run.parameters)
    assert ja.notebooks == published.notebooks == ("01_reproduce", "02_sweep", "03_tune", "05_robustness")


def test_dataset_folders_are_made_absolute_before_the_notebooks_run(tmp_path):
    from memlab.app.runner import absolute_datasets

    (tmp_path / "mine").mkdir()
    params = {"dataset": "mine", "hybrid_datasets": "seed16-time, mine", "bonus": 0.05}
    assert absolute_datasets(params, tmp_path) == {
        "dataset": str(tmp_path / "mine"),
        "hybrid_datasets": f"seed16-time,{tmp_path / 'mine'}",  # packaged names stay names
        "bonus": 0.05,
    }
    (tmp_path / "external").mkdir()
    (tmp_path / "external" / "locomo.json").write_text("[]")
    assert absolute_datasets({"benchmark_file": "external/locomo.json"}, tmp_path) == {
        "benchmark_file": str(tmp_path / "external" / "locomo.json")
    }
    assert absolute_datasets({"benchmark_file": ""}, tmp_path) == {"benchmark_file": ""}


@pytest.mark.parametrize(
    ("notebook", "run", "message"),
    [
        # relative to the batch file, and shown resolved
        (
            "01_reproduce",
            "{name: mine, parameters: {dataset: ./my-device}}",
            "runs[1] (mine): dataset: no dataset folder {}/my-device",
        ),
        # the benchmark file alike
        (
            "08_benchmark",
            "{name: lc, parameters: {benchmark_file: data/locomo10.json}}",
            "runs[1] (lc): benchmark_file: no file {}/data/locomo10.json",
        ),
    ],
)
def test_a_missing_dataset_folder_or_file_fails_before_anything_runs(
    tmp_path, capsys, notebook, run, message
):
    batch = tmp_path / "batch.yaml"
    batch.write_text(f"notebooks: [{notebook}]\nruns:\n  - {run}\n")
    assert main(["run", "--config", str(batch), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"memlab: error: {batch}: {message.format(tmp_path)}\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.notebook
def test_a_failing_notebook_keeps_the_tables_it_wrote_and_the_page_shows_them(tmp_path, capsys):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('out_dir = "x"\nfig_formats = ["html"]')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell(
            "import pandas as pd\nfrom memlab.output.report import Report\n"
            "report = Report(out_dir, fig_formats)\n"
            "report.table('kept', pd.DataFrame({'n': [1307]}), 'written before the failure')"
        ),
        nbformat.v4.new_code_cell("raise ValueError('stopped half-way')"),
    ]
    nbformat.write(nb, folder / "01_reproduce.ipynb")
    (tmp_path / "batch.yaml").write_text("notebooks: [01_reproduce]\nruns:\n  - {name: only}\n")
    out = tmp_path / "out"
    code = main(
        ["run", "--config", str(tmp_path / "batch.yaml"), "--out", str(out), "--notebooks", str(folder)]
    )
    capsys.readouterr()
    assert code == 1
    assert json.loads((out / "only" / "01_reproduce" / "tables" / "kept.json").read_text()) == [{"n": 1307}]
    report = json.loads((out / "only" / "01_reproduce" / "report.json").read_text())
    assert report["finished"] is False and [e["name"] for e in report["entries"]] == ["kept"]
    page = (out / "index.html").read_text()
    failure = page.split("<h3 id='only-01_reproduce'>", 1)[1]
    assert "ValueError: stopped half-way" in failure and "written before the failure" in failure
    assert "<td class=num>1307</td>" in failure
