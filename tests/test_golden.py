"""Every command that reads an embedded score table prints, on a LoCoMo-shaped file of memlab's
own, what main printed before the score table became one product (issue 38): byte for byte, the
tables of tune-benchmark, metrics, compare, evaluate and sweep (timings and the scratch folder
left out). The recorded outputs and the command that made them: tests/golden/make_golden.py."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

from make_golden import HERE, commands, run  # noqa: E402


@pytest.mark.slow
def test_every_golden_output_is_printed_again(tmp_path):
    got = run(tmp_path)
    assert sorted(got) == sorted(commands(tmp_path, tmp_path))
    diffs = []
    for name, text in got.items():
        want = (HERE / f"{name}.out").read_text()
        if text != want:
            lines = difflib.unified_diff(want.splitlines(True), text.splitlines(True), "recorded", "now", n=1)
            diffs.append(f"memlab {name} prints otherwise than the recorded output:\n{''.join(lines)[:3000]}")
    assert not diffs, "\n".join(diffs)
