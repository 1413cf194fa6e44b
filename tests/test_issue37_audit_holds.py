"""Issue 37, audited: findings that held on main without a test of their own (docs/reliability.md,
"Issue 37, finding by finding")."""

from __future__ import annotations

import argparse
import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from memlab.app.cli import build_parser

pytestmark = pytest.mark.hostile
ROOT = Path(__file__).parent.parent


def options_of_each_command() -> dict[str, set[str]]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        name: {s for action in p._actions for s in action.option_strings} for name, p in sub.choices.items()
    }


def test_every_command_that_scores_a_dataset_or_reads_a_tuned_file_takes_filter():
    """§1: "every command that scores takes --filter". A command scores a dataset when it takes
    --source (published or embedded scores); drift's streams are synthetic (no --source)."""
    commands = options_of_each_command()
    scoring = {name for name, options in commands.items() if "--source" in options or "--spec" in options}
    assert {
        "evaluate",
        "metrics",
        "robustness",
        "scale",
        "calibrate",
        "answer",
        "rerank",
        "prompt",
    } <= scoring
    assert sorted(name for name in scoring if "--filter" not in commands[name]) == []
    assert "--source" not in commands["drift"] and "--spec" not in commands["drift"]


def test_qdrant_edge_is_in_the_base_install():
    """§4: "qdrant-edge-py in the base install so the real engine is always at hand"."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower() for d in project["dependencies"]]
    assert "qdrant-edge-py" in names
    assert importlib.util.find_spec("qdrant_edge") is not None
