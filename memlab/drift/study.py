"""The drifting-facts study: tune on one seed range, report on another.

Every (read system, write policy) pair is tuned on the tuning streams only: each combination of
its write-policy grid and its read-system grid is run on every tuning stream at every budget, and
the one with the best objective wins:

    objective = mean over budgets and tuning streams of (recall - staleness)

Ties go to the combination listed first (write grid, then read grid; see
``memlab.drift.memory_systems.expand_grid``). The ``supersession`` system starts from the parameters the
``multi-factor`` system chose under the same write policy and tunes its own axes on top.

Then the chosen configuration runs on the held-out streams, and each metric comes with a 95%
bootstrap interval over held-out streams (seeded), and a paired interval on its difference to
naive top-k under store-everything (``memlab.drift.intervals``):

- ``recall``: the packed context holds a memory whose true value is the current one;
- ``staleness``: the packed context holds a memory whose true value was superseded;
- ``tokens``: tokens packed, counted with the embedding model's own tokenizer.

Each is averaged over a stream's queries first, then over streams. Recalls asked during a stream
are simulated in date order for systems that reinforce on recall, with the same budget.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_fits, check_number
from memlab.core.registry import check_names, lookup
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec
from memlab.drift.arrays import (
    Encoder,
    StreamArrays,
    TokenCounter,
    default_encoder,
    default_token_counter,
    prepare_streams,
)
from memlab.drift.intervals import REFERENCE, bootstrap_ci, frontier, paired_bootstrap_ci
from memlab.drift.memory_systems import (
    READ_SYSTEMS,
    WRITE_POLICIES,
    ReadSystem,
    Scene,
    WriteResult,
    expand_grid,
    grid_columns,
    pack,
    reinforce,
)
from memlab.drift.streams import check_disjoint, generate_streams

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_BUDGETS = (16, 32, 64, 128, 256, 512)
DRIFT_BOOT = 1000  # paired bootstrap resamples of the drift study (memlab drift's --boot default)


# ---------------------------------------------------------------------------------------------
# one stream, one (system, write result), a whole grid of read configurations


def scene_at(
    arrays: StreamArrays,
    write: WriteResult,
    said: int,
    now: float,
    cosine: np.ndarray,
    last_access: np.ndarray,
    truth: bool = False,
) -> Scene:
    """The store as it stands after ``said`` facts: stored, already said, not yet forgotten.

    The generator's truth (the ``oracle_*`` fields) is in the scene only when ``truth`` is set,
    for the oracle lines: a memory system that reached for it would fail, not read it.
    """
    visible = write.admitted & (arrays.position < said) & (write.forgotten_by >= said)
    told = {
        name: getattr(arrays, name) if truth else None
        for name in ("oracle_supersedes", "oracle_topic", "oracle_key", "oracle_key_type")
    }
    return Scene(
        cosine=np.where(visible, cosine, -np.inf),
        visible=visible,
        now=now,
        created=arrays.created,
        position=arrays.position,
        half_life=arrays.half_life,
        prior=arrays.prior,
        newer_same_key=arrays.newer_same_key,
        newer_same_type=arrays.newer_same_type,
        memory_cosine=arrays.memory_cosine,
        last_access=last_access,
        key=arrays.key,
        key_type=arrays.key_type,
        memory_type=arrays.memory_type,
        shares_term=arrays.shares_term,
        **told,
        learned_key=arrays.learned_key,
        learned_key_type=arrays.learned_key_type,
        event_score=arrays.event_score,
    )


def run_stream(
    arrays: StreamArrays,
    write: WriteResult,
    system: ReadSystem,
    params: dict[str, np.ndarray],
    budgets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(recall, staleness, tokens), each (C, B): means over the stream's held-out queries."""
    n_configs = len(next(iter(params.values()))) if params else 1
    budget = np.asarray(budgets).reshape(1, -1, 1)  # against (config, budget, query)
    m = len(arrays.created)
    last = np.broadcast_to(arrays.created, (n_configs, 1, m))
    flags = params.get("reinforce")
    if system.reinforces and flags is not None and flags.any():
        on = flags.astype(bool)[:, None, None]
        for r in range(len(arrays.recall_day)):
            now = float(arrays.recall_day[r])
            scene = scene_at(
                arrays,
                write,
                int(arrays.recall_said[r]),
                now,
                arrays.recall_cosine[r : r + 1],
                last,
                system.oracle,
            )
            recalled = pack(system.score(scene, params), arrays.tokens, budget)[:, :, 0, :]  # (C, B, M)
            last = np.where(on, reinforce(last, recalled, now), last)
    scene = scene_at(arrays, write, m, arrays.asked, arrays.query_cosine, last, system.oracle)
    packed = pack(system.score(scene, params), arrays.tokens, budget)  # (C, B, Q, M)
    return context_metrics(packed, arrays.is_current, arrays.is_stale, arrays.tokens)


