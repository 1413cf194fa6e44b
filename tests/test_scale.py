"""Scale study pieces: distractors, exact chunked top-k, the extreme-value model."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.core.errors import UnknownNameError
from memlab.core.spec import RetrievalSpec, recency_weight, rescore
from memlab.studies.scale import (
    GaussianVectors,
    MaxLaw,
    TopK,
    distractor_texts,
    max_quantile,
    n_reaching,
    stream,
)

REF = np.datetime64("2026-09-10")


def test_distractors_are_seeded_dated_and_unique():
    a, ages_a = distractor_texts(500, REF, seed=3)
    b, ages_b = distractor_texts(500, REF, seed=3)
    c, _ = distractor_texts(500, REF, seed=4)
    assert a == b and np.array_equal(ages_a, ages_b) and a != c
    assert len(set(a)) == 500
    assert a[0][:12] == f"{REF - np.timedelta64(int(ages_a[0]), 'D')}: "
    assert ages_a.min() >= 0 and ages_a.max() < 365


def test_japanese_distractors_are_japanese_and_drawn_the_same_way():
    _, ages_en = distractor_texts(300, REF, seed=3)
    ja, ages_ja = distractor_texts(300, REF, seed=3, lang="ja")
    assert np.array_equal(ages_en, ages_ja) and len(set(ja)) == 300
    assert all(t[10:].startswith(": ユーザー") and t.endswith("。") for t in ja)
    assert not any(c.isascii() and c.isalpha() for t in ja for c in t[12:])  # no English left
    with pytest.raises(UnknownNameError, match=r"^unknown distractor language 'fr'; available: en, ja$"):
        distractor_texts(5, REF, lang="fr")


def test_chunked_top_k_is_exact_whatever_the_chunk():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(5000, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)  # cosines, as stored
    ages = rng.uniform(0, 60, 5000)
    q = rng.normal(size=(7, 16)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    spec = RetrievalSpec(candidates=8, bonus=0.3, tau_days=5)
    brute_raw = (q @ vecs.T).astype(np.float64)
    top8 = np.argsort(-brute_raw, axis=1)[:, :8]
    want = np.take_along_axis(rescore(brute_raw, recency_weight(ages, 5.0), 0.3), top8, axis=1).max(axis=1)
    for chunk in (1, 333, 5000):
        t = TopK(q, 8)
        for s in range(0, 5000, chunk):
            t.add(vecs[s : s + chunk], ages[s : s + chunk])
        np.testing.assert_allclose(t.best_final(spec), want, rtol=0, atol=1e-6)


def test_model_vectors_are_unit_and_match_the_pool_moments():
    rng = np.random.default_rng(1)
    pool = rng.normal(loc=0.3, size=(4000, 8))
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    model = GaussianVectors.fit(pool)
    draws = model.sample(20000, np.random.default_rng(2))
    np.testing.assert_allclose(np.linalg.norm(draws, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(draws.mean(axis=0), pool.mean(axis=0), atol=0.02)


def test_stream_uses_the_real_pool_first_then_the_model():
    real = (np.ones((10, 4), dtype=np.float32), np.zeros(10))
    model = GaussianVectors(np.zeros(4), np.eye(4))
    chunks = list(stream(real, model, 25, chunk=4))
    assert [len(c[0]) for c in chunks] == [4, 4, 2, 4, 4, 4, 3]
    assert all((c[0] == 1).all() for c in chunks[:3]) and not (chunks[3][0] == 1).all()
    with pytest.raises(ValueError) as e:
        list(stream(real, None, 25))
    assert str(e.value) == "only 10 real vectors for N = 25, and no vector model to draw more"


def test_extreme_value_prediction_of_the_maximum_of_normals():
    """The fitted law predicts the median maximum of N normal scores within 0.1 standard deviation
    of one score (about 0.005 in cosine units here), 10 and 100 blocks out; checked by simulation."""
    rng = np.random.default_rng(7)
    law = MaxLaw.fit(rng.normal(size=20000), block=100)
    for n in (1000, 10000):
        sims = rng.normal(size=(400, n)).max(axis=1)
        assert abs(max_quantile([law], n, 0.5) - np.median(sims)) < 0.1
        lo, hi = max_quantile([law], n, 0.05), max_quantile([law], n, 0.95)
        assert 0.85 <= np.mean((sims >= lo) & (sims <= hi)) <= 0.97
    # n_reaching inverts the median: the N whose median maximum is 3.5
    n = n_reaching([law], 3.5)
    assert abs(max_quantile([law], n, 0.5) - 3.5) < 1e-6
    assert n_reaching([law], 50.0) is None  # beyond 1e15
    with pytest.raises(ValueError) as e:
        MaxLaw.fit(np.zeros(500), block=100)  # 5 blocks
    assert str(e.value) == "need at least 1000 pool scores to fit block maxima of 100, got 500"


@pytest.mark.model
def test_scale_command_json(capsys, cache_dir, seed, embedded):
    code = main(
        [
            "scale",
            "--source",
            "embedded",
            "--cache-dir",
            str(cache_dir),
            "--pool",
            "1000",
            "--n",
            "16,116,1016,5016",
            "--format",
            "json",
        ]
    )
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["n"] for r in rows] == [16, 116, 1016, 5016]
    # at N = 16 it is the fixture alone: the embedded evaluation's criterion (a) value
    from memlab.scores.sources import score_defaults
    from memlab.tuning.evaluate import evaluate

    threshold = score_defaults(embedded, seed).threshold  # the default model's, as the command uses it
    assert threshold == 0.845
    spec = RetrievalSpec(threshold=threshold)
    (a,) = [c for c in evaluate(seed, embedded, spec).criteria if c.name == "a"]
    assert rows[0]["nohit_max"] == pytest.approx(a.value, abs=1e-6)
    assert rows[0]["nohit_max_real"] == rows[0]["nohit_max"] > 0
    assert all(b["nohit_max"] >= a["nohit_max"] for a, b in itertools.pairwise(rows))
    assert rows[3]["nohit_max_real"] is None  # beyond the real pool: model vectors only
    assert all(abs(r["headroom"] - (threshold - r["nohit_max"])) < 1e-12 for r in rows)
    assert len({r["n_zero_headroom"] for r in rows}) == 1 and rows[0]["n_zero_headroom"] > 16
    # the text table of the same study
    code = main(
        ["scale", "--source", "embedded", "--cache-dir", str(cache_dir), "--pool", "1000", "--n", "16"]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[0].startswith("basis: ") and lines[1].startswith("spec: ")
    assert "threshold=0.845" in lines[1]


def test_scale_needs_vectors(capsys):
    code = main(["scale", "--source", "published", "--n", "16"])
    assert code == 2
    assert capsys.readouterr().err.startswith("memlab: error: the scale study needs vectors")


def test_own_best_uses_the_spec_candidate_selection():
    # raw 0.5 (10 days old), 0.4 and 0.1 (today); bonus 0.3, tau 1 day. With one candidate the
    # spec sees only memory 0: 0.5 + 0.3 e^-10. A maximum over all memories would say 0.7.
    from memlab.studies.scale import own_best_final

    raw, ages = np.array([0.5, 0.4, 0.1]), np.array([10.0, 0.0, 0.0])
    one = RetrievalSpec(candidates=1, bonus=0.3, tau_days=1.0)
    assert own_best_final(raw, ages, one) == pytest.approx(0.5 + 0.3 * np.exp(-10))
    assert own_best_final(raw, ages, RetrievalSpec(candidates=2, bonus=0.3, tau_days=1.0)) == pytest.approx(
        0.7
    )
    assert own_best_final(np.array([np.nan, np.nan]), np.zeros(2), one) == -np.inf


def test_sizes_are_checked_against_the_dataset_before_anything_is_embedded(seed):
    from memlab.core.errors import InputError
    from memlab.studies.scale import scale_sizes

    assert scale_sizes(seed, "16,100,1000", 500) == [16, 100, 1000]
    with pytest.raises(InputError) as e:
        scale_sizes(seed, "10,100", 500)
    assert str(e.value) == (
        "n_range: 10 is below the 16 memories of dataset 'seed16' (every N counts them): "
        "start n_range at 16 or above"
    )
    with pytest.raises(InputError, match=r"^pool: expected an integer >= 100, got 50$"):
        scale_sizes(seed, "16,100", 50)


def test_questions_asked_long_before_the_reference_date_see_whole_blocks_of_distractors():
    """A long conversation: a no-hit question asked two years before the reference date (at an
    early session). Distractors are dated before each question's own date, so it sees all of them
    (no block of minus infinity, no non-finite fit), and what it sees at N is what a hand-made
    top-k over the pool, aged from its own date, gives."""
    from helpers import make_dataset, problem_of

    from memlab.core.spec import best_final
    from memlab.studies.scale import scale_study

    rng = np.random.default_rng(5)
    day = 86_400
    ds = make_dataset(
        [800 * day, 10 * day, 1 * day],
        ["nohit", "nohit", "hit"],
        [-1, -1, 2],
        [[], [], []],
        asked_seconds_ago=[790 * day, 0, 0],
    )
    mem = rng.normal(size=(3, 16))
    qs = rng.normal(size=(3, 16))
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    spec = RetrievalSpec(candidates=4, bonus=0.05, tau_days=14.0, threshold=0.6)
    problem = problem_of(ds, spec, memories=mem, questions=qs)
    pool = rng.normal(size=(400, 16)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    pool_ages = rng.integers(0, 365, size=400).astype(np.float64)
    result = scale_study(problem, [3, 203, 403], (pool, pool_ages), block=10)
    rows = {r["n"]: r for r in result.rows}
    assert all(np.isfinite(r[k]) for r in result.rows for k in ("predicted_nohit_max", "predicted_lo"))
    # the early question alone, at N = 3 + 400 (the whole real pool): by hand
    early = np.concatenate([[qs[0] @ mem[0]], pool @ qs[0].astype(np.float32)])
    ages = np.concatenate([[10.0], pool_ages])  # its own memory is 10 days old when it is asked
    want_early = float(best_final(early[None, :].astype(np.float64), ages[None, :], spec)[0])
    late = np.concatenate([qs[1] @ mem.T, pool @ qs[1].astype(np.float32)])
    late_ages = np.concatenate([[800.0, 10.0, 1.0], pool_ages])
    want_late = float(best_final(late[None, :].astype(np.float64), late_ages[None, :], spec)[0])
    assert rows[403]["nohit_max_real"] == pytest.approx(max(want_early, want_late), abs=1e-6)
