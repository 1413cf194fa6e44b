"""Every command's --help says the defaults that really apply: each "(default: X)" against the
parser's default, and the threshold, the sweep ranges, the model and the criteria against what the
code uses when none is given."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from memlab.app.cli import build_parser
from memlab.app.cli.options import criteria_from
from memlab.app.cli.reference import _subparsers
from memlab.core.criteria import dataset_criteria
from memlab.datasets.schema import load_dataset
from memlab.embedding.models import DEFAULT_MODEL, MODELS
from memlab.scores.problem import build_problem
from memlab.scores.sources import ScoreOptions

COMMANDS = _subparsers(build_parser())
EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "example-companion"


def options(name: str) -> list[argparse.Action]:
    return [
        a for a in COMMANDS[name]._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]


def help_of(action: argparse.Action, command: str) -> str:
    return " ".join(((action.help or "") % {"default": action.default, "prog": command}).split())


def shown_default(text: str) -> str | None:
    found = re.findall(r"\(default: ([^()]*(?:\([^()]*\)[^()]*)*)\)", text)
    return found[-1] if found else None


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_shown_default_is_the_parsers(command):
    """A value the help calls the default is the one the parser hands the command (followed, at
    most, by what it means); an option whose parser default is None says in words what applies."""
    for action in options(command):
        text = help_of(action, command)
        shown = shown_default(text)
        if shown is None or action.default is None or isinstance(action, argparse._StoreFalseAction):
            continue
        value = str(action.default)
        assert shown == value or shown.startswith((f"{value}: ", f"{value}, ")), (command, action.dest, shown)


def thresholds_in(text: str) -> dict[tuple[str, str], float]:
    """(source, lang) -> threshold, from the help's "0.845 English, 0.875 Japanese for ...;
    0.45 for published scores"."""
    words = {"English": "en", "Japanese": "ja"}
    out = {}
    model = re.search(r"the model's \(([^)]*) for ([^;]+); ([\d.]+) for published scores\)", text)
    assert model, text
    for value, word in re.findall(r"([\d.]+) (English|Japanese)", model.group(1)):
        out[("embedded", words[word])] = float(value)
    assert model.group(2) == DEFAULT_MODEL
    out[("published", "en")] = float(model.group(3))
    return out


@pytest.mark.parametrize(
    "command", [n for n, p in COMMANDS.items() if "threshold" in [a.dest for a in p._actions]]
)
def test_the_threshold_help_says_the_models(command):
    """Without --threshold every command takes the model's: the numbers its help names are the
    ones build_problem settles (the model card's for embedded scores, the seed's for published)."""
    (action,) = [a for a in options(command) if a.dest == "threshold"]
    assert action.default is None
    stated = thresholds_in(help_of(action, command))
    assert set(stated) == {("embedded", "en"), ("embedded", "ja"), ("published", "en")}
    for (source, lang), value in stated.items():
        assert build_problem("seed16", ScoreOptions(source, lang)).spec.threshold == value


@pytest.mark.parametrize("command", ["sweep"])
def test_the_sweep_ranges_help_says_the_models(command):
    for dest, field in (("threshold_range", "threshold_range"), ("bonus_range", "bonus_range")):
        (action,) = [a for a in options(command) if a.dest == dest]
        text = help_of(action, command)
        assert action.default is None
        for card in MODELS.values():
            if card.thresholds:
                assert f"{getattr(card, field)} for {card.name}" in text, (dest, card.name)
        problem = build_problem("seed16", ScoreOptions("embedded", "en"))
        assert f"{getattr(problem.defaults, field)} for {DEFAULT_MODEL}" in text
        published = build_problem("seed16", ScoreOptions("published", "en"))
        assert f"{getattr(published.defaults, field)} for published scores" in text
    # feasible solves for the bonus at one threshold: the model's, as evaluate uses it
    (action,) = [a for a in options("feasible") if a.dest == "threshold_range"]
    assert "(default: the model's threshold, as evaluate uses it)" in help_of(action, "feasible")


def test_the_model_help_names_the_default_model():
    """Every --model help of a command that scores names the model the code falls back to:
    multilingual-e5-small, the drift study's own for drift; none names another card. (An
    importer's --model names the model that made the stored vectors: it has no default.)"""
    from memlab.app.cli.studies import DRIFT_MODEL

    seen = 0
    scoring = [n for n in COMMANDS if "source" in [a.dest for a in options(n)]] + ["calibrate", "drift"]
    for command in scoring:
        for action in options(command):
            if action.dest != "model":
                continue
            seen += 1
            text = help_of(action, command)
            expected = DRIFT_MODEL if command == "drift" else DEFAULT_MODEL
            assert f"default: {expected}" in text or f"else {expected}" in text, (command, text)
            others = [c for c in MODELS if c != expected and c in text.split("(07_drift")[0]]
            if command != "drift":
                assert others == [], (command, others)
    assert seen >= 8
    assert build_problem("seed16", ScoreOptions("embedded", "en")).embedder.backend.name == DEFAULT_MODEL


def test_the_criteria_help_says_the_datasets_own():
    """--criteria not given: the criteria the dataset declares (seed16: a, b, c), else the
    generic set (example-companion); the help says so, and names no seed criterion."""
    commands = [n for n in COMMANDS if "criteria" in [a.dest for a in options(n)]]
    assert set(commands) >= {"sweep", "feasible", "robustness"}
    for command in commands:
        (action,) = [a for a in options(command) if a.dest == "criteria"]
        text = help_of(action, command)
        assert "those its dataset.json declares, else the generic set" in text, command
        assert not re.search(r"\b(a, b|seed's)\b", text), command
    args = argparse.Namespace(criteria=None)
    seed = load_dataset("seed16")
    assert [c.name for c in criteria_from(args, seed)] == ["a", "b", "c"]
    example = load_dataset(EXAMPLE)
    assert criteria_from(args, example) == dataset_criteria(example)
    assert [c.name for c in criteria_from(args, example)][:2] == ["nohit", "current_q1"]
