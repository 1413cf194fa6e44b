"""Keyword route, fusion, the time gate and the retrievers: values on paper, ranx and Qdrant agreeing."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import date, datetime

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.core.spec import RetrievalSpec, retrieve
from memlab.datasets.generate import daily_lunch, write_generated
from memlab.datasets.schema import dataset_dir, load_dataset
from memlab.datasets.timeparse import DateRange
from memlab.retrieval.fusion import (
    alpha_weights,
    normalize,
    ranks,
    route_candidates,
    rrf_fusion,
    weighted_fusion,
)
from memlab.retrieval.gate import time_gate
from memlab.retrieval.inputs import build_inputs
from memlab.retrieval.keyword import KeywordIndex, tokenize
from memlab.retrieval.retrievers import RETRIEVERS, check_retrievers, retriever_scores
from memlab.studies.hybrid import RetrieverGrid, compare

NAN = np.nan


# --- keyword route ---------------------------------------------------------------------------


def test_bm25_matches_the_lucene_formula_on_paper():
    # tokens: [coffe, black, coffe], [tea, green], [coffe, milk, sugar, today]; avgdl 3
    idx = KeywordIndex.build(["coffee black coffee", "tea green", "coffee with milk and sugar today"], "en")
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # ln 1.6: 'coffe' is in 2 of 3 documents
    k1, b = 1.5, 0.75
    expected = [idf * 2 / (2 + k1 * (1 - b + b * 3 / 3)), 0.0, idf * 1 / (1 + k1 * (1 - b + b * 4 / 3))]
    np.testing.assert_allclose(idx.scores(["coffee"])[0], expected, rtol=1e-6)
    # a term said twice counts once; unknown terms are ignored; no shared term scores 0
    np.testing.assert_allclose(idx.scores(["coffee coffee quasar"])[0], expected, rtol=1e-6)
    assert idx.scores(["quasar"]).tolist() == [[0.0, 0.0, 0.0]]


def test_english_stems_and_japanese_base_forms():
    assert tokenize(["The user drinks coffee", "drinking"], "en") == [["user", "drink", "coffe"], ["drink"]]
    # 飲んでいる -> 飲む; particles, punctuation, the light verb いる and the date's "-" are dropped
    assert tokenize(["2026-09-01: ユーザーは最近甘いカフェオレばかり飲んでいる"], "ja") == [
        ["2026", "09", "01", "ユーザー", "最近", "甘い", "カフェオレ", "飲む"]
    ]
    with pytest.raises(ValueError, match="unknown keyword tokenizer language 'fr'; available: en, ja"):
        tokenize(["bonjour"], "fr")


def test_sparse_vectors_reproduce_the_scores():
    ds = load_dataset("seed16-time")
    for lang in ("en", "ja"):
        idx = KeywordIndex.build([m.text(lang) for m in ds.memories], lang)
        sparse = idx.sparse_vectors()
        for q in ds.questions:
            ids = idx.term_ids(q.text(lang))
            dot = [sum(v.get(t, 0.0) for t in ids) for v in sparse]
            np.testing.assert_allclose(dot, idx.scores([q.text(lang)])[0], rtol=1e-6, atol=1e-9)


# --- fusion ----------------------------------------------------------------------------------


def test_fusion_on_paper():
    # routes over memories d1 d2 d3: vector {.9, .5, .1}, keyword {-, 3, 1}
    vec = np.array([[0.9, 0.5, 0.1]])
    kw = np.array([[NAN, 3.0, 1.0]])
    mm = [normalize(vec, "min-max"), normalize(kw, "min-max")]
    np.testing.assert_allclose(mm[0], [[1.0, 0.5, 0.0]])
    np.testing.assert_allclose(mm[1], [[NAN, 1.0, 0.0]])
    fused = weighted_fusion(mm, alpha_weights([0.7, 0.0]))
    np.testing.assert_allclose(fused, [[[0.7, 0.65, 0.0]], [[0.0, 1.0, 0.0]]])
    z = normalize(vec, "z-score")  # mean .5, population std sqrt(.32/3)
    np.testing.assert_allclose(z, [[0.4 / math.sqrt(0.32 / 3), 0.0, -0.4 / math.sqrt(0.32 / 3)]])
    np.testing.assert_allclose(ranks(kw), [[NAN, 1, 2]])
    rrf = rrf_fusion([ranks(vec), ranks(kw)], [60, 1])
    np.testing.assert_allclose(rrf[0], [[1 / 61, 1 / 62 + 1 / 61, 1 / 63 + 1 / 62]])
    np.testing.assert_allclose(rrf[1], [[1 / 2, 1 / 3 + 1 / 2, 1 / 4 + 1 / 3]])
    # one candidate alone: min-max has nothing to spread over, ranx gives 0
    np.testing.assert_allclose(normalize(np.array([[NAN, 0.42]]), "min-max"), [[NAN, 0.0]])
    assert np.isnan(normalize(np.array([[NAN, NAN]]), "min-max")).all()


def test_fusion_errors():
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, 1\], got \[1.5\]"):
        alpha_weights([0.5, 1.5])
    with pytest.raises(ValueError, match="unknown normalisation 'l2'; available: min-max, z-score, none"):
        normalize(np.zeros((1, 2)), "l2")


def test_route_candidates_keeps_top_n_and_drops_non_matches():
    s = np.array([[0.0, 2.0, 1.0, 2.0, -1.0]])
    np.testing.assert_array_equal(route_candidates(s, 2), [[NAN, 2.0, NAN, 2.0, NAN]])
    # a tie with the last candidate is kept: position breaks no tie
    np.testing.assert_array_equal(route_candidates(s, 1), [[NAN, 2.0, NAN, 2.0, NAN]])
    np.testing.assert_array_equal(route_candidates(s, 3), [[NAN, 2.0, 1.0, 2.0, NAN]])
    np.testing.assert_array_equal(route_candidates(s, 9, positive_only=True), [[NAN, 2.0, 1.0, 2.0, NAN]])
    # competition ranks: tied scores share the best rank
    np.testing.assert_array_equal(ranks(np.array([[3.0, 1.0, 3.0, NAN, 2.0]])), [[1, 4, 1, NAN, 3]])


@pytest.mark.ranx
def test_fusion_agrees_with_ranx():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(7)
    n_q, n_m = 6, 12
    vec = route_candidates(rng.random((n_q, n_m)), 5)
    kw = route_candidates(
        np.where(rng.random((n_q, n_m)) < 0.5, rng.random((n_q, n_m)) * 4, 0.0), 5, positive_only=True
    )

    def run(scores):
        return ranx.Run(
            {
                f"q{q}": {f"d{m}": float(scores[q, m]) for m in range(n_m) if np.isfinite(scores[q, m])}
                for q in range(n_q)
            }
        )

    def table(fused_run):
        out = np.full((n_q, n_m), NAN)
        for q, docs in fused_run.to_dict().items():
            for d, v in docs.items():
                out[int(q[1:]), int(d[1:])] = v
        return out

    for norm, ranx_norm in (("min-max", "min-max"), ("z-score", "zmuv")):
        ours = weighted_fusion([normalize(vec, norm), normalize(kw, norm)], alpha_weights([0.3]))[0]
        theirs = ranx.fuse([run(vec), run(kw)], norm=ranx_norm, method="wsum", params={"weights": [0.3, 0.7]})
        np.testing.assert_allclose(ours, table(theirs), atol=1e-9)
    for k in (1, 2, 60):
        ours = rrf_fusion([ranks(vec), ranks(kw)], k)[0]
        theirs = ranx.fuse([run(vec), run(kw)], method="rrf", params={"k": k})
        np.testing.assert_allclose(ours, table(theirs), atol=1e-12)


# --- the gate --------------------------------------------------------------------------------


def fake_inputs(name="seed16-time", lang="en", seed=0, **kw):
    ds = load_dataset(name)
    rng = np.random.default_rng(seed)
    return ds, build_inputs(ds, rng.uniform(0.1, 0.6, (len(ds.questions), len(ds.memories))), lang=lang, **kw)


def test_gate_windows_and_widening():
    ds, inp = fake_inputs()
    gate = time_gate(inp)
    qi = {q: i for i, q in enumerate(ds.question_ids)}
    ids = np.array(ds.memory_ids)
    assert ids[gate.mask[qi["T1"]]].tolist() == ["m04"]  # the day before yesterday: Sep 8
    assert ids[gate.mask[qi["T5"]]].tolist() == ["m02", "m06", "m07", "m10"]  # last week: Aug 31 - Sep 6
    # 3 days ago is Sep 7, which holds nothing: widened to Sep 6 - 8
    assert gate.widened[qi["T10"]] and ids[gate.mask[qi["T10"]]].tolist() == ["m04", "m10"]
    assert gate.widened.sum() == 1
    # no time named: not gated, every memory may be a candidate
    assert not gate.gated[qi["C1"]] and gate.mask[qi["C1"]].all()
    assert gate.gated.sum() == 12


def test_explicit_time_range_skips_the_parser():
    rng = DateRange(date(2026, 8, 20), date(2026, 8, 20), "tool call")
    ds, inp = fake_inputs(time_ranges={"C1": rng})
    qi = ds.question_ids.index("C1")
    assert inp.time_ranges[qi] == rng
    assert np.array(ds.memory_ids)[time_gate(inp).mask[qi]].tolist() == ["m01"]


def test_a_question_time_range_field_skips_the_parser(dataset_copy):
    root, edit = dataset_copy
    edit("questions.jsonl", 5, time_range={"start": "2026-08-20", "end": "2026-08-20"})  # C1
    ds = load_dataset(root)
    assert ds.question("C1").time_range == (date(2026, 8, 20), date(2026, 8, 20))
    inp = build_inputs(ds, np.full((10, 16), 0.3))
    gate = time_gate(inp)
    assert inp.time_ranges[4] == DateRange(date(2026, 8, 20), date(2026, 8, 20), "time_range")
    assert np.array(ds.memory_ids)[gate.mask[4]].tolist() == ["m01"]
    assert gate.gated.tolist() == [False] * 4 + [True] + [False] * 5


def test_every_time_question_window_holds_its_current_memory():
    for name in ("seed16-time", "daily-lunch"):
        for lang in ("en", "ja"):
            ds, inp = fake_inputs(name, lang)
            gate = time_gate(inp)
            for i, q in enumerate(ds.questions):
                if q.kind == "time":
                    assert gate.gated[i], (name, lang, q.id)
                    assert gate.mask[i, ds.memory_ids.index(q.current)], (name, lang, q.id)


# --- retrievers: the sweep, the reference and Qdrant agree --------------------------------------


def test_policies_registry_and_errors():
    assert list(RETRIEVERS) == [
        "vector",
        "vector-decay",
        "hybrid-weighted",
        "hybrid-rrf",
        "rrf-time",
        "gate-decay",
        "gate-vector-decay",
    ]
    with pytest.raises(ValueError, match=r"unknown retriever 'bm42'; available: vector, vector-decay"):
        check_retrievers(["vector", "bm42"])


def test_near_duplicates_only_time_separates_on_paper():
    """Every lunch scores the same cosine for every lunch question: vector search cannot tell the
    days apart (ties go to the oldest), the gate leaves exactly the asked day's lunch."""
    ds = load_dataset("daily-lunch")
    lunch = np.array([m.id.startswith("d") for m in ds.memories])
    cos = np.where(lunch[None, :], 0.6, 0.1).repeat(len(ds.questions), axis=0)
    inp = build_inputs(ds, cos)
    grid = RetrieverGrid(bonus=(0.0,), tau_days=(1.0,), threshold_steps=11, alphas=(1.0,), norms=("none",))
    result = compare(inp, ["vector", "gate-vector-decay"], grid)
    by = result.by_kind.set_index(["retriever", "kind"])
    assert by.loc[("gate-vector-decay", "time"), "hit_at_inject"] == 1.0
    assert by.loc[("gate-vector-decay", "time"), "stale_injections"] == 0
    # vector only: with the threshold at 0.6 it injects the three oldest lunches for every question
    assert by.loc[("vector", "time"), "hit_at_inject"] == 0.0


