"""memlab metrics: the standard retrieval metrics on paper, against LongMemEval's own definitions
(restated here from its eval_utils.py and run_retrieval.py, independently of memlab), and the
haystacks that keep each question to its own conversation or sessions."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from helpers import problem_of

from memlab.app.cli import main
from memlab.core.errors import InputError
from memlab.core.grid import Grid
from memlab.core.labels import Labels
from memlab.core.spec import RetrievalSpec
from memlab.core.sweep import sweep
from memlab.datasets.schema import Dataset, DatasetError, Memory, Question, load_dataset
from memlab.importers.locomo import import_locomo
from memlab.importers.longmemeval import import_longmemeval
from memlab.tuning.evaluate import evaluate
from memlab.tuning.ir_metrics import (
    lme_ndcg,
    lme_turn2session,
    metrics_table,
    parse_ks,
    question_scores,
    ranked_questions,
)

DATA = Path(__file__).parent / "data"
REF = datetime(2026, 3, 1, tzinfo=UTC)


def tiny() -> Dataset:
    """Five memories, two judged questions and a no-hit one (scores below)."""
    memories = tuple(
        Memory(f"m{i}", REF - timedelta(days=i), {"en": f"memory {i}"}, "", "user") for i in range(5)
    )
    questions = (
        Question("q0", "hit", {"en": "q0"}, relevant=("m1", "m3"), category="multi-hop"),
        Question("q1", "hit", {"en": "q1"}, relevant=("m2",), current="m2", category="single-hop"),
        Question("q2", "nohit", {"en": "q2"}, category="adversarial"),
    )
    return Dataset("tiny", REF, ("en",), memories, questions)


RAW = np.array(
    [
        [0.90, 0.80, 0.70, 0.60, 0.10],  # q0: m0 m1 m2 m3 by raw; relevant m1, m3
        [0.50, 0.95, 0.85, 0.20, 0.30],  # q1: m1 m2 m0 m4; relevant m2
        [0.76, 0.10, 0.10, 0.10, 0.74],  # q2: only m0 reaches 0.75
    ]
)
SPEC = RetrievalSpec(candidates=4, inject=2, threshold=0.75, bonus=0.0, tau_days=10.0)


def test_metrics_on_paper():
    scores, summary = metrics_table(problem_of(tiny(), SPEC, RAW), ks=(1, 2, 4), by=("category",))
    row = scores.set_index(["list", "question"])
    q0c, q0i, q1i = row.loc[("candidates", "q0")], row.loc[("injected", "q0")], row.loc[("injected", "q1")]
    # q0: candidates m0 m1 m2 m3; relevant at ranks 2 and 4; injected m0 m1 (both >= 0.75)
    assert (q0c["recall_any@1"], q0c["recall_any@2"], q0c["recall_all@2"], q0c["recall_all@4"]) == (
        0,
        1,
        0,
        1,
    )
    assert q0c["mrr"] == 0.5
    # trec_eval: DCG@2 = 1/log2(3), IDCG@2 = 1 + 1/log2(3)
    assert q0c["ndcg@2"] == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3)))
    # LongMemEval: rank 2 is not discounted, DCG@2 = 1, IDCG@2 = 2
    assert q0c["ndcg_any@2"] == pytest.approx(0.5)
    # DCG@4 = 1/log2(3) + 1/log2(5) against 1 + 1/log2(3); LongMemEval: 1 + 1/2 against 2
    assert q0c["ndcg@4"] == pytest.approx((1 / np.log2(3) + 1 / np.log2(5)) / (1 + 1 / np.log2(3)))
    assert q0c["ndcg_any@4"] == pytest.approx(0.75)
    # the injected list stops at m1: nothing more to find at 4
    assert (q0i["recall_all@4"], q0i["recall_any@4"], q0i["mrr"]) == (0, 1, 0.5)
    # q1: m1 (0.95), m2 (0.85) injected; relevant m2 at rank 2
    assert (q1i["recall_any@1"], q1i["recall_all@2"], q1i["mrr"]) == (0, 1, 0.5)
    s = summary.set_index(["list", "by", "group"])
    all_inj = s.loc[("injected", "all", "all")]
    assert all_inj["questions"] == 2 and all_inj["recall_all@2"] == 0.5 and all_inj["mrr"] == 0.5
    # q2: m0 at 0.76 reaches the threshold: one no-hit question of one injects
    assert (all_inj["nohit"], all_inj["false_injection_rate"]) == (1, 1.0)
    assert s.loc[("injected", "category", "adversarial")]["false_injection_rate"] == 1.0
    assert np.isnan(s.loc[("candidates", "all", "all")]["false_injection_rate"])
    assert s.loc[("injected", "category", "multi-hop")]["recall_any@1"] == 0.0
    # at threshold 0.77 q2 injects nothing, and q0 injects m0 and m1 still
    _, higher = metrics_table(problem_of(tiny(), replace(SPEC, threshold=0.77), RAW), ks=(2,))
    assert (
        higher.set_index(["list", "by", "group"]).loc[("injected", "all", "all")]["false_injection_rate"]
        == 0.0
    )


@pytest.mark.ranx
def test_trec_eval_and_ranx_agree_on_the_standard_measures():
    """Two independent implementations (trec_eval through ir_measures, and ranx) of recall,
    success, nDCG and reciprocal rank give the same per-question values."""
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(3)
    raw = rng.random((3, 5))
    problem = problem_of(tiny(), RetrievalSpec(candidates=5, inject=5, threshold=0.0, bonus=0.0), raw)
    scores = question_scores(ranked_questions(problem), (2, 4)).query("list == 'candidates' and judged")
    qrels = ranx.Qrels({q.id: {m: 1 for m in q.relevant} for q in tiny().questions if q.relevant})
    run = ranx.Run({q: {f"m{m}": float(raw[i, m]) for m in range(5)} for i, q in enumerate(("q0", "q1"))})
    theirs = ranx.evaluate(
        qrels, run, ["hit_rate@2", "recall@4", "ndcg@2", "ndcg@4", "mrr"], return_mean=False
    )
    mine = scores.set_index("question").loc[["q0", "q1"]]
    assert mine["recall_any@2"].tolist() == pytest.approx(theirs["hit_rate@2"].tolist())
    assert mine["recall_all@4"].tolist() == pytest.approx((theirs["recall@4"] == 1).astype(float).tolist())
    assert mine["ndcg@2"].tolist() == pytest.approx(theirs["ndcg@2"].tolist())
    assert mine["ndcg@4"].tolist() == pytest.approx(theirs["ndcg@4"].tolist())
    assert mine["mrr"].tolist() == pytest.approx(theirs["mrr"].tolist())


# --- LongMemEval's own code, restated (src/retrieval/eval_utils.py, src/retrieval/run_retrieval.py)


def official_dcg(relevances, k):
    relevances = np.asarray(relevances, dtype=float)[:k]
    if relevances.size:
        return relevances[0] + np.sum(relevances[1:] / np.log2(np.arange(2, relevances.size + 1)))
    return 0.0


def official_ndcg(rankings, correct_docs, corpus_ids, k=10):
    relevances = [1 if doc_id in correct_docs else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_relevance = sorted(relevances, reverse=True)
    ideal_dcg = official_dcg(ideal_relevance, k)
    actual_dcg = official_dcg(sorted_relevances, k)
    if ideal_dcg == 0:
        return 0.0
    return actual_dcg / ideal_dcg


def official_evaluate_retrieval(rankings, correct_docs, corpus_ids, k=10):
    recalled_docs = set(corpus_ids[idx] for idx in rankings[:k])
    recall_any = float(any(doc in recalled_docs for doc in correct_docs))
    recall_all = float(all(doc in recalled_docs for doc in correct_docs))
    return recall_any, recall_all, official_ndcg(rankings, correct_docs, corpus_ids, k)


def official_turn2session(rankings, correct_docs, corpus_ids, k=10):
    def strip_turn_id(docid):
        return "_".join(docid.split("_")[:-1])

    correct_docs = list(set([strip_turn_id(x) for x in correct_docs]))
    corpus_ids = [strip_turn_id(x) for x in corpus_ids]
    effective_k = k
    unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])
    while effective_k <= len(corpus_ids) and len(unique_docids) < k:
        effective_k += 1
        unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])
    return official_evaluate_retrieval(rankings, correct_docs, corpus_ids, k=effective_k)


def official_corpus(entry, granularity):
    """process_item_flat_index over the haystack: (corpus ids, (session id, turn position) of each)."""
    ids, where = [], []
    for sess_id, session in zip(entry["haystack_session_ids"], entry["haystack_sessions"], strict=True):
        user = [t for t in session if t["role"] == "user"]
        if granularity == "session":
            noans = "answer" in sess_id and all(not t.get("has_answer") for t in user)
            ids.append(sess_id.replace("answer", "noans") if noans else sess_id)
            where.append((sess_id, 0))
            continue
        for i_turn, turn in enumerate(session):
            if turn["role"] == "user":
                tid = f"{sess_id}_{i_turn + 1}"
                if "answer" in sess_id and not turn["has_answer"]:
                    tid = tid.replace("answer", "noans")
                ids.append(tid)
                where.append((sess_id, i_turn + 1))
    return ids, where


@pytest.mark.parametrize("granularity", ["session", "turn"])
def test_agrees_with_longmemevals_own_evaluation(tmp_path, granularity):
    """Rank each question's haystack by the same scores both ways: LongMemEval's functions on its
    own corpus ids give the figures memlab prints under the official names."""
    import_longmemeval(DATA / "longmemeval_tiny.json", tmp_path / "ds", granularity=granularity)
    ds = load_dataset(tmp_path / "ds")
    raw = np.random.default_rng(7).random((len(ds.questions), len(ds.memories)))
    spec = RetrievalSpec(candidates=len(ds.memories), inject=len(ds.memories), threshold=-1.0, bonus=0.0)
    ks = (1, 2, 3, 5)
    scores, summary = metrics_table(problem_of(ds, spec, raw), ks)
    cand = scores[scores["list"] == "candidates"].set_index("question")
    index = {m: i for i, m in enumerate(ds.memory_ids)}
    entries = {e["question_id"]: e for e in json.loads((DATA / "longmemeval_tiny.json").read_text())}
    official: dict[str, list[float]] = {}
    for qi, q in enumerate(ds.questions):
        entry = entries[q.id]
        corpus_ids, where = official_corpus(entry, granularity)
        mids = [sid if pos == 0 else f"{sid}_{pos}" for sid, pos in where]
        rankings = sorted(range(len(mids)), key=lambda j: (-raw[qi, index[mids[j]]], index[mids[j]]))
        correct_docs = list(set(d for d in corpus_ids if "answer" in d))
        has_target = any(
            t.get("has_answer") for s in entry["haystack_sessions"] for t in s if t["role"] == "user"
        )
        if "_abs" in q.id or not has_target:
            assert not cand.loc[q.id, "judged"]
            continue
        for k in ks:
            got = official_evaluate_retrieval(rankings, correct_docs, corpus_ids, k)
            official.setdefault(f"recall_any@{k}", []).append(got[0])
            official.setdefault(f"recall_all@{k}", []).append(got[1])
            official.setdefault(f"ndcg_any@{k}", []).append(got[2])
            assert (cand.loc[q.id, f"recall_any@{k}"], cand.loc[q.id, f"recall_all@{k}"]) == got[:2]
            assert cand.loc[q.id, f"ndcg_any@{k}"] == pytest.approx(got[2])
            if granularity == "turn":
                s_any, s_all, s_ndcg = official_turn2session(rankings, correct_docs, corpus_ids, k)
                assert cand.loc[q.id, f"session_recall_any@{k}"] == s_any
                assert cand.loc[q.id, f"session_recall_all@{k}"] == s_all
                assert cand.loc[q.id, f"session_ndcg_any@{k}"] == pytest.approx(s_ndcg)
    # the averaged figures, as print_retrieval_metrics.py prints them (abstention skipped)
    row = summary.set_index(["list", "by", "group"]).loc[("candidates", "all", "all")]
    assert row["questions"] == 3
    for name, values in official.items():
        assert row[name] == pytest.approx(np.mean(values)), name


def test_turn2session_counts_a_non_evidence_turn_as_a_session_of_its_own():
    # ranked: s1's evidence turn, s1's other turn (its own "noans" session), s2, s3
    ranked = ["s1_1", "s1_3", "s2_1", "s3_1"]
    got = lme_turn2session(ranked, ["s1_1"], ranked, 2)
    # two sessions in the first 2 turns: s1, noans s1; the evidence session is found at rank 1
    assert got == (1.0, 1.0, 1.0)
    assert lme_ndcg(["a", "b", "c"], ["c"], 3) == pytest.approx(1 / np.log2(3))


def test_parse_ks():
    assert parse_ks("5, 10") == (5, 10)
    for text, message in (
        ("5,x", "--k: 'x' is not a whole number (give cutoffs like 5,10)"),
        ("0", "--k: expected an integer >= 1, got 0"),
        ("5,5", "--k: 5 is given twice"),
    ):
        with pytest.raises(InputError) as e:
            parse_ks(text)
        assert str(e.value) == message


def test_sweep_answered_counts_equal_the_reference():
    """The sweep's answered group, per configuration, against evaluate() config by config."""
    ds = tiny()
    grid = Grid(
        bonus=(0.0, 0.1),
        tau_days=(1.0, 5.0),
        threshold=(0.5, 0.75, 0.8, 0.9),
        candidates=(2, 4),
        inject=(1, 2),
    )
    table = sweep(RAW, ds.ages(), Labels.from_dataset(ds), grid, (), metrics=("answered",))
    for row in table.to_dict("records"):
        spec = RetrievalSpec(
            candidates=int(row["candidates"]),
            inject=int(row["inject"]),
            threshold=row["threshold"],
            bonus=row["bonus"],
            tau_days=row["tau_days"],
        )
        ev = evaluate(problem_of(ds, spec, RAW))
        inj = {r.question_id: {c.memory_id for c in r.injected} for r in ev.results}
        rel = {q.id: {*q.relevant, *((q.current,) if q.current else ())} for q in ds.questions}
        judged = [q.id for q in ds.questions if rel[q.id]]
        assert row["answered_any"] == sum(bool(inj[q] & rel[q]) for q in judged)
        assert row["answered_all"] == sum(rel[q] <= inj[q] for q in judged)
        assert row["nohit_injected_questions"] == sum(
            bool(inj[q.id]) for q in ds.questions if q.kind == "nohit"
        )


