"""What a replayed log says as a whole (``memlab.tuning.explain.Replay``): per spec the injection
and empty-result rates and the stale injections; how many queries change their injected set
from the current spec to each other one; the fragile decisions (the queries whose closest
decision, ``memlab.core.decisions``, is nearest); and where production's logged injections
differ from memlab's reading of the same query. ``explain_document`` is all of it, with every
query, as one JSON-ready dict (``memlab explain --format json``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memlab.tuning.explain import MARGINS, STEPS, QueryExplanation, Replay, SpecRun

FRAGILE = 10  # fragile decisions listed by default


def spec_summary(replay: Replay, run: SpecRun) -> dict[str, Any]:
    """One spec over the log: queries injecting something, empty results (and why), memories
    injected per query, stale memories injected."""
    n = len(replay.queries)
    counts = run.injected.sum(axis=1)
    injecting = counts > 0
    nothing = ~run.valid.any(axis=1)
    stale_queries, stale_memories = 0, 0
    if replay.has_supersession:
        stale = replay.stale_injected(run)
        stale_memories, stale_queries = int(stale.sum()), int(stale.any(axis=1).sum())
    return {
        "queries": n,
        "injecting": int(injecting.sum()),
        "injection_rate": float(injecting.mean()),
        "empty": int((~injecting).sum()),
        "empty_rate": float((~injecting).mean()),
        "empty_no_memory": int(nothing.sum()),
        "empty_below_threshold": int((~injecting & ~nothing).sum()),
        "injected_per_query": float(counts.mean()),
        "stale_injected": None if not replay.has_supersession else stale_memories,
        "stale_queries": None if not replay.has_supersession else stale_queries,
    }


def changes(replay: Replay, label: str) -> list[dict[str, Any]]:
    """The queries whose injected set under ``label`` differs from the current spec's, with the
    memories each gains and loses (in re-sort order)."""
    base, other = replay.runs[0], replay.run(label)
    ids = replay.store.memory_ids
    out = []
    for q, (a, b) in enumerate(zip(base.injected_sets(), other.injected_sets(), strict=True)):
        if a != b:
            order = [int(i) for i in other.index[q][other.injected[q]]]
            lost = [int(i) for i in base.index[q][base.injected[q]] if int(i) not in b]
            out.append(
                {
                    "query": replay.queries[q].id,
                    "gained": [ids[i] for i in order if i not in a],
                    "lost": [ids[i] for i in lost],
                }
            )
    return out


def fragile(replay: Replay, n: int = FRAGILE) -> list[dict[str, Any]]:
    """The ``n`` queries whose closest decision under the current spec is nearest (ties in log
    order): how far, and what it decides. Queries without a candidate decide nothing and are
    left out. Only those ``n`` are explained one by one."""
    margins = replay.decision_margins(replay.runs[0])
    ranked = [int(q) for q in np.argsort(margins, kind="stable")[:n] if np.isfinite(margins[q])]
    out = []
    for q in ranked:
        e = replay.explain(q)
        out.append(
            {
                "query": e.query.id,
                "text": e.query.text,
                "margin": e.decision_margin,
                "decides": e.decides,
                "injected": list(e.injected),
            }
        )
    return out


def _why(w) -> dict[str, Any]:
    return {
        "memory": w.memory_id,
        "step": w.step,
        "margin": w.margin,
        "margin_of": MARGINS.get(w.margin_of, ""),
    }


def production(replay: Replay) -> dict[str, Any]:
    """Production's logged injections against memlab's reading under the current spec: per query
    that logs them and disagrees, the memories only production injected (with the step memlab
    gives each, or ``not in the store``) and those only memlab injects. Only the queries that
    disagree are explained one by one."""
    index, ids, run = replay.store.memory_index, replay.store.memory_ids, replay.runs[0]
    logged, differ = 0, []
    for q, query in enumerate(replay.queries):
        theirs = query.injected
        if theirs is None:
            continue
        logged += 1
        ours = [ids[i] for i in run.index[q][run.injected[q]]]  # in re-sort order, as explain gives them
        if set(theirs) == set(ours):
            continue
        e = replay.explain(q)
        whys = {w.memory_id: w for w in (*e.candidates, *e.watched)}
        only_logged = [
            _why(whys[m])
            if m in index
            else {"memory": m, "step": "not_in_store", "margin": None, "margin_of": ""}
            for m in theirs
            if m not in ours
        ]
        differ.append(
            {
                "query": query.id,
                "logged_only": only_logged,
                "memlab_only": [m for m in ours if m not in theirs],
            }
        )
    return {"logged": logged, "agree": logged - len(differ), "differ": differ}


def shard_changes(replay: Replay, others: dict[int, Replay]) -> list[dict[str, Any]]:
    """How the current spec's injected sets change with the shard count: per count (``others``:
    the same log replayed on that many shards), the queries injecting and those whose injected
    set differs from ``replay``'s (its own count first, changing nothing)."""
    base = replay.runs[0].injected_sets()
    ids = replay.store.memory_ids
    out = [
        {
            "shards": replay.pool.shards,
            "injecting": spec_summary(replay, replay.runs[0])["injecting"],
            "changed": 0,
            "queries": [],
        }
    ]
    for n, other in others.items():
        sets = other.runs[0].injected_sets()
        moved = [
            {
                "query": replay.queries[q].id,
                "gained": sorted(ids[i] for i in b - a),
                "lost": sorted(ids[i] for i in a - b),
            }
            for q, (a, b) in enumerate(zip(base, sets, strict=True))
            if a != b
        ]
        injecting = spec_summary(other, other.runs[0])["injecting"]
        out.append({"shards": n, "injecting": injecting, "changed": len(moved), "queries": moved})
    return out


