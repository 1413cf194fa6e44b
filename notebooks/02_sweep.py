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
# # 02 · Sweep bonus, tau and threshold
#
# Every configuration of the grid at once, the exact feasible band in the bonus for each tau,
# and the configuration a selection rule picks. With `mmr_pool` above 0 the whole notebook runs
# with MMR's stage (Qdrant's `mmr` query, before the bonus): each question's candidates are MMR's
# picks among its top `mmr_pool` memories at `diversity`, and every figure is drawn with them.

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
mmr_pool: int = 0  # MMR: raw neighbours diversified down to candidates (0: no MMR)
diversity: float = 0.0  # MMR: 0 picks by relevance alone, 1 by distance from earlier picks
decay: str = "exp"  # recency decay family, weight 1 at age 0 and 1/e at tau_days
combine: str = "add"  # how the bonus enters
bonus_range: str = ""  # sweep: bonus values, start:stop:step or a comma list
tau_range: str = "1:60:1"  # sweep: tau_days values
threshold_range: str = ""  # sweep: threshold values
select: str = "max-margin"  # sweep: selection rule among the feasible configurations
nohit_weight: float = 1.0  # sweep: max-utility's weight of a no-hit injection
out_dir: str = "results/notebook"  # folder for this notebook's tables and figures
fig_formats: list = ["html", "png"]  # figure formats

# %%
import json
from dataclasses import replace

import pandas as pd

from memlab import ScoreOptions, build_problem, evaluate
from memlab.core.criteria import dataset_criteria
from memlab.core.decisions import decision_margin
from memlab.core.feasible import feasible_bonus, intervals_json
from memlab.core.grid import Grid, parse_axis
from memlab.core.spec import MMR_NO_MARGIN
from memlab.core.sweep_mmr import MmrAxes, mmr_picks, picked_only
from memlab.embedding.server import server_config
from memlab.output import figures
from memlab.output.report import Report
from memlab.tuning.sweep_study import sweep_study

report = Report(out_dir, fig_formats)
options = ScoreOptions(source, lang, model or None, server=server_config(embed_url, embed_model))
problem = build_problem(
    dataset,
    options,
    candidates=candidates,
    inject=inject,
    threshold=threshold,
    bonus=bonus,
    tau_days=tau_days,
    decay=decay,
    combine=combine,
    mmr_pool=mmr_pool,
    diversity=diversity,
)
data, scores = problem.dataset, problem.scores
ages, raw, labels = problem.ages(), problem.raw, problem.labels()
criteria = dataset_criteria(data)
# empty ranges are the model's (problem.defaults), as `memlab sweep` takes them; the grid holds
# the threshold in use (given, else the model's)
ranges = problem.defaults
threshold = problem.spec.threshold
grid = Grid(
    bonus=parse_axis(bonus_range or ranges.bonus_range, "bonus_range"),
    tau_days=parse_axis(tau_range, "tau_range"),
    threshold=tuple(
        sorted({*parse_axis(threshold_range or ranges.threshold_range, "threshold_range"), threshold})
    ),
    candidates=(candidates,),
    inject=(inject,),
    decay=(decay,),
    combine=(combine,),
)
# MMR (mmr_pool > 0) as the sweep's two outer axes, one value each (`memlab sweep --mmr-pool
# --diversity`); MMR only chooses the candidates, so the exact bands and the decision margins
# below read the raw table with every memory MMR did not pick unknown (memlab.core.sweep_mmr)
mmr = MmrAxes.of((mmr_pool,), (diversity,)) if mmr_pool else None
if mmr is not None:
    vectors = problem.memory_vectors() if diversity > 0 else None
    raw = picked_only(raw, mmr_picks(raw, vectors, mmr_pool, diversity, candidates))
    print(
        f"MMR stage: the candidates are MMR's {candidates} picks of the top {mmr_pool} at diversity {diversity:g}"
    )
# the study `memlab sweep` runs (memlab.tuning.sweep_study): the rule's choice as the chunks
# stream past, every chunk kept here for the figures
chunks = []
outcome = sweep_study(
    [problem], grid, criteria, select, nohit_weight=nohit_weight, langs=[lang], sink=chunks.append, mmr=mmr
)
swept = pd.concat(chunks)
print(f"{grid.size:,} configurations, {int(swept.feasible.sum()):,} feasible")

# %% [markdown]
# ## The chosen configuration

# %%
choice, rule = outcome.choice, outcome.choice.rule
if choice.fell_back:  # nothing is feasible: the best compromise by the utility
    found = choice.conflicts
    print(f"nothing is feasible: chosen by {rule} instead; conflicting criteria: {found.text()}")
    report.value("conflicts", found.as_dict(), "The criteria that cannot hold together anywhere on the grid")
