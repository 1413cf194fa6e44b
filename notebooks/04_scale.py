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
source: str = "embedded"  # score source
lang: str = "en"  # text language to embed
model: str = ""  # embedding model name or folder
embed_url: str = ""  # embedding server URL
embed_model: str = ""  # model asked of the server
dataset: str = "seed16"  # packaged dataset name or dataset folder
bonus: float = 0.05  # recency bonus at age 0
tau_days: float = 14.0  # recency decay constant
threshold: float = None  # post-bonus score a memory needs to be injected
candidates: int = 8  # raw nearest neighbours fetched before the re-sort
inject: int = 3  # most memories injected into the prompt
decay: str = "exp"  # recency decay family, weight 1 at age 0 and 1/e at tau_days
combine: str = "add"  # how the bonus enters
spec_file: str = ""  # a tuned spec
n_range: str = ""  # scale: memory counts N to measure
pool: int = 5000  # scale: real embedded distractors
seed: int = 0  # random seed
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

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
