"""Calibrate a threshold without labels: off-topic probes against the store.

Each probe of a packaged probe set (``memlab.datasets.probes``) is a question no stored memory
should answer. Asked at the dataset's reference date, it goes through the spec like any question:
the top ``candidates`` memories by raw cosine (ties in dataset order), the recency bonus, and its
best post-bonus score ``s_i``. A memory is injected when its score reaches the threshold
(inclusive), so at threshold ``t`` the false-injection rate is ``#{i: s_i >= t} / P``.

- The calibrated threshold for a target rate ``alpha`` is the smallest ``t`` with rate <= alpha:
  with the scores sorted from the highest, ``k = floor(alpha * P)`` probes may reach it, so ``t``
  is the next float above the (k+1)-th highest score (``calibrated_threshold``). Its interval
  resamples the probes with replacement (seeded percentile bootstrap).
- At more memories (10x, 100x) the rate is predicted with the scale study's extreme-value machinery
  (``memlab.studies.scale``): each probe's outcome on blocks of a basis (the store itself when it
  has enough memories, else embedded template distractors) is fitted with a GEV law; the store's
  own memories stay, and ``N' - N`` more memories like the basis come: a probe falsely injects at
  ``t`` unless its own best and the maximum of the new ones both stay below ``t``.
- On a labelled dataset the calibrated threshold is compared with the labels: the labelled
  headroom (the spec's threshold minus the best no-hit score), the labelled threshold (just above
  the best no-hit score) and every question's current memory the calibrated threshold would cut.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_fits, check_number
from memlab.core.ranking import merge_top_k, resort_order
from memlab.core.spec import RetrievalSpec, age_days
from memlab.studies.scale import MaxLaw, block_outcomes, distractor_pool

if TYPE_CHECKING:
    from memlab.scores.problem import RetrievalProblem

FACTORS = (10, 100)
MIN_STORE_BASIS = 500  # a store this large is its own basis for the extreme-value fit


@dataclass(frozen=True)
class ProbeBest:
    """Per probe: its best post-bonus score over the store, and the memory that scored it."""

    final: np.ndarray  # (P,) float64
    raw: np.ndarray  # (P,) raw cosine of that memory
    memory: np.ndarray  # (P,) memory index, -1 when the store is empty


def probe_best(
    probes: np.ndarray, memories: np.ndarray, ages: np.ndarray, spec: RetrievalSpec, chunk: int = 20_000
) -> ProbeBest:
    """Each probe through the whole spec: top ``candidates`` by raw (``memlab.core.ranking``, merged
    chunk by chunk), the spec's decay and combine, and the best after the re-sort."""
    q = np.asarray(probes, dtype=np.float32)
    mem = np.asarray(memories, dtype=np.float32)
    ages = np.asarray(ages, dtype=np.float64)
    k = spec.candidates
    top_raw = np.zeros((len(q), 0))
    top_idx = np.zeros((len(q), 0), dtype=np.int64)
    for start in range(0, len(mem), chunk):
        raw = (q @ mem[start : start + chunk].T).astype(np.float64)
        idx = np.arange(start, start + raw.shape[1])
        keep, top_idx = merge_top_k(top_raw, top_idx, raw, idx, k)  # earlier memories win ties
        top_raw = np.take_along_axis(np.concatenate([top_raw, raw], axis=1), keep, 1)
    if top_idx.shape[1] == 0:
        empty = np.full(len(q), -np.inf)
        return ProbeBest(empty, empty.copy(), np.full(len(q), -1))
    final = spec.final(top_raw, ages[top_idx])
    first = resort_order(top_raw, final)[:, :1]
    return ProbeBest(
        np.take_along_axis(final, first, 1)[:, 0],
        np.take_along_axis(top_raw, first, 1)[:, 0],
        np.take_along_axis(top_idx, first, 1)[:, 0],
    )


def false_rate_at(best: np.ndarray, threshold: float) -> float:
    """The share of probes whose best post-bonus score reaches ``threshold`` (inclusive)."""
    return float(np.mean(np.asarray(best) >= threshold))


