# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: memlab (.venv)
#     language: python
#     name: memlab
# ---

# %% [markdown]
# # 08 · A public benchmark: sweep, criteria, retrieval metrics, the stages held out and scale
#
# Imports the LoCoMo or LongMemEval file given as `benchmark_file` (you download it; memlab never
# does, and the repository never holds it), embeds it with `model` and runs the sweep, the
# criteria at the chosen configuration and the scale study on it. With `benchmark_file` empty
# (the default batch) the notebook says so and does nothing else.

# %% tags=["parameters"]
model: str = ""  # embedding model name or folder
embed_url: str = ""  # embedding server URL
embed_model: str = ""  # model asked of the server
bonus: float = 0.05  # recency bonus at age 0
tau_days: float = 14.0  # recency decay constant
threshold: float = None  # post-bonus score a memory needs to be injected
candidates: int = 8  # raw nearest neighbours fetched before the re-sort
inject: int = 3  # most memories injected into the prompt
decay: str = "exp"  # recency decay family, weight 1 at age 0 and 1/e at tau_days
combine: str = "add"  # how the bonus enters
bonus_range: str = ""  # sweep: bonus values, start:stop:step or a comma list
tau_range: str = "1:60:1"  # sweep: tau_days values
threshold_range: str = ""  # sweep: threshold values
select: str = "max-margin"  # sweep: selection rule among the feasible configurations
n_range: str = ""  # scale: memory counts N to measure
pool: int = 5000  # scale: real embedded distractors
boot: int = 200  # bootstrap resamples (of each kind)
seed: int = 0  # random seed
benchmark_file: str = ""  # benchmark: LoCoMo or LongMemEval JSON you downloaded
benchmark_granularity: str = ""  # benchmark: observation|turn|session
rerank_url: str = ""  # benchmark: the reranker's URL for the held-out + rerank
reranker: str = "chat"  # benchmark: chat or endpoint
rerank_subset: int = 10  # benchmark: + rerank on N questions of each conversation, drawn with seed
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
from pathlib import Path

import pandas as pd

from memlab import RetrievalSpec, ScoreOptions, build_problem, evaluate
from memlab.core import selection
from memlab.core.criteria import Criterion
from memlab.core.grid import Grid, parse_axis
from memlab.core.labels import Labels
from memlab.core.sweep import sweep
from memlab.embedding.server import server_config
from memlab.importers.benchmarks import import_benchmark
from memlab.output.figures import stage_bars
from memlab.output.report import Report
from memlab.rerank.cache import ScoreCache
from memlab.rerank.clients import RerankerConfig
from memlab.studies.heldout import haystack_units
from memlab.studies.pipeline import MmrPlan, RerankPlan, benchmark_study
from memlab.studies.rerank import BLENDS, DEPTHS
from memlab.studies.scale import DEFAULT_SIZES, distractor_pool, scale_study
from memlab.tuning.ir_metrics import metrics_table

report = Report(out_dir, fig_formats)
run = bool(benchmark_file)
if not run:
    print("benchmark_file is empty: nothing to do (run with -p benchmark_file=data/external/FILE.json)")
    report.skip(
        "no benchmark file given",
        {"benchmark_file": benchmark_file},
        fill={"benchmark_file": "data/external/locomo10.json"},
        how="download LoCoMo's locomo10.json or a LongMemEval file into data/external/ "
        "(memlab never downloads them; docs/benchmarks.md#notebook-08)",
    )

# %%
server = server_config(embed_url, embed_model)  # None: the local model only
if run:
    folder = Path(out_dir) / "dataset"
    if not (folder / "dataset.json").is_file():  # a rerun in the same folder keeps the import
        imported = import_benchmark(benchmark_file, folder, benchmark_granularity)
        report.value("import", imported.log.summary(), "per category: kinds, rejections, repairs")
    # benchmarks are English
    # a threshold not given follows the model, and so do the sweep's empty ranges
    options = ScoreOptions("embedded", "en", model or None, server=server)
    problem = build_problem(str(folder), options, threshold=threshold)
    data, scores, threshold = problem.dataset, problem.scores, problem.spec.threshold
    kinds = pd.Series([q.kind for q in data.questions]).value_counts()
    counts = {str(k): int(v) for k, v in kinds.items()}  # plain Python values, not numpy's
    print(f"{data.name}: {len(data.memories):,} memories, {len(data.questions):,} questions; {counts}")

# %% [markdown]
# ## The sweep
#
# One criterion per current memory would give thousands of columns: the sweep keeps the no-hit
# criterion and counts what each configuration injects per question kind.

# %%
if run:
    grid = Grid(
        bonus=parse_axis(bonus_range or problem.defaults.bonus_range, "bonus_range"),
        tau_days=parse_axis(tau_range, "tau_range"),
        threshold=tuple(
            sorted(
                {
                    *parse_axis(threshold_range or problem.defaults.threshold_range, "threshold_range"),
                    threshold,
                }
            )
        ),
        candidates=(candidates,),
        inject=(inject,),
        decay=(decay,),
        combine=(combine,),
    )
    nohit = (Criterion("nohit", "nohit_below"),) if "nohit" in set(kinds.index) else ()
    swept = sweep(
        scores.retrievable(data),
        data.ages(),
        Labels.from_dataset(data),
        grid,
        nohit,
        metrics=("headroom", "injected", "stale"),
    )
    i = selection.select(swept, select)
    chosen = None if i is None else swept.iloc[i][["bonus", "tau_days", "threshold", "headroom"]].to_dict()
    report.value("chosen", chosen, f"chosen by {select} ({grid.size:,} configurations)")
    per_threshold = swept.groupby("threshold", as_index=False).agg(
        feasible=("feasible", "sum"),
        best_headroom=("headroom", "max"),
        injected_hit=("injected_hit", "max"),
        injected_nohit=("injected_nohit", "min"),
    )
    report.table(
        "sweep_by_threshold", per_threshold, "Per threshold: feasible configurations, headroom, injections"
    )

