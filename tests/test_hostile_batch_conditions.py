"""``conditions`` in a batch file (or ``-p``) is checked when the batch is read, name by name as
notebook 09 splits it, before any notebook runs or any results folder is written: it used to
fail inside the kernel, after."""

from __future__ import annotations

import pytest

from memlab.app.cli import main
from memlab.app.runner import checked, load_batch
from memlab.core.errors import InputError

pytestmark = pytest.mark.hostile
AVAILABLE = "available: off, raw, today, tuned"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("off,bogus", f"unknown condition 'bogus'; {AVAILABLE}"),
        ("off, raw", f"unknown condition ' raw'; {AVAILABLE}"),  # the notebook does not strip
        ("tuned,", f"unknown condition ''; {AVAILABLE}"),
    ],
)
def test_a_batch_naming_an_unknown_condition_is_refused_before_anything_is_written(
    tmp_path, capsys, value, message
):
    path = tmp_path / "b.yaml"
    path.write_text(f"parameters:\n  conditions: '{value}'\n")
    out = tmp_path / "results"
    assert main(["run", "--config", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"memlab: error: {path}: parameters: conditions: {message}"
    assert not out.exists()
    # the same from -p
    assert main(["run", "-p", f"conditions={value}", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"memlab: error: -p: conditions: {message}"
    assert not out.exists()


def test_the_conditions_there_are_pass(tmp_path):
    assert checked("conditions", "off,raw,today,tuned", "b.yaml") == "off,raw,today,tuned"
    path = tmp_path / "b.yaml"
    path.write_text(
        "notebooks: [09_answers]\nruns:\n  - name: a\n    parameters:\n      conditions: raw,tuned\n"
    )
    batch = load_batch(path)
    assert batch.runs[0].parameters["conditions"] == "raw,tuned"
    with pytest.raises(InputError, match="runs\\[1\\] \\(a\\): conditions: unknown condition 'x'"):
        path.write_text("runs:\n  - name: a\n    parameters:\n      conditions: raw,x\n")
        load_batch(path)