def calibrated_threshold(best: np.ndarray, false_rate: float) -> float:
    """The smallest threshold at which at most ``floor(false_rate * P)`` probes reach it: the next
    float above the (k+1)-th highest best score."""
    s = np.sort(np.asarray(best, dtype=np.float64))[::-1]
    k = int(np.floor(false_rate * len(s) + 1e-9))
    if k >= len(s):
        return -np.inf
    return float(np.nextafter(s[k], np.inf))


def bootstrap_threshold(
    best: np.ndarray, false_rate: float, n_boot: int, seed: int, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of ``calibrated_threshold`` over probe resamples (with replacement)."""
    best = np.asarray(best, dtype=np.float64)
    rng = np.random.default_rng(seed)
    draws = best[rng.integers(0, len(best), size=(n_boot, len(best)))]
    s = -np.sort(-draws, axis=1)
    k = int(np.floor(false_rate * len(best) + 1e-9))
    values = np.nextafter(s[:, k], np.inf) if k < len(best) else np.full(n_boot, -np.inf)
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def predicted_rate(laws: list[MaxLaw], own: np.ndarray, threshold: float, extra: float) -> float:
    """Mean over probes of P(own best or the max of ``extra`` new memories reaches ``threshold``)."""
    if extra <= 0:
        return false_rate_at(own, threshold)
    below = np.array([law.cdf(threshold, extra) for law in laws], dtype=np.float64)
    return float(np.mean(1.0 - np.where(own < threshold, below, 0.0)))


def threshold_for_rate(
    laws: list[MaxLaw], own: np.ndarray, false_rate: float, extra: float, start: float
) -> float:
    """The threshold at which ``predicted_rate`` falls to ``false_rate`` (root found from ``start`` up)."""
    from scipy.optimize import brentq

    def f(t: float) -> float:
        return predicted_rate(laws, own, t, extra) - false_rate

    if f(start) <= 0:
        return start
    hi = start + 0.1
    while f(hi) > 0:
        hi += 0.1
        if hi > 3:
            raise InputError("no threshold below 3 keeps the predicted false-injection rate at the target")
    return float(brentq(f, start, hi, xtol=1e-6))


@dataclass(frozen=True)
class Calibration:
    """What ``calibrate`` measured: see ``to_dict`` for the documented JSON."""

    summary: dict[str, Any]
    probes: tuple[dict[str, Any], ...]  # one per probe, highest best score first
    attractors: tuple[dict[str, Any], ...]  # memories that are the best of several probes
    scale: tuple[dict[str, Any], ...]  # per memory count: predicted rate and threshold
    labelled: dict[str, Any] | None  # the comparison with the dataset's labels, if it has any
    spec: RetrievalSpec

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.summary,
            "spec": self.spec.as_dict(),
            "scale": list(self.scale),
            "labelled": self.labelled,
            "attractors": list(self.attractors),
            "probes": list(self.probes),
        }


CALIBRATE_NAMES = ("false_rate", "n_boot", "seed")  # as calibrate() names them; the CLI passes its flags


def check_calibration(
    false_rate: float, n_boot: int, seed: int, n_probes: int, names: tuple[str, str, str] = CALIBRATE_NAMES
) -> None:
    """The numbers of a calibration, checked before anything is embedded; the bootstrap's
    resamples are drawn at once (indices, scores, their sort), so a count that cannot fit is
    refused too. ``names``: what the messages call them (``--false-rate``, ``--boot``, ``--seed``
    from the command line)."""
    rate_name, boot_name, seed_name = names
    check_number(false_rate, rate_name, minimum=0, below=1)
    check_number(n_boot, boot_name, integer=True, minimum=1)
    check_number(seed, seed_name, integer=True, minimum=0)
    check_fits(n_boot, boot_name, 24 * max(n_probes, 1), f"bootstrap resamples of {n_probes:,} probes")


def calibrate(
    problem: RetrievalProblem,
    probe_set,
    probe_vectors: np.ndarray | None = None,
    *,
    false_rate: float = 0.01,
    basis: tuple[np.ndarray, np.ndarray, str] | None = None,
    factors: tuple[int, ...] = FACTORS,
    n_boot: int = 1000,
    seed: int = 0,
) -> Calibration:
    """Score the probes against the problem's store under its whole spec, calibrate the threshold,
    predict it at scale and, where the dataset has questions, compare it with the labels.

    ``probe_vectors`` default to the probe set's texts in the problem's language, embedded with
    its model; ``basis`` = (vectors, ages in days, description) the extreme-value laws are fitted
    on; None: the store itself (it needs at least ``MIN_STORE_BASIS`` memories).
    """
    dataset, spec, lang, model = problem.dataset, problem.spec, problem.lang, problem.model_id
    n_probes = len(probe_vectors) if probe_vectors is not None else len(probe_set.texts(lang))
    check_calibration(false_rate, n_boot, seed, n_probes)
    memory_vectors = problem.memory_vectors()
    if probe_vectors is None:
        probe_vectors = problem.embed_queries(probe_set.texts(lang))
    if probe_vectors.shape[1] != memory_vectors.shape[1]:
        raise InputError(
            f"probes embed to {probe_vectors.shape[1]} dimensions with {model}, "
            f"but the memory vectors have {memory_vectors.shape[1]}"
        )
    question_scores = problem.scores if dataset.questions else None
    if memory_vectors.shape[0] != len(dataset.memories):
        raise InputError(f"{memory_vectors.shape[0]} memory vectors for {len(dataset.memories)} memories")
    ages = age_days(dataset.memory_dates(), spec.reference_date)
    memories = dataset.memories
    kept = problem.pool.allowed  # a tenant filter: the store is the tenant's memories
    if kept is not None:
        memory_vectors, ages = memory_vectors[kept], ages[kept]
        memories = tuple(m for m, k in zip(memories, kept, strict=True) if k)
    n = len(memories)
    best = probe_best(probe_vectors, memory_vectors, ages, spec)
    t_cal = calibrated_threshold(best.final, false_rate)
    lo, hi = bootstrap_threshold(best.final, false_rate, n_boot, seed)
    finite = best.final[np.isfinite(best.final)]
    quantiles = {f"p{q:g}": float(np.quantile(finite, q / 100)) for q in (5, 25, 50, 75, 90, 95, 99)}

    order = np.lexsort((np.arange(len(best.final)), -best.final))  # highest first, ties in probe order
    shown = lang if lang in dataset.languages else dataset.languages[0]  # memories as they were embedded
    probes = []
    for i in order:
        m = int(best.memory[i])
        memory = memories[m] if m >= 0 else None
        probes.append(
            {
                "probe": probe_set.probes[i].id,
                "category": probe_set.probes[i].category,
                "text": probe_set.probes[i].texts[lang],
                "best_final": float(best.final[i]),
                "raw": float(best.raw[i]),
                "memory": memory.id if memory else None,
                "memory_text": memory.text(shown) if memory else None,
                "margin": t_cal - float(best.final[i]),
                "reaches_spec_threshold": bool(best.final[i] >= spec.threshold),
            }
        )
    hits = Counter(int(m) for m in best.memory if m >= 0)
    attractors = tuple(
        {
            "memory": memories[m].id,
            "text": memories[m].text(shown),
            "probes": c,
            "best_final": float(best.final[best.memory == m].max()),
        }
        for m, c in sorted(
            hits.items(), key=lambda mc: (-mc[1], -best.final[best.memory == mc[0]].max(), mc[0])
        )
    )

    # extreme values: per-probe laws of the spec's outcome on blocks of the basis
    if basis is None:
        if n < MIN_STORE_BASIS:
            raise InputError(
                f"the store has {n} memories; fitting the extreme-value laws on it needs "
                f"{MIN_STORE_BASIS}: give a basis of template distractors"
            )
        basis = (memory_vectors, ages, f"the store's own {n} memories")
    b_vecs, b_ages, b_text = basis
    block = max(10, len(b_vecs) // 50)
    outcomes = block_outcomes(probe_vectors, b_vecs, b_ages, spec, block)
    laws = [MaxLaw.from_maxima(outcomes[i], block) for i in range(len(probe_vectors))]
    scale = []
    for factor in (1, *factors):
        total = n * factor
        extra = total - n
        scale.append(
            {
                "factor": factor,
                "memories": total,
                "false_rate_at_calibrated": predicted_rate(laws, best.final, t_cal, extra),
                "false_rate_at_spec_threshold": predicted_rate(laws, best.final, spec.threshold, extra),
                "threshold_for_target": threshold_for_rate(laws, best.final, false_rate, extra, t_cal),
                "measured": factor == 1,
            }
        )

    summary = {
        "dataset": dataset.name,
        "memories": n,
        "model": model,
        "lang": lang,
        "probe_set": probe_set.name,
        "probe_set_version": probe_set.version,
        "probes_scored": len(best.final),
        "false_rate_target": false_rate,
        "threshold": t_cal,
        "threshold_ci": [lo, hi],
        "ci_level": 0.95,
        "boot": n_boot,
        "seed": seed,
        "false_rate_at_threshold": false_rate_at(best.final, t_cal),
        "false_rate_at_spec_threshold": false_rate_at(best.final, spec.threshold),
        "resolution": 1 / len(best.final),
        "distribution": {
            "min": float(finite.min()),
            "max": float(finite.max()),
            "mean": float(finite.mean()),
            **quantiles,
        },
        "basis": f"extreme-value laws fitted on blocks of {block} of {b_text}",
    }
    labelled = (
        None
        if question_scores is None
        else compare_labels(dataset, question_scores, spec, t_cal, lang, problem.pool)
    )
    return Calibration(summary, tuple(probes), attractors, tuple(scale), labelled, spec)


def compare_labels(
    dataset, scores, spec: RetrievalSpec, t_cal: float, lang: str, pool=None
) -> dict[str, Any] | None:
    """The labels' view of the calibrated threshold: the no-hit questions' best scores (headroom at
    the spec's threshold, the threshold they would choose) and every current memory it cuts
    (``pool``: the tenant filter's memories only)."""
    from memlab.tuning.evaluate import evaluate

    if not dataset.questions:
        return None
    ev = evaluate(dataset, scores, spec, criteria=(), lang=lang, pool=pool)
    at_cal = evaluate(dataset, scores, replace(spec, threshold=t_cal), criteria=(), lang=lang, pool=pool)
    nohit = [max((c.final for c in r.candidates), default=-np.inf) for r in ev.results if r.kind == "nohit"]
    nohit_max = max(nohit, default=None)
    current = []
    for q, r, rc in zip(dataset.questions, ev.results, at_cal.results, strict=True):
        if q.current is None:
            continue
        cand = next((c for c in r.candidates if c.memory_id == q.current), None)
        inj = next((c for c in rc.candidates if c.memory_id == q.current), None)
        status = "not a candidate" if cand is None else ("kept" if cand.final >= t_cal else "cut")
        current.append(
            {
                "question": q.id,
                "kind": q.kind,
                "current": q.current,
                "final": None if cand is None else cand.final,
                "status": status,
                "reaches_spec_threshold": bool(cand is not None and cand.reaches),
                "injected_at_calibrated": bool(inj is not None and inj.injected),
                "injected_at_spec": bool(cand is not None and cand.injected),
            }
        )
    statuses = Counter(c["status"] for c in current)
    cut = [c for c in current if c["status"] == "cut"]
    return {
        "questions": len(dataset.questions),
        "nohit_questions": len(nohit),
        "nohit_max": nohit_max,
        "headroom": None if nohit_max is None else spec.threshold - nohit_max,
        "labelled_threshold": None if nohit_max is None else float(np.nextafter(nohit_max, np.inf)),
        "nohit_false_rate_at_calibrated": None if not nohit else float(np.mean(np.array(nohit) >= t_cal)),
        "nohit_false_rate_at_spec": None if not nohit else float(np.mean(np.array(nohit) >= spec.threshold)),
        "current_questions": len(current),
        "current_kept": statuses["kept"],
        "current_cut": statuses["cut"],
        "current_not_candidate": statuses["not a candidate"],
        "current_reaching_spec_threshold": sum(c["reaches_spec_threshold"] for c in current),
        "current_injected_at_calibrated": sum(c["injected_at_calibrated"] for c in current),
        "current_injected_at_spec": sum(c["injected_at_spec"] for c in current),
        "cut": sorted(cut, key=lambda c: (-c["final"], c["question"])),
    }


def template_basis(problem: RetrievalProblem, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """``size`` template distractors (the scale study's, in the problem's language), embedded as
    documents with the problem's model."""
    vectors, ages = distractor_pool(problem, size, seed)
    return vectors, ages, f"{size:,} embedded template distractors (seed {seed})"
