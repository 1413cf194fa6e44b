"""Issue 37 §1, audited: a tuned file's tenant filter and languages reach the ``--spec`` commands
no other test held for them (``prompt``, ``rerank``, ``spec``'s text; the language in
``evaluate``, ``prompt`` and ``metrics``). On ``tests/data/two-tenants``: qa is alice's (a1..a4),
qb bob's (b1..b4); unfiltered, qa's prompt at bonus 0.05, tau 30, threshold 0.5 holds bob's b1
(raw 0.70, the top raw score)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from memlab.app.cli import main
from tests.rerank_standin import StandinRerankServer

pytestmark = pytest.mark.hostile
DATA = Path(__file__).parent / "data" / "two-tenants"
BOBS = re.compile(r"\b(b[1-4]|qb|bob)\b")


@pytest.fixture
def alice(tmp_path, capsys) -> Path:
    shutil.copytree(DATA, tmp_path / "ds")
    path = tmp_path / "ds" / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["payload"], rows[1]["payload"] = {"user_id": "alice"}, {"user_id": "bob"}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tuned = tmp_path / "alice.yaml"
    argv = ["sweep", "--dataset", str(tmp_path / "ds"), "--source", "published"]
    argv += ["--threshold", "0.5", "--bonus", "0.05", "--tau", "30", "--filter", "user_id=alice"]
    assert main([*argv, "--save", str(tuned)]) == 0
    capsys.readouterr()
    return tuned


APPLIED = "; tuned for the collection as --filter user_id=alice"


def test_prompt_under_the_files_filter_holds_alices_memories_only(alice, capsys):
    assert main(["prompt", "--spec", str(alice), "--question", "qa"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0].endswith(APPLIED)
    assert out.splitlines()[-3:] == [
        "2026-09-01: alice drinks green tea",
        "2026-09-09: alice switched to coffee",
        "</retrieved_memory>",
    ]
    # the same spec without the filter: bob's memory is in alice's block (what the filter stops)
    argv = ["prompt", "--dataset", str(alice.parent / "ds"), "--source", "published", "--question", "qa"]
    assert main([*argv, "--threshold", "0.5", "--bonus", "0.05", "--tau", "30"]) == 0
    assert "2026-09-08: bob drinks coffee every morning" in capsys.readouterr().out


def test_spec_text_under_the_files_filter_says_the_filter(alice, capsys):
    assert main(["spec", "--spec", str(alice)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0].endswith(APPLIED)
    assert "user_id" in out and "alice" in out and not BOBS.search(out)


def test_rerank_under_the_files_filter_never_sends_another_tenants_memory(alice, capsys, monkeypatch):
    """The reranker is a server: like the chat model of ``memlab answer``, it must never be sent
    bob's memories for alice's question. The stand-in records every request."""
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(alice.parent / "cache"))
    server = StandinRerankServer()
    with server as url:
        argv = ["rerank", "--spec", str(alice), "--reranker", "endpoint", "--rerank-url", url]
        assert main([*argv, "--rerank-depth", "4", "--rerank-blend", "1", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0].endswith(APPLIED)
    sent = json.dumps(server.bodies)
    assert len(server.bodies) == 2 and "alice" in sent and not BOBS.search(sent)  # qa and qn only
    assert json.loads(out)["reranker"]["questions"] == 2


@pytest.fixture
def japanese(tmp_path, capsys) -> Path:
    tuned = tmp_path / "ja.yaml"
    argv = ["sweep", "--dataset", "seed16", "--source", "published", "--lang", "ja"]
    assert (
        main([*argv, "--bonus", "0:0.1:0.05", "--tau", "7,30", "--threshold", "0.45", "--save", str(tuned)])
        == 0
    )
    capsys.readouterr()
    return tuned


def test_the_files_language_is_the_commands_language(japanese, capsys):
    """Tuned on the Japanese questions: evaluate reads them (lang=ja), prompt writes the Japanese
    block, and its JSON is --lang ja's (the raw scores of the Japanese texts, not the English)."""
    assert main(["evaluate", "--spec", str(japanese)]) == 0
    assert "lang=ja" in capsys.readouterr().out.splitlines()[0]
    assert main(["prompt", "--spec", str(japanese), "--question", "H1"]) == 0
    assert "今日は2026-09-10です。" in capsys.readouterr().out
    assert main(["evaluate", "--spec", str(japanese), "--format", "json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    spec = ["--bonus", str(from_file["spec"]["bonus"]), "--tau", str(from_file["spec"]["tau_days"])]
    given = ["evaluate", "--dataset", "seed16", "--source", "published", "--threshold", "0.45", *spec]
    assert main([*given, "--lang", "ja", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == from_file["questions"]
    assert main([*given, "--lang", "en", "--format", "json"]) == 0  # the English scores differ
    assert json.loads(capsys.readouterr().out)["questions"] != from_file["questions"]
