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
# # 07 · Drifting facts: which memory policy keeps the current fact and drops the stale one?
#
# Synthetic personas tell an agent about themselves over dated sessions, and their facts drift
# (Ames, then Chicago, then Seattle). Each read system (no memory, full history, naive top-k,
# the seed's recency bonus, the multi-factor score, key supersession, content supersession,
# and content supersession on keys and event flags learned from the extractor's labels)
# runs on the store each write policy (store everything, cosine de-duplication,
# contradiction-aware) builds, under the same token budgets. Parameters are tuned on the tuning
# seeds and reported on held-out seeds, with paired intervals on the differences to naive top-k,
# an oracle line that reads the true topic and value (a ceiling, not a memory system), and
# content supersession told a part of the truth (what each kind of noise costs).

# %% tags=["parameters"]
model: str = ""  # embedding model name or folder; empty: the model an imported dataset records, else multilingual-e5-small (07_drift: all-MiniLM-L6-v2)
embed_url: str = ""  # embedding server URL (OpenAI-compatible), tried first; empty: the local model only
embed_model: str = ""  # model asked of the server; empty: the local model's name (which it must serve)
decay: str = "exp"  # recency decay family, weight 1 at age 0 and 1/e at tau_days: exp exp(−age / tau); gauss exp(−(age / tau)²); lin max(0, 1 − (1 − 1/e) age / tau)
combine: str = "add"  # how the bonus enters: add raw + bonus * w; mult raw * (1 + bonus * w)
boot: int = 200  # robustness, drift, answers and 08's held-out stages: bootstrap resamples (of each kind)
seed: int = 0  # random seed: scale, robustness, drift, answers (the chat's and the bootstrap's)
streams: int = 400  # drift: held-out streams, the first N seeds of seed_range
seed_range: str = "1000:1400"  # drift: held-out seeds A:B (B excluded)
tune_range: str = "0:200"  # drift: tuning seeds C:D, disjoint from seed_range
budgets: str = "16,32,64,128,256,512"  # drift: token budgets, a comma list
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats: html always; png and svg need Chromium

# %%
from memlab.drift.streams import held_out_seeds, parse_seed_range
from memlab.drift.study import drift_study, parse_budgets
from memlab.embedding.server import server_config
from memlab.output import figures
from memlab.output.report import Report

report = Report(out_dir, fig_formats)
held_out = held_out_seeds(seed_range, streams, "seed_range", "streams")
server = server_config(embed_url, embed_model)  # None: the local model only
result = drift_study(
    held_out,
    parse_seed_range(tune_range, "tune_range"),
    parse_budgets(budgets),
    model=model or None,
    server=server,
    n_boot=boot,
    seed=seed,
    decay=(decay,),
    combine=(combine,),
)
print(f"embeddings: {result.embedding_model}; tokens: {result.tokenizer}")
print(", ".join(f"{k} {v:.1f} s" for k, v in result.seconds.items()))
# the lines told a part of the truth get a table of their own; the curves show the systems
told = result.table[result.table["oracle"] & (result.table["system"] != "oracle")]
curves = result.table.drop(told.index)

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
    figures.budget_curves(curves, "recall", result.tokenizer),
    "Recall of the current fact against the token budget, one line per system",
)

# %%
report.figure(
    "staleness_vs_budget",
    figures.budget_curves(curves, "staleness", result.tokenizer),
    "Stale contamination against the token budget, one line per system",
)

# %% [markdown]
# Paired differences to top-k under store-everything: both systems on the same resampled streams.
# The target: recall within 0.02 of top-k (the lower end of the paired interval) at staleness
# at most 0.05. The frontier names, per budget, the best system at that staleness, whether it
# meets the target (misses included), and what the oracle reaches.

# %%
report.table(
    "frontier",
    result.frontier(),
    "Per budget: the memory system with the highest recall at staleness <= 0.05, its paired "
    "differences to top-k / store-everything, whether it meets the target, and the oracle line",
)

# %% [markdown]
# What each kind of noise costs: the same content supersession, re-tuned, told a part of the
# generator's truth (never the value). `oracle-topic` knows every memory's true topic;
# `oracle-distractors` only which memories are distractors; `oracle-filing` only each fact's true
# topic key. Not memory systems: they show where the frontier's misses come from.

# %%
report.table(
    "told_truth",
    told,
    "Content supersession told a part of the truth, per budget: recall, staleness and the paired "
    "differences to top-k / store-everything",
)[["system", "budget", "recall", "staleness", "recall_diff", "recall_diff_lo"]].round(3)

# %%
report.figure(
    "recall_difference_vs_budget",
    figures.difference_curves(curves, "recall", result.tokenizer),
    "Paired recall difference to top-k / store-everything against the budget; dashed: the target's -0.02",
)

# %%
report.figure(
    "staleness_difference_vs_budget",
    figures.difference_curves(curves, "staleness", result.tokenizer),
    "Paired staleness difference to top-k / store-everything against the budget",
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
