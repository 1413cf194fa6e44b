"""The generated reference pages are current: docs/cli.md is what the parser says, docs/parameters.md
what the declarations say (``make docs`` rewrites both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.app.cli.reference import PAGES, main

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_generated_page_is_current(name):
    assert (DOCS / name).read_text(encoding="utf-8") == PAGES[name](), f"docs/{name} is stale: run make docs"


def test_the_check_names_a_stale_page_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "cli.md").write_text("old\n", encoding="utf-8")
    assert main(["--check", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"stale: {tmp_path / 'cli.md'}, {tmp_path / 'parameters.md'}\n"
    assert (tmp_path / "cli.md").read_text(encoding="utf-8") == "old\n" and not (
        tmp_path / "parameters.md"
    ).exists()
    assert main([str(tmp_path)]) == 0 and main(["--check", str(tmp_path)]) == 0


def test_every_command_and_option_is_in_the_reference():
    from memlab.app.cli import build_parser
    from memlab.app.cli.reference import _subparsers

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for name, sub in _subparsers(build_parser()).items():
        assert f"## memlab {name}\n" in text
        for action in sub._actions:
            if action.dest == "help":
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in text, (name, flag)
