"""The extractor prior: key centroids and the event direction learned from the extractor's labels."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from memlab.drift.arrays import prepare_streams
from memlab.drift.extractor_prior import KEY_TRUST, event_score, fit_extractor_prior, refiled_keys
from memlab.drift.memory_systems import READ_SYSTEMS, WRITE_POLICIES
from memlab.drift.streams import Fact, Query, Stream
from memlab.drift.study import run_stream

D = date(2026, 1, 1)


def unit(*angles_deg):
    return np.array([[np.cos(np.radians(a)), np.sin(np.radians(a))] for a in angles_deg])


def test_refiling_by_the_learned_centroids():
    a, b = ("city", "profile"), ("job", "profile")
    model = fit_extractor_prior(unit(0, 10, 90, 100), [a, a, b, b])
    assert model.keys == (a, b)
    assert model.centroids @ np.array([1.0, 0.0]) == pytest.approx(
        [np.cos(np.radians(5)), np.cos(np.radians(95))]
    )
    # 20 deg, filed under job: cos 15 deg to the city centroid against cos 75 deg + the bonus
    # 50 deg sits at 45 deg from both centroids: the bonus keeps it where it was filed
    # an event and a type the fit never saw keep their keys
    keys = [b, b, ("city", "event"), ("x", "routine")]
    assert refiled_keys(model, unit(20, 50, 0, 0), keys) == [a, b, ("city", "event"), ("x", "routine")]
    assert KEY_TRUST > 0


def test_event_score_is_0_for_the_fits_facts_and_1_for_its_events():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    x[20:, 2] += 3.0  # the events lie along the third axis
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    keys = [("city", "profile")] * 20 + [("city", "event")] * 20
    model = fit_extractor_prior(x, keys)
    score = event_score(model, x)
    assert score[:20].mean() == pytest.approx(0.0, abs=1e-12)
    assert score[20:].mean() == pytest.approx(1.0)
    # no events in the fit: no direction, every score 0
    flat = fit_extractor_prior(x[:20], keys[:20])
    assert not flat.event_direction.any() and not event_score(flat, x).any()


def test_learned_supersession_lets_a_distractor_that_reads_like_an_event_retire_nothing():
    # city facts along the first axis, events (about other people) along the second; a distractor
    # typed like a city fact reads like the events
    facts = (
        Fact("I live in Ames.", "city", "profile", "Ames", D, "statement"),
        Fact("My aunt gave a talk about chess.", "", "event", "", D, "distractor", "hobby"),
        Fact("A coworker got back from Paris.", "", "event", "", D, "distractor", "city"),
        Fact("I moved to Chicago.", "city", "profile", "Chicago", D, "correction"),
        Fact("My cousin flew in from Denver.", "", "profile", "", D, "distractor", "city"),
    )
    vectors = dict(zip((f.text for f in facts), unit(0, 85, 95, 10, 80), strict=True))

    def encode(texts, role):
        return np.array([vectors.get(t, unit(5)[0]) for t in texts])

    def words(texts):
        return np.array([len(t.split()) for t in texts])

    q = Query("Which city do I live in now?", "city", "Chicago", ("Ames",), date(2026, 2, 1))
    (a,), _ = prepare_streams([Stream(0, "T", facts, (q,), date(2026, 2, 1))], encode, words)
    assert a.event_score[4] > 0.8 and a.event_score[3] < 0.2  # the typed distractor reads like an event
    w = WRITE_POLICIES["store-everything"].write(a.memory_cosine, a.key)
    base = {"alpha": 1.0, "beta": 0.0, "gamma": 0.0, "delta": 0.0, "recency_half_life_days": 60.0}
    content = {"key_trust": 2.0, "supersede_cosine": 1.01, "retire_gate": -np.inf, "exempt_affinity": 0.0}
    params = {
        k: np.array([v])
        for k, v in {
            **base,
            **content,
            "half_life_scale": 1.0,
            "reinforce": 0,
            "retired_penalty": np.inf,
        }.items()
    }

    def measured(system, **extra):
        p = {**params, **{k: np.array([v]) for k, v in extra.items()}}
        recall, stale, _ = run_stream(a, w, READ_SYSTEMS[system], p, np.array([1000]))
        return float(recall[0, 0]), float(stale[0, 0])

    assert measured("content-supersession") == (0.0, 0.0)  # the distractor retires Chicago
    assert measured("learned-supersession", event_threshold=0.5) == (1.0, 0.0)  # it retires nothing
    assert measured("learned-supersession", event_threshold=np.inf) == (0.0, 0.0)  # never an event


def two_streams():
    facts = (
        Fact("I live in Ames.", "city", "profile", "Ames", D, "statement", "city"),
        Fact("My aunt gave a talk about chess.", "", "event", "", D, "distractor", "hobby"),
        Fact("I moved to Chicago.", "city", "profile", "Chicago", D, "correction", "city"),
        Fact("My cousin flew in from Denver.", "", "profile", "", D, "distractor", "city"),
        Fact("My cousin flew in from Boston.", "", "profile", "", D, "distractor", "city"),
    )
    vectors = dict(zip((f.text for f in facts), unit(0, 85, 10, 80, 81), strict=True))
    q = Query("Which city do I live in now?", "city", "Chicago", ("Ames",), date(2026, 2, 1))
    first = Stream(0, "T", facts[:3], (q,), date(2026, 2, 1))
    second = Stream(1, "T", facts, (q,), date(2026, 2, 1))

    def encode(texts, role):
        return np.array([vectors.get(t, unit(5)[0]) for t in texts])

    def words(texts):
        return np.array([len(t.split()) for t in texts])

    return first, second, encode, words, vectors


def test_the_model_is_fit_on_the_first_fit_streams_only():
    first, second, encode, words, vectors = two_streams()
    arrays, _ = prepare_streams([first, second], encode, words, fit_streams=1)
    alone = fit_extractor_prior(
        np.stack([vectors[f.text] for f in first.facts]), [f.key for f in first.facts]
    )
    expected = event_score(alone, np.stack([vectors[f.text] for f in second.facts]))
    assert np.array_equal(arrays[1].event_score, expected)
    with pytest.raises(ValueError, match=r"^fit_streams: expected 1 to 2 \(the streams given\), got 0$"):
        prepare_streams([first, second], encode, words, fit_streams=0)
    unkeyed = Stream(2, "T", (Fact("Hello.", "", "event", "", D, "distractor"),), (), date(2026, 2, 1))
    with pytest.raises(
        ValueError, match=r"^stream 2, fact 0: no topic key \(filed_topic and topic are both empty\)$"
    ):
        prepare_streams([unkeyed], encode, words)


def test_memory_systems_get_no_truth_and_flagged_memories_retire_each_other_never():
    from memlab.drift.study import scene_at

    first, second, encode, words, _ = two_streams()
    arrays, _ = prepare_streams([first, second], encode, words, fit_streams=1)
    a = arrays[1]
    w = WRITE_POLICIES["store-everything"].write(a.memory_cosine, a.key)
    last = np.broadcast_to(a.created, (1, 1, len(a.created)))
    scene = scene_at(a, w, len(a.created), a.asked, a.query_cosine, last)
    assert scene.oracle_topic is None and scene.oracle_supersedes is None and scene.oracle_key is None
    assert scene_at(a, w, len(a.created), a.asked, a.query_cosine, last, truth=True).oracle_topic is not None
    # both cousins read like the event (80 and 81 deg, the event at 85); at cosine 0.9998 the
    # same-type pass (0.6) would let the newer retire the older if they shared a type
    assert min(a.event_score[3:]) > 0.5
    params = {
        k: np.array([v])
        for k, v in {
            "alpha": 1.0,
            "beta": 0.0,
            "gamma": 0.0,
            "delta": 0.0,
            "recency_half_life_days": 60.0,
            "half_life_scale": 1.0,
            "reinforce": 0,
            "key_trust": 2.0,
            "supersede_cosine": 0.6,
            "retire_gate": -np.inf,
            "exempt_affinity": 0.0,
            "retired_penalty": np.inf,
            "event_threshold": 0.5,
        }.items()
    }
    score = READ_SYSTEMS["learned-supersession"].score(scene, params)[0, 0, 0]
    # Ames is retired by Chicago; Chicago and both cousins stand
    assert np.isinf(score[0]) and np.isfinite(score[[2, 3, 4]]).all()
