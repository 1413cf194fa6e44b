"""Replay a query log on a store under one or more specs, and say why each memory went in or not.

``replay(problem, log, specs)`` scores every logged query against every memory of the problem's
store at once (numpy: the cosine of unit vectors, in float32 like Qdrant), keeps each query's
memories written by its time, ranks them through ``memlab.core.ranking`` (the one tie rule: the
same functions ``memlab.core.spec.retrieve`` calls) and, per spec, records the candidates with
their raw, bonus and final scores. A ``Replay`` then answers, per query and spec:

- the step that decided each memory (``STEPS``): ``not_written`` (dated after the query),
  ``not_candidate`` (outside the top ``candidates`` by raw score), ``below_threshold``,
  ``past_limit`` (reaches the threshold, but ``inject`` others come first in the re-sort),
  ``injected``;
- the margin by which it missed or made it (``MARGINS`` says which difference each one is;
  negative: missed, positive or zero: made it, zero being a tie the tie rule decided);
- whether it is stale: superseded (``supersedes`` in the store) by a memory written by the
  query's time (None when the store carries no supersession labels).

The summaries (injection and empty-result rates, changes between specs, the fragile decisions,
production's logged injections against memlab's reading) are in ``memlab.tuning.explain_summary``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from memlab.core.decisions import question_decisions
from memlab.core.errors import InputError, UnknownNameError
from memlab.core.ranking import candidate_order, injected, resort_order
from memlab.core.ranking_kernels import visible_top_k
from memlab.core.shards import Pool, narrow, pool_mask
from memlab.core.spec import RetrievalSpec, age_days, check_mmr
from memlab.datasets.querylog import LoggedQuery, QueryLog
from memlab.datasets.schema import Dataset, naive_utc
from memlab.scores.problem import RetrievalProblem
from memlab.tuning.explain_screen import MIN_MEMORIES, Screen

STEPS = {
    "not_written": "written after the query",
    "filtered_out": "left out by the tenant filter",
    "not_candidate": "not among the candidates",
    "mmr_dropped": "dropped by MMR for diversity",
    "below_threshold": "below the threshold",
    "past_limit": "past the inject limit",
    "injected": "injected",
}
CANDIDATE_STEPS = ("below_threshold", "past_limit", "injected")
# which difference each margin is (a memory's own score first)
MARGINS = {
    "cut": "raw - the last candidate's raw (in its shard)",
    "threshold": "final - threshold",
    "last_injected": "final - the last injected memory's final",
    "passed_over": "final - the first passed-over candidate's final",
}
BATCH = 256  # queries scored at once: a (256, memories) float32 block
# blocks timed both ways, screened and whole, before the faster is kept (screen=None); 0: off. Off
# by default: on a quiet 2-core AVX-512 machine the race kept the whole product after 3 blocks,
# and the replay took 51.6 s (84.9 CPU s) against 45.1 s (71.7 CPU s) screening every block, the
# blocks it timed not being the run's (bench/bench_explain.py, 10^5 x 10^5, 2026-12-04)
RACE = 0
# why ``replay`` stopped screening, after scoring the first screened blocks whole as well
SCREEN_STOPS = {
    "bits": "this BLAS sums the product otherwise than the screen's rescoring (other bits)",
    "slower": "the screen took more CPU time than the whole float32 product on the blocks timed here",
}


@dataclass(frozen=True)
class MemoryWhy:
    """One memory in one query under one spec: the step that decided it and the margin."""

    memory_id: str
    index: int  # its position in the store
    date: str
    step: str  # a key of STEPS
    margin: float | None  # None for not_written
    margin_of: str  # a key of MARGINS ("" for not_written)
    raw: float | None = None
    bonus: float | None = None
    final: float | None = None
    rank: int | None = None  # its place in the re-sort, 0-based (candidates only)
    cut_margin: float | None = None  # candidates: raw - the first non-candidate's raw (None: none)
    stale: bool | None = None  # None: the store carries no supersession labels
    superseded_by: str | None = None
    # mmr_dropped: the MMR step that passed it over, and the earlier pick it was too close to
    mmr_step: int | None = None
    too_close_to: str | None = None
    similarity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory_id,
            "date": self.date,
            "step": self.step,
            "margin": self.margin,
            "margin_of": MARGINS.get(self.margin_of, ""),
            "raw": self.raw,
            "bonus": self.bonus,
            "final": self.final,
            "rank": self.rank,
            "cut_margin": self.cut_margin,
            "stale": self.stale,
            "superseded_by": self.superseded_by,
            **(
                {"mmr_step": self.mmr_step, "too_close_to": self.too_close_to, "similarity": self.similarity}
                if self.step == "mmr_dropped"
                else {}
            ),
        }


@dataclass(frozen=True)
class QueryExplanation:
    """One logged query under one spec."""

    query: LoggedQuery
    label: str
    spec: RetrievalSpec
    candidates: tuple[MemoryWhy, ...]  # in re-sort order
    watched: tuple[MemoryWhy, ...]  # memories asked about, and production's logged ones
    not_written: int  # memories dated after the query
    not_candidate: int  # memories written by then, outside the candidates
    decision_margin: float  # inf: nothing decided (no candidate)
    decides: str  # what the closest decision is
    filtered_out: int = 0  # memories written by then that the tenant filter leaves out
    # the top ``candidates`` by raw score that MMR did not pick (an MMR stage only)
    mmr_dropped: tuple[MemoryWhy, ...] = ()

    @property
    def injected(self) -> tuple[str, ...]:
        return tuple(c.memory_id for c in self.candidates if c.step == "injected")

    @property
    def empty_reason(self) -> str | None:
        """Why nothing was injected, or None when something was."""
        if self.injected:
            return None
        if not self.candidates:
            return "no memory was written before the query"
        best = self.candidates[0]
        return (
            f"the best candidate, {best.memory_id}, has final {best.final:.4f}, "
            f"{self.spec.threshold - best.final:.4f} below the threshold {self.spec.threshold:g}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "injected": list(self.injected),
            "empty_reason": self.empty_reason,
            "decision_margin": None if self.decision_margin == np.inf else self.decision_margin,
            "decides": self.decides,
            "candidates": [c.to_dict() for c in self.candidates],
            "memories": [w.to_dict() for w in self.watched],
            **({"mmr_dropped": [w.to_dict() for w in self.mmr_dropped]} if self.spec.mmr else {}),
            "steps": {
                "not_written": self.not_written,
                "filtered_out": self.filtered_out,
                "not_candidate": self.not_candidate,
                **{s: sum(c.step == s for c in self.candidates) for s in CANDIDATE_STEPS},
            },
        }


@dataclass(frozen=True, eq=False)
class SpecRun:
    """One spec over the whole log, as arrays (queries, candidates) in re-sort order; invalid
    slots (fewer memories written than ``candidates``) have ``valid`` False."""

    label: str
    spec: RetrievalSpec
    index: np.ndarray  # int: the memory's position in the store
    raw: np.ndarray
    bonus: np.ndarray
    final: np.ndarray
    valid: np.ndarray
    injected: np.ndarray
    last_raw: np.ndarray  # (queries, shards) each shard's last candidate's raw (NaN: none)
    next_raw: np.ndarray  # (queries, shards) each shard's first non-candidate's raw (NaN: none)
    # per query (an MMR stage only): memlab.core.mmr.passed_over as (position, raw, step, the
    # closer pick's position or -1, similarity)
    mmr_dropped: tuple[tuple[tuple[int, float, int, int, float], ...], ...] = ()

    def injected_sets(self) -> list[frozenset[int]]:
        return [frozenset(self.index[q][self.injected[q]].tolist()) for q in range(len(self.index))]


@dataclass(frozen=True, eq=False)
class Replay:
    """A log replayed on a store under several specs (the first is the current one)."""

    problem: RetrievalProblem
    log: QueryLog
    runs: tuple[SpecRun, ...]
    visible: np.ndarray  # (queries,) memories written by each query's time
    filtered: np.ndarray  # (queries,) of those, how many the tenant filter leaves out
    watched: tuple[dict[int, float], ...]  # per query: memory position -> raw, for the memories watched
    watch: tuple[int, ...]  # the memories asked about for every query (positions)
    embedded: int = 0  # how many query texts were embedded
    screened: int = 0  # blocks whose top candidates came through the int8 screen
    screen_fallbacks: int = 0  # blocks screened, then scored whole (a row kept more than the cap)
    rescored: int = 0  # (query, memory) pairs the screen kept and scored exactly in float32
    screen_stop: str = ""  # why the screen stopped (a key of SCREEN_STOPS; "": it did not)
    pool: Pool = field(default_factory=Pool)  # the tenant filter and the shards (the problem's)
    _successors: dict[int, list[int]] = field(default_factory=dict, repr=False)

    @property
    def store(self) -> Dataset:
        return self.problem.dataset

    @property
    def queries(self) -> tuple[LoggedQuery, ...]:
        return self.log.queries

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(r.label for r in self.runs)

    @cached_property
    def has_supersession(self) -> bool:
        return any(m.supersedes for m in self.store.memories)

    def stale_injected(self, run: SpecRun) -> np.ndarray:
        """(queries, candidates): which injected memories are stale at their query's time, as
        ``stale`` says one by one: superseded by a memory written by then (the earliest
        successor's date against the query's, to the microsecond as ``stale`` compares them)."""
        never = np.datetime64("9999-12-31T23:59:59", "us")
        first = np.full(len(self.store.memories), never)
        index = self.store.memory_index
        for m in self.store.memories:
            if m.supersedes in index:
                i = index[m.supersedes]
                first[i] = min(first[i], np.datetime64(naive_utc(m.date), "us"))
        times = np.array([naive_utc(q.time) for q in self.queries], dtype="datetime64[us]")
        return run.injected & (first[run.index] <= times[:, None])

    def decision_margins(self, run: SpecRun) -> np.ndarray:
        """Each query's closest decision distance under ``run`` (inf: no candidate), as
        ``explain(q).decision_margin`` gives it one query at a time (``decision``)."""
        threshold, inject = run.spec.threshold, run.spec.inject
        n_valid = run.valid.sum(axis=1)
        width = min(inject, run.final.shape[1])
        near = np.abs(run.final[:, :width] - threshold)
        out = np.where(np.arange(width) < n_valid[:, None], near, np.inf).min(axis=1, initial=np.inf)
        if run.final.shape[1] > inject:
            cut = (n_valid > inject) & (run.final[:, inject] >= threshold)
            gap = np.where(cut, run.final[:, inject - 1] - run.final[:, inject], np.inf)
            out = np.minimum(out, gap)
        return out

    def run(self, label: str) -> SpecRun:
        for r in self.runs:
            if r.label == label:
                return r
        raise UnknownNameError(f"no spec {label!r}; specs: {', '.join(self.labels)}")

    def query_index(self, query_id: str) -> int:
        for i, q in enumerate(self.queries):
            if q.id == query_id:
                return i
        raise UnknownNameError(f"no query {query_id!r} in {self.log.path.name}")

    def shard_of(self, position: int) -> int:
        """The shard holding memory ``position`` (0 on one shard)."""
        return 0 if self.pool.shard is None else int(self.pool.shard[position])

    def stale(self, position: int, q: int) -> tuple[bool | None, str | None]:
        """Whether memory ``position`` is superseded by a memory written by query ``q``'s time."""
        if not self.has_supersession:
            return None, None
        if not self._successors:
            index = self.store.memory_index
            for i, m in enumerate(self.store.memories):
                if m.supersedes in index:
                    self._successors.setdefault(index[m.supersedes], []).append(i)
        t = naive_utc(self.queries[q].time)
        for s in self._successors.get(position, []):
            if naive_utc(self.store.memories[s].date) <= t:
                return True, self.store.memories[s].id
        return False, None

    def _memory(self, position: int, q: int, **values: Any) -> MemoryWhy:
        m = self.store.memories[position]
        stale, by = self.stale(position, q)
        return MemoryWhy(m.id, position, m.date.date().isoformat(), stale=stale, superseded_by=by, **values)

    def explain(self, query: int | str, label: str | None = None) -> QueryExplanation:
        """One query (its position or id) under one spec (default: the current one)."""
        q = self.query_index(query) if isinstance(query, str) else query
        run = self.runs[0] if label is None else self.run(label)
        spec, valid = run.spec, run.valid[q]
        finals = run.final[q][valid]
        inject, threshold = spec.inject, spec.threshold
        passed = finals[inject] if len(finals) > inject and finals[inject] >= threshold else None
        cands = []
        for j in range(int(valid.sum())):
            f = float(run.final[q, j])
            if run.injected[q, j]:
                step, of = "injected", "passed_over" if passed is not None else "threshold"
                margin = f - float(passed) if passed is not None else f - threshold
            elif f >= threshold:
                step, of, margin = "past_limit", "last_injected", f - float(finals[inject - 1])
            else:
                step, of, margin = "below_threshold", "threshold", f - threshold
            pos = int(run.index[q, j])
            nxt = run.next_raw[q, self.shard_of(pos)]
            cands.append(
                self._memory(
                    pos,
                    q,
                    step=step,
                    margin=margin,
                    margin_of=of,
                    raw=float(run.raw[q, j]),
                    bonus=float(run.bonus[q, j]),
                    final=f,
                    rank=j,
                    cut_margin=None if np.isnan(nxt) else float(run.raw[q, j] - nxt),
                )
            )
        in_cands = {c.index: c for c in cands}
        watched = []
        for pos in sorted(self.watched[q], key=lambda p: (p not in self.watch, p)):
            if pos in in_cands:
                watched.append(in_cands[pos])
            elif np.isnan(self.watched[q][pos]):
                watched.append(self._memory(pos, q, step="not_written", margin=None, margin_of=""))
            elif self.pool.allowed is not None and not self.pool.allowed[pos]:
                watched.append(self._memory(pos, q, step="filtered_out", margin=None, margin_of=""))
            else:
                raw = self.watched[q][pos]
                watched.append(
                    self._memory(
                        pos,
                        q,
                        step="not_candidate",
                        margin=raw - float(run.last_raw[q, self.shard_of(pos)]),
                        margin_of="cut",
                        raw=raw,
                    )
                )
        mmr_dropped = tuple(
            self._memory(
                pos,
                q,
                step="mmr_dropped",
                margin=None,
                margin_of="",
                raw=r,
                mmr_step=step,
                too_close_to=None if c < 0 else self.store.memories[c].id,
                similarity=None if c < 0 else s,
            )
            for pos, r, step, c, s in (run.mmr_dropped[q] if run.mmr_dropped else ())
        )
        dropped_at = {w.index: w for w in mmr_dropped}
        watched = [dropped_at.get(w.index, w) if w.step == "not_candidate" else w for w in watched]
        margin, decides = decision(cands, threshold, inject)
        n_cands = len(cands)
        return QueryExplanation(
            self.queries[q],
            run.label,
            spec,
            tuple(cands),
            tuple(watched),
            len(self.store.memories) - int(self.visible[q]),
            int(self.visible[q]) - int(self.filtered[q]) - n_cands,
            margin,
            decides,
            int(self.filtered[q]),
            mmr_dropped,
        )