def explain_all(replay: Replay, label: str | None = None) -> list[QueryExplanation]:
    return [replay.explain(q, label) for q in range(len(replay.queries))]


def summary(
    replay: Replay, n_fragile: int = FRAGILE, shards: dict[int, Replay] | None = None
) -> dict[str, Any]:
    """Every summary of the replay (the module's docstring); ``shards``: the log replayed on
    other shard counts (``shard_changes``)."""
    return {
        **({"shards": shard_changes(replay, shards)} if shards else {}),
        "specs": {r.label: spec_summary(replay, r) for r in replay.runs},
        "changes": {
            r.label: {"changed": len(c := changes(replay, r.label)), "queries": c} for r in replay.runs[1:]
        },
        "fragile": fragile(replay, n_fragile),
        "production": production(replay),
    }


def explain_document(
    replay: Replay,
    n_fragile: int = FRAGILE,
    queries: list[int] | None = None,
    shards: dict[int, Replay] | None = None,
) -> dict[str, Any]:
    """The replay as one JSON-ready dict: the store, the log, the specs, the summaries and every
    query (or those at ``queries``) under every spec."""
    store = replay.store
    chosen = range(len(replay.queries)) if queries is None else queries
    return {
        "store": {
            "name": store.name,
            "memories": len(store.memories),
            "supersession": replay.has_supersession,
            "model": replay.problem.model_id,
        },
        "log": {
            "path": str(replay.log.path),
            "queries": len(replay.queries),
            "embedded": replay.embedded,
            "logged_injections": sum(q.injected is not None for q in replay.queries),
        },
        "specs": [{"label": r.label, **r.spec.as_dict()} for r in replay.runs],
        # MMR's step named only where a spec runs MMR: a replay without it prints what it printed
        "steps": {
            s: why for s, why in STEPS.items() if s != "mmr_dropped" or any(r.spec.mmr for r in replay.runs)
        },
        "margins": MARGINS,
        "scope": replay.problem.scope.describe(),
        "summary": summary(replay, n_fragile, shards),
        "queries": [
            {
                "id": replay.queries[q].id,
                "line": replay.queries[q].line,
                "time": replay.queries[q].time.isoformat().replace("+00:00", "Z"),
                "text": replay.queries[q].text,
                "logged_injected": None
                if replay.queries[q].injected is None
                else list(replay.queries[q].injected),
                "extra": replay.queries[q].extra,
                "specs": {r.label: replay.explain(q, r.label).to_dict() for r in replay.runs},
            }
            for q in chosen
        ],
    }