def context_metrics(
    packed: np.ndarray, is_current: np.ndarray, is_stale: np.ndarray, tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means over queries of: the context holds the current value (recall), holds a superseded
    value (staleness), and its token count. ``packed`` is (..., Q, M); the truth is (Q, M).

    Judged by the generator's value labels, never by keywords: a distractor that mentions
    "Chicago" is neither current nor stale (seed 001's contaminated measuring stick).
    """
    recall = (packed & is_current).any(axis=-1).mean(axis=-1)
    stale = (packed & is_stale).any(axis=-1).mean(axis=-1)
    used = (packed * tokens).sum(axis=-1).mean(axis=-1)
    return recall, stale, used


# ---------------------------------------------------------------------------------------------
# tuning and held-out evaluation


@dataclass(frozen=True)
class Choice:
    system: str
    write_policy: str
    write_params: dict[str, float]
    read_params: dict[str, float]
    objective: float  # on the tuning streams
    configurations: int  # how many were compared


def _writes(arrays: Sequence[StreamArrays], policy: str, params: dict[str, float]) -> list[WriteResult]:
    write = WRITE_POLICIES[policy].write
    return [write(a.memory_cosine, a.key, **params) for a in arrays]


def _read_grid(
    system: ReadSystem, chosen: dict[tuple[str, str], Choice], write_policy: str, axes: dict[str, tuple]
) -> dict:
    """The system's grid, its axes named in ``axes`` replaced, after its base's tuned values."""
    own = {**system.grid, **{k: v for k, v in axes.items() if k in system.grid}}
    if system.base is None:
        return own
    base = chosen[(system.base, write_policy)].read_params
    return {**{k: (v,) for k, v in base.items()}, **own}


def tune_memory_systems(
    arrays: Sequence[StreamArrays],
    budgets: Sequence[int],
    systems: Sequence[str] | None = None,
    write_policies: Sequence[str] | None = None,
    progress: bool = False,
    axes: dict[str, tuple] | None = None,
) -> dict[tuple[str, str], Choice]:
    """The best configuration of every (system, write policy) on these (tuning) streams;
    ``axes`` replaces the values of the grid axes it names (``decay``, ``combine``: the recency
    spec's families)."""
    from tqdm.auto import tqdm

    # registry order, whatever order they are named in: a system's base is tuned before it
    systems = [s for s in READ_SYSTEMS if s in set(systems or READ_SYSTEMS)]
    write_policies = list(write_policies or WRITE_POLICIES)
    budgets = np.asarray(budgets)
    chosen: dict[tuple[str, str], Choice] = {}
    jobs = [(w, s) for w in write_policies for s in systems]
    bar = tqdm(jobs, desc="tuning", disable=not progress, file=sys.stderr, leave=False)
    cache: dict[tuple[str, str], list[WriteResult]] = {}
    for write_policy, name in bar:
        bar.set_postfix_str(f"{name} / {write_policy}")
        system = READ_SYSTEMS[name]
        if system.oracle and write_policy != write_policies[0]:
            continue  # one oracle line, under the first write policy
        read_grid = _read_grid(system, chosen, write_policy, axes or {})
        clash = sorted(set(read_grid) & set(WRITE_POLICIES[write_policy].grid))
        if clash:  # the chosen parameters are reported as one mapping: names must not collide
            raise InputError(f"{name} and {write_policy} both have parameter(s) {', '.join(clash)}")
        configs = expand_grid(read_grid)
        params = grid_columns(configs)
        best: tuple[float, dict, dict] | None = None
        for write_params in expand_grid(WRITE_POLICIES[write_policy].grid):
            key = (write_policy, json.dumps(write_params, sort_keys=True))
            if key not in cache:
                cache[key] = _writes(arrays, write_policy, write_params)
            total = np.zeros((len(configs), len(budgets)))
            for a, w in zip(arrays, cache[key], strict=True):
                recall, stale, _ = run_stream(a, w, system, params, budgets)
                total += recall - stale
            objective = total.mean(axis=1) / len(arrays)
            i = int(np.flatnonzero(objective >= objective.max() - 1e-12)[0])  # ties: listed first
            if best is None or objective[i] > best[0] + 1e-12:
                best = (float(objective[i]), write_params, configs[i])
        n = len(configs) * len(expand_grid(WRITE_POLICIES[write_policy].grid))
        chosen[(name, write_policy)] = Choice(name, write_policy, best[1], best[2], best[0], n)
    return chosen


def evaluate_held_out(
    arrays: Sequence[StreamArrays],
    budgets: Sequence[int],
    chosen: dict[tuple[str, str], Choice],
    progress: bool = False,
) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Per (system, write policy): recall, staleness and tokens per held-out stream, each (S, B)."""
    from tqdm.auto import tqdm

    budgets = np.asarray(budgets)
    out = {}
    cache: dict[tuple[str, str], list[WriteResult]] = {}
    for (name, write_policy), choice in tqdm(
        chosen.items(), desc="held-out", disable=not progress, file=sys.stderr, leave=False
    ):
        key = (write_policy, json.dumps(choice.write_params, sort_keys=True))
        if key not in cache:
            cache[key] = _writes(arrays, write_policy, choice.write_params)
        params = grid_columns([choice.read_params])
        rows = [
            run_stream(a, w, READ_SYSTEMS[name], params, budgets)
            for a, w in zip(arrays, cache[key], strict=True)
        ]
        out[(name, write_policy)] = {
            metric: np.stack([r[k][0] for r in rows])
            for k, metric in enumerate(("recall", "staleness", "tokens"))
        }
    return out


# ---------------------------------------------------------------------------------------------
# the whole study


def parameters_json(params: dict[str, float]) -> str:
    """Chosen parameters as JSON; an infinite penalty (exclude) is written "inf"."""
    clean = {k: (str(v) if isinstance(v, float) and not np.isfinite(v) else v) for k, v in params.items()}
    return json.dumps(clean, sort_keys=True)


@dataclass
class DriftResult:
    table: pd.DataFrame  # one row per (system, write policy, budget)
    chosen: dict[tuple[str, str], Choice]
    tokenizer: str
    embedding_model: str
    held_out: range
    tune_range: range
    unique_texts: int
    seconds: dict[str, float] = field(default_factory=dict)
    model_loads: int | None = None  # embedding-model loads (0: every vector came from the cache)
    n_boot: int = 0  # bootstrap resamples behind each interval
    boot_seed: int = 0

    def tuned_table(self) -> pd.DataFrame:
        """One row per (system, write policy): its tuning objective and chosen parameters."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "system": c.system,
                    "write_policy": c.write_policy,
                    "objective": c.objective,
                    "configurations": c.configurations,
                    "parameters": parameters_json({**c.write_params, **c.read_params}),
                }
                for c in self.chosen.values()
            ]
        )

    def frontier(self) -> pd.DataFrame:
        """Per budget: the best memory system at staleness <= 0.05, whether it meets the target,
        and the oracle line (``memlab.drift.intervals.frontier``)."""
        return frontier(self.table)

    def rows(self) -> list[dict]:
        """The JSON rows: system, write_policy, budget, recall, recall_ci, staleness,
        staleness_ci, the paired differences to top-k under store-everything (recall_diff,
        recall_diff_ci, staleness_diff, staleness_diff_ci), tokens, oracle, plus streams, the
        chosen parameters, the tokenizer and the run's settings (seed ranges, bootstrap resamples
        and seed, embedding model)."""
        out = []
        for r in self.table.to_dict("records"):
            out.append(
                {
                    "system": r["system"],
                    "write_policy": r["write_policy"],
                    "budget": int(r["budget"]),
                    "recall": r["recall"],
                    "recall_ci": [r["recall_lo"], r["recall_hi"]],
                    "staleness": r["staleness"],
                    "staleness_ci": [r["staleness_lo"], r["staleness_hi"]],
                    "recall_diff": r["recall_diff"],
                    "recall_diff_ci": [r["recall_diff_lo"], r["recall_diff_hi"]],
                    "staleness_diff": r["staleness_diff"],
                    "staleness_diff_ci": [r["staleness_diff_lo"], r["staleness_diff_hi"]],
                    "tokens": r["tokens"],
                    "oracle": bool(r["oracle"]),
                    "streams": int(r["streams"]),
                    "parameters": json.loads(r["parameters"]),
                    "tokenizer": self.tokenizer,
                    # enough to rerun it: the seeds, the resampling and the model
                    "held_out_seeds": f"{self.held_out.start}:{self.held_out.stop}",
                    "tuning_seeds": f"{self.tune_range.start}:{self.tune_range.stop}",
                    "boot": self.n_boot,
                    "boot_seed": self.boot_seed,
                    "embedding_model": self.embedding_model,
                }
            )
        return out


