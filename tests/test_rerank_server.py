"""The chat tier of the rerank stage: the chat reranker (P(yes) from the logprobs of the first
token) against real servers on SmolLM2-135M-Instruct, llama.cpp's ``llama-server`` (two slots)
and llama-cpp-python's server, started on 127.0.0.1 for the module and stopped after it. A 135M
model proves the plumbing (logprobs read, probabilities, the cache, N at a time, the command), not
reranking quality: nothing here asserts which memory it prefers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memlab.answers.local_server import MODEL_ALIAS, LocalServer
from memlab.app.cli import main
from memlab.core.errors import UnreachableError
from memlab.rerank.cache import ScoreCache
from memlab.rerank.clients import Reranker, RerankerConfig
from memlab.rerank.scoring import score_pairs

pytestmark = pytest.mark.chat

PAIRS = [
    ("How do I take my coffee?", "2026-09-01: The user has been drinking sweet café au lait lately."),
    ("How do I take my coffee?", "2026-08-20: The user has a dentist appointment on Friday."),
    ("When is my dentist appointment?", "2026-08-20: The user has a dentist appointment on Friday."),
    ("When is my dentist appointment?", "2026-09-01: The user has been drinking sweet café au lait lately."),
]


@pytest.fixture(scope="module", params=["cpp", "python"])
def server(request, tmp_path_factory):
    log = tmp_path_factory.mktemp(f"rerank-{request.param}") / "server.log"
    srv = LocalServer(log=log, engine=request.param, parallel=2)
    try:
        srv.start(timeout=120)
    except UnreachableError as e:
        pytest.fail(str(e), pytrace=False)
    yield srv
    srv.stop()


def test_p_yes_from_a_real_servers_logprobs(server, tmp_path):
    reranker = Reranker(RerankerConfig("chat", server.url, attempts=1))
    assert reranker.model == MODEL_ALIAS  # the server's first model
    cache = ScoreCache(tmp_path)
    one = score_pairs(reranker, PAIRS, cache)
    assert all(0.0 <= s <= 1.0 for s in one) and reranker.requests == 4
    assert len(set(one)) > 1  # the probabilities depend on the pair
    # temperature 0, one token: the same again, sent again (no cache), one and two at a time.
    # llama-cpp-python's server answers to the bit. llama-server's scores move in the third digit
    # (its slots' prompt cache, we take it; measured: 0.0759 for the first pair on a fresh server's first
    # request, 0.0771 on every later one, one or two at a time), so to 0.01 there
    tol = 0.0 if server.engine == "python" else 0.01
    again = score_pairs(Reranker(RerankerConfig("chat", server.url, attempts=1)), PAIRS)
    assert again == pytest.approx(one, abs=tol)
    two = score_pairs(Reranker(RerankerConfig("chat", server.url, attempts=1)), PAIRS, concurrency=2)
    assert two == pytest.approx(one, abs=tol)
    cached = Reranker(RerankerConfig("chat", server.url, attempts=1))
    assert score_pairs(cached, PAIRS, ScoreCache(tmp_path)) == one and cached.requests == 0


def test_p_yes_is_the_yes_tokens_share_of_the_servers_own_top_logprobs(server):
    # the server's reply read independently of memlab's parser: exp of every listed token
    # that reads yes, summed
    import httpx

    reranker = Reranker(RerankerConfig("chat", server.url, attempts=1))
    body = reranker.body(*PAIRS[0][:1], [PAIRS[0][1]])
    reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=120).json()
    top = reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert len(top) == 20
    want = sum(
        float(np.exp(t["logprob"]))
        for t in {t["token"]: t for t in top}.values()
        if t["token"].strip().lower() == "yes"
    )
    assert reranker.score(PAIRS[0][0], [PAIRS[0][1]]) == [pytest.approx(min(1.0, want), abs=1e-6)]


def test_memlab_rerank_runs_the_stage_on_seed16(server, tmp_path, capsys):
    tuned = tmp_path / "tuned.yaml"
    args = ["rerank", "--dataset", "seed16", "--source", "published", "--reranker", "chat"]
    args += ["--rerank-url", server.url, "--rerank-depth", "3,8", "--rerank-blend", "0,0.5,1"]
    args += ["--rerank-concurrency", "2", "--save", str(tuned), "--format", "json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reranker"]["model"] == MODEL_ALIAS and out["reranker"]["requests"] == out["reranker"]["pairs"]
    table = out["table"]
    assert {(r["depth"], r["blend"]) for r in table} == {(d, w) for d in (3, 8) for w in (0.0, 0.5, 1.0)}
    # the chosen row is the best utility of the grid, and the saved stage is that row
    assert out["chosen"]["utility"] == max(r["utility"] for r in table)
    assert main(["spec", "--spec", str(tuned), "--format", "json"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["rerank"] == {**out["stage"], "reranker": "chat", "model": MODEL_ALIAS}


@pytest.fixture(scope="module")
def rerank_server(tmp_path_factory):
    # llama.cpp's own /v1/rerank (llama-server --reranking) on SmolLM2: the real endpoint's request
    # and reply, on a model with no reranking head, so its scores are plumbing, not relevance
    log = tmp_path_factory.mktemp("rerank-endpoint") / "server.log"
    srv = LocalServer(log=log, engine="cpp", parallel=2, reranking=True)
    try:
        srv.start(timeout=120)
    except UnreachableError as e:
        pytest.fail(str(e), pytrace=False)
    yield srv
    srv.stop()


def test_llama_servers_rerank_endpoint_through_the_client(rerank_server, tmp_path):
    reranker = Reranker(RerankerConfig("endpoint", rerank_server.url, attempts=1))
    query, docs = PAIRS[0][0], [d for _, d in PAIRS[:2]]
    together = reranker.score(query, docs)
    assert all(np.isfinite(together)) and together[0] != together[1]
    assert reranker.score(query, docs) == together  # the same request again: the same scores
    # one request for both documents, or one each: mostly bit for bit, but once measured 0.04
    # apart (-0.594 against -0.637; its two slots' cache states are our guess at why)
    assert [reranker.score(query, [d])[0] for d in docs] == pytest.approx(together, abs=0.1)
    cache = ScoreCache(tmp_path)
    first = score_pairs(reranker, PAIRS, cache, concurrency=2)
    assert len(first) == len(PAIRS) and all(np.isfinite(first))
    again = Reranker(RerankerConfig("endpoint", rerank_server.url, attempts=1))
    assert score_pairs(again, PAIRS, ScoreCache(tmp_path)) == first and again.requests == 0


def test_memlab_rerank_with_llama_servers_endpoint(rerank_server, capsys):
    from memlab.scores.problem import build_problem
    from memlab.scores.sources import ScoreOptions
    from memlab.studies.rerank import rerank_pool

    args = ["rerank", "--dataset", "seed16", "--source", "published", "--reranker", "endpoint"]
    args += ["--rerank-url", rerank_server.url, "--rerank-depth", "8", "--rerank-blend", "0,1", "--no-cache"]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pool = rerank_pool(build_problem("seed16", ScoreOptions(source="published")), 8)
    # the endpoint scores a question's whole pool in one request
    assert out["reranker"]["requests"] == int((pool.index >= 0).any(axis=1).sum())
    assert out["reranker"]["pairs"] == int((pool.index >= 0).sum())
    assert {r["blend"] for r in out["table"]} == {0.0, 1.0}
    assert out["chosen"]["utility"] == max(r["utility"] for r in out["table"])
