"""Every command that reads an embedded score table prints, on a LoCoMo-shaped file of memlab's
own, what main printed before the score table became one product (issue 38): every field of the
JSON of tune-benchmark, metrics, compare and evaluate to the digit (fields added since may join
them), sweep's CSV byte for byte (timings and the scratch folder left out). The recorded outputs and the command that made them: tests/golden/make_golden.py."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

from make_golden import HERE, commands, run


def holds(now, recorded) -> bool:
    """``now`` prints every field ``recorded`` printed, with the same value."""
    if isinstance(recorded, dict):
        return isinstance(now, dict) and all(k in now and holds(now[k], v) for k, v in recorded.items())
    if isinstance(recorded, list):
        return isinstance(now, list) and len(now) == len(recorded) and all(map(holds, now, recorded))
    return now == recorded


def test_holds_by_hand():
    assert holds({"a": [1, {"b": 2, "c": 3}], "new": 0}, {"a": [1, {"b": 2}]})
    assert not holds({"a": [1, {"b": 2.0000001}]}, {"a": [1, {"b": 2}]})
    assert not holds({"a": [1]}, {"a": [1, 2]}) and not holds({}, {"a": None})


@pytest.mark.slow
def test_every_golden_output_is_printed_again(tmp_path):
    got = run(tmp_path)
    assert sorted(got) == sorted(commands(tmp_path, tmp_path))
    diffs = []
    for name, text in got.items():
        want = (HERE / f"{name}.out").read_text()
        if name != "sweep" and holds(json.loads(text), json.loads(want)):
            continue  # every recorded field printed again, to the digit (new fields may join them)
        if text != want:
            lines = difflib.unified_diff(want.splitlines(True), text.splitlines(True), "recorded", "now", n=1)
            diffs.append(f"memlab {name} prints otherwise than the recorded output:\n{''.join(lines)[:3000]}")
    assert not diffs, "\n".join(diffs)
