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
# # 10 · Why did it bring that up, and why did it say nothing?
#
# A log of the queries the application sent (`log`: JSON lines, docs/explain.md; empty: the
# dataset's own questions, asked at their dates) replayed on the store under the current spec and
# the candidate specs in `against`: how often each injects or stays empty, what a new spec
# changes, and the decisions nearest the threshold, with the most fragile query's candidates drawn.

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
log: str = ""  # explain: the query log to replay
against: list = []  # explain: candidate specs to compare with the current one, each a tuned-spec file
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
import pandas as pd

from memlab import ScoreOptions, tuned_problem
from memlab.app.cli.explain import against_spec
from memlab.datasets.querylog import load_log, questions_log
from memlab.embedding.server import server_config
from memlab.output.figures import candidate_bars, candidate_frame
from memlab.output.report import Report
from memlab.tuning.explain import replay
from memlab.tuning.explain_summary import summary

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
queries = load_log(log) if log else questions_log(problem.dataset, problem.lang)
specs = [against_spec(text, problem.spec, problem) for text in against]
replayed = replay(problem, queries, specs)
found = summary(replayed)

# %%
report.table(
    "explain_summary",
    pd.DataFrame(
        [
            {"spec": label, **{k: v for k, v in s.items() if k != "queries"}}
            for label, s in found["specs"].items()
        ]
    ),
    f"{len(queries)} queries replayed: how often each spec injects, stays empty (no memory written "
    "yet, or all below the threshold) and injects a stale memory",
)

# %%
report.table(
    "explain_changes",
    pd.DataFrame(
        [
            {
                "spec": label,
                "query": c["query"],
                "gained": ", ".join(c["gained"]),
                "lost": ", ".join(c["lost"]),
            }
            for label, ch in found["changes"].items()
            for c in ch["queries"]
        ],
        columns=["spec", "query", "gained", "lost"],
    ),
    "The queries whose injected set changes from the current spec, and the memories each gains and loses",
)

# %%
report.table(
    "explain_fragile",
    pd.DataFrame(found["fragile"], columns=["query", "text", "margin", "decides", "injected"]),
    "The decisions nearest to changing: no final score may move by less than the margin and change "
    "what the query injects",
)

# %%
if found["fragile"]:
    nearest = replayed.explain(found["fragile"][0]["query"])
    words = nearest.query.text or "(a logged vector)"
    report.figure(
        "explain_fragile_query",
        candidate_bars(
            candidate_frame(nearest, problem.dataset, problem.lang),
            problem.spec.threshold,
            f"The most fragile query: {words[:60]} ({nearest.query.id})",
        ),
        "Its candidates: raw cosine with the recency bonus stacked, coloured by the step that decided "
        "each, stale memories hatched, the threshold dashed.",
    )

# %%
report.finish({"source": source, "lang": lang, "log": log or "(the dataset's questions)", "against": against})