def decision(cands: Sequence[MemoryWhy], threshold: float, inject: int) -> tuple[float, str]:
    """The query's closest decision (``memlab.core.decisions.question_decisions``): its distance
    and what it decides."""
    finals = np.array([c.final for c in cands], dtype=np.float64)
    best, what = np.inf, "nothing (no candidate)"
    for distance, kind, j, j2 in question_decisions(finals, threshold, inject):
        if distance < best:
            c = cands[j]
            best = distance
            what = (
                f"{c.memory_id} at the threshold ({'injected' if c.step == 'injected' else 'not injected'}, "
                f"final {c.final:.4f})"
                if kind == "threshold"
                else f"{c.memory_id} over {cands[j2].memory_id} at the cut (inject {inject})"
            )
    return float(best), what


def store_vectors(problem: RetrievalProblem) -> np.ndarray:
    """The store's memory vectors, unit length (float32): kept beside an imported dataset, else
    the memories' texts embedded (through the cache) with the problem's model."""
    from memlab.datasets.schema import stored_vectors

    if problem.dataset.vectors:
        return np.asarray(stored_vectors(problem.dataset), dtype=np.float32)
    texts = [m.text(problem.lang) for m in problem.dataset.memories]
    return np.asarray(problem.embed_documents(texts), dtype=np.float32)


