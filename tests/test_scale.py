"""Scale study pieces: distractors, exact chunked top-k, the extreme-value model."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

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
    doc = json.loads(capsys.readouterr().out)
    rows = doc["rows"]
    assert code == 0 and [r["n"] for r in rows] == [16, 116, 1016, 5016]
    # every hit question is a row of its own (the crossing in words, N null when never)
    assert {h["question"] for h in doc["hits"]} >= {"H2", "C1"}
    assert all(h["crossing"] in ("now", "never", "predicted") for h in doc["hits"])
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
    assert doc["n_zero_headroom"] > 16 and doc["n0"] == 16
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


@pytest.mark.parametrize(
    ("c", "level", "want"),
    [
        # Gumbel (c = 0), loc 0.8, scale 0.01, block 10: N = 10 ln 2 exp((level - 0.8) / 0.01)
        (0.0, 0.80, 10 * np.log(2)),
        (0.0, 0.81, 10 * np.log(2) * np.e),
        (0.0, 0.78, 10 * np.log(2) * np.exp(-2)),
        # bounded (c = 0.5): bound 0.8 + 0.01 / 0.5 = 0.82; N = 10 ln 2 / (1 - 0.5 (level - 0.8) / 0.01)^2
        (0.5, 0.81, 10 * np.log(2) / 0.25),
        (0.5, 0.815, 10 * np.log(2) / 0.25**2),
        (0.5, 0.8201, np.inf),  # past the bound: never
        (0.5, 0.90, np.inf),
    ],
)
def test_median_crossing_in_closed_form_on_paper(c, level, want):
    from memlab.studies.scale import median_crossing

    law = MaxLaw(c, 0.8, 0.01, 10)
    got = median_crossing(law, level)
    assert got == pytest.approx(want, rel=1e-12)
    if np.isfinite(want):  # the law's own median there is the level, and the numeric search agrees
        assert max_quantile([law], got, 0.5) == pytest.approx(level, abs=1e-9)
        if got >= 1:
            assert n_reaching([law], level) == pytest.approx(got, rel=1e-6)
    else:
        assert n_reaching([law], level) is None
    assert law.bound == (pytest.approx(0.82) if c else np.inf)


def test_default_sizes_start_at_the_datasets_own_size(seed):
    """The default --n was 16,100,...: below any dataset of more than 16 memories. Empty now: the
    dataset's own size, then each default size above it."""
    from helpers import make_dataset

    from memlab.app.parameters import parameter
    from memlab.studies.scale import scale_sizes

    big = make_dataset([86_400] * 150, ["nohit"], [-1], [[]])
    default = parameter("n_range").default
    assert scale_sizes(big, default, 500) == [150, 1000, 10_000, 100_000, 1_000_000]
    assert scale_sizes(seed, default, 500) == [16, 100, 1000, 10_000, 100_000, 1_000_000]
    huge = SimpleNamespace(name="huge", memories=range(2_000_000))  # all the sizes need: its count
    assert scale_sizes(huge, default, 500) == [2_000_000]


def _study(rows=(), n_zero=None, hits=(), nohit_bound=np.inf, n0=16):
    from helpers import REF as REF_DATE

    from memlab.studies.scale import ScaleStudy

    spec = RetrievalSpec(threshold=0.845).with_reference(REF_DATE)
    return ScaleStudy(tuple(rows), n_zero, tuple(hits), spec, "b", nohit_bound, n0)


