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
# # 06 · Keywords, fusion and time: which retriever recalls the right memory?
#
# The same questions through seven retrievers: cosine only, the seed's recency bonus,
# weighted fusion of cosine and BM25, reciprocal rank fusion (RRF), RRF with time as a third
# route, and a time gate (explicit time expressions filter the candidates) with the decay term.
# Each retriever is tuned by the sweep on its own score scale (its threshold included) and shown at
# its best configuration: current memories injected minus wrong ones (no-hit, stale, wrong day).
# Datasets: `seed16-time` (the seed's 16 memories; questions that name a time beside the seed's
# ten) and `daily-lunch` (fifty near-identical lunches that only their dates tell apart).

# %% tags=["parameters"]
source: str = "embedded"  # score source
lang: str = "en"  # text language to embed
model: str = ""  # embedding model name or folder
embed_url: str = ""  # embedding server URL
embed_model: str = ""  # model asked of the server
dataset: str = "seed16"  # packaged dataset name or dataset folder
candidates: int = 8  # raw nearest neighbours fetched before the re-sort
inject: int = 3  # most memories injected into the prompt
decay: str = "exp"  # recency decay family, weight 1 at age 0 and 1/e at tau_days
combine: str = "add"  # how the bonus enters
hybrid_datasets: str = "seed16-time,daily-lunch"  # hybrid: datasets to compare the retrievers on
retrievers: str = ""  # hybrid: retrievers to compare
alpha_range: str = "0:1:0.1"  # hybrid: weight of the vector route in weighted fusion
rrf_k_range: str = "1,2,10,60"  # hybrid: RRF k values, score 1/(k + rank)
hybrid_bonus_range: str = "0:0.3:0.01"  # hybrid: recency bonus values of decay retrievers
hybrid_tau_range: str = "1,3,7,14,30,60"  # hybrid: tau_days values of decay retrievers
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
from memlab import ScoreOptions
from memlab.core.grid import parse_axis
from memlab.embedding.server import server_config
from memlab.output import figures
from memlab.output.report import Report, safe_name
from memlab.studies.hybrid import RetrieverGrid, compare_datasets

report = Report(out_dir, fig_formats)
grid = RetrieverGrid(
    alphas=parse_axis(alpha_range, "alpha_range"),
    rrf_ks=parse_axis(rrf_k_range, "rrf_k_range"),
    bonus=parse_axis(hybrid_bonus_range, "hybrid_bonus_range"),
    tau_days=parse_axis(hybrid_tau_range, "hybrid_tau_range"),
    decay=(decay,),
    combine=(combine,),
    candidates=candidates,
    inject=inject,
)
options = ScoreOptions(source, lang, model or None, server=server_config(embed_url, embed_model))
results = compare_datasets(
    [d.strip() for d in hybrid_datasets.split(",") if d.strip()],
    options,
    retrievers=[p.strip() for p in retrievers.split(",") if p.strip()] or None,
    grid=grid,
)

# %%
import pandas as pd

chosen = pd.concat([r.chosen for r in results.values()], ignore_index=True)
by_kind = pd.concat([r.by_kind for r in results.values()], ignore_index=True)
report.table("retrievers", chosen, "Each retriever at its tuned configuration, per dataset")
report.table("by_kind", by_kind, "Metrics per retriever and question kind")
report.table(
    "fusion_landscape",
    pd.concat([r.landscape for r in results.values()], ignore_index=True),
    "Best utility at each value of alpha (per normalisation) and of RRF k",
)

# %%
report.figure("hit_at_inject", figures.retriever_bars(by_kind, "hit_at_inject"), "Current memory injected")

# %%
report.figure("false_injections", figures.retriever_bars(by_kind, "false_injections"), "False injections")

# %%
report.figure("stale_injections", figures.retriever_bars(by_kind, "stale_injections"), "Stale injections")

# %%
report.figure("headroom", figures.retriever_bars(by_kind, "headroom"), "Headroom on no-hit questions")

# %% [markdown]
# How sharply the fusion settings matter: the best utility reachable at each alpha (weighted
# fusion, one line per normalisation) and each RRF k, over every other axis.

# %%
for name, result in results.items():
    if len(result.landscape):
        report.figure(
            f"fusion_landscape_{safe_name(name)}",
            figures.fusion_landscape_figure(result.landscape, f" ({name})"),
            f"Best utility along alpha and k, {name}",
        )

# %%
report.finish(
    {
        "source": source,
        "lang": lang,
        "hybrid_datasets": hybrid_datasets,
        "retrievers": retrievers or "all",
        "alpha_range": alpha_range,
        "rrf_k_range": rrf_k_range,
        "hybrid_bonus_range": hybrid_bonus_range,
        "hybrid_tau_range": hybrid_tau_range,
    }
)
