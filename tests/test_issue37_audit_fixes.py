"""Issue 37, audited finding by finding (docs/reliability.md, "Issue 37, finding by finding"):
what the audit found still broken on main, each with the test that failed before its fix."""

from __future__ import annotations

import json

import numpy as np
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
        argv += ["--rerank-url", url, "--rerank-depth", "4", "--rerank-blend", "1"]
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


def test_scale_says_the_distractors_it_embeds_before_it_embeds_them(capsys, monkeypatch):
    """Found by hand in the audit: ``memlab scale --spec FILE`` (the default ``--pool 5000``) ran
    5 minutes on a loaded machine without a line before its first result, where calibrate says
    its template distractors up front. The embedding is stood in for by a stop: the line must
    come before it."""
    from helpers import problem_of

    import memlab.app.cli.studies as studies
    import memlab.studies.scale as scale
    from memlab.core.errors import InputError
    from memlab.core.spec import RetrievalSpec
    from memlab.datasets.schema import load_dataset

    seed = load_dataset("seed16")
    rng = np.random.default_rng(0)
    mem, qs = rng.normal(size=(16, 8)), rng.normal(size=(10, 8))
    problem = problem_of(seed, RetrievalSpec(), memories=mem, questions=qs)
    monkeypatch.setattr(studies, "problem_from", lambda args: problem)

    def stop(*args, **kwargs):
        raise InputError("stopped where the distractors are embedded")

    monkeypatch.setattr(scale, "distractor_pool", stop)
    assert main(["scale", "--source", "embedded", "--pool", "3000", "--n", "16,100"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"embedding 3,000 template distractors with {problem.model_id} (--pool): about a minute per "
        "2,000 on 2 cores the first time, cached after",
        "memlab: error: stopped where the distractors are embedded",
    ]


def test_a_query_log_that_is_a_device_is_named_as_given(capsys):
    """Before: ``explain --log /dev/null`` said "null: is a character device", a name the user
    never typed; every other reader (a batch file, a JSON file) names the path as given."""
    argv = ["explain", "--dataset", "seed16", "--source", "published", "--log", "/dev/null"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "memlab: error: /dev/null: is a character device, not a regular file: memlab reads only regular files\n"
    )


BROKEN_SCORES = [
    ('"raw": 0.62', '"raw": "x"', "1: raw: expected a cosine in [-1, 1], got 'x'"),
    ('"raw": 0.62', '"raw": NaN', "1: raw: expected a cosine in [-1, 1], got nan"),
    ('"raw": 0.62', '"raw": 7', "1: raw: expected a cosine in [-1, 1], got 7"),
    ('"memory": "a1"', '"memory": "zz"', "1: memory: unknown memory id 'zz'"),
    ('"question": "qa"', '"question": "qz"', "1: question: unknown question id 'qz'"),
    ('"memory": "a2"', '"memory": "a1"', "2: memory: pair (qa, a1) already given on line 1"),
]


@pytest.mark.parametrize(("old", "new", "problem"), BROKEN_SCORES, ids=[b[1] for b in BROKEN_SCORES])
def test_validate_refuses_the_published_scores_evaluate_refuses(tmp_path, capsys, old, new, problem):
    """Before: ``validate`` said "ok" for a published_scores.jsonl that every --source published
    command then refused (issue 37 §3: "validate accepting broken published scores"). Now it says
    the same located problem."""
    import shutil
    from pathlib import Path

    folder = tmp_path / "ds"
    shutil.copytree(Path(__file__).parent / "data" / "two-tenants", folder)
    scores = folder / "published_scores.jsonl"
    text = scores.read_text()
    assert text.count(old) >= 1
    scores.write_text(text.replace(old, new, 1))
    said = f"{folder}/published_scores.jsonl:{problem}"
    assert main(["evaluate", "--dataset", str(folder), "--source", "published"]) == 2
    assert said in capsys.readouterr().err.splitlines()
    assert main(["validate", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and said in err.splitlines()


def test_validate_still_says_ok_for_good_published_scores(capsys):
    assert main(["validate", "seed16"]) == 0
    assert ": ok: 16 memories, 10 questions" in capsys.readouterr().out
