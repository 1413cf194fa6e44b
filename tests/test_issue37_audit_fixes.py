"""Issue 37, audited finding by finding (docs/reliability.md, "Issue 37, finding by finding"):
what the audit found still broken on main, each with the test that failed before its fix."""

from __future__ import annotations

import json

import pytest

from memlab.app.cli import main
from tests.rerank_standin import StandinRerankServer

pytestmark = pytest.mark.hostile


def test_rerank_cache_dir_with_published_scores_is_the_rerank_cache(tmp_path, capsys, monkeypatch):
    """Before: ``memlab rerank --source published --cache-dir DIR`` was refused as "--cache-dir:
    --source published reads stored scores and embeds nothing, so it would be ignored", though
    the reranker's score cache lives there (as ``memlab answer``'s reply cache does, which took
    it). Now DIR holds the scores: the second run asks the reranker nothing."""
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "elsewhere"))
    cache = tmp_path / "mine"
    server = StandinRerankServer()
    with server as url:
        argv = ["rerank", "--dataset", "seed16", "--source", "published", "--reranker", "endpoint"]
        argv += ["--rerank-url", url, "--rerank-depth", "4", "--rerank-blend", "0,1"]
        argv += ["--cache-dir", str(cache), "--format", "json"]
        assert main(argv) == 0
        first = json.loads(capsys.readouterr().out)["reranker"]
        assert main(argv) == 0
        again = json.loads(capsys.readouterr().out)["reranker"]
    assert first["requests"] == first["questions"] == 10 and len(server.bodies) == 10
    assert again["requests"] == 0 and again["cache_hits"] == first["pairs"]
    assert len(list((cache / "rerank").rglob("*.json"))) == first["pairs"]
    assert not (tmp_path / "elsewhere").exists()


def test_a_cache_dir_no_cache_uses_is_still_refused(capsys):
    """The rule the fix keeps: a command whose only cache is the embedding cache refuses
    ``--cache-dir`` with published scores."""
    assert main(["evaluate", "--dataset", "seed16", "--source", "published", "--cache-dir", "/tmp/x"]) == 2
    assert capsys.readouterr().err == (
        "memlab: error: --cache-dir: --source published reads stored scores and embeds nothing, so it "
        "would be ignored: drop it, or use --source embedded\n"
    )
