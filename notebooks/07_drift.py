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
#     display_name: memlab
#     language: python
#     name: memlab
# ---

# %% [markdown]
# # 07 · Drifting facts: which memory policy keeps the current fact and drops the stale one?
#
# Synthetic personas tell an agent about themselves over dated sessions, and their facts drift
# (Ames, then Chicago, then Seattle). Each read system (no memory, full history, naive top-k,
# the seed's recency bonus, the multi-factor score, supersession) runs on the store each write
# policy (store everything, cosine de-duplication, contradiction-aware) builds, under the same
# token budgets. Parameters are tuned on the tuning seeds and reported on held-out seeds.

# %% tags=["parameters"]
source: str = "published"  # score source: published (the seed's numbers) or embedded
lang: str = "en"  # text language to embed: en or ja
model: str = ""  # sentence-transformers model folder or cached name; empty for the packaged all-MiniLM-L6-v2
dataset: str = "seed16"  # packaged dataset name or dataset folder
bonus: float = 0.05  # recency bonus at age 0 (cosine units)
tau_days: float = 14.0  # recency decay constant (days)
decay: str = "exp"  # recency decay family: exp, gauss or lin (weight 1/e at tau_days)
combine: str = "add"  # how the bonus enters: add (raw + bonus*w) or mult (raw * (1 + bonus*w))
threshold: float = 0.45  # post-bonus score a memory needs to be injected
candidates: int = 8  # raw nearest neighbours fetched before the re-sort
inject: int = 3  # most memories injected into the prompt
bonus_range: str = "0:0.1:0.001"  # sweep: bonus values, start:stop:step or a comma list
tau_range: str = "1:60:1"  # sweep: tau_days values
threshold_range: str = "0.40:0.50:0.005"  # sweep: threshold values
select: str = "max-margin"  # sweep: selection rule (smallest-bonus, max-headroom, max-margin)
n_range: str = "16,100,1000,10000,100000,1000000"  # scale: memory counts N to measure
pool: int = 5000  # scale: real embedded distractors (cached after the first run)
boot: int = 200  # robustness and drift: bootstrap resamples (of each kind)
seed: int = 0  # scale, robustness and drift: random seed
hybrid_datasets: str = "seed16-time,daily-lunch"  # hybrid: datasets to compare the retrievers on (comma list)
retrievers: str = ""  # hybrid: retrievers to compare (comma list); empty for all
alpha_range: str = "0:1:0.1"  # hybrid: weight of the vector route in weighted fusion
rrf_k_range: str = "1,2,10,60"  # hybrid: RRF k values, score 1/(k + rank)
hybrid_bonus_range: str = "0:0.3:0.01"  # hybrid: recency bonus values of decay retrievers
hybrid_tau_range: str = "1,3,7,14,30,60"  # hybrid: tau_days values of decay retrievers
streams: int = 400  # drift: held-out streams, the first N seeds of seed_range
seed_range: str = "1000:1400"  # drift: held-out seeds A:B (B excluded)
tune_range: str = "0:200"  # drift: tuning seeds C:D, disjoint from seed_range
budgets: str = "16,32,64,128,256,512"  # drift: token budgets, a comma list
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats: html always; png and svg need Chromium

# %%
from memlab.output import figures
from memlab.output.report import Report
from memlab.studies.drift_benchmark import drift_benchmark, parse_budgets
from memlab.studies.drift_streams import held_out_seeds, parse_seed_range

report = Report(out_dir, fig_formats)
held_out = held_out_seeds(seed_range, streams, "seed_range", "streams")
result = drift_benchmark(
    held_out,
    parse_seed_range(tune_range, "tune_range"),
    parse_budgets(budgets),
    model=model or None,
    n_boot=boot,
    seed=seed,
)
print(f"embeddings: {result.embedding_model}; tokens: {result.tokenizer}")
print(", ".join(f"{k} {v:.1f} s" for k, v in result.seconds.items()))

# %%
table = report.table(
    "drift",
    result.table,
    f"Held-out seeds {held_out.start}:{held_out.stop}: recall, staleness and tokens per system, "
    "write policy and budget, with 95% bootstrap intervals over streams",
)
table[["system", "write_policy", "budget", "recall", "staleness", "tokens"]].round(3)

# %%
report.table(
    "tuned",
    result.tuned_table(),
    f"Chosen on tuning seeds {result.tune_range.start}:{result.tune_range.stop} "
    "(objective: mean over budgets of recall - staleness)",
)

# %%
report.figure(
    "recall_vs_budget",
    figures.budget_curves(result.table, "recall", result.tokenizer),
    "Recall of the current fact against the token budget, one line per system",
)

# %%
report.figure(
    "staleness_vs_budget",
    figures.budget_curves(result.table, "staleness", result.tokenizer),
    "Stale contamination against the token budget, one line per system",
)

# %%
report.finish(
    {
        "streams": len(held_out),
        "seed_range": f"{held_out.start}:{held_out.stop}",
        "tune_range": tune_range,
        "budgets": budgets,
        "tokenizer": result.tokenizer,
        "embedding_model": result.embedding_model,
    }
)
