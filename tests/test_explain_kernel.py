"""memlab explain at scale: the compiled top-k (``memlab.core.ranking_kernels.visible_top_k``)
equal to the tie rule's numpy form (``memlab.core.ranking.top_k``) on blocks full of exact ties;
the replay through it equal, array for array, to the replay that ranks each block whole; and the
summaries, computed over arrays, equal to the ones read from every query's explanation."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memlab.core.ranking import top_k
from memlab.core.ranking_kernels import visible_top_k
from memlab.core.spec import RetrievalSpec
from memlab.datasets.querylog import LoggedQuery, QueryLog
from memlab.datasets.schema import Dataset, Memory, Question
from memlab.scores.problem import RetrievalProblem
from memlab.scores.sources import ScoreTable
from memlab.tuning.explain import FIELDS, replay
from memlab.tuning.explain_summary import _why, explain_all, explain_document, summary

REF = datetime(2026, 9, 10, tzinfo=UTC)


@pytest.mark.parametrize("seed", range(6))
def test_visible_top_k_is_the_tie_rule(seed):
    """Scores on a grid of eight values (most of a row ties), some memories not yet written,
    some scores not finite, ``k`` below and above what a row sees: the kernel's top ``k`` are
    ``top_k``'s over the seen, finite scores, positions and values."""
    rng = np.random.default_rng(seed)
    rows, n = 40, int(rng.integers(1, 90))
    scores = (rng.integers(0, 8, size=(rows, n)) / 8).astype(np.float32)
    scores[rng.random((rows, n)) < 0.05] = np.nan
    scores[rng.random((rows, n)) < 0.02] = np.inf  # never a candidate, either sign
    scores[rng.random((rows, n)) < 0.02] = -np.inf
    dates = rng.integers(0, 100, size=n).astype(np.int64)
    times = rng.integers(-5, 110, size=rows).astype(np.int64)
    for k in (1, 3, 9, n, n + 4):
        idx, val, seen = visible_top_k(scores, dates, times, k)
        raw = np.where(dates[None, :] <= times[:, None], scores.astype(np.float64), np.nan)
        assert seen.tolist() == (dates[None, :] <= times[:, None]).sum(axis=1).tolist()
        want = top_k(raw, k)
        for b in range(rows):
            known = [int(j) for j in want[b] if np.isfinite(raw[b, j])]
            got = [int(j) for j in idx[b] if j >= 0]
            assert got == known, (b, k)
            assert np.array_equal(val[b, : len(got)], raw[b, known])
            assert np.isnan(val[b, len(got) :]).all()


def tie_store(
    seed: int, n_mem: int = 60, n_q: int = 50
) -> tuple[RetrievalProblem, QueryLog, list, np.ndarray]:
    """A store whose unit vectors have four components of +-1/2 in eight dimensions, so that
    float32 products are exact multiples of 1/4 and most candidates tie on raw; memories dated
    around the queries' times, one in five superseding an earlier one; each query logging a
    memory as production's injection."""
    rng = np.random.default_rng(seed)
    dim = 8

    def vectors(n: int) -> np.ndarray:
        out = np.zeros((n, dim), dtype=np.float32)
        for r in range(n):
            out[r, rng.choice(dim, 4, replace=False)] = rng.choice([-0.5, 0.5], 4)
        return out

    memories = tuple(
        Memory(
            f"m{i}",
            REF - timedelta(days=int(rng.integers(0, 30)), seconds=int(rng.integers(0, 86400))),
            {"en": f"memory {i}"},
            "notes",
            "user",
            supersedes=f"m{i - 1}" if i % 5 == 4 else None,
        )
        for i in range(n_mem)
    )
    dataset = Dataset("ties", REF, ("en",), memories, (Question("q", "nohit", {"en": "q"}),))
    qv = vectors(n_q)
    queries = tuple(
        LoggedQuery(
            f"l{j}",
            j + 1,
            REF - timedelta(days=int(rng.integers(0, 25)), seconds=int(rng.integers(0, 86400))),
            None if j % 3 else f"query {j}",
            qv[j],
            None if j % 4 == 3 else (f"m{int(rng.integers(0, n_mem))}",),
        )
        for j in range(n_q)
    )
    from pathlib import Path

    log = QueryLog(Path("log.jsonl"), queries)
    spec = RetrievalSpec(candidates=4, inject=2, threshold=0.4, bonus=0.05, tau_days=7)
    scores = ScoreTable(("q",), dataset.memory_ids, np.zeros((1, n_mem)), "embedded")
    problem = RetrievalProblem.of(dataset, scores, spec)
    others = [
        ("wide", RetrievalSpec(candidates=9, inject=3, threshold=0.25, bonus=0.2, tau_days=3, decay="gauss")),
        (
            "mult",
            RetrievalSpec(candidates=2, inject=1, threshold=0.5, bonus=0.1, tau_days=14, combine="mult"),
        ),
    ]
    return problem, log, others, vectors(n_mem)


