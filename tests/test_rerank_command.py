"""``memlab rerank`` and the stage in the tuned file: the command against the stand-in rerank
endpoint (tests/rerank_standin, scoring by embedding cosine: not a reranking model), its baseline
held to memlab.tuning.evaluate, the stage saved and read back, ``memlab spec`` exporting the
query that returns the pool, and a bad stage record refused at its line."""

from __future__ import annotations

import json

import pytest

from memlab.app.cli import main
from memlab.core.errors import InputError
from memlab.core.rerank_stage import RerankStage
from memlab.scores.problem import build_problem
from memlab.scores.sources import ScoreOptions
from memlab.tuning.evaluate import evaluate
from memlab.tuning.tuned import load_tuned
from tests.rerank_standin import StandinRerankServer


@pytest.fixture
def endpoint(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    server = StandinRerankServer()
    with server as url:
        yield url, server


def run_rerank(url, tmp_path, capsys, *more):
    args = ["rerank", "--dataset", "seed16", "--source", "published", "--reranker", "endpoint"]
    args += ["--rerank-url", url, "--rerank-depth", "4,8", "--rerank-blend", "0,0.5,1", *more]
    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_baseline_is_the_spec_as_evaluate_applies_it(endpoint, tmp_path, capsys):
    url, server = endpoint
    out = run_rerank(url, tmp_path, capsys)
    ev = evaluate(build_problem("seed16", ScoreOptions(source="published")))
    answered = 0
    dataset = build_problem("seed16", ScoreOptions(source="published")).dataset
    for r in ev.results:
        question = dataset.question(r.question_id)
        wanted = {question.current, *question.relevant} - {""}
        answered += any(c.memory_id in wanted for c in r.injected)
    nohit = sum(bool(r.injected) for r in ev.results if r.kind == "nohit")
    assert out["baseline"]["answered"] == answered and out["baseline"]["nohit_injected"] == nohit
    assert len(out["table"]) == 2 * 3 * 41  # depths x blends x thresholds
    # one request per question (the endpoint scores a question's pool at once), then the cache
    assert out["reranker"]["requests"] == len(server.bodies) == out["reranker"]["questions"]
    again = run_rerank(url, tmp_path, capsys)
    assert again["reranker"]["requests"] == 0 and again["reranker"]["cache_hits"] == out["reranker"]["pairs"]
    assert again["table"] == out["table"]


def test_the_stage_is_saved_read_back_and_exported_as_the_pool_query(endpoint, tmp_path, capsys):
    url, _ = endpoint
    tuned = tmp_path / "tuned.yaml"
    out = run_rerank(url, tmp_path, capsys, "--save", str(tuned))
    stage = load_tuned(tuned).rerank
    assert stage == RerankStage(**out["stage"])
    assert "in the application, after the exported Qdrant query" in tuned.read_text()
    assert main(["spec", "--spec", str(tuned), "--format", "qdrant-json"]) == 0
    captured = capsys.readouterr()
    body = json.loads(captured.out)
    assert body["limit"] == body["prefetch"]["limit"] == stage.depth and "score_threshold" not in body
    assert f"the query returns {stage.depth} candidates (no score threshold)" in captured.err
    assert main(["spec", "--spec", str(tuned), "--format", "table"]) == 0
    assert "; then rerank in the application after the query" in capsys.readouterr().out
    # without a stage the export is unchanged: the spec's candidates, inject and threshold
    assert main(["spec", "--dataset", "seed16", "--source", "published", "--format", "qdrant-json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["prefetch"]["limit"] == 8 and plain["limit"] == 3 and plain["score_threshold"] == 0.45


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("  blend: 0.0", "  blend: 2.0", r":\d+: rerank.blend: expected"),
        ("  depth: ", "  colour: 1\n  depth: ", r":\d+: rerank.colour: unknown field"),
        (
            "  reranker: endpoint",
            "  reranker: oracle",
            r":\d+: rerank.reranker: expected one of chat, endpoint",
        ),
        ("  where: ", "  old: 1\n  where: ", r":\d+: rerank.old: unknown field"),
    ],
)
def test_a_bad_stage_record_is_one_line_at_its_line(endpoint, tmp_path, capsys, old, new, message):
    url, _ = endpoint
    tuned = tmp_path / "tuned.yaml"
    run_rerank(url, tmp_path, capsys, "--save", str(tuned), "--rerank-blend", "0")
    text = tuned.read_text()
    assert old in text
    tuned.write_text(text.replace(old, new, 1))
    with pytest.raises(InputError, match=message) as e:
        load_tuned(tuned)
    assert "\n" not in str(e.value)


def test_rerank_needs_its_url(capsys):
    assert main(["rerank", "--dataset", "seed16", "--source", "published"]) == 2
    assert "--rerank-url: required" in capsys.readouterr().err
