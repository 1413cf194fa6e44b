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
boot: int = 200  # bootstrap resamples (of each kind)
seed: int = 0  # random seed
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
from memlab import ScoreOptions, tuned_problem
from memlab.embedding.server import server_config
from memlab.output import figures
from memlab.output.report import Report
from memlab.studies.robustness import robustness_study

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
study = robustness_study(problem, n_boot=boot, seed=seed)
resamples = study.resamples

# %%
report.table(
    "robustness_summary",
    study.summary,
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