def old_summary(rep, n_fragile: int = 10) -> dict:
    """The summaries as they were read before: every query explained, then sorted and compared."""
    current = explain_all(rep)
    ranked = sorted((e for e in current if np.isfinite(e.decision_margin)), key=lambda e: e.decision_margin)
    fragile = [
        {
            "query": e.query.id,
            "text": e.query.text,
            "margin": e.decision_margin,
            "decides": e.decides,
            "injected": list(e.injected),
        }
        for e in ranked[:n_fragile]
    ]
    index, logged, differ = rep.store.memory_index, 0, []
    for e in current:
        theirs = e.query.injected
        if theirs is None:
            continue
        logged += 1
        if set(theirs) == set(e.injected):
            continue
        whys = {w.memory_id: w for w in (*e.candidates, *e.watched)}
        differ.append(
            {
                "query": e.query.id,
                "logged_only": [
                    _why(whys[m])
                    if m in index
                    else {"memory": m, "step": "not_in_store", "margin": None, "margin_of": ""}
                    for m in theirs
                    if m not in e.injected
                ],
                "memlab_only": [m for m in e.injected if m not in theirs],
            }
        )
    stale = {}
    for run in rep.runs:
        found = [
            sum(bool(rep.stale(int(p), q)[0]) for p in run.index[q][run.injected[q]])
            for q in range(len(rep.queries))
        ]
        stale[run.label] = (sum(found), sum(f > 0 for f in found))
    return {
        "fragile": fragile,
        "production": {"logged": logged, "agree": logged - len(differ), "differ": differ},
        "stale": stale,
    }


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_replay_is_the_whole_block_replay(seed):
    problem, log, others, mem = tie_store(seed)
    fast = replay(problem, log, others, memory_vectors=mem, batch=16, watch=["m3"])
    slow = replay(problem, log, others, memory_vectors=mem, batch=16, watch=["m3"], kernel=False)
    for a, b in zip(fast.runs, slow.runs, strict=True):
        for name in FIELDS:
            x = getattr(a, {"last": "last_raw", "next": "next_raw"}.get(name, name))
            y = getattr(b, {"last": "last_raw", "next": "next_raw"}.get(name, name))
            if name == "index":  # a slot past the last candidate holds no memory
                x, y = np.where(a.valid, x, -1), np.where(b.valid, y, -1)
            assert np.array_equal(x, y, equal_nan=True), (a.label, name)
    assert fast.visible.tolist() == slow.visible.tolist()

    def watched(rep):  # NaN (not written yet) as None, so that lists compare
        return [[(p, None if np.isnan(v) else v) for p, v in sorted(w.items())] for w in rep.watched]

    assert watched(fast) == watched(slow)
    # ties decided: the candidates of many queries share a raw score
    raws = fast.runs[1].raw[fast.runs[1].valid.all(axis=1)]
    assert (np.diff(raws, axis=1) == 0).any(axis=1).mean() > 0.5
    assert explain_document(fast) == explain_document(slow)


@pytest.mark.parametrize("seed", range(4))
def test_summaries_over_arrays_are_the_ones_read_query_by_query(seed):
    problem, log, others, mem = tie_store(seed)
    first = replay(problem, log, others, memory_vectors=mem, batch=16)
    ids = problem.dataset.memory_ids
    # every other query logs what memlab injects (in reverse order: a set, not a list, agrees)
    agreeing = [
        replace(q, injected=tuple(ids[i] for i in first.runs[0].index[j][first.runs[0].injected[j]])[::-1])
        if j % 2
        else q
        for j, q in enumerate(log.queries)
    ]
    rep = replay(problem, replace(log, queries=tuple(agreeing)), others, memory_vectors=mem, batch=16)
    got, want = summary(rep, n_fragile=12), old_summary(rep, 12)
    assert got["fragile"] == want["fragile"]
    assert got["production"] == want["production"]
    assert 0 < got["production"]["agree"] < got["production"]["logged"]  # both kinds occur
    for label, (memories, queries) in want["stale"].items():
        assert (got["specs"][label]["stale_injected"], got["specs"][label]["stale_queries"]) == (
            memories,
            queries,
        )
    assert sum(m for m, _ in want["stale"].values()) > 0  # stale injections occur
    # every query's margin, the fragile list's first entries among them
    margins = rep.decision_margins(rep.runs[0])
    assert margins.tolist() == [e.decision_margin for e in explain_all(rep)]
