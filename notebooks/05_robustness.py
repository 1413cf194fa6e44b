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
# # 05 · How robust are the tuned values?
#
# Leave each question out, and bootstrap over questions and over the unlabelled memories: does
# the configuration still satisfy every criterion, where does the exact feasible bonus interval
# begin and end, and how much headroom is left?

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
boot: int = 200  # robustness, drift, answers and 08's held-out stages: bootstrap resamples (of each kind)
seed: int = 0  # random seed: scale, robustness, drift, answers (the chat's and the bootstrap's)
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats: html always; png and svg need Chromium

# %%
from memlab import ScoreOptions, tuned_problem
from memlab.embedding.server import server_config
from memlab.output import figures
from memlab.output.report import Report
from memlab.studies.robustness import robustness, robustness_summary

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
spec = problem.spec
resamples = robustness(problem, n_boot=boot, seed=seed)

# %%
report.table(
    "robustness_summary",
    robustness_summary(resamples),
    "Share feasible and quantiles of the interval ends and headroom",
)

# %%
report.table(
    "leave_one_question_out", resamples[resamples.kind.isin(["all", "loqo"])], "Leave one question out"
)

# %%
report.figure(
    "interval_ends",
    figures.robustness_ends(resamples, spec.bonus),
    "Feasible bonus interval across resamples",
)

# %%
report.finish(
    {
        "source": source,
        "lang": lang,
        "bonus": spec.bonus,
        "tau_days": spec.tau_days,
        "threshold": spec.threshold,
        "boot": boot,
    }
)