# seconds a quiet two-core machine takes, about (bench/bench_drift.py, docs/drift.md: 200 tuning
# streams tuned in 150 s over the default grid's 12,793 configurations at six budgets, 400
# held-out streams measured in 9 s): per configuration, tuning stream and budget; per pair,
# held-out stream and budget
TUNE_SECONDS = 150 / (12_793 * 200 * 6)
HELD_OUT_SECONDS = 9 / (28 * 400 * 6)


def drift_work(
    systems: Sequence[str] | None = None,
    write_policies: Sequence[str] | None = None,
    families: dict[str, tuple] | None = None,
) -> tuple[int, int]:
    """(configurations tuned on each stream, (system, write policy) pairs measured), counted as
    ``tune_memory_systems`` runs them: a base's tuned values are one value each, an oracle is
    tuned under the first write policy only."""
    import math

    names = [s for s in READ_SYSTEMS if s in set(systems or READ_SYSTEMS)]
    policies = list(write_policies or WRITE_POLICIES)
    configs = pairs = 0
    for policy in policies:
        writes = len(expand_grid(WRITE_POLICIES[policy].grid))
        for name in names:
            system = READ_SYSTEMS[name]
            if system.oracle and policy != policies[0]:
                continue
            own = {**system.grid, **{k: v for k, v in (families or {}).items() if k in system.grid}}
            configs += math.prod(len(v) for v in own.values()) * writes
            pairs += 1
    return configs, pairs


