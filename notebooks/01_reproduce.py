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
# # 01 · Reproduce the seed write-up
#
# The seed tried four (bonus, tau) pairs by hand and adopted bonus 0.05, tau 14 days. This
# notebook rebuilds its tables from the raw scores: the four candidates, the C1 and H2 reruns,
# the no-hit questions before and after the bonus, and the bonus curve.

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
from dataclasses import replace

from memlab import RetrievalSpec, candidate_table, evaluate, load_dataset, load_scores
from memlab.output import figures, tables
from memlab.output.report import Report

report = Report(out_dir, fig_formats)
data = load_dataset(dataset)
scores = load_scores(source, data, lang=lang, model=model or None)
spec = RetrievalSpec(
    candidates=candidates,
    inject=inject,
    threshold=threshold,
    bonus=bonus,
    tau_days=tau_days,
    decay=decay,
    combine=combine,
)
ev = evaluate(data, scores, spec, lang=lang)
print(f"{scores.source} scores ({scores.details.get('model', '')}), {len(data.memories)} memories")

# %% [markdown]
# ## The four candidates, and the rule "smallest bonus that satisfies all"

# %%
four = candidate_table(data, scores, base=replace(spec, bonus=0.0), lang=lang)
report.table(
    "four_candidates",
    four,
    "The seed's four (bonus, tau) candidates: a = no-hit max, b = C1 current, c = H2 current",
)

# %% [markdown]
# ## C1 (coffee) and H2 (that thing you were working on), rerun

# %%
report.table("rerun_C1", tables.rerun_table(ev, data, "C1"), "C1: raw, bonus, final and verdict")

# %%
report.table("rerun_H2", tables.rerun_table(ev, data, "H2"), "H2: raw, bonus, final and verdict")

# %% [markdown]
# ## No-hit questions before and after the bonus

# %%
report.table("nohit", tables.nohit_table(ev), "No-hit questions: the best score before and after the bonus")

# %%
report.table("criteria", tables.criteria_table(ev), "The seed's conditions a, b, c at this spec")

# %% [markdown]
# ## The bonus curve

# %%
report.figure(
    "bonus_curve",
    figures.bonus_curve(spec.bonus, spec.tau_days, decay=spec.decay),
    "Recency bonus over age, seed figures marked",
)

# %%
report.figure(
    "question_bars",
    figures.question_bars(figures.question_frame(ev, data), spec.threshold),
    "Raw and post-bonus scores per question",
)

# %%
report.finish({"source": source, "lang": lang, "bonus": bonus, "tau_days": tau_days, "threshold": threshold})
