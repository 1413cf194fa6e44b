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
# # 04 · Headroom as memories accumulate
#
# The seed tuned its constants on 16 memories. How does the best post-bonus score on questions
# that should retrieve nothing grow with the number of stored memories N, and at what N does the
# headroom reach zero? Distractors are template memories over everyday topics, embedded for real
# up to the pool size and drawn from a Gaussian fitted to that pool beyond it.

# %% tags=["parameters"]
source: str = "embedded"  # score source: embedded (the texts, embedded) or published (the seed's numbers)
lang: str = "en"  # text language to embed: en or ja
model: str = ""  # embedding model name or folder; empty: the model an imported dataset records, else multilingual-e5-small (07_drift: all-MiniLM-L6-v2)
embed_url: str = ""  # embedding server URL (OpenAI-compatible), tried first; empty: the local model only
embed_model: str = ""  # model asked of the server; empty: the local model's name (which it must serve)
dataset: str = "seed16"  # packaged dataset name or dataset folder
bonus: float = 0.05  # recency bonus at age 0 (cosine units)
tau_days: float = 14.0  # recency decay constant (days): the decay's weight is 1/e at this age
threshold: float = None  # post-bonus score a memory needs to be injected (inclusive); empty: the model's (0.845 English, 0.875 Japanese for multilingual-e5-small; 0.45 for published scores)
candidates: int = 8  # raw nearest neighbours fetched before the re-sort
inject: int = 3  # most memories injected into the prompt
decay: str = "exp"  # recency decay family, weight 1 at age 0 and 1/e at tau_days: exp exp(−age / tau); gauss exp(−(age / tau)²); lin max(0, 1 − (1 − 1/e) age / tau)
combine: str = "add"  # how the bonus enters: add raw + bonus * w; mult raw * (1 + bonus * w)
spec_file: str = ""  # a tuned spec (memlab sweep --save): its spec, model and dataset; spec values given beside it override the file's; empty: no file: the spec values and their defaults
n_range: str = ""  # scale: memory counts N to measure (each counts the dataset's own memories); empty: the dataset's own memory count, then each of 100, 1000, 10000, 100000, 1000000 above it
pool: int = 5000  # scale: real embedded distractors (cached after the first run)
seed: int = 0  # random seed: scale, robustness, drift, answers (the chat's and the bootstrap's)
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats: html always; png and svg need Chromium

# %%
import pandas as pd

from memlab import ScoreOptions, tuned_problem
from memlab.embedding.server import server_config
from memlab.output import figures
from memlab.output.report import Report
from memlab.studies.scale import distractor_pool, scale_sizes, scale_study

report = Report(out_dir, fig_formats)
options = ScoreOptions(source, lang, model or None, server=server_config(embed_url, embed_model))
# a threshold not given follows the model; a tuned spec (spec_file) gives the values left at default
problem = tuned_problem(
    spec_file,
    dataset,
    options,
    candidates=candidates,
    inject=inject,
    threshold=threshold,
    bonus=bonus,
    tau_days=tau_days,
    decay=decay,
    combine=combine,
)
# every parameter checked against the dataset before the pool is embedded (that takes minutes)
sizes = scale_sizes(problem.dataset, n_range, pool)
# the distractors are embedded with the model the scores come from
distractors = distractor_pool(problem, pool, seed=seed)
result = scale_study(problem, sizes, distractors, seed=seed)
print(result.basis)

# %%
rows = pd.DataFrame(list(result.rows))
report.table("scale", rows, "Best no-hit score after the bonus against N: measured and predicted")
report.value(
    "n_zero_headroom", result.n_zero_headroom, "predicted N where the headroom reaches zero (median)"
)
rows

# %%
report.figure(
    "scale_curve",
    figures.scale_curve(rows, problem.spec.threshold, result.n_zero_headroom, result.basis),
    "No-hit maximum against N",
)

# %% [markdown]
# ## Hit questions: when does a distractor pass the current memory?

# %%
report.table(
    "hit_margins",
    pd.DataFrame(list(result.hits)),
    "Predicted N at which the best distractor passes each current memory",
)

# %%
report.finish({"source": source, "lang": lang, "pool": pool, "n_range": n_range, "seed": seed})