def test_sweep_rows_match_the_one_config_reference():
    ds, inp = fake_inputs()
    grid = RetrieverGrid(
        alphas=(0.2, 0.8), rrf_ks=(2, 60), bonus=(0.0, 0.1), tau_days=(3.0,), threshold_steps=5
    )
    from memlab.studies.hybrid import per_question, sweep_retriever

    for name in ("hybrid-weighted", "hybrid-rrf", "gate-decay", "gate-vector-decay"):
        retriever = RETRIEVERS[name]
        table = sweep_retriever(retriever, inp, grid)
        for i in np.random.default_rng(1).choice(len(table), 5, replace=False):
            row = table.iloc[i]
            long = per_question(retriever, inp, row, grid)
            params = {
                k: row[k] for k in ("norm", "alpha", "rrf_k") if row[k] is not None and row[k] == row[k]
            }
            (setting,) = retriever_scores(
                retriever,
                inp,
                alphas=(params.get("alpha", 0.5),),
                norms=(params.get("norm", "min-max"),),
                rrf_ks=(params.get("rrf_k", 60),),
            )
            spec = RetrievalSpec(
                candidates=int(row["candidates"]),
                inject=int(row["inject"]),
                threshold=float(row["threshold"]),
                bonus=float(row["bonus"]),
                tau_days=float(row["tau_days"]),
            )
            injected = [
                sum(c.injected for c in retrieve(setting.scores[q], inp.ages[q], ds.memory_ids, spec))
                for q in range(len(ds.questions))
            ]
            assert long["injected"].tolist() == injected, (name, i)
            assert int(row["injected_nohit"]) == sum(
                n for n, q in zip(injected, ds.questions, strict=True) if q.kind == "nohit"
            )


