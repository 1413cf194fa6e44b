"""Notebook 08's held-out stages on the hand-written four-conversation LoCoMo file, with the
stand-in rerank endpoint (tests/rerank_standin: word-hashed cosine, not a reranking model): the
table it writes holds + rerank, + MMR and the best combination over the named subset, and its figure draws that table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.rerank_standin import StandinRerankServer
from tests.test_notebooks import execute, records

pytestmark = [pytest.mark.notebook, pytest.mark.model]


def test_08_draws_the_stages_with_rerank(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(cache_dir))
    with StandinRerankServer() as url:
        out = execute(
            "08_benchmark",
            tmp_path,
            benchmark_file=str(Path(__file__).parent / "data" / "locomo_heldout.json"),
            benchmark_granularity="turn",
            bonus_range="0,0.05",
            tau_range="14",
            threshold_range="0.8:0.9:0.05",
            pool=200,
            n_range="100",
            boot=50,
            rerank_url=url,
            reranker="endpoint",
            rerank_subset=3,
        )
    table = records(out / "tables" / "heldout.json")
    everyone = [r for r in table if r["group"] == "all"]
    systems = [r["system"] for r in everyone]
    assert systems[-1] == "best combination" and {"+ rerank", "+ MMR"} <= set(systems)
    assert {r["n"] for r in everyone} == {12}  # 3 x 4
    report = json.loads((out / "report.json").read_text())
    captions = {e["name"]: e.get("caption", "") for e in report["entries"]}
    assert (
        "3 questions of each conversation drawn at random (seed 0) (12 of 20 questions)"
        in captions["heldout"]
    )
    figure = json.loads(next((out / "figures").glob("stages*.json")).read_text())
    names = [t["name"] for t in figure["data"]]
    assert names == list(dict.fromkeys(r["system"] for r in table))
