"""memlab calibrate: thresholds from probes on stores small enough to check by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import REF, make_dataset, problem_of, score_table

from memlab.app.cli import main
from memlab.core.spec import RetrievalSpec, retrieve
from memlab.datasets.probes import load_probes
from memlab.studies.calibration import (
    bootstrap_threshold,
    calibrate,
    calibrated_threshold,
    compare_labels,
    false_rate_at,
    predicted_rate,
    probe_best,
)
from memlab.studies.scale import MaxLaw


def unit(*xs):
    v = np.asarray(xs, dtype=np.float64)
    return v / np.linalg.norm(v)


def probes_with_cosines(cosines):
    """Probe vectors whose cosine with memory e0 is each given value, and 0 with e2."""
    return np.array([[c, np.sqrt(1 - c * c), 0.0] for c in cosines])


def test_packaged_probe_set_is_versioned_bilingual_and_large_enough():
    probes = load_probes()
    assert (probes.name, probes.version, probes.languages) == ("offtopic", "1.0.0", ("en", "ja"))
    assert len(probes.probes) == 216 and len(set(probes.ids)) == 216
    assert {p.category for p in probes.probes} == {"chatter", "knowledge", "request"}
    for lang in ("en", "ja"):
        texts = probes.texts(lang)
        assert len(set(texts)) == 216 and all(t.strip() for t in texts)
    assert probes.texts("ja")[0] == "おはよう!よく眠れた?"


def test_threshold_on_ten_probes_by_hand():
    # best scores 0.1 ... 1.0 (bonus 0): at 10% one probe may reach the threshold, so it sits just
    # above the second highest, 0.9; at 20% just above 0.8; at 0% just above the highest
    memories = np.eye(3)[[0, 2]]
    cosines = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    best = probe_best(probes_with_cosines(cosines), memories, np.zeros(2), RetrievalSpec(bonus=0.0))
    np.testing.assert_allclose(best.final, cosines, atol=1e-7)
    assert best.memory.tolist() == [0] * 10
    t = calibrated_threshold(best.final, 0.10)
    assert t == np.nextafter(best.final[8], np.inf) and abs(t - 0.9) < 1e-7
    assert false_rate_at(best.final, t) == 0.1 and false_rate_at(best.final, best.final[8]) == 0.2
    assert abs(calibrated_threshold(best.final, 0.2) - 0.8) < 1e-7
    assert abs(calibrated_threshold(best.final, 0.0) - 1.0) < 1e-7
    assert abs(calibrated_threshold(best.final, 0.15) - 0.9) < 1e-7  # floor(1.5) = 1


def test_probe_best_follows_the_spec_candidates_and_bonus():
    # A: raw 0.5, 1000 days old; B: raw 0.48, written today (+0.05)
    memories = np.array([unit(0.5, np.sqrt(1 - 0.25), 0), unit(0.48, 0, np.sqrt(1 - 0.48**2))])
    probe = np.array([[1.0, 0.0, 0.0]])
    ages = np.array([1000.0, 0.0])
    one = probe_best(probe, memories, ages, RetrievalSpec(candidates=1, bonus=0.05, tau_days=14))
    two = probe_best(probe, memories, ages, RetrievalSpec(candidates=2, bonus=0.05, tau_days=14))
    assert one.memory.tolist() == [0] and abs(one.final[0] - 0.5) < 1e-6  # B is no candidate
    assert two.memory.tolist() == [1] and abs(two.final[0] - 0.53) < 1e-6


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_probe_best_agrees_with_the_reference_retrieve(chunk):
    rng = np.random.default_rng(3)
    mem = rng.normal(size=(40, 5))
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    mem[7] = mem[3]  # a tie: the earlier memory wins it
    q = rng.normal(size=(6, 5))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    ages = rng.uniform(0, 60, size=40)
    spec = RetrievalSpec(candidates=4, bonus=0.1, tau_days=7)
    best = probe_best(q, mem, ages, spec, chunk=chunk)
    ids = tuple(f"m{i}" for i in range(40))
    for i in range(6):
        first = retrieve((q[i] @ mem.T).astype(np.float32).astype(np.float64), ages, ids, spec)[0]
        assert abs(best.final[i] - first.final) < 1e-6 and best.memory[i] == first.index


def test_bootstrap_is_seeded_and_brackets_the_scores():
    best = np.random.default_rng(0).uniform(0, 1, 200)
    a = bootstrap_threshold(best, 0.05, 300, seed=4)
    assert a == bootstrap_threshold(best, 0.05, 300, seed=4)
    assert best.min() <= a[0] <= calibrated_threshold(best, 0.05) <= a[1] <= np.nextafter(best.max(), 2)


def test_predicted_rate_by_hand():
    # Gumbel law (c = 0) loc 0.3, scale 0.05 for the max of 10 memories: P(max of 10 < 0.3) = e^-1
    law = MaxLaw(0.0, 0.3, 0.05, 10)
    own = np.array([0.2, 0.31])  # the second probe already reaches 0.3 on its own
    assert abs(predicted_rate([law, law], own, 0.3, 10) - (1 - np.exp(-1) + 1) / 2) < 1e-12
    # 100 memories = 10 blocks: P(max < 0.3) = exp(-10 e^0) = e^-10
    assert abs(predicted_rate([law], own[:1], 0.3, 100) - (1 - np.exp(-10))) < 1e-12
    assert predicted_rate([law], own[:1], 0.3, 0) == 0.0  # no new memories: the measured rate


def unit_rows(rng: np.random.Generator, n: int, dim: int = 8) -> np.ndarray:
    """``n`` random unit vectors: stand-ins for embeddings."""
    x = rng.normal(size=(n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.slow
def test_calibrate_on_a_synthetic_store():
    rng = np.random.default_rng(1)
    n = 30
    dataset = make_dataset(rng.integers(0, 30 * 86400, n), [], [], [])  # a store without questions
    mem = unit_rows(rng, n)
    probe_set = load_probes()
    probes = unit_rows(rng, len(probe_set.probes))
    basis = unit_rows(rng, 1000)
    spec = RetrievalSpec(bonus=0.02, tau_days=14, threshold=0.9)
    cal = calibrate(
        problem_of(dataset, spec, memories=mem),
        probe_set,
        probes,
        basis=(basis, rng.uniform(0, 365, 1000), "noise"),
        n_boot=50,
    )
    s = cal.summary
    finals = [p["best_final"] for p in cal.probes]
    assert finals == sorted(finals, reverse=True) and len(finals) == 216
    assert s["threshold"] == np.nextafter(finals[2], np.inf)  # floor(0.01 * 216) = 2 may reach it
    assert s["false_rate_at_threshold"] == 2 / 216
    now, ten, hundred = cal.scale
    assert (now["factor"], ten["memories"], hundred["memories"]) == (1, 300, 3000)
    assert now["false_rate_at_calibrated"] == s["false_rate_at_threshold"]  # measured, not fitted
    assert (
        now["false_rate_at_calibrated"]
        <= ten["false_rate_at_calibrated"]
        <= hundred["false_rate_at_calibrated"]
    )
    assert s["threshold"] <= ten["threshold_for_target"] <= hundred["threshold_for_target"]
    assert sum(a["probes"] for a in cal.attractors) == 216
    assert cal.labelled is None


def test_labelled_comparison_by_hand():
    ds = make_dataset([0, 0, 0], ["nohit", "hit", "hit"], [-1, 1, 2], [[], [], []])
    raw = np.array([[0.3, 0.2, 0.1], [0.1, 0.6, 0.2], [0.5, 0.1, 0.35]])
    spec = RetrievalSpec(bonus=0.0, threshold=0.45).with_reference(REF)
    lab = compare_labels(ds, score_table(ds, raw), spec, 0.4, "en")
    assert lab["nohit_max"] == 0.3 and abs(lab["headroom"] - 0.15) < 1e-12
    assert lab["labelled_threshold"] == np.nextafter(0.3, 1)
    assert (lab["current_kept"], lab["current_cut"], lab["current_not_candidate"]) == (1, 1, 0)
    assert [(c["question"], c["current"], c["final"]) for c in lab["cut"]] == [("q2", "m2", 0.35)]
    # q1's current (0.6) is injected at either threshold, q2's (0.35) at neither
    assert (lab["current_injected_at_spec"], lab["current_injected_at_calibrated"]) == (1, 1)
    assert lab["nohit_false_rate_at_calibrated"] == 0.0


def test_calibrate_refuses_bad_options(capsys):
    assert main(["calibrate", "--false-rate", "1.5"]) == 2
    assert "memlab: error:" in capsys.readouterr().err
    assert main(["calibrate", "--qdrant-path", "/nonexistent", "--collection", "c"]) == 2
    assert "--date-field is needed with --qdrant-path/--qdrant-url" in capsys.readouterr().err


@pytest.mark.model
def test_calibrate_seed16_json_agrees_with_evaluate(capsys, cache_dir, seed, embedded):
    from memlab.tuning.evaluate import evaluate

    args = [
        "calibrate",
        "--dataset",
        "seed16",
        "--cache-dir",
        str(cache_dir),
        "--boot",
        "100",
        "--pool",
        "500",
    ]
    assert main([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    finals = [p["best_final"] for p in doc["probes"]]
    assert doc["threshold"] == np.nextafter(finals[2], 1) and doc["probes_scored"] == 216
    assert doc["probe_set_version"] == "1.0.0" and [r["factor"] for r in doc["scale"]] == [1, 10, 100]
    # the labelled part scores the questions with numpy; evaluate scores them through Qdrant, at
    # the default model's threshold, which calibrate uses too when --threshold is not given
    from memlab.scores.sources import score_defaults

    ev = evaluate(seed, embedded, RetrievalSpec(threshold=score_defaults(embedded, seed).threshold))
    assert abs(doc["labelled"]["headroom"] - ev.headroom) < 1e-5
    assert doc["labelled"]["current_injected_at_spec"] == sum(
        any(c.injected and c.memory_id == q.current for c in r.candidates)
        for q, r in zip(seed.questions, ev.results, strict=True)
        if q.current
    )


@pytest.mark.model
def test_calibrate_a_qdrant_collection_reuses_its_vectors(tmp_path, capsys, cache_dir, seed):
    from test_import import make_collection

    from memlab.embedding.embedder import Embedder

    vecs = Embedder(cache_dir=cache_dir).encode_documents([m.text("en") for m in seed.memories])
    points = [
        (v.tolist(), {"when": m.date.isoformat(), "body": m.text("en")})
        for v, m in zip(vecs, seed.memories, strict=True)
    ]
    make_collection(tmp_path / "q", points, dim=vecs.shape[1])
    # bonus 0: the imported collection's reference date is its newest memory, a day before seed16's
    common = [
        "--cache-dir",
        str(cache_dir),
        "--bonus",
        "0",
        "--boot",
        "50",
        "--pool",
        "500",
        "--format",
        "json",
    ]
    assert main(["calibrate", "--dataset", "seed16", *common]) == 0
    from_dataset = json.loads(capsys.readouterr().out)
    qdrant = ["--qdrant-path", str(tmp_path / "q"), "--collection", "mem", "--date-field", "when"]
    assert (
        main(["calibrate", *qdrant, "--text-field", "body", "--model", "multilingual-e5-small", *common]) == 0
    )
    from_qdrant = json.loads(capsys.readouterr().out)
    assert abs(from_qdrant["threshold"] - from_dataset["threshold"]) < 1e-6
    assert from_qdrant["labelled"] is None and from_qdrant["memories"] == 16


def test_probes_and_attractors_show_the_memories_in_the_language_embedded():
    from dataclasses import replace

    from memlab.datasets.schema import load_dataset

    rng = np.random.default_rng(2)
    seed = load_dataset("seed16")
    mem = unit_rows(rng, len(seed.memories))
    probe_set = load_probes()
    probe_set = replace(probe_set, probes=probe_set.probes[:24])  # a fit per probe: 24 show the texts
    probes = unit_rows(rng, len(probe_set.probes))
    basis = unit_rows(rng, 1000)
    cal = calibrate(
        problem_of(seed, RetrievalSpec(), memories=mem, lang="ja"),
        probe_set,
        probes,
        basis=(basis, rng.uniform(0, 365, 1000), "noise"),
        n_boot=20,
    )
    by_id = {m.id: m for m in seed.memories}
    assert all(p["memory_text"] == by_id[p["memory"]].text("ja") for p in cal.probes if p["memory"])
    assert all(a["text"] == by_id[a["memory"]].text("ja") for a in cal.attractors)
    assert cal.probes[0]["memory_text"] != by_id[cal.probes[0]["memory"]].text("en")