def query_vectors(problem: RetrievalProblem, log: QueryLog, dim: int) -> tuple[np.ndarray, int]:
    """Each logged query's unit vector: the log's own, else its text embedded with the store's
    model; and how many texts were embedded."""
    todo = [i for i, q in enumerate(log.queries) if q.vector is None]
    out = np.zeros((len(log.queries), dim), dtype=np.float32)
    for i, q in enumerate(log.queries):
        if q.vector is not None:
            if len(q.vector) != dim:
                raise InputError(
                    f"{log.path.name}:{q.line}: vector: {len(q.vector)} dimensions, but the store's memory "
                    f"vectors have {dim}"
                )
            out[i] = q.vector
    if todo:
        vecs = np.asarray(problem.embed_queries([log.queries[i].text for i in todo]), dtype=np.float32)
        if vecs.shape[1] != dim:
            raise InputError(
                f"queries embed to {vecs.shape[1]} dimensions with {problem.embedder.model_id}, but the "
                f"store's memory vectors have {dim}"
            )
        out[todo] = vecs
    return out, len(todo)


def _along(a: np.ndarray, order: np.ndarray) -> np.ndarray:
    return np.take_along_axis(a, order, axis=-1)


def _top_candidates(
    top: np.ndarray, top_raw: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One shard and no filter: a block's candidates from its top memories (``visible_top_k``,
    at least ``k + 1`` of them unless the store is smaller): indices and raw in candidate order
    (NaN past the last), the last candidate's raw and the first non-candidate's (NaN: none)."""
    k = min(k, top.shape[1])
    rows = np.arange(len(top))
    idx, craw = top[:, :k], top_raw[:, :k]
    n_valid = np.isfinite(craw).sum(axis=1)
    last = np.where(n_valid > 0, craw[rows, np.maximum(n_valid - 1, 0)], np.nan)
    nxt = top_raw[:, k] if top.shape[1] > k else np.full(len(top), np.nan)
    return idx, craw, last[:, None], nxt[:, None]


def _candidates(raw: np.ndarray, k: int, pool: Pool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A block's candidates in candidate order (indices, raw; NaN past the last), and per shard
    the last candidate's raw and the first non-candidate's (NaN: none), from its whole scores
    (``raw``: NaN where not written yet or filtered out): the pool's candidates
    (``memlab.core.shards.pool_mask``: each shard's top ``k`` of the memories the filter keeps)."""
    mask = pool_mask(raw, k, pool)
    order = candidate_order(raw)
    width = min(k * pool.shards, raw.shape[1])
    pick = np.argsort(~_along(mask, order), axis=-1, kind="stable")[:, :width]  # candidates first
    idx = _along(order, pick)
    craw = np.where(_along(mask, idx), _along(raw, idx), np.nan)
    shard = np.zeros(raw.shape[1], dtype=np.intp) if pool.shard is None else pool.shard
    last = np.full((len(raw), pool.shards), np.nan)
    nxt = np.full((len(raw), pool.shards), np.nan)
    known = np.isfinite(raw)
    with np.errstate(invalid="ignore"):
        for s in range(pool.shards):
            here = shard == s
            lo = np.where(mask & here, raw, np.inf).min(axis=1)
            hi = np.where(~mask & known & here, raw, -np.inf).max(axis=1)
            last[:, s] = np.where(np.isfinite(lo), lo, np.nan)
            nxt[:, s] = np.where(np.isfinite(hi), hi, np.nan)
    return idx, craw, last, nxt