# %% [markdown]
# ## The criteria at the chosen configuration

# %%
if run:
    spec = RetrievalSpec(
        candidates=candidates,
        inject=inject,
        threshold=chosen["threshold"] if chosen else threshold,
        bonus=chosen["bonus"] if chosen else bonus,
        tau_days=chosen["tau_days"] if chosen else tau_days,
        decay=decay,
        combine=combine,
    )
    problem = problem.with_spec(spec)
    ev = evaluate(problem)
    verdicts = pd.DataFrame(
        [{"kind": c.kind, "passed": c.passed} for c in ev.criteria]
        + [{"kind": "(none)", "passed": False}] * (not ev.criteria)
    )
    criteria_summary = verdicts.groupby("kind", as_index=False).agg(
        criteria=("passed", "size"), passed=("passed", "sum")
    )
    report.table(
        "criteria",
        criteria_summary,
        f"Criteria at bonus {spec.bonus:g}, tau {spec.tau_days:g}, threshold {spec.threshold:g}",
    )
    report.value("headroom", ev.headroom, "headroom at the chosen configuration")
    criteria_summary

# %% [markdown]
# ## The standard retrieval metrics
#
# At the chosen configuration, per question kind and benchmark category: recall_any@k,
# recall_all@k, nDCG@k, LongMemEval's ndcg_any@k and MRR of the injected list and of the
# candidate list, means over the questions with relevant memories; the no-hit questions as the
# false-injection rate (`memlab metrics`; definitions in docs/benchmarks.md).

# %%
if run:
    _, metrics = metrics_table(problem, ks=(5, 10))
    report.table("metrics", metrics, "recall, nDCG and MRR per list, kind and category; false-injection rate")
    metrics[metrics["list"] == "injected"]

# %% [markdown]
# ## The stages side by side, held out
#
# `memlab tune-benchmark --mmr` in one call (`memlab.studies.pipeline.benchmark_study`, the
# function the command calls): each system tuned on the other conversations and evaluated on its
# own (folds by conversation), per category and over all questions, with `+ MMR` (MMR's pool and
# diversity tuned per fold on the tuned recency spec) and the best combination (per fold, the
# pipeline with the best objective on the other conversations). With `rerank_url` given,
# `+ rerank` joins them on `rerank_subset` questions of each conversation drawn with `seed`
# (every system is then counted over that subset, named in the title).

# %%
conversations = len(set(haystack_units(problem))) if run else 0
if run and conversations < 2:  # folds by conversation need two
    print(f"{conversations} conversation: the held-out stages need two or more (a whole import)")
if run and conversations >= 2:
    rerank_plan = None
    if rerank_url:
        rerank_plan = RerankPlan(
            RerankerConfig(reranker, rerank_url), DEPTHS, BLENDS, rerank_subset, seed, ScoreCache()
        )
    outcome = benchmark_study(problem, seed=seed, n_boot=boot, mmr=MmrPlan(), rerank=rerank_plan)
    stages_table = outcome.pipeline.table
    subset_title = outcome.staged.details["subset"] if outcome.staged is not None else "every question"
    if outcome.staged is not None:
        report.table(
            "rerank_chosen", outcome.staged.chosen, "+ rerank: the stage chosen per fold, kept or not"
        )
    report.table("mmr_chosen", outcome.mmr.chosen, "+ MMR: the stage chosen per fold, kept or not")
    report.table("pipeline_chosen", outcome.pipeline.chosen, "best combination: the pipeline chosen per fold")
    report.table("heldout", stages_table, f"held-out stages per category, {subset_title}")
    report.figure(
        "stages",
        stage_bars(stages_table, f"Held-out stages per LoCoMo category ({subset_title})"),
    )
    stages_table

# %% [markdown]
# ## Headroom as the store grows

# %%
if run:
    n0 = len(data.memories)
    # the benchmark's own size, then the sizes above it (empty n_range: the default ones)
    above = parse_axis(n_range, "n_range", integer=True) if n_range else DEFAULT_SIZES
    sizes = sorted({n0, *(n for n in above if n > n0)})
    # distractors embedded with the model the scores come from
    result = scale_study(problem, sizes, distractor_pool(problem, pool, seed=seed), seed=seed)
    report.table("scale", pd.DataFrame(list(result.rows)), "No-hit maximum against N: measured and predicted")
    report.value("n_zero_headroom", result.n_zero_headroom, "predicted N where the headroom reaches zero")
    report.finish(
        {
            "benchmark_file": benchmark_file,
            "granularity": benchmark_granularity,
            "select": select,
            "pool": pool,
        }
    )
    pd.DataFrame(list(result.rows))
