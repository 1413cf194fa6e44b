"""explain under an MMR spec: the candidates and injections equal evaluate's (the one-config
reference, on the same vectors), and the memories MMR dropped for diversity are named with the
step that passed them over and the earlier pick they were too close to."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import numpy as np
from test_explain import REF, write_log

from memlab.core.spec import RetrievalSpec
from memlab.core.vectors import cosine_table
from memlab.datasets.querylog import load_log
from memlab.datasets.schema import Dataset, Memory, Question
from memlab.scores.problem import RetrievalProblem
from memlab.scores.sources import ScoreTable, Vectors
from memlab.tuning.evaluate import evaluate
from memlab.tuning.explain import replay


def test_mmr_candidates_equal_evaluate_and_the_dropped_are_named():
    rng = np.random.default_rng(3)
    n_mem, n_q, dim = 30, 10, 6
    memories = tuple(
        Memory(
            f"m{i}", REF - timedelta(seconds=int(rng.integers(0, 30 * 86400))), {"en": f"m{i}"}, "", "user"
        )
        for i in range(n_mem)
    )
    questions = tuple(Question(f"q{j}", "hit", {"en": f"q{j}"}, date=REF) for j in range(n_q))
    dataset = Dataset("random", REF, ("en",), memories, questions)
    base = rng.normal(size=(6, dim))
    mem = (base[rng.integers(0, 6, n_mem)] + 0.15 * rng.normal(size=(n_mem, dim))).astype(
        np.float32
    )  # clusters
    qv = rng.normal(size=(n_q, dim)).astype(np.float32)
    scores = ScoreTable(
        dataset.question_ids, dataset.memory_ids, cosine_table(qv, mem), "embedded", vectors=Vectors(mem, qv)
    )
    with tempfile.TemporaryDirectory() as tmp:
        lines = [
            {"id": q.id, "vector": qv[j].tolist(), "time": REF.isoformat()} for j, q in enumerate(questions)
        ]
        log = load_log(write_log(Path(tmp) / "log.jsonl", lines))
    spec = RetrievalSpec(candidates=4, inject=3, threshold=-1.0, bonus=0.05, mmr_pool=15, diversity=0.7)
    problem = RetrievalProblem.of(dataset, scores, spec)
    rep = replay(problem, log, memory_vectors=mem)
    ev = evaluate(problem)
    unit = mem / np.linalg.norm(mem, axis=1, keepdims=True)
    dropped_any = 0
    for j, r in enumerate(ev.results):
        e = rep.explain(j)
        assert [c.memory_id for c in e.candidates] == [c.memory_id for c in r.candidates]
        assert e.injected == tuple(c.memory_id for c in r.injected)
        # the dropped: exactly the top 4 by raw score that are no candidates
        top4 = [f"m{i}" for i in np.argsort(-scores.raw[j], kind="stable")[:4]]
        chosen = {c.memory_id for c in r.candidates}
        assert [w.memory_id for w in e.mmr_dropped] == [m for m in top4 if m not in chosen]
        for w in e.mmr_dropped:
            assert w.step == "mmr_dropped" and w.too_close_to in chosen
            a, b = int(w.memory_id[1:]), int(w.too_close_to[1:])
            assert abs(w.similarity - float(unit[a] @ unit[b])) < 1e-6
            dropped_any += 1
        assert ("mmr_dropped" in e.to_dict()) is True
    assert dropped_any > 0