def _same_as_whole(
    scores: np.ndarray, dates: np.ndarray, times: np.ndarray, k: int, screened: tuple, watched: list
) -> bool:
    """Whether a screened block's top ``k`` and watched scores are the whole product's, bits and all."""
    top, top_raw, _ = visible_top_k(scores, dates, times, k)
    if not (np.array_equal(top, screened[0]) and np.array_equal(top_raw, screened[1], equal_nan=True)):
        return False
    return all(
        np.array_equal(
            [v for v in got.values()],
            [scores[b, p] if dates[p] <= times[b] else np.nan for p in got],
            equal_nan=True,
        )
        for b, got in enumerate(watched)
    )


FIELDS = ("index", "raw", "bonus", "final", "valid", "injected", "last", "next")


def _mmr_candidates(raw: np.ndarray, spec: RetrievalSpec, mem: np.ndarray, dropped: list) -> tuple:
    """``_candidates`` for an MMR spec (one shard): each row's MMR picks in candidate order,
    padded to ``candidates`` (NaN raw); no raw cut (MMR, not the raw score, decides). Appends
    each row's dropped memories (``SpecRun.mmr_dropped``)."""
    from memlab.core import mmr
    from memlab.core.spec import mmr_candidates

    n, k = len(raw), spec.candidates
    idx = np.zeros((n, k), dtype=np.intp)
    craw = np.full((n, k), np.nan)
    for r in range(n):
        pool_idx, picks = mmr_candidates(raw[r], spec, mem)
        chosen = pool_idx[np.sort(picks)]
        idx[r, : len(chosen)], craw[r, : len(chosen)] = chosen, raw[r, chosen]
        sim = mmr.similarities(mem if spec.diversity > 0 else None, pool_idx)
        dropped.append(
            tuple(
                (int(pool_idx[p]), float(raw[r, pool_idx[p]]), step, int(pool_idx[c]) if c >= 0 else -1, s)
                for p, step, c, s in mmr.passed_over(sim, picks, k)
            )
        )
    none = np.full((n, 1), np.nan)
    return idx, craw, none, none


