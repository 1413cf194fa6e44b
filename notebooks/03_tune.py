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
# # 03 · Tune by hand
#
# Move a slider: the per-question bars, the criteria, the headroom and the injected prompt
# follow. The default view is computed up front, so the numbers below exist under papermill too.

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
bonus_range: str = ""  # sweep: bonus values, start:stop:step or a comma list
tau_range: str = "1:60:1"  # sweep: tau_days values
threshold_range: str = ""  # sweep: threshold values
spec_file: str = ""  # a tuned spec
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
from memlab import load_dataset
from memlab.app.panel import TuningPanel
from memlab.datasets.locations import packaged_datasets, user_datasets
from memlab.embedding.server import server_config
from memlab.output import tables
from memlab.output.report import Report

report = Report(out_dir, fig_formats)
data = load_dataset(dataset)
server = server_config(embed_url, embed_model)  # None: the local model only
panel = TuningPanel(
    data,
    # spec values; a threshold not given (None) follows the model, again when the dataset, source or
    # language is switched; a tuned spec (spec_file) gives the values left at their defaults
    {
        "candidates": candidates,
        "inject": inject,
        "threshold": threshold,
        "bonus": bonus,
        "tau_days": tau_days,
        "decay": decay,
        "combine": combine,
    },
    source=source,
    lang=lang,
    score_options={"model": model or None, "server": server},
    # the sliders reach at least the sweep's axes ("" for the model's), so its choice is on them
    ranges={"bonus": bonus_range, "tau_days": tau_range, "threshold": threshold_range},
    datasets=(*packaged_datasets(), *(d.name for d in user_datasets())),
    spec_file=spec_file or None,
)
panel.view()

# %%
report.table("criteria", tables.criteria_table(panel.state), "Criteria at the default view")
# the bars are 01_reproduce's figure; what tuning adds is how far each question is from flipping
report.figure("margins", panel.margin_figure(), "Per-question margin to the threshold at the default view")
print(panel.prompt())

# %%
spec = panel.spec
report.finish(
    {
        "source": source,
        "lang": lang,
        "bonus": spec.bonus,
        "tau_days": spec.tau_days,
        "threshold": spec.threshold,
    }
)