# --- haystacks


def test_locomo_questions_search_their_own_conversation(tmp_path):
    import_locomo(DATA / "locomo_heldout.json", tmp_path / "ds", granularity="turn")
    ds = load_dataset(tmp_path / "ds")
    assert {m.group for m in ds.memories} == {"conv-901", "conv-902", "conv-903", "conv-904"}
    q = ds.question("conv-902:qa0")
    assert (q.haystack, q.category) == (("conv-902",), "single-hop")
    visible = ds.visible()[ds.question_ids.index("conv-902:qa0")]
    assert [m for m, v in zip(ds.memory_ids, visible, strict=True) if v] == [
        m.id for m in ds.memories if m.group == "conv-902"
    ]
    ages = ds.ages()[ds.question_ids.index("conv-902:qa0")]
    assert np.isinf(ages[~visible]).all() and np.isfinite(ages[visible]).all()
    assert ds.question("conv-901:qa4").category == "adversarial"


def test_haystack_problems_name_file_line_and_field(tmp_path):
    import_locomo(DATA / "locomo_tiny.json", tmp_path / "ds", granularity="turn")
    path = tmp_path / "ds" / "questions.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "haystack": ["conv-999"]})
    second = json.loads(lines[1])
    memories = (tmp_path / "ds" / "memories.jsonl").read_text().splitlines()
    moved = json.loads(memories[0])
    memories[0] = json.dumps({**moved, "group": "elsewhere"})
    (tmp_path / "ds" / "memories.jsonl").write_text("\n".join(memories) + "\n")
    lines[1] = json.dumps({**second, "relevant": [moved["id"]], "current": moved["id"]})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError) as e:
        load_dataset(tmp_path / "ds")
    assert e.value.problems == [
        f"{tmp_path}/ds/questions.jsonl:1: haystack: unknown memory group 'conv-999'",
        f"{tmp_path}/ds/questions.jsonl:2: haystack: '{moved['id']}' is labelled for it but outside its haystack",
    ]


