"""The whole pipeline held out (memlab.studies.pipeline, memlab.studies.mmr_held) on the
hand-written four-conversation LoCoMo file: + MMR at diversity 0 is the tuned spec, + MMR's
injected lists are the one-config reference's, the best combination is the pipeline that
dominates the training folds, and ``tune-benchmark --save`` writes a file that ``evaluate --spec``
and ``spec --spec`` read back to the same injected memories."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import problem_of

from memlab.core.spec import RetrievalSpec, retrieve
from memlab.datasets.schema import load_dataset
from memlab.importers.locomo import import_locomo
from memlab.retrieval.inputs import build_inputs
from memlab.studies import combos, mmr_held
from memlab.studies.heldout import held_out
from memlab.studies.hybrid import RetrieverGrid
from memlab.studies.pipeline import COMBINATIONS, COMBINED, combine, lists_of
from memlab.studies.stages import fold_specs, held_pool, rerank_held_out

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


def bag_of_words(texts: list[str], vocabulary: list[str], rng) -> np.ndarray:
    """Word counts over the vocabulary plus a little noise (no two cosines tie: MMR's tie order,
    the last of equals, and the candidate rule's, the first, then cannot differ), unit length."""
    out = np.full((len(texts), len(vocabulary) + 1), 0.05)
    index = {w: i for i, w in enumerate(vocabulary)}
    for r, text in enumerate(texts):
        for w in re.findall(r"[a-z]+", text.lower()):
            if w in index:
                out[r, index[w]] += 1.0
    out += rng.random(out.shape) * 0.01
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline") / "ds"
    import_locomo(DATA / "locomo_heldout.json", root, granularity="turn")
    ds = load_dataset(root)
    rng = np.random.default_rng(5)
    texts = [m.text("en") for m in ds.memories] + [q.text("en") for q in ds.questions]
    vocabulary = sorted({w for t in texts for w in re.findall(r"[a-z]+", t.lower()) if len(w) > 3})
    mem = bag_of_words([m.text("en") for m in ds.memories], vocabulary, rng)
    qs = bag_of_words([q.text("en") for q in ds.questions], vocabulary, rng)
    problem = problem_of(ds, RetrievalSpec(), memories=mem, questions=qs)
    probes = bag_of_words(["weather forecast tomorrow", "stock market prices"], vocabulary, rng)
    held = held_out(
        problem, folds=2, seed=0, grid=GRID, n_boot=200, probe_vectors=probes, hybrids=("hybrid-weighted",)
    )
    return problem, held, fold_specs(held)


def test_the_spec_counted_from_lists_is_the_held_out_studys(study):
    """Two paths: the sweep's long form over the fold's spec (mmr_held.spec_lists) gives the
    recency system's held-out lists, and its objective counted from the lists is the one the
    study tuned to."""
    problem, held, specs = study
    rec = lists_of(problem, held.questions, "recency")
    fold = mmr_held.fold_of(held)
    relevant, nohit = mmr_held.targets(problem)
    chosen = held.chosen[held.chosen["system"] == "recency"].set_index("fold")["objective"]
    for f, spec in specs.items():
        got = mmr_held.spec_lists(held.inputs, spec)
        for r in np.flatnonzero(fold == f):
            assert got[r] == rec[r]
        assert mmr_held.list_objective(relevant, nohit, np.flatnonzero(fold != f), got) == chosen[f]


def test_mmr_at_diversity_zero_is_the_tuned_spec(study):
    problem, held, specs = study
    result = mmr_held.mmr_held_out(problem, held, specs, pools=(4, 8), diversities=(0.0,))
    rec = lists_of(problem, held.questions, "recency")
    for f in specs:  # the stage itself (kept or not) injects what the spec injects, every question
        assert result.stage[f] == result.spec[f]
    assert result.lists == rec  # so + MMR is the recency row, and never kept
    assert not result.chosen["kept"].any()
    assert (result.chosen["stage_objective"] == result.chosen["spec_objective"]).all()


def test_mmr_lists_are_the_one_config_references(study):
    """Every question under each fold's spec with MMR, and with that spec injecting every
    candidate (threshold -1: the diversification shows in every list), against ``retrieve`` with
    the spec's MMR fields over the full score table and the memories' vectors (no compaction, no
    sweep)."""
    problem, held, specs = study
    ds = problem.dataset
    full = build_inputs(ds, problem.scores.raw, keyword=False)
    vectors = problem.memory_vectors()
    picked = mmr_held.picked_inputs(held.inputs, vectors, (6, 12), (0.3, 0.9), 4)
    differs = 0
    for base in (*specs.values(), replace(specs[0], threshold=-1.0)):
        plain = mmr_held.spec_lists(held.inputs, base)
        for (pool, diversity), where in picked.items():
            got = mmr_held.spec_lists(where, base)
            spec = replace(base, mmr_pool=pool, diversity=diversity)
            for q in range(len(ds.questions)):
                ref = retrieve(full.vector[q], full.ages[q], ds.memory_ids, spec, vectors=vectors)
                assert got[q] == tuple(x.index for x in ref if x.injected)
            differs += sum(a != b for a, b in zip(got, plain, strict=True))
    assert differs > 0  # the diversity changed some question's injected memories
    result = mmr_held.mmr_held_out(problem, held, specs, pools=(6, 12), diversities=(0.3, 0.9))
    for c in result.chosen.to_dict("records"):
        assert c["kept"] == (c["stage_objective"] > c["spec_objective"])
        want = mmr_held.spec_lists(picked[(c["mmr_pool"], c["diversity"])], specs[c["fold"]])
        assert result.stage[c["fold"]] == want


def oracle_rerank(problem, held):
    base = held_pool(problem, np.arange(len(problem.dataset.questions)), 8)
    scores = np.where(base.index >= 0, base.relevant.astype(float), np.nan)
    return rerank_held_out(problem, held, rerank=scores, depths=(4, 8), blends=(1.0,))


def test_the_best_combination_is_the_pipeline_that_dominates(study):
    """An oracle reranker (1 for a relevant memory, 0 otherwise) dominates every training fold,
    so the best combination is + rerank on each fold: its row is + rerank's to the digit, and
    + rerank is the best single stage."""
    problem, held, specs = study
    mmr = mmr_held.mmr_held_out(problem, held, specs, pools=(6,), diversities=(0.5,))
    staged = oracle_rerank(problem, held)
    assert staged.chosen["kept"].all()
    pipe = combine(problem, held, specs, mmr, staged, 200, 0)
    assert (pipe.chosen["chosen"] == "+ rerank").all()
    assert pipe.details["best_single"] == "+ rerank"
    t = pipe.table.set_index(["group", "system"])
    ours, theirs = t.xs(COMBINED, level="system"), t.xs("+ rerank", level="system")
    cols = ["n", "value", "diff_cosine", "diff_cosine_lo", "diff_cosine_hi", "diff_recency"]
    pd.testing.assert_frame_equal(ours[cols], theirs[cols])
    assert (ours["diff_best"] == 0).all() and theirs["diff_best"].isna().all()
    # each fold's choice is the largest training objective, counted from the lists
    for c in pipe.chosen.to_dict("records"):
        objectives = {k.removeprefix("objective "): v for k, v in c.items() if k.startswith("objective ")}
        assert objectives["+ rerank"] == max(objectives.values())


def test_without_a_dominating_stage_the_combination_is_one_of_the_single_rows(study):
    problem, held, specs = study
    mmr = mmr_held.mmr_held_out(problem, held, specs, pools=(6, 12), diversities=(0.3, 0.9))
    pipe = combine(problem, held, specs, mmr, None, 200, 0)
    q = pipe.questions.set_index(["system", "question"])["memories"]
    fold = mmr_held.fold_of(held)
    for c in pipe.chosen.to_dict("records"):
        objectives = {k.removeprefix("objective "): v for k, v in c.items() if k.startswith("objective ")}
        assert objectives[c["chosen"]] == max(objectives.values())
        for r in np.flatnonzero(fold == c["fold"]):
            qid = problem.dataset.questions[r].id
            # the chosen pipeline's held-out list; + MMR's stage, kept on its fold or not
            want = q[(c["chosen"], qid)] if c["chosen"] != mmr_held.SYSTEM else None
            if want is None:
                want = tuple(problem.dataset.memory_ids[m] for m in mmr.stage[c["fold"]][r])
            assert q[(COMBINED, qid)] == want
    assert set(pipe.table["system"]) == {"cosine", "recency", "hybrid", "+ MMR", COMBINED}


def hybrid_held_lists(problem, held):
    return lists_of(problem, held.questions, "hybrid")


def test_hybrid_with_mmr_at_diversity_zero_is_the_hybrid(study):
    """MMR at diversity 0 picks the vector route's top candidates by relevance alone, so the
    hybrid on top of it is the hybrid: every fold's stage injects the hybrid's lists (its held-out
    ones on the fold's questions) and is never kept."""
    problem, held, _ = study
    picked = mmr_held.picked_inputs(held.inputs, None, (4, 8), (0.0,), GRID.candidates)
    got = combos.hybrid_mmr(problem, held, picked)
    fold = mmr_held.fold_of(held)
    hyb = hybrid_held_lists(problem, held)
    assert not got.chosen["kept"].any()
    assert (got.chosen["stage_objective"] == got.chosen["hybrid_objective"]).all()
    assert got.lists == hyb
    for f, every in got.stage.items():
        for r in np.flatnonzero(fold == f):
            assert every[r] == hyb[r]


def test_hybrid_with_mmr_keeps_a_stage_only_when_it_beats_the_hybrid_on_training(study):
    problem, held, _ = study
    picked = mmr_held.picked_inputs(held.inputs, problem.memory_vectors(), (6, 12), (0.3, 0.9), 4)
    got = combos.hybrid_mmr(problem, held, picked)
    fold = mmr_held.fold_of(held)
    relevant, nohit = mmr_held.targets(problem)
    hyb = hybrid_held_lists(problem, held)
    for c in got.chosen.to_dict("records"):
        train, test = np.flatnonzero(fold != c["fold"]), np.flatnonzero(fold == c["fold"])
        every = [got.stage[c["fold"]][r] for r in range(len(fold))]
        assert mmr_held.list_objective(relevant, nohit, train, every) == c["stage_objective"]
        assert c["kept"] == (c["stage_objective"] > c["hybrid_objective"])
        for r in test:
            assert got.lists[r] == (every[r] if c["kept"] else hyb[r])


def all_pairs(pools, rows, value):
    """Every pool pair's score: ``value(question, memory)``."""
    return {pair: value(*pair) for pair in combos.missing_pairs(pools, rows, {})}


def test_rerank_over_mmr_at_blend_zero_is_the_mmr_stage(study):
    """Two paths: the rerank stage at blend 0 with the spec's candidates and threshold over the
    MMR pool (its top ``p`` in MMR's greedy order) injects what the sweep over MMR's ``candidates``
    picks injects (mmr_held), question by question: MMR's first picks do not depend on how many
    are asked for, and the pool is in their order."""
    problem, held, specs = study
    mmr = mmr_held.mmr_held_out(problem, held, specs, pools=(6, 12), diversities=(0.3, 0.9))
    rows = np.arange(len(problem.dataset.questions))
    fold = mmr_held.fold_of(held)
    pools = combos.mmr_pools(problem, held, specs, mmr.chosen, rows, 8)
    scores = all_pairs(pools, rows, lambda q, m: 0.5)
    got = combos.rerank_combo(pools, rows, fold, scores, depths=(4, 8), blends=(0.0,))
    assert not got.chosen["kept"].any()
    for f in specs:
        for r in np.flatnonzero(fold == f):
            assert got.lists[int(r)] == mmr.stage[f][r]


def test_rerank_over_a_hybrid_at_blend_zero_is_the_hybrid(study):
    """The stage at blend 0 over the fold's hybrid's candidates, with its candidates and
    threshold, is the hybrid held out (the sweep's per-question path), on every question."""
    problem, held, _ = study
    rows = np.arange(len(problem.dataset.questions))
    fold = mmr_held.fold_of(held)
    pools = combos.hybrid_pools(problem, held, rows, 8)
    scores = all_pairs(pools, rows, lambda q, m: 0.5)
    got = combos.rerank_combo(pools, rows, fold, scores, depths=(4, 8), blends=(0.0,))
    assert got.lists == hybrid_held_lists(problem, held)


def test_an_oracle_over_mmr_or_the_hybrid_is_chosen_by_the_combination(study):
    """An oracle reranker (1 for a relevant memory) over the MMR pool and the hybrid's: each rerank
    combination is held out like + rerank (kept by its training objective), and the best
    combination takes, per fold, the pipeline with the largest training objective, ties in
    COMBINATIONS' order."""
    problem, held, specs = study
    mmr = mmr_held.mmr_held_out(problem, held, specs, pools=(6,), diversities=(0.5,))
    staged = oracle_rerank(problem, held)
    rows = np.asarray(staged.rows)
    relevant, _ = mmr_held.targets(problem)
    combined = {combos.HYBRID_MMR: combos.hybrid_mmr(problem, held, mmr.picked)}
    for name, pools in (
        (combos.MMR_RERANK, combos.mmr_pools(problem, held, specs, mmr.chosen, rows, 8)),
        (combos.HYBRID_RERANK, combos.hybrid_pools(problem, held, rows, 8)),
    ):
        scores = all_pairs(pools, rows, lambda q, m: float(m in relevant[q]))
        combined[name] = combos.rerank_combo(pools, rows, staged.fold, scores, depths=(4, 8), blends=(1.0,))
        c = combined[name].chosen
        assert (c["kept"] == (c["stage_objective"] > c["spec_objective"])).all()
    pipe = combine(problem, held, specs, mmr, staged, 200, 0, combined)
    assert set(pipe.table["system"]) >= {combos.MMR_RERANK, combos.HYBRID_MMR, combos.HYBRID_RERANK}
    # notebook 08's figure: every pipeline side by side per category, in the table's order, a
    # combination in the colour of the pipeline under it, hatched by the stage on top
    from memlab.output.figures import stage_bars

    fig = stage_bars(pipe.table)
    assert [t.name for t in fig.data] == ["cosine", *COMBINATIONS, COMBINED]
    shapes = {t.name: t.marker.pattern.shape for t in fig.data}
    assert (
        shapes[combos.HYBRID_MMR] == "/" and shapes[combos.MMR_RERANK] == shapes[combos.HYBRID_RERANK] == "x"
    )
    assert shapes["hybrid"] == "" and len(fig.data[0].x) == len(set(pipe.table["group"]))
    for c in pipe.chosen.to_dict("records"):
        objectives = {k.removeprefix("objective "): v for k, v in c.items() if k.startswith("objective ")}
        assert set(objectives) == set(COMBINATIONS)
        best = max(objectives.values())
        assert c["chosen"] == next(n for n in COMBINATIONS if objectives[n] == best)


def test_a_seeded_subset_takes_n_of_each_conversation_at_random(study):
    from memlab.studies.stages import subset_rows

    _, held, _ = study
    units = held.questions[held.questions["system"] == "cosine"]["haystack"].tolist()
    a, b, c = subset_rows(units, 2, 0), subset_rows(units, 2, 0), subset_rows(units, 2, 7)
    np.testing.assert_array_equal(a, b)
    assert all(sum(units[r] == u for r in a) == 2 for u in set(units))
    assert list(a) == sorted(a) and not np.array_equal(a, c)
    firsts = sorted(r for u in dict.fromkeys(units) for r in [i for i, x in enumerate(units) if x == u][:2])
    assert any(not np.array_equal(subset_rows(units, 2, s), firsts) for s in range(3))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """``tune-benchmark --mmr --save`` end to end against the word-count embedding server."""
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from embed_fake import MODEL, EmbedServer

    tmp = tmp_path_factory.mktemp("saved")
    import_locomo(DATA / "locomo_heldout.json", tmp / "ds", granularity="turn")

    def memlab(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "memlab", *args, *server], capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    with EmbedServer() as url:
        server = [
            "--embed-url",
            url,
            "--embed-model",
            MODEL,
            "--no-embed-fallback",
            "--cache-dir",
            str(tmp / "c"),
        ]
        bench = ["tune-benchmark", "--dataset", str(tmp / "ds"), "--folds", "2", "--boot", "50"]
        bench += ["--candidates", "4", "--inject", "2", "--hybrids", "", "--threshold-steps", "21"]
        bench += ["--bonus", "0,0.05", "--tau", "7,30", "--mmr", "--mmr-pools", "6,12"]
        bench += ["--mmr-diversities", "0.5,0.9", "--save", str(tmp / "tuned.yaml")]
        doc = json.loads(memlab(*bench, "--format", "json"))
        text = memlab(*bench)
        evaluated = json.loads(
            memlab(
                "evaluate",
                "--dataset",
                str(tmp / "ds"),
                "--spec",
                str(tmp / "tuned.yaml"),
                "--format",
                "json",
            )
        )
        exported = memlab("spec", "--dataset", str(tmp / "ds"), "--spec", str(tmp / "tuned.yaml"))
    return doc, text, evaluated, exported, tmp / "tuned.yaml"


@pytest.mark.slow  # the saved fixture runs the whole study and --save (8 s): make test holds it
def test_the_saved_file_injects_what_the_study_chose(saved):
    doc, text, evaluated, _, path = saved
    injected = {
        q["id"]: [c["memory"] for c in q["candidates"] if c["injected"]] for q in evaluated["questions"]
    }
    assert injected == doc["saved"]["injected"]
    assert doc["saved"]["pipeline"] in {"recency", "+ MMR"} and path.is_file()
    assert "tuned on every conversation after the held-out evaluation" in path.read_text()
    assert f"saved {path}: {doc['saved']['pipeline']}" in text
    # the new rows exist in the printed table and the JSON
    systems = {r["system"] for r in doc["pipeline"]["table"]}
    assert {"+ MMR", COMBINED, "cosine", "recency"} <= systems
    assert "| best combination |" not in text and " best combination " in text


@pytest.mark.slow  # shares the 8 s saved fixture
def test_the_saved_spec_is_what_spec_exports(saved):
    from memlab.tuning.tuned import load_tuned

    doc, _, _, exported, path = saved
    tuned = load_tuned(path)
    assert tuned.spec.as_row() == doc["saved"]["tuned"]["spec"]
    if tuned.spec.mmr:  # the export is Qdrant's own mmr query with the saved fields
        assert '"mmr"' in exported and f"{tuned.spec.diversity:g}" in exported
    assert f"{tuned.spec.threshold:.6g}"[:6] in exported


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (["--mmr", "--mmr-pools", "0"], "--mmr-pools: an MMR pool is 1 or more"),
        (["--mmr", "--mmr-pools", "x"], "--mmr-pools: expected comma-separated numbers"),
        (["--mmr", "--mmr-diversities", "0.5,1.5"], "--mmr-diversities"),
        (["--rerank-url", "http://127.0.0.1:9/v1", "--rerank-subset-seed", "-1"], "--rerank-subset-seed"),
    ],
)
def test_bad_stage_options_are_one_line_before_anything_is_scored(tmp_path, capsys, more, message):
    from memlab.app.cli import main

    save = tmp_path / "tuned.yaml"
    argv = ["tune-benchmark", "--dataset", str(tmp_path / "missing"), "--save", str(save), *more]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    # the option's error, not the missing dataset's: said before the dataset is read
    assert message in err and "missing" not in err and len(err.splitlines()) == 1
    assert not save.exists()


