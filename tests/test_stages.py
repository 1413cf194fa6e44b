"""``+ rerank`` held out (memlab.studies.stages) on the hand-written four-conversation LoCoMo file,
scored by the stand-in rerank endpoint (tests/rerank_standin: word-hashed cosine, not a reranking
model): blend 0 alone is the tuned spec to the bit, a fold's stage is tuned on its training rows
only, the subset is what the table counts and is named."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import problem_of

from memlab.core.spec import RetrievalSpec
from memlab.datasets.schema import load_dataset
from memlab.importers.locomo import import_locomo
from memlab.rerank.clients import Reranker, RerankerConfig
from memlab.studies.heldout import held_out
from memlab.studies.hybrid import RetrieverGrid
from memlab.studies.stages import SYSTEM, fold_specs, held_pool, rerank_held_out, subset_rows
from tests.rerank_standin import StandinRerankServer

DATA = Path(__file__).parent / "data"
GRID = RetrieverGrid(
    alphas=(0.5,),
    norms=("min-max",),
    rrf_ks=(60,),
    bonus=(0.0, 0.05),
    tau_days=(7, 30),
    threshold_steps=21,
    candidates=4,
    inject=2,
)


def bag_of_words(texts: list[str], vocabulary: list[str]) -> np.ndarray:
    out = np.full((len(texts), len(vocabulary) + 1), 0.0)
    out[:, -1] = 0.05
    index = {w: i for i, w in enumerate(vocabulary)}
    for r, text in enumerate(texts):
        for w in re.findall(r"[a-z]+", text.lower()):
            if w in index:
                out[r, index[w]] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("stages") / "ds"
    import_locomo(DATA / "locomo_heldout.json", root, granularity="turn")
    ds = load_dataset(root)
    texts = [m.text("en") for m in ds.memories] + [q.text("en") for q in ds.questions]
    vocabulary = sorted({w for t in texts for w in re.findall(r"[a-z]+", t.lower()) if len(w) > 3})
    mem = bag_of_words([m.text("en") for m in ds.memories], vocabulary)
    qs = bag_of_words([q.text("en") for q in ds.questions], vocabulary)
    problem = problem_of(ds, RetrievalSpec(), memories=mem, questions=qs)
    probes = bag_of_words(["weather forecast tomorrow", "stock market prices"], vocabulary)
    held = held_out(
        problem, folds=2, seed=0, grid=GRID, n_boot=200, probe_vectors=probes, hybrids=("hybrid-weighted",)
    )
    server = StandinRerankServer()
    with server as url:
        reranker = Reranker(RerankerConfig("endpoint", url, attempts=1))
        full = rerank_held_out(problem, held, reranker, depths=(4, 8), blends=(0.0, 0.5, 1.0))
        reranker.close()
    return problem, held, full, server


def test_blend_zero_alone_is_the_tuned_spec_exactly(study):
    problem, held, _, _ = study
    only0 = rerank_held_out(problem, held, rerank=np.zeros((20, 8)), depths=(4, 8), blends=(0.0,))
    t = only0.table.set_index(["group", "system"])
    ours, spec = t.xs(SYSTEM, level="system"), t.xs("recency", level="system")
    cols = ["n", "value", "diff_cosine", "diff_cosine_lo", "diff_cosine_hi"]
    pd.testing.assert_frame_equal(ours[cols], spec[cols])
    assert (ours["diff_recency"] == 0).all() and (ours["diff_recency_lo"] == 0).all()
    # the held-out question values too: the stage's one-config reference at blend 0 and the
    # sweep's per_question, two paths, give the same injected lists
    q = only0.questions
    mine = q[q["system"] == SYSTEM].set_index("question")
    theirs = q[q["system"] == "recency"].set_index("question")
    pd.testing.assert_series_equal(mine["injected"], theirs["injected"])
    pd.testing.assert_series_equal(mine["mrr"], theirs["mrr"])
    assert not only0.chosen["kept"].any()
    assert "stage_depth" not in only0.chosen  # no stage in a blend-0 grid


def test_the_stand_in_run_reports_every_system_and_its_folds(study):
    _, held, full, server = study
    systems = list(dict.fromkeys(full.table["system"]))
    assert systems[-1] == SYSTEM and {"cosine", "recency", "hybrid"} <= set(systems)
    # every pair of the deepest pool was sent once: 20 questions x their known places
    assert full.details["pairs"] == sum(len(b["documents"]) for b in server.bodies)
    assert full.details["subset"] == "every question (20)"
    assert sorted(full.chosen["fold"]) == [0, 1]
    # the tuned spec's own training objective is the held-out study's for the recency system
    rec = held.chosen[held.chosen["system"] == "recency"].set_index("fold")["objective"]
    for c in full.chosen.to_dict("records"):
        assert c["spec_objective"] == rec[c["fold"]]
        assert c["kept"] == (c["stage_objective"] > c["spec_objective"])


def test_a_folds_stage_is_tuned_on_its_training_rows_only(study):
    problem, held, _, _ = study
    base = held_pool(problem, np.arange(20), 8)
    rng = np.random.default_rng(3)
    scores = np.where(base.index >= 0, rng.random(base.index.shape), np.nan)
    first = rerank_held_out(problem, held, rerank=scores, depths=(4, 8), blends=(0.5, 1.0))
    fold = held.questions[held.questions["system"] == "cosine"]["fold"].to_numpy()
    # an oracle on fold 0's questions: 1 for a relevant memory, 0 for the others
    oracle = scores.copy()
    rows = np.flatnonzero(fold == 0)
    oracle[rows] = np.where(base.index[rows] >= 0, base.relevant[rows].astype(float), np.nan)
    second = rerank_held_out(problem, held, rerank=oracle, depths=(4, 8), blends=(0.5, 1.0))
    a, b = (r.chosen.set_index("fold") for r in (first, second))
    # fold 0 is evaluated on those rows: its choice, tuned on fold 1's, is the same
    pd.testing.assert_series_equal(a.loc[0], b.loc[0])
    # fold 1 is tuned on them: the oracle changes what it sees (a stage reaching every answer)
    assert b.loc[1, "stage_objective"] > a.loc[1, "stage_objective"]


def test_the_subset_is_named_and_is_what_the_table_counts(study):
    problem, held, _, _ = study
    units = held.questions[held.questions["system"] == "cosine"]["haystack"].tolist()
    rows = subset_rows(units, 2)
    assert len(rows) == 8 and all(sum(units[r] == u for r in rows) == 2 for u in set(units))
    base = held_pool(problem, rows, 8)
    part = rerank_held_out(
        problem, held, rerank=np.where(base.index >= 0, 0.5, np.nan), subset=2, depths=(8,), blends=(1.0,)
    )
    assert (
        part.details["subset"]
        == "2 questions of each conversation drawn at random (seed 0) (8 of 20 questions)"
    )
    ids = {problem.dataset.questions[int(r)].id for r in rows}
    assert set(part.questions["question"]) == ids
    everyone = part.table[part.table["group"] == "all"]
    assert (everyone["n"] == 8).all()
    # the held-out systems' values over the subset are their own rows' mean there
    rec = held.questions[(held.questions["system"] == "recency") & held.questions["question"].isin(ids)]
    assert everyone.set_index("system").loc["recency", "value"] == pytest.approx(rec["utility"].mean())


def test_fold_specs_are_the_held_out_choices(study):
    _, held, _, _ = study
    specs = fold_specs(held)
    rec = held.chosen[held.chosen["system"] == "recency"].set_index("fold")
    for f, spec in specs.items():
        assert (spec.candidates, spec.inject) == (4, 2)
        assert spec.threshold == rec.loc[f, "threshold"] and spec.bonus == rec.loc[f, "bonus"]


def test_the_stage_figure_draws_the_tables_values(study):
    from memlab.output.figures import SYSTEM_COLOURS, stage_bars

    _, held, full, _ = study
    fig = stage_bars(full.table)
    systems = list(dict.fromkeys(full.table["system"]))
    assert [t.name for t in fig.data] == systems
    groups = list(dict.fromkeys(full.table["group"]))
    for trace in fig.data:
        rows = full.table[full.table["system"] == trace.name].set_index("group").loc[groups]
        assert list(trace.y) == rows["value"].tolist()
        assert [x.split("<br>")[0] for x in trace.x] == groups
        assert trace.marker.color == SYSTEM_COLOURS[trace.name]
    assert fig.data[-1].name == "+ rerank" and fig.layout.barmode == "group"
    assert fig.layout.title.text == "Held-out systems per LoCoMo category"
    # the false-injection rate is labelled as the lower-is-better measure it is
    labels = fig.data[0].x
    for x, measure in zip(labels, full.table.drop_duplicates("group")["measure"], strict=True):
        assert ("lower is better" in x) == (measure == "false_injection_rate")
    # without the reranker, what exists: the held-out study's systems only
    assert [t.name for t in stage_bars(held.table).data] == list(dict.fromkeys(held.table["system"]))


@pytest.mark.model
def test_tune_benchmark_with_a_rerank_url_prints_the_named_subset(tmp_path, capsys, cache_dir):
    """The command end to end with the default model and the stand-in endpoint."""
    import json

    from memlab.app.cli import main

    import_locomo(DATA / "locomo_heldout.json", tmp_path / "ds", granularity="turn")
    args = ["tune-benchmark", "--dataset", str(tmp_path / "ds"), "--cache-dir", str(cache_dir)]
    args += ["--folds", "2", "--boot", "50", "--candidates", "4", "--inject", "2", "--hybrids", ""]
    with StandinRerankServer() as url:
        more = [
            "--rerank-url",
            url,
            "--reranker",
            "endpoint",
            "--rerank-depth",
            "4,8",
            "--rerank-subset",
            "3",
        ]
        assert main([*args, *more]) == 0
        out = capsys.readouterr().out
        assert main([*args, *more, "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
    head = (
        "+ rerank held out on 3 questions of each conversation drawn at random (seed 0) (12 of 20 questions)"
    )
    assert head in out and "+ rerank chosen per fold:" in out and "reranked in " in out
    assert (
        doc["rerank"]["subset"]
        == "3 questions of each conversation drawn at random (seed 0) (12 of 20 questions)"
    )
    systems = [r["system"] for r in doc["rerank"]["table"] if r["group"] == "all"]
    assert systems[-1] == "+ rerank" and all(
        r["n"] == 12 for r in doc["rerank"]["table"] if r["group"] == "all"
    )
    assert "+ rerank" not in {r["system"] for r in doc["table"]}  # the all-question table as before


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (["--rerank-subset", "0"], "--rerank-subset"),
        (["--rerank-blend", "0,1.5"], "--rerank-blend"),
        (["--rerank-depth", "x"], "--rerank-depth: expected comma-separated numbers"),
        (["--reranker", "chat", "--rerank-url", "ftp://x"], "--rerank-url"),
    ],
)
def test_bad_rerank_options_are_one_line_before_anything_is_scored(tmp_path, capsys, more, message):
    from memlab.app.cli import main

    args = ["tune-benchmark", "--dataset", str(tmp_path / "missing"), "--rerank-url", "http://127.0.0.1:9/v1"]
    assert main([*args, *more]) != 0
    err = capsys.readouterr().err.strip()
    # the option's error, not the missing dataset's: said before the dataset is read
    assert message in err and "missing" not in err and len(err.splitlines()) == 1
