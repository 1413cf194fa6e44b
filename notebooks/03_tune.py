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
# # 03 · Tune by hand
#
# Move a slider: the per-question bars, the criteria, the headroom and the injected prompt
# follow. The default view is computed up front, so the numbers below exist under papermill too.

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
from memlab import RetrievalSpec, load_dataset
from memlab.app.panel import TuningPanel
from memlab.output import tables
from memlab.output.report import Report

report = Report(out_dir, fig_formats)
data = load_dataset(dataset)
panel = TuningPanel(
    data,
    RetrievalSpec(
        candidates=candidates,
        inject=inject,
        threshold=threshold,
        bonus=bonus,
        tau_days=tau_days,
        decay=decay,
        combine=combine,
    ),
    source=source,
    lang=lang,
    score_options={"model": model or None},
)
panel.view()

# %%
report.table("criteria", tables.criteria_table(panel.state), "Criteria at the default view")
report.figure("default_view", panel.static_figure(), "Per-question scores at the default view")
print(panel.prompt())

# %%
report.finish({"source": source, "lang": lang, "bonus": bonus, "tau_days": tau_days, "threshold": threshold})