def drift_seconds(tune_streams: int, held_out: int, budgets: int, configs: int, pairs: int) -> float:
    """The study's seconds on two quiet cores, about (embeddings cached: a first run embeds the
    streams' texts once, more)."""
    return budgets * (TUNE_SECONDS * configs * tune_streams + HELD_OUT_SECONDS * pairs * held_out)


def drift_study(
    held_out: range,
    tune_range: range,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    *,
    systems: Sequence[str] | None = None,
    write_policies: Sequence[str] | None = None,
    encode: Encoder | None = None,
    count_tokens: TokenCounter | None = None,
    tokenizer_name: str = "",
    model: str | None = None,
    cache_dir: str | None = None,
    n_boot: int = DRIFT_BOOT,
    seed: int = 0,
    progress: bool = False,
    server=None,
    decay: Sequence[str] = (RetrievalSpec.decay,),
    combine: Sequence[str] = (RetrievalSpec.combine,),
    announce=None,
) -> DriftResult:
    """Generate, embed, tune on ``tune_range``, evaluate on ``held_out``; one row per
    (system, write policy, budget) with bootstrap intervals over held-out streams. ``decay`` and
    ``combine`` are the recency spec's families (axes of its grid). ``announce``: called with one
    line saying the work and its time, about, once the inputs are checked and before any of it."""
    import time

    import pandas as pd

    check_disjoint(tune_range, held_out)
    if len(held_out) == 0 or len(tune_range) == 0:
        raise InputError(f"empty seed range: held-out {held_out}, tuning {tune_range}")
    check_number(n_boot, "n_boot", integer=True, minimum=1)  # bootstrap resamples
    check_number(seed, "seed", integer=True, minimum=0)
    budgets = sorted({int(b) for b in budgets})
    if not budgets or budgets[0] < 1:
        raise InputError(f"budgets must be positive token counts, got {budgets}")
    # each interval resamples the held-out streams n_boot times at once: counts and means in memory
    check_fits(n_boot, "n_boot", 16 * (len(held_out) + len(budgets)), "bootstrap resamples")
    for name in systems or ():
        base = lookup(READ_SYSTEMS, name, "read system").base
        if base and base not in systems:
            raise InputError(f"system {name!r} starts from {base!r}'s tuned parameters: list {base!r} too")
    check_names(WRITE_POLICIES, write_policies or (), "write policy")
    families = {
        "decay": check_names(DECAYS, tuple(decay), "decay"),
        "combine": check_names(COMBINES, tuple(combine), "combine"),
    }
    if announce is not None:
        configs, pairs = drift_work(systems, write_policies, families)
        about = drift_seconds(len(tune_range), len(held_out), len(budgets), configs, pairs)
        announce(
            f"drift: {configs:,} configurations tuned on {len(tune_range):,} streams "
            f"(--tune-range), {pairs} systems measured on {len(held_out):,} held-out streams, at "
            f"{len(budgets)} budgets: about {about:,.0f} s on two cores, embeddings cached after the "
            "first run (fewer --tune-range streams finish sooner)"
        )
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    model_id = "custom encoder"
    if encode is None:
        encode, model_id = default_encoder(model, cache_dir, progress, server)
    if count_tokens is None:
        count_tokens, tokenizer_name = default_token_counter(model)
    tune_streams = generate_streams(tune_range)
    test_streams = generate_streams(held_out)
    # the extractor prior is fit on the tuning streams only
    arrays, unique = prepare_streams([*tune_streams, *test_streams], encode, count_tokens, len(tune_streams))
    tune_arrays, test_arrays = arrays[: len(tune_streams)], arrays[len(tune_streams) :]
    embedder = getattr(encode, "embedder", None)
    loads = embedder.loads if embedder is not None else None
    seconds["prepare"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    chosen = tune_memory_systems(tune_arrays, budgets, systems, write_policies, progress, families)
    seconds["tune"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    measured = evaluate_held_out(test_arrays, budgets, chosen, progress)
    seconds["evaluate"] = time.perf_counter() - t2
    rows = []
    reference = measured.get(REFERENCE)
    nan = np.full((2, len(budgets)), np.nan)
    for k, ((name, write_policy), m) in enumerate(measured.items()):
        choice = chosen[(name, write_policy)]
        recall_ci = bootstrap_ci(m["recall"], n_boot, seed + k)
        stale_ci = bootstrap_ci(m["staleness"], n_boot, seed + k)
        # paired: the same resampled streams (one seed) for every system and the reference
        diffs = {
            metric: (
                (m[metric] - reference[metric]).mean(axis=0),
                paired_bootstrap_ci(m[metric], reference[metric], n_boot, seed),
            )
            if reference is not None
            else (np.full(len(budgets), np.nan), nan)
            for metric in ("recall", "staleness")
        }
        for b, budget in enumerate(budgets):
            rows.append(
                {
                    "system": name,
                    "write_policy": write_policy,
                    "budget": budget,
                    "recall": float(m["recall"][:, b].mean()),
                    "recall_lo": float(recall_ci[0, b]),
                    "recall_hi": float(recall_ci[1, b]),
                    "staleness": float(m["staleness"][:, b].mean()),
                    "staleness_lo": float(stale_ci[0, b]),
                    "staleness_hi": float(stale_ci[1, b]),
                    "recall_diff": float(diffs["recall"][0][b]),
                    "recall_diff_lo": float(diffs["recall"][1][0, b]),
                    "recall_diff_hi": float(diffs["recall"][1][1, b]),
                    "staleness_diff": float(diffs["staleness"][0][b]),
                    "staleness_diff_lo": float(diffs["staleness"][1][0, b]),
                    "staleness_diff_hi": float(diffs["staleness"][1][1, b]),
                    "tokens": float(m["tokens"][:, b].mean()),
                    "oracle": READ_SYSTEMS[name].oracle,
                    "streams": len(test_arrays),
                    "tune_objective": choice.objective,
                    "parameters": parameters_json({**choice.write_params, **choice.read_params}),
                }
            )
    seconds["total"] = time.perf_counter() - t0
    return DriftResult(
        pd.DataFrame(rows),
        chosen,
        tokenizer_name,
        model_id,
        held_out,
        tune_range,
        unique,
        seconds,
        loads,
        n_boot,
        seed,
    )


def parse_budgets(text: str) -> list[int]:
    """``--budgets 32,64,128``: positive token counts, sorted, duplicates dropped."""
    try:
        budgets = sorted({int(b) for b in str(text).split(",") if b.strip()})
    except ValueError:
        budgets = []
    if not budgets or budgets[0] < 1:
        raise InputError(f"--budgets: expected a comma list of positive integers, got {text!r}")
    return budgets