@pytest.mark.parametrize("name", ["seed16-time", "daily-lunch"])
def test_native_qdrant_query_agrees_with_memlab(name):
    """Where scores differ, Qdrant's native query (routes as prefetches with the gate's filter,
    RrfQuery, the decay formula) injects what memlab's retriever scores + the reference inject.
    BM25 ties are common (fifty lunches share one score) and Qdrant breaks them its own way, so
    each memory's term weights are scaled by a distinct factor here: same terms, no ties."""
    from memlab.qdrant.store import MemoryStore, retriever_query

    ds = load_dataset(name)
    n_m, n_q = len(ds.memories), len(ds.questions)
    rng = np.random.default_rng(3)
    mem = rng.normal(size=(n_m, 8))
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    qv = rng.normal(size=(n_q, 8))
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    idx = KeywordIndex.build([m.text("en") for m in ds.memories], "en")
    scale = 1 + np.arange(n_m) / (7 * n_m)
    weights = [{t: w * scale[i] for t, w in v.items()} for i, v in enumerate(idx.sparse_vectors())]
    store = MemoryStore(8, keyword=True)
    store.add(list(ds.memory_ids), mem, [m.date for m in ds.memories], keyword_weights=weights)
    terms = [idx.term_ids(q.text("en")) for q in ds.questions]
    keyword = np.array([[sum(w.get(t, 0.0) for t in terms[q]) for w in weights] for q in range(n_q)])
    inp = replace(build_inputs(ds, qv @ mem.T), keyword=np.where(ds.visible(), keyword, np.nan))
    checked = 0
    for policy_name in ("vector-decay", "hybrid-rrf", "rrf-time", "gate-vector-decay"):
        retriever = RETRIEVERS[policy_name]
        for k, threshold, bonus in ((60, 0.0, 0.0), (1, 0.3, 0.05), (2, 0.0, 0.01)):
            if retriever.fusion == "none":
                threshold = 0.2
            spec = RetrievalSpec(candidates=5, inject=3, threshold=threshold, bonus=bonus, tau_days=7)
            (setting,) = retriever_scores(retriever, inp, candidates=5, rrf_ks=(k,))
            ref_spec = spec if retriever.fusion == "none" else replace(spec, candidates=n_m)
            for q, question in enumerate(ds.questions):
                r = inp.time_ranges[q]
                native = retriever_query(
                    store,
                    retriever,
                    spec.with_reference(ds.reference_date),
                    qv[q],
                    terms[q],
                    rrf_k=k,
                    time_range=(r.start, r.end) if r else None,
                    asked=question.date,
                )
                ref = [
                    c for c in retrieve(setting.scores[q], inp.ages[q], ds.memory_ids, ref_spec) if c.injected
                ]
                where = (policy_name, question.id, k)
                # the same finals in the same order (RRF sums tie often: 1/61 from either route)
                np.testing.assert_allclose([f for _, f in native], [c.final for c in ref], atol=1e-6)
                # the same memories, except that equal finals at the inject cut-off may be either
                if ref:
                    cut = ref[-1].final
                    assert {i for i, f in native if f > cut + 1e-6} == {
                        c.index for c in ref if c.final > cut + 1e-6
                    }, where
                checked += len(ref)
    assert checked > 50