chosen = (
    None
    if outcome.row is None
    else choice.row.iloc[0][
        [
            "decay",
            "combine",
            "bonus",
            "tau_days",
            "threshold",
            "candidates",
            "inject",
            "headroom",
            "min_margin",
            *(("mmr_pool", "diversity") if mmr is not None else ()),
        ]
    ].to_dict()
)
report.value("chosen", chosen, f"chosen by {rule}")
if chosen:  # the margin the choice keeps from every decision it depends on
    if mmr is not None and diversity > 0:  # no exact margin under MMR's vectors (the library says why)
        margin, closest = None, MMR_NO_MARGIN
    else:  # MMR at diversity 0 picks by raw alone: the picked table's margins are the spec's
        decision = decision_margin(
            raw, ages, data.memory_ids, grid.spec(int(choice.row.index[0])), data.question_ids
        )
        margin, closest = decision.margin, decision.what
    report.value(
        "choice",
        {
            "rule": rule,
            "utility": outcome.row["utility"],
            "decision_margin": margin,
            "closest_decision": closest,
        },
        "The rule that chose, the utility there and the margin it keeps from every injection decision",
    )
edges = [
    f"{axis} at the {side} value of its range ({value:g}): widen {axis.replace('_days', '')}_range"
    for axis, side, value in (grid.edges(chosen) if chosen else [])
]
report.value("edges", edges, "The chosen configuration on the edge of an axis: the best may lie outside")
for line in edges:
    print(f"warning: {line}")
chosen

# %% [markdown]
# ## The exact feasible band per tau, at the chosen threshold (and at the given one)

# %%
shown = chosen["threshold"] if chosen else threshold  # the plots are drawn where the choice is
# under MMR the bands are cut from the picked table (MMR picks before the bonus, so its picks do not
# move with the bonus and the bands stay exact in it), with the spec's MMR fields off
no_mmr = {"mmr_pool": 0, "diversity": 0.0}
bands = pd.DataFrame(
    [
        {
            "tau_days": tau,
            "threshold": thr,
            **intervals_json(
                feasible_bonus(
                    raw,
                    ages,
                    labels,
                    criteria,
                    spec=replace(problem.spec, tau_days=tau, threshold=thr, **no_mmr),
                )
            ),
        }
        for thr in dict.fromkeys((shown, threshold))
        for tau in grid.tau_days
    ]
)
report.table(
    "feasible_bands",
    bands.assign(
        intervals=bands.intervals.map(json.dumps), closed=bands.closed.map(json.dumps)
    ),  # JSON cells
    f"Exact feasible bonus intervals per tau, at threshold {shown:g}"
    + ("" if shown == threshold else f" (the chosen one) and {threshold:g}"),
)
at_shown = bands[bands.threshold == shown]

# %%
report.figure(
    "feasibility",
    figures.feasibility_heatmap(swept, shown, at_shown, chosen),
    f"Feasible (bonus, tau) at threshold {shown:g}",
)

# %%
report.figure(
    "headroom",
    figures.headroom_heatmap(swept, shown, at_shown, chosen),
    f"Headroom over (bonus, tau) at threshold {shown:g}",
)

# %%
plane_tau = chosen["tau_days"] if chosen else tau_days
plane_tau = min(grid.tau_days, key=lambda t: abs(t - plane_tau))
report.figure(
    "threshold_bonus",
    figures.threshold_bonus_plane(
        swept, plane_tau, chosen if chosen and chosen["tau_days"] == plane_tau else None
    ),
    "Threshold x bonus",
)

# %% [markdown]
# ## Raw and post-bonus scores per question at the chosen spec

# %%
# the chosen configuration (else the given one), the same problem under it
at = problem.with_spec(**({k: chosen[k] for k in ("threshold", "bonus", "tau_days")} if chosen else {}))
best = at.spec
ev = evaluate(at)
report.figure(
    "chosen_bars",
    figures.question_bars(
        figures.question_frame(ev, data),
        best.threshold,
        f"Per question at the chosen spec (bonus {best.bonus:g}, tau {figures.days(best.tau_days)}"
        + (f", MMR pool {best.mmr_pool} diversity {best.diversity:g})" if best.mmr else ")"),
    ),
    "Per-question scores at the chosen spec",
)

# %%
report.table(
    "sweep_summary",
    swept.groupby("threshold", as_index=False).agg(
        feasible=("feasible", "sum"), best_headroom=("headroom", "max")
    ),
    "Feasible configurations per threshold",
)
report.finish(
    {
        "source": source,
        "lang": lang,
        "grid": list(grid.shape),
        "select": select,
        "rule": rule,
        "mmr_pool": mmr_pool,
        "diversity": diversity,
    }
)