def test_metrics_command_on_the_seed(capsys):
    assert main(["metrics", "--source", "published", "--k", "1,3", "--by", "kind"]) == 0
    out = capsys.readouterr().out
    assert "recall_any@1" in out and "ndcg_any@3" in out and "false inj." in out
    line = next(x for x in out.splitlines() if x.startswith("kind nohit"))
    assert line.split()[-2:] == ["4", "0.000"]  # four no-hit questions, none with an injection
    assert main(["metrics", "--source", "published", "--k", "1", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["k"] == [1] and {r["list"] for r in doc["summary"]} == {"injected", "candidates"}
    assert main(["metrics", "--source", "published", "--by", "colour"]) == 2
    assert capsys.readouterr().err == "memlab: error: --by: 'colour' is not one of kind, category, haystack\n"


def test_top_k_of_one_row_with_ties_at_the_kth_score():
    """One question's row (1-D), longer than 64 memories, tied at the k-th score: the earliest
    memories among the tied ones (BM25 scores tie often)."""
    from memlab.core.ranking import top_k

    raw = np.zeros(100)
    raw[[5, 50]] = 2.0
    raw[[10, 20, 30]] = 1.0
    assert top_k(raw, 4).tolist() == [5, 50, 10, 20]
    assert top_k(raw[None, :], 4).tolist() == [[5, 50, 10, 20]]


@pytest.mark.parametrize(
    ("ks", "length", "want"),
    [
        ((5, 10), 3, ((3,), (5, 10))),  # the injected list of at most 3: both cutoffs read all of it
        ((5, 10), 8, ((5, 8), (10,))),  # the candidates: 10 reads the 8
        ((1, 3), 3, ((1, 3), ())),
        ((10, 5), 8, ((8, 5), (10,))),  # the order given, the length in place of the first past it
        ((3, 5), 3, ((3,), (5,))),  # the length is given already: once
    ],
)
def test_list_cutoffs(ks, length, want):
    from memlab.tuning.ir_metrics import list_cutoffs

    assert list_cutoffs(ks, length) == want


@pytest.mark.hostile
def test_metrics_prints_only_the_cutoffs_each_list_can_reach(capsys):
    """The injected list holds at most 3 memories and the candidates 8: @5 and @10 of the first
    (and @10 of the second) were printed as identical columns a reader would paste as recall@10.
    The text shows each list at its own length in their place and says so; the JSON keeps the
    cutoffs asked for, with each list's length and the cutoffs past it."""
    assert main(["metrics", "--source", "published"]) == 0
    lines = capsys.readouterr().out.splitlines()
    inj = lines.index(next(x for x in lines if x.startswith("injected list")))
    cand = lines.index(next(x for x in lines if x.startswith("candidate list")))
    assert lines[inj + 1] == (
        "  cutoffs 5, 10 past the 3 memories this list holds at most: shown at @3, the whole list "
        "(not 5 or 10 retrieved memories)"
    )
    assert lines[inj + 2].split()[:6] == [
        "group",
        "questions",
        "recall_any@3",
        "recall_all@3",
        "ndcg@3",
        "ndcg_any@3",
    ]
    assert "@5" not in lines[inj + 2] and "@10" not in lines[inj + 2]
    assert lines[cand + 1] == (
        "  cutoff 10 past the 8 memories this list holds at most: shown at @8, the whole list "
        "(not 10 retrieved memories)"
    )
    assert (
        "recall_any@5" in lines[cand + 2]
        and "recall_any@8" in lines[cand + 2]
        and "@10" not in lines[cand + 2]
    )
    assert main(["metrics", "--source", "published", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lists"] == {
        "injected": {"holds_at_most": 3, "cutoffs_past_it": [5, 10]},
        "candidates": {"holds_at_most": 8, "cutoffs_past_it": [10]},
    }
    assert {c for c in doc["summary"][0] if "@" in c} == {
        f"{m}@{k}" for m in ("recall_any", "recall_all", "ndcg", "ndcg_any") for k in (5, 10)
    }
    # cutoffs within both lists: no note, the columns asked for
    assert main(["metrics", "--source", "published", "--k", "1,3"]) == 0
    out = capsys.readouterr().out
    assert "past the" not in out and "recall_any@3" in out and "@8" not in out
    assert main(["metrics", "--source", "published", "--candidates", "1", "--inject", "1", "--k", "1,2"]) == 0
    assert (
        capsys.readouterr().out.count(
            "  cutoff 2 past the 1 memory this list holds at most: shown at @1, the whole list "
            "(not 2 retrieved memories)"
        )
        == 2
    )
