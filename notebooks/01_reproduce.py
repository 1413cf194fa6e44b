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
# # 01 · Reproduce the seed write-up
#
# The seed tried four (bonus, tau) pairs by hand and adopted bonus 0.05, tau 14 days. This
# notebook rebuilds its tables from the raw scores: the four candidates, the C1 and H2 reruns,
# the no-hit questions before and after the bonus, and the bonus curve. On any other dataset it
# shows the same spec question by question, one table per question kind.

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
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
from dataclasses import replace

from memlab import ScoreOptions, candidate_table, evaluate, tuned_problem
from memlab.embedding.server import server_config
from memlab.output import figures, tables
from memlab.output.report import Report

report = Report(out_dir, fig_formats)
# the dataset, its scores (and the model that made them) and the whole spec, settled once: a
# threshold not given follows the model; a tuned spec (spec_file) gives the values left at default
options = ScoreOptions(source, lang, model or None, server=server_config(embed_url, embed_model))
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
data, scores, spec = problem.dataset, problem.scores, problem.spec
ev = evaluate(problem)
print(f"{scores.source} scores ({scores.model_label or ''}), {len(data.memories)} memories")

# %% [markdown]
# ## The hand-picked candidates, and the rule "smallest bonus that satisfies all"
#
# The seed's own tables (four (bonus, tau) candidates, C1 and H2 rerun) appear for a dataset
# that declares them in `dataset.json` (`"tables": {"candidates": [...], "reruns": [...]}`), as
# the seed's do; any other dataset gets the same spec on each question, kind by kind.

# %%
declared = data.tables
if declared is not None and declared.candidates:
    four = candidate_table(data, scores, declared.candidates, base=replace(spec, bonus=0.0), lang=lang)
    names = ", ".join(f"{c.name} = {c.description}" for c in ev.criteria)
    report.table("four_candidates", four, f"The declared (bonus, tau) candidates: {names}")
else:
    print(f"{data.name} declares no candidate (bonus, tau) pairs: see the sweep (notebook 02) instead")

# %% [markdown]
# ## Questions rerun, memory by memory (declared), or kind by kind

# %%
if declared is not None and declared.reruns:
    for qid in declared.reruns:
        text = data.question(qid).text(lang)
        report.table(
            f"rerun_{qid}", tables.rerun_table(ev, data, qid), f"{qid} ({text}): raw, bonus, final, verdict"
        )
else:
    print(f"{data.name} declares no rerun questions: one table per question kind instead")
    for kind in dict.fromkeys(q.kind for q in data.questions):
        if kind != "nohit":
            report.table(
                f"questions_{kind}",
                tables.kind_table(ev, data, kind),
                f"{kind} questions: the current memory, what was injected, stale and wrong injections",
            )

# %% [markdown]
# ## No-hit questions before and after the bonus

# %%
if any(q.kind == "nohit" for q in data.questions):
    report.table(
        "nohit", tables.nohit_table(ev), "No-hit questions: the best score before and after the bonus"
    )

# %%
report.table("criteria", tables.criteria_table(ev), "The dataset's criteria at this spec")
report.value(
    "injections",
    {"stale_injected": ev.stale_injected, "wrong_injected": ev.wrong_injected, "feasible": ev.feasible},
    "Stale memories injected, and memories injected outside a hit or contradiction question's labels",
)

# %% [markdown]
# ## The bonus curve

# %%
report.figure(
    "bonus_curve",
    figures.bonus_curve(spec.bonus, spec.tau_days, decay=spec.decay),
    "Recency bonus over age, marked at 1, 14 and 30 days"
    + (" (the seed's figures)" if declared is not None else ""),
)

# %%
report.figure(
    "question_bars",
    figures.question_bars(figures.question_frame(ev, data), spec.threshold),
    "Raw and post-bonus scores per question",
)

# %%
# where the scores came from: the model, and for embedded scores how many vectors each path served
report.value(
    "score_source", {k: v for k, v in scores.details.items() if k != "dates"}, "score source details"
)
report.finish(
    {
        "source": source,
        "lang": lang,
        "bonus": spec.bonus,
        "tau_days": spec.tau_days,
        "threshold": spec.threshold,
    }
)
