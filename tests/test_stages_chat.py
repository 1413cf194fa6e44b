"""``+ rerank`` held out against a real chat reranker: SmolLM2-135M-Instruct on llama.cpp's
``llama-server`` (two slots), started on 127.0.0.1 for the module, on the hand-written
four-conversation LoCoMo file, one question per conversation reranked (seconds). A 135M model
proves the plumbing (the pairs asked, P(yes) read back into the folds, the table), not reranking
quality: nothing here asserts that it helps."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.answers.local_server import MODEL_ALIAS, LocalServer
from memlab.core.errors import UnreachableError
from memlab.rerank.cache import ScoreCache
from memlab.rerank.clients import Reranker, RerankerConfig
from memlab.studies.stages import SYSTEM, held_pool, rerank_held_out, subset_rows
from tests.test_stages import study  # noqa: F401  (the module's held-out study, as a fixture)

pytestmark = pytest.mark.chat


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = LocalServer(log=tmp_path_factory.mktemp("stages-chat") / "server.log", engine="cpp", parallel=2)
    try:
        srv.start(timeout=120)
    except UnreachableError as e:
        pytest.fail(str(e), pytrace=False)
    yield srv
    srv.stop()


def test_rerank_held_out_with_smollm2(server, study, tmp_path):  # noqa: F811
    problem, held, _, _ = study
    reranker = Reranker(RerankerConfig("chat", server.url, attempts=1))
    cache = ScoreCache(tmp_path)
    result = rerank_held_out(
        problem, held, reranker, depths=(4,), blends=(0.0, 0.5, 1.0), subset=1, cache=cache, concurrency=2
    )
    reranker.close()
    d = result.details
    assert d["model"] == MODEL_ALIAS and d["subset"].startswith(
        "1 questions of each conversation drawn at random (seed 0)"
    )
    units = held.questions[held.questions["system"] == "cosine"]["haystack"].tolist()
    rows = subset_rows(units, 1)
    pairs = int((held_pool(problem, rows, 4).index >= 0).sum())
    assert d["pairs"] == pairs and d["requests"] == pairs  # one request per pair, none cached yet
    assert (result.table[result.table["group"] == "all"]["n"] == len(rows)).all()
    assert SYSTEM in set(result.table["system"])
    # the same run again reads every score from the cache and gives the same table
    again = Reranker(RerankerConfig("chat", server.url, attempts=1))
    second = rerank_held_out(
        problem, held, again, depths=(4,), blends=(0.0, 0.5, 1.0), subset=1, cache=ScoreCache(tmp_path)
    )
    again.close()
    assert again.requests == 0
    np.testing.assert_array_equal(second.table["value"].to_numpy(), result.table["value"].to_numpy())
