"""Held-out tuning on a benchmark (memlab.studies.heldout): folds by conversation, every question
evaluated once by systems tuned without it, the baselines counted again by hand, paired intervals."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import problem_of

from memlab.core.errors import InputError
from memlab.core.spec import RetrievalSpec
from memlab.datasets.schema import load_dataset
from memlab.importers.locomo import import_locomo
from memlab.studies.heldout import SYSTEMS, assign_folds, held_out
from memlab.studies.hybrid import RetrieverGrid

DATA = Path(__file__).parent / "data"


def bag_of_words(texts: list[str], vocabulary: list[str]) -> np.ndarray:
    """A hand-made embedding: word counts over the vocabulary, unit length (a small constant
    keeps an empty text off the zero vector)."""
    out = np.full((len(texts), len(vocabulary) + 1), 0.0)
    out[:, -1] = 0.05
    index = {w: i for i, w in enumerate(vocabulary)}
    for r, text in enumerate(texts):
        for w in re.findall(r"[a-z]+", text.lower()):
            if w in index:
                out[r, index[w]] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    root = tmp_path_factory.mktemp("heldout") / "ds"
    import_locomo(DATA / "locomo_heldout.json", root, granularity="turn")
    ds = load_dataset(root)
    texts = [m.text("en") for m in ds.memories] + [q.text("en") for q in ds.questions]
    vocabulary = sorted({w for t in texts for w in re.findall(r"[a-z]+", t.lower()) if len(w) > 3})
    mem = bag_of_words([m.text("en") for m in ds.memories], vocabulary)
    qs = bag_of_words([q.text("en") for q in ds.questions], vocabulary)
    return problem_of(ds, RetrievalSpec(), memories=mem, questions=qs), vocabulary


GRID = RetrieverGrid(
    alphas=(0.0, 0.5, 1.0),
    norms=("min-max",),
    rrf_ks=(60,),
    bonus=(0.0, 0.05),
    tau_days=(7, 30),
    threshold_steps=21,
    candidates=4,
    inject=2,
)


def run(problem, vocabulary, **kw):
    probes = bag_of_words(["weather forecast tomorrow", "stock market prices", "cello mint"], vocabulary)
    return held_out(problem, folds=2, seed=0, grid=GRID, n_boot=200, probe_vectors=probes, **kw)


def test_folds_split_by_conversation_and_every_question_is_evaluated_once(problem):
    p, vocabulary = problem
    result = run(p, vocabulary)
    q = result.questions
    assert sorted(q["system"].unique()) == sorted(SYSTEMS)
    for _, rows in q.groupby("system"):
        assert sorted(rows["question"]) == sorted(p.dataset.question_ids)
    # a conversation lies in one fold; each fold holds two of the four
    folds = q.groupby("haystack")["fold"].nunique()
    assert (folds == 1).all() and q.groupby("fold")["haystack"].nunique().tolist() == [2, 2]
    # tuned on the other fold's questions only
    tuned = result.chosen[result.chosen["system"] != "recency+calibrated"]
    for f, rows in tuned.groupby("fold"):
        assert (rows["tuning_questions"] == int((q[q["system"] == "cosine"]["fold"] != f).sum())).all()


def test_cosine_top_k_counted_again_with_numpy(problem):
    """Plain cosine: the first inject memories of the question's own conversation by raw score;
    recall_any and the false-injection rate per category, counted here from the score table."""
    p, vocabulary = problem
    result = run(p, vocabulary)
    ds, raw = p.dataset, p.scores.raw
    visible = ds.visible()
    hits: dict[str, list[float]] = {}
    for i, q in enumerate(ds.questions):
        scores = np.where(visible[i], raw[i], -np.inf)
        top = np.lexsort((np.arange(len(scores)), -scores))[: GRID.inject]
        ids = {ds.memory_ids[m] for m in top}
        value = 1.0 if q.kind == "nohit" else float(bool(ids & set(q.relevant)))
        hits.setdefault(q.category, []).append(value)
    table = result.table[result.table["system"] == "cosine"].set_index("group")
    for category, values in hits.items():
        assert table.loc[category, "value"] == pytest.approx(np.mean(values)), category
    assert table.loc["adversarial", "measure"] == "false_injection_rate"
    assert table.loc["adversarial", "value"] == 1.0  # top-k always injects
    # the utility over all questions: +1 per answered question, -1 per no-hit question
    answered = sum(sum(v) for c, v in hits.items() if c != "adversarial")
    assert table.loc["all", "value"] == pytest.approx(
        (answered - len(hits["adversarial"])) / len(ds.questions)
    )


def test_paired_intervals_hold_the_mean_difference(problem):
    p, vocabulary = problem
    result = run(p, vocabulary)
    t = result.table
    rows = t[t["system"] != "cosine"]
    assert (rows["diff_cosine_lo"] <= rows["diff_cosine"] + 1e-12).all()
    assert (rows["diff_cosine"] <= rows["diff_cosine_hi"] + 1e-12).all()
    assert t[t["system"] == "cosine"]["diff_cosine"].isna().all()
    # the difference is the difference of the two means (the same questions on both sides)
    for r in rows.to_dict("records"):
        ref = t[(t["group"] == r["group"]) & (t["system"] == "cosine")].iloc[0]
        assert r["diff_cosine"] == pytest.approx(r["value"] - ref["value"])
    # same seed, same table
    again = run(p, vocabulary).table
    assert again.equals(t)


def test_a_dataset_without_haystacks_is_refused(seed, published):
    from memlab.scores.problem import RetrievalProblem

    with pytest.raises(InputError) as e:
        held_out(RetrievalProblem.of(seed, published, RetrievalSpec()), folds=2)
    assert str(e.value) == (
        "held-out tuning splits the questions by haystack, and this dataset's questions carry none: import a "
        "benchmark (memlab import-locomo, import-longmemeval), whose questions carry their conversation or "
        "sessions"
    )
    with pytest.raises(InputError) as e:
        assign_folds(["conv-26", "conv-26"], 2, 0)
    assert str(e.value) == (
        "held-out tuning splits the questions by haystack, and every question of this dataset searches the "
        "same one (conv-26): it needs two or more (a LoCoMo import of every conversation, not --conversation; "
        "a LongMemEval file with several questions)"
    )
    with pytest.raises(InputError) as e:
        assign_folds(["a", "b", "a"], 3, 0)
    assert (
        str(e.value)
        == "--folds 3: the dataset has only 2 haystacks; use --folds 2 or fewer (one fold per haystack at most)"
    )


@pytest.mark.slow  # one more held-out run (seconds on a loaded machine)
def test_markdown_fences_the_lines_under_the_table_as_the_text_prints(problem):
    """``--format markdown``: the lines under the table (the systems, each fold's choices, the
    time) are the text's, in one fenced block (indented lines run together into one paragraph of a
    markdown page, as docs/benchmarks.md shows them)."""
    from memlab.app.cli.benchmark import heldout_text

    result = run(*problem)
    text, markdown = heldout_text(result, 2.5), heldout_text(result, 2.5, markdown=True)
    t, m = text.split("\n"), markdown.split("\n")
    tail = t[next(i for i, line in enumerate(t) if line.startswith("systems: ")) :]
    assert m.count("```text") == 1 and m[-1] == "```"
    assert m[m.index("```text") + 1 : -1] == tail
    assert tail[tail.index("chosen per fold:") + 1] == "  fold 0: evaluated on " + ", ".join(
        result.details["fold_haystacks"][0]
    )
    assert text.endswith("\ncomputed in 2.5 s") and markdown.endswith("computed in 2.5 s\n```")


@pytest.mark.model
def test_tune_benchmark_command_on_a_hand_written_locomo_file(tmp_path, capsys, cache_dir):
    """The command end to end on the hand-written four-conversation file, with the default model."""
    from memlab.app.cli import main

    import_locomo(DATA / "locomo_heldout.json", tmp_path / "ds", granularity="turn")
    args = ["--dataset", str(tmp_path / "ds"), "--cache-dir", str(cache_dir)]
    assert (
        main(["tune-benchmark", *args, "--folds", "2", "--boot", "50", "--candidates", "4", "--inject", "2"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("held-out: locomo_heldout (locomo turn, 20 questions, 4 haystacks)")
    for system in SYSTEMS:
        assert f" {system} " in out
    assert "fold 0: evaluated on " in out and "recency+calibrated: thresholds " in out
    # without --folds: five, or one per haystack when there are fewer (four here); the help says
    # the study's own default
    from memlab.app.cli import build_parser
    from memlab.studies.heldout import DEFAULT_FOLDS

    assert f"(default: {DEFAULT_FOLDS}, or one" in build_parser()._subparsers._group_actions[0].choices[
        "tune-benchmark"
    ].format_help().replace("\n", " ").replace("  ", " ")
    small = ["--boot", "20", "--candidates", "4", "--inject", "2", "--hybrids", "", "--format", "json"]
    assert main(["tune-benchmark", *args, *small]) == 0
    assert __import__("json").loads(capsys.readouterr().out)["folds"] == 4
    assert main(["metrics", *args, "--by", "haystack", "--format", "json"]) == 0
    doc = __import__("json").loads(capsys.readouterr().out)
    groups = {r["group"] for r in doc["summary"] if r["by"] == "haystack"}
    assert groups == {"conv-901", "conv-902", "conv-903", "conv-904"}


@pytest.mark.hostile
def test_a_tenant_filter_tunes_as_if_the_other_tenant_were_not_stored(problem):
    """``tune-benchmark --filter user_id=a``: another user's memories, each a copy of a question's
    vector (so that they would win every question), stored in every conversation. Filtered to
    user a, every table and choice is the study on user a's memories alone."""
    from dataclasses import replace

    from memlab.datasets.schema import Memory
    from memlab.qdrant.sharding import Scope

    base, vocabulary = problem
    ds = base.dataset
    mine = tuple(replace(m, payload={"user_id": "a"}) for m in ds.memories)
    theirs = tuple(
        Memory(
            f"b{j}",
            q.date or ds.reference_date,
            {"en": f"b's note {j}"},
            "notes",
            "user",
            payload={"user_id": "b"},
        )
        for j, q in enumerate(ds.questions)
    )
    groups = {m.group for m in ds.memories}
    theirs = tuple(replace(m, group=sorted(groups)[j % len(groups)]) for j, m in enumerate(theirs))
    both = replace(ds, memories=mine + theirs)
    vec = base.scores.vectors
    mem = np.vstack([vec.memories, vec.questions])
    two = problem_of(both, RetrievalSpec(), memories=mem, questions=vec.questions)
    unfiltered = run(two, vocabulary)
    filtered = run(two.with_scope(Scope(filters=(("user_id", "a"),))), vocabulary)
    alone = run(base, vocabulary)
    assert filtered.table.equals(alone.table)
    assert filtered.chosen.equals(alone.chosen)
    assert not unfiltered.table.equals(alone.table)  # user b's memories do change it unfiltered
    assert filtered.details["scope"] == "filter user_id=a"