def test_native_query_needs_an_integer_k():
    from memlab.qdrant.store import MemoryStore, retriever_query

    store = MemoryStore(2, keyword=True)
    with pytest.raises(ValueError, match=r"Qdrant.s RRF takes an integer k; got 0\.5"):
        retriever_query(store, RETRIEVERS["hybrid-rrf"], RetrievalSpec(), [1.0, 0.0], rrf_k=0.5)


def test_naive_datetimes_are_utc_in_qdrant(monkeypatch):
    import time as _time

    from memlab.qdrant.store import rfc3339

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    _time.tzset()
    try:
        assert rfc3339(datetime(2026, 8, 21, 21, 0)) == "2026-08-21T21:00:00Z"
    finally:
        monkeypatch.delenv("TZ")
        _time.tzset()


def test_weighted_fusion_has_no_native_query():
    from memlab.qdrant.store import MemoryStore, retriever_query

    store = MemoryStore(2, keyword=True)
    with pytest.raises(
        ValueError, match="retriever 'gate-decay': weighted fusion has no native Qdrant query"
    ):
        retriever_query(store, RETRIEVERS["gate-decay"], RetrievalSpec(), [1.0, 0.0])


# --- datasets --------------------------------------------------------------------------------


def test_packaged_daily_lunch_is_the_generator_output():
    files = daily_lunch()
    for name, text in files.items():
        assert (dataset_dir("daily-lunch") / name).read_text(encoding="utf-8") == text, name
    assert daily_lunch(seed=1) != files
    ds = load_dataset("daily-lunch")
    lunches = [m for m in ds.memories if m.id.startswith("d")]
    assert len(lunches) == 50
    # near duplicates: far fewer distinct texts than days once the date is taken off
    assert len({m.text("en")[12:] for m in lunches}) < 40
    l8 = ds.question("L8")
    assert l8.date.date() == date(2026, 8, 21) and ds.memory(l8.current).date.date() == date(2026, 8, 20)