def _hit(q, final, crossing, n=None, bound=0.9, lost=None):
    return {
        "question": q,
        "current": f"m_{q}",
        "current_final": final,
        "margin": final - 0.845,
        "crossing": crossing,
        "lost_now": "below the threshold" if crossing == "now" and lost is None else lost,
        "n_distractor_passes_current": n,
        "distractor_bound": bound,
    }


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("study", "want"),
    [
        (  # a current memory below the threshold is lost now, not "beyond 1e15"
            _study(hits=[_hit("H1", 0.84, "now", None)]),
            "  H1: current m_H1 at 0.840 (margin -0.005); already below the threshold at N = 16: "
            "not injected now",
        ),
        (  # above the threshold but outside the candidates, or ranked past inject: lost now too
            _study(hits=[_hit("H5", 0.86, "now", None, lost="not a candidate")]),
            "  H5: current m_H5 at 0.860 (margin +0.015); not among the top 8 by raw score at N = 16: "
            "not injected now",
        ),
        (
            _study(hits=[_hit("H6", 0.86, "now", None, lost="ranked past inject")]),
            "  H6: current m_H6 at 0.860 (margin +0.015); ranked past the first 3 at N = 16: not injected now",
        ),
        (  # above the distractors' bound: never, with the bound
            _study(hits=[_hit("H2", 0.85, "never", None, 0.832)]),
            "  H2: current m_H2 at 0.850 (margin +0.005); a distractor never passes it "
            "(the fitted best distractor is bounded at 0.832)",
        ),
        (
            _study(hits=[_hit("H3", 0.853, "predicted", 471.2)]),
            "  H3: current m_H3 at 0.853 (margin +0.008); a distractor passes it at N ~ 471",
        ),
        (  # past 1e15 the closed form still gives a number: in powers of ten
            _study(hits=[_hit("H4", 0.853, "predicted", 3.4e21)]),
            "  H4: current m_H4 at 0.853 (margin +0.008); a distractor passes it at N ~ 3.4e+21",
        ),
        (  # the dataset's own no-hit memories reach the threshold: the headroom is gone now
            _study(n_zero=16.0),
            "predicted N where the headroom reaches zero (median): now (N = 16: the dataset's own "
            "no-hit memories reach the threshold)",
        ),
        (
            _study(n_zero=None, nohit_bound=0.83),
            "predicted N where the headroom reaches zero (median): never (the fitted no-hit maximum "
            "is bounded at 0.830, below the threshold)",
        ),
        (_study(n_zero=6600.4), "predicted N where the headroom reaches zero (median): 6,600"),
        (_study(n_zero=None), "predicted N where the headroom reaches zero (median): beyond 1e15"),
    ],
)
def test_scale_text_says_now_never_or_when(study, want):
    from memlab.app.cli.studies import scale_text

    assert want in scale_text(study).splitlines()


def test_scale_study_crossings_now_never_or_predicted_and_json_keeps_every_hit():
    """Three hit questions: one whose current memory is below the threshold (now, whatever the
    distractors do), two whose current memory is the question's own vector (raw 1.0, above any
    bound random distractors reach: never). Every hit is in the JSON, a "never" one with a null N."""
    from helpers import make_dataset, problem_of

    from memlab.output.io import json_ready
    from memlab.studies.scale import scale_study

    rng = np.random.default_rng(3)
    day = 86_400
    ds = make_dataset([5 * day] * 4, ["nohit", "hit", "hit", "hit"], [-1, 1, 2, 3], [[], [], [], []])
    mem = rng.normal(size=(4, 16))
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    qs = mem.copy()
    qs[1] = 0.5 * mem[1] + rng.normal(size=16)  # its current memory well below the threshold
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    spec = RetrievalSpec(candidates=4, bonus=0.0, tau_days=14.0, threshold=0.9)
    problem = problem_of(ds, spec, memories=mem, questions=qs)
    pool = rng.normal(size=(1000, 16)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    result = scale_study(problem, [4, 504], (pool, np.zeros(1000)), block=10)
    hits = {h["question"]: h for h in result.hits}
    assert set(hits) == {"q1", "q2", "q3"} and result.n0 == 4
    assert hits["q1"]["margin"] < 0 and hits["q1"]["crossing"] == "now"
    assert hits["q1"]["lost_now"] == "below the threshold" and hits["q2"]["lost_now"] is None
    for q in ("q2", "q3"):  # raw 1.0: above the threshold and above the bound random vectors reach
        h = hits[q]
        assert h["current_final"] == pytest.approx(1.0) and h["crossing"] == "never"
        assert h["n_distractor_passes_current"] is None and h["distractor_bound"] < 1.0
    # the no-hit question's own memory is its own vector (raw 1.0 >= 0.9): no headroom now
    assert result.n_zero_headroom == 4
    doc = json.loads(json.dumps(json_ready(result.to_dict())))
    assert [h["question"] for h in doc["hits"]] == ["q1", "q2", "q3"]
    assert [r["n"] for r in doc["rows"]] == [4, 504] and doc["n0"] == 4
    assert doc["hits"][1]["n_distractor_passes_current"] is None


@pytest.mark.parametrize(
    ("raw", "current", "want"),
    [
        # today's memories, no bonus; 3 candidates, 2 injected, threshold 0.9
        ([0.95, 0.94, 0.93, 0.92], 0, None),  # first: injected
        ([0.95, 0.94, 0.93, 0.92], 2, "ranked past inject"),  # reaches 0.9, third after the re-sort
        ([0.95, 0.94, 0.93, 0.92], 3, "not a candidate"),  # fourth by raw: outside the top 3
        ([0.95, 0.94, 0.85, 0.20], 2, "below the threshold"),  # a candidate, under 0.9
    ],
)
def test_lost_now_by_hand(raw, current, want):
    from memlab.studies.scale import lost_now

    spec = RetrievalSpec(candidates=3, inject=2, threshold=0.9, bonus=0.0)
    assert lost_now(np.array(raw), np.zeros(4), ("a", "b", "c", "d"), spec, current) == want