def replay(
    problem: RetrievalProblem,
    log: QueryLog,
    specs: Sequence[tuple[str, RetrievalSpec]] = (),
    *,
    watch: Sequence[str] = (),
    memory_vectors: np.ndarray | None = None,
    batch: int = BATCH,
    kernel: bool = True,
    screen: bool | None = None,
    screen_cap: int | None = None,
    progress: bool = False,
) -> Replay:
    """Replay ``log`` on the problem's store under its spec (labelled ``current``) and ``specs``
    (label, spec); ``watch``: memory ids explained in every query, beside the candidates and
    production's logged injections. ``kernel`` False: every block ranked whole by numpy (the
    path a filter or shards take), which the tests hold the compiled one equal to. ``screen``:
    whether the compiled path's full blocks are screened in int8 first
    (``memlab.tuning.explain_screen``; None: on stores of ``MIN_MEMORIES`` or more), the same
    result with about half the arithmetic (with ``RACE`` blocks, None also times the screen against
    the whole product and keeps the faster; the result is the same either way);
    ``screen_cap``: the screen's ``CAP`` (a row keeping more scores its block whole);
    ``progress``: a bar over the queries (tqdm, on a terminal only)."""
    if problem.source != "embedded" and memory_vectors is None:
        raise InputError(
            f"explain scores the logged queries against the store's vectors: --source {problem.source} "
            "holds scores for the dataset's own questions only (use --source embedded)"
        )
    store = problem.dataset
    if not store.memories:
        raise InputError(f"the store {store.name!r} holds no memories")
    index = store.memory_index
    unknown = [m for m in watch if m not in index]
    if unknown:
        raise UnknownNameError(f"--memory {unknown[0]}: no such memory in the store {store.name!r}")
    runs_specs = [("current", problem.spec), *specs]
    mem = store_vectors(problem) if memory_vectors is None else np.asarray(memory_vectors, dtype=np.float32)
    mem = mem / np.linalg.norm(mem, axis=1, keepdims=True)  # the cosine: unit vectors (as Qdrant keeps them)
    vecs, embedded = query_vectors(problem, log, mem.shape[1])
    dates = store.memory_dates()
    times = np.array([naive_utc(q.time) for q in log.queries], dtype="datetime64[s]")
    watch_pos = tuple(dict.fromkeys(index[m] for m in watch))
    n_q, k_max = len(log.queries), max(s.candidates for _, s in runs_specs)
    pool = problem.pool
    parts: list[dict[str, list[np.ndarray]]] = [{k: [] for k in FIELDS} for _ in runs_specs]
    visible, filtered = np.zeros(n_q, dtype=np.int64), np.zeros(n_q, dtype=np.int64)
    watched: list[dict[int, float]] = []
    for _, spec in runs_specs:
        check_mmr(spec, mem, pool)
        if spec.mmr and pool.shards > 1:  # the reference runs it (per shard); the replay does not yet
            raise InputError(
                "explain: MMR over several shards is not replayed (each shard diversifies its own pool, "
                "and explain names the pick a dropped memory was too close to on one shard): "
                "give --shards 1, or use evaluate, which runs it"
            )
    dropped: list[list] = [[] for _ in runs_specs]
    # one shard, no filter, no MMR: each block's top candidates kept in one compiled pass over its
    # scores (``visible_top_k``), never a (queries, memories) float64 copy; else the pool's rule (and
    # MMR's picks) on the whole block
    fused = kernel and pool.trivial and not any(spec.mmr for _, spec in runs_specs)
    k_top = min(k_max + 1, len(mem))
    date_s, time_s = dates.astype(np.int64), times.astype(np.int64)
    sorted_dates = np.sort(date_s)
    screener = None
    if fused and (len(mem) >= MIN_MEMORIES if screen is None else screen) and np.isfinite(vecs).all():
        screener = Screen(mem, date_s, k_top, screen_cap)
    screening, n_screened, stop_why = screener, 0, ""
    # the first screened block is also scored whole, and must agree bit for bit; on ``screen`` None
    # the next ``RACE`` blocks too, timed both ways (CPU seconds of the process, summed: one block
    # on a shared machine is noise; the first is not timed: it loads the kernels)
    trials = 1 + (RACE if screen is None else 0)
    cpu = [0.0, 0.0]  # the timed blocks' CPU seconds: screened, whole
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=n_q, unit="query", unit_scale=True, desc="explain", disable=None)
    for start in range(0, n_q, batch):
        stop = min(start + batch, n_q)
        block_watch = []
        for q in range(start, stop):
            logged = log.queries[q].injected or ()
            block_watch.append(dict.fromkeys((*watch_pos, *(index[m] for m in logged if m in index))))
        screened = whole = None
        # only full blocks: a product of a few rows goes through other BLAS kernels (other bits)
        if screener is not None and stop - start == batch:
            c0 = time.process_time()
            screened = screener.top_k(vecs[start:stop], time_s[start:stop])
        if screened is not None:
            top, top_raw = screened
            visible[start:stop] = np.searchsorted(sorted_dates, time_s[start:stop], side="right")
            got = [
                {p: screener.score(vecs[q], p) if date_s[p] <= time_s[q] else float("nan") for p in pos}
                for q, pos in zip(range(start, stop), block_watch, strict=True)
            ]
            if trials:
                trials -= 1
                c1 = time.process_time()
                whole = vecs[start:stop] @ mem.T
                same = _same_as_whole(whole, date_s, time_s[start:stop], k_top, screened, got)
                c2 = time.process_time()
                if screen is None and trials < RACE:
                    cpu[0] += c1 - c0
                    cpu[1] += c2 - c1
                if not same:  # this BLAS sums otherwise: the product from here
                    screener, screened, stop_why = None, None, "bits"
                elif screen is None and not trials and cpu[1] < cpu[0]:
                    screener, stop_why = None, "slower"  # this block's result is the product's: kept
        if screened is not None:
            watched += got
            n_screened += 1
        else:
            scores = vecs[start:stop] @ mem.T if whole is None else whole  # float32, as Qdrant scores
            if fused:
                top, top_raw, visible[start:stop] = visible_top_k(scores, date_s, time_s[start:stop], k_top)
            else:
                seen = dates[None, :] <= times[start:stop, None]
                raw = np.where(seen, scores.astype(np.float64), np.nan)
                visible[start:stop] = seen.sum(axis=1)
                if pool.allowed is not None:
                    filtered[start:stop] = (seen & ~pool.allowed).sum(axis=1)
                raw = narrow(raw, pool)  # the memories the filter leaves out: never ranked
            for b, (q, pos) in enumerate(zip(range(start, stop), block_watch, strict=True)):
                watched.append(
                    {p: float(scores[b, p]) if date_s[p] <= time_s[q] else float("nan") for p in pos}
                )
        for part, (_, spec), drops in zip(parts, runs_specs, dropped, strict=True):
            if spec.mmr:
                idx, craw, last, nxt = _mmr_candidates(raw, spec, mem, drops)
            elif fused:
                idx, craw, last, nxt = _top_candidates(top, top_raw, spec.candidates)
            else:
                idx, craw, last, nxt = _candidates(raw, spec.candidates, pool)
            valid = np.isfinite(craw)
            ages = np.where(valid, age_days(dates[idx], times[start:stop, None]), np.inf)
            final, bonus = spec.scored(craw, ages)
            order = resort_order(np.where(valid, craw, -np.inf), np.where(valid, final, -np.inf))
            s_final, s_valid = _along(final, order), _along(valid, order)
            inj = injected(s_final, np.arange(idx.shape[1]), spec.threshold, spec.inject) & s_valid
            for key, value in (
                ("index", _along(idx, order)),
                ("raw", _along(craw, order)),
                ("bonus", _along(bonus, order)),
                ("final", s_final),
                ("valid", s_valid),
                ("injected", inj),
                ("last", last),
                ("next", nxt),
            ):
                part[key].append(value)
        if bar is not None:
            bar.update(stop - start)
    if bar is not None:
        bar.close()
    runs = tuple(
        SpecRun(label, spec, *(np.concatenate(part[k]) for k in FIELDS), mmr_dropped=tuple(drops))
        for part, (label, spec), drops in zip(parts, runs_specs, dropped, strict=True)
    )
    return Replay(
        problem,
        log,
        runs,
        visible,
        filtered,
        tuple(watched),
        watch_pos,
        embedded,
        n_screened,
        0 if screening is None else screening.whole,
        0 if screening is None else screening.rescored,
        stop_why,
        pool=pool,
    )