def test_generator_errors_and_atomic_output(tmp_path):
    with pytest.raises(
        ValueError,
        match=r"days must be >= 47 so every question.s day holds a lunch \(the oldest asked about is 2026-07-25\), got 10",
    ):
        daily_lunch(days=10)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="already exists and is not an empty folder"):
        write_generated("daily-lunch", tmp_path / "taken")
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["keep.txt"]
    out = write_generated("daily-lunch", tmp_path / "new", seed=3, days=60)
    assert len(load_dataset(out).memories) >= 60
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_seed16_time_keeps_the_seed_memories():
    a, b = load_dataset("seed16"), load_dataset("seed16-time")
    assert a.memories == b.memories
    assert set(a.question_ids) < set(b.question_ids)
    assert [q.kind for q in b.questions].count("time") == 10


# --- command line ----------------------------------------------------------------------------


def test_compare_cli_json(capsys):
    code = main(
        [
            "compare",
            "--source",
            "published",
            "--dataset",
            "seed16",
            "--retrievers",
            "vector,vector-decay,hybrid-rrf",
            "--bonus",
            "0:0.1:0.05",
            "--tau",
            "14",
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)
    assert [p["retriever"] for p in doc["retrievers"]] == ["vector", "vector-decay", "hybrid-rrf"]
    assert {"hit_at_inject", "false_injections", "stale_injections", "headroom", "threshold"} <= set(
        doc["retrievers"][0]
    )
    assert {r["kind"] for r in doc["by_kind"]} == {"hit", "contradiction", "nohit"}


def test_compare_cli_errors(capsys):
    assert main(["compare", "--retrievers", "vector,bm42"]) == 2
    assert "memlab: error: unknown retriever 'bm42'; available: vector" in capsys.readouterr().err
    assert main(["compare", "--norm", "l2"]) == 2
    assert (
        "memlab: error: unknown normalisation 'l2'; available: min-max, z-score, none"
        in capsys.readouterr().err
    )


def test_generate_cli(tmp_path, capsys):
    assert main(["generate", "daily-lunch", str(tmp_path / "d"), "--days", "47"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'd'}"
    assert len([m for m in load_dataset(tmp_path / "d").memories if m.id.startswith("d")]) == 47


# --- edge cases found in review ----------------------------------------------------------------


def test_policy_lists_and_grids_are_checked():
    with pytest.raises(ValueError, match="no retriever named; available: vector, "):
        check_retrievers([])
    with pytest.raises(ValueError, match=r"retriever\(ies\) named twice: vector"):
        check_retrievers(["vector", "hybrid-rrf", "vector"])
    with pytest.raises(ValueError, match="retriever grid axis 'alphas' is empty"):
        RetrieverGrid(alphas=())
    with pytest.raises(ValueError, match="threshold_steps: expected an integer >= 2, got 1"):
        RetrieverGrid(threshold_steps=1)


def test_vector_policies_run_without_a_keyword_tokenizer(tmp_path):
    """A language with no BM25 tokenizer: the vector retrievers still compare; a keyword retriever says why not."""
    import shutil

    root = tmp_path / "fr"
    shutil.copytree(dataset_dir("seed16-time"), root)
    for name in ("memories.jsonl", "questions.jsonl"):
        rows = [json.loads(line) for line in (root / name).read_text().splitlines()]
        for r in rows:
            r["text_fr"] = r["text"]  # stands in for a French text
        (root / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    meta = json.loads((root / "dataset.json").read_text())
    (root / "dataset.json").write_text(json.dumps({**meta, "languages": ["en", "ja", "fr"]}))
    ds = load_dataset(root)
    cos = np.random.default_rng(0).uniform(0.1, 0.6, (len(ds.questions), len(ds.memories)))
    inp = build_inputs(ds, cos, lang="fr", keyword=False)
    grid = RetrieverGrid(bonus=(0.0, 0.1), tau_days=(7.0,), threshold_steps=5)
    assert list(compare(inp, ["vector", "gate-vector-decay"], grid).chosen["retriever"]) == [
        "vector",
        "gate-vector-decay",
    ]
    with pytest.raises(ValueError, match="retriever 'hybrid-rrf' needs keyword scores"):
        compare(inp, ["hybrid-rrf"], grid)
    with pytest.raises(ValueError, match="unknown keyword tokenizer language 'fr'"):
        build_inputs(ds, cos, lang="fr")


def test_dated_questions_see_only_earlier_memories_in_bm25():
    """L8 is asked on Aug 21: its BM25 statistics (IDF, mean length) come from the memories
    written by then, exactly as if the later ones did not exist."""
    ds = load_dataset("daily-lunch")
    inp = build_inputs(ds, np.zeros((len(ds.questions), len(ds.memories))))
    q = ds.question_ids.index("L8")
    seen = np.flatnonzero(ds.visible()[q])
    assert len(seen) < len(ds.memories)
    alone = KeywordIndex.build([ds.memories[i].text("en") for i in seen], "en").scores(
        [ds.questions[q].text("en")]
    )
    np.testing.assert_allclose(inp.keyword[q, seen], alone[0])
    assert np.isnan(np.delete(inp.keyword[q], seen)).all()


def test_generator_labels_hold_on_any_reference_day():
    """Weekends (金曜日 and "last Friday" must name the same day) and a reference before August
    (a date named without a year is last year's)."""
    for reference, friday, aug14 in (
        (date(2026, 9, 12), "2026-09-11", "2026-08-14"),  # a Saturday
        (date(2026, 9, 13), "2026-09-11", "2026-08-14"),  # a Sunday
        (date(2027, 3, 1), "2027-02-26", "2026-08-14"),  # a Monday, before August
    ):
        files = daily_lunch(reference=reference, days=400)
        questions = {
            json.loads(line)["id"]: json.loads(line) for line in files["questions.jsonl"].splitlines()
        }
        memories = {json.loads(line)["id"]: json.loads(line) for line in files["memories.jsonl"].splitlines()}
        assert memories[questions["L4"]["current"]]["date"][:10] == friday
        assert memories[questions["L5"]["current"]]["date"][:10] == aug14


def test_reserved_ids_and_late_time_ranges_are_refused(dataset_copy):
    from memlab.datasets.schema import DatasetError

    root, edit = dataset_copy
    edit("questions.jsonl", 1, id="time")
    edit("questions.jsonl", 2, time_range={"start": "2026-09-10", "end": "2026-09-11"})
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [
        f"{root}/questions.jsonl:1: id: 'time' is reserved (a question kind): choose another id",
        f"{root}/questions.jsonl:2: time_range: ends 2026-09-11, after the question is asked (2026-09-10)",
    ]


def test_generated_variants_take_their_folder_name_and_names_must_differ(tmp_path):
    from memlab.studies.hybrid import compare_datasets

    out = write_generated("daily-lunch", tmp_path / "my-lunches", seed=1)
    assert load_dataset(out).name == "my-lunches"
    (tmp_path / "copy").mkdir()
    for f in dataset_dir("daily-lunch").iterdir():
        (tmp_path / "copy" / f.name).write_bytes(f.read_bytes())
    with pytest.raises(ValueError, match=r"two datasets are named .daily-lunch. \(.daily-lunch. and "):
        compare_datasets(
            ["daily-lunch", str(tmp_path / "copy")],
            retrievers=["vector"],
            grid=RetrieverGrid(threshold_steps=3),
        )


def test_report_names_are_plain_file_names(tmp_path):
    from memlab.output.report import Report, safe_name

    assert safe_name("/tmp/ux/my-device") == "tmp_ux_my-device"
    assert safe_name("../x") == "x"
    with pytest.raises(ValueError, match="report entry name 'a/b' is not a plain file name"):
        Report(tmp_path, ["html"]).table("a/b", __import__("pandas").DataFrame())


def test_compacted_inputs_choose_the_same_memories_for_every_retriever(tmp_path):
    """A benchmark's question sees one conversation: over its own columns only (``compact``) every
    retriever, at every fusion setting, injects the same memories as over the whole table, and the
    time gate keeps the same ones. Word-count vectors give the exact ties the tie rule settles."""
    from pathlib import Path

    from embed_fake import embed

    from memlab.importers.locomo import import_locomo
    from memlab.retrieval.inputs import compact
    from memlab.studies.hybrid import per_question

    import_locomo(Path(__file__).parent / "data" / "locomo_heldout.json", tmp_path / "ds", granularity="turn")
    ds = load_dataset(tmp_path / "ds")
    mem = np.array([embed(m.text("en")) for m in ds.memories])
    qs = np.array([embed(q.text("en")) for q in ds.questions])
    raw = (qs / np.linalg.norm(qs, axis=1, keepdims=True)) @ (
        mem / np.linalg.norm(mem, axis=1, keepdims=True)
    ).T
    whole = build_inputs(ds, raw)
    narrow = compact(whole)
    assert narrow.vector.shape[1] < whole.vector.shape[1]  # a question sees a quarter of the turns
    gate_whole, gate_narrow = time_gate(whole).mask, time_gate(narrow).mask
    for q in range(len(ds.questions)):
        kept = narrow.slots[q][gate_narrow[q] & (narrow.slots[q] >= 0)]
        assert kept.tolist() == np.flatnonzero(gate_whole[q]).tolist()
    grid = RetrieverGrid(candidates=4, inject=3)
    slots = [f"slot_{j + 1}" for j in range(3)]
    for retriever in RETRIEVERS.values():
        for bonus, alpha, norm, k in ((0.0, 0.5, "min-max", 60), (0.05, 0.25, "z-score", 1)):
            row = {
                "candidates": 4, "inject": 3, "threshold": -10.0, "bonus": bonus, "tau_days": 7,
                "decay": "exp", "combine": "add", "alpha": alpha, "norm": norm, "rrf_k": k,
            }  # fmt: skip
            a = per_question(retriever, whole, row, grid)
            b = per_question(retriever, narrow, row, grid)
            assert (a[slots].to_numpy() == b[slots].to_numpy()).all(), retriever.name
            assert (a[slots].to_numpy() >= 0).any()  # something injected to compare
            np.testing.assert_array_equal(a["injected"], b["injected"])