@pytest.mark.slow  # the whole study through the command with both servers: seconds
def test_the_pipeline_table_on_the_hand_written_locomo_file(tmp_path, capsys):
    """``tune-benchmark --mmr --rerank-url`` end to end on the four-conversation file (the
    word-count embedding server, the stand-in rerank endpoint): the table holds every stage and
    combination per category and overall, over the named subset, each d to cosine the difference
    of the two means (paired over the same questions), and each combination's fold records keep
    a stage only when it beats the pipeline under it on the training questions."""
    from embed_fake import MODEL, EmbedServer

    from memlab.app.cli import main
    from tests.rerank_standin import StandinRerankServer

    import_locomo(DATA / "locomo_heldout.json", tmp_path / "ds", granularity="turn")
    argv = ["tune-benchmark", "--dataset", str(tmp_path / "ds"), "--folds", "2", "--boot", "50"]
    argv += [
        "--candidates",
        "4",
        "--inject",
        "2",
        "--hybrids",
        "hybrid-weighted",
        "--mmr",
        "--mmr-pools",
        "6,12",
    ]
    with EmbedServer() as eurl, StandinRerankServer() as rurl:
        argv += ["--embed-url", eurl, "--embed-model", MODEL, "--cache-dir", str(tmp_path / "cache")]
        argv += [
            "--rerank-url",
            rurl,
            "--reranker",
            "endpoint",
            "--rerank-depth",
            "4,8",
            "--rerank-subset",
            "3",
        ]
        assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)["pipeline"]
    systems = ["cosine", *COMBINATIONS, COMBINED]
    assert doc["combinations"] == list(COMBINATIONS)
    t = pd.DataFrame(doc["table"])
    groups = ["all", *sorted(set(t["group"]) - {"all"})]
    assert len(groups) == 6  # all and LoCoMo's five categories
    for g in groups:
        mine = t[t["group"] == g].set_index("system")
        assert sorted(mine.index) == sorted(systems), g
        assert (mine["n"] == mine.loc["cosine", "n"]).all()
        for s in systems[1:]:
            assert mine.loc[s, "diff_cosine"] == pytest.approx(
                mine.loc[s, "value"] - mine.loc["cosine", "value"]
            )
    assert int(t[(t["group"] == "all") & (t["system"] == "cosine")]["n"].iloc[0]) == doc["questions"] == 12
    for name, records in doc["combined"].items():
        assert len(records) == 2, name  # one per fold
        for c in records:
            under = c["hybrid_objective"] if name == combos.HYBRID_MMR else c["spec_objective"]
            value = c.get("stage_objective")
            assert c["kept"] == (value is not None and value == value and value > under), (name, c)
    for c in doc["chosen"]:
        objectives = {k.removeprefix("objective "): v for k, v in c.items() if k.startswith("objective ")}
        best = max(objectives.values())
        assert c["chosen"] == next(n for n in COMBINATIONS if objectives[n] == best)
