"""Drifting facts: generator, write policies, read systems, packing and metrics, on cases small
enough to check on paper; then the benchmark end to end with a bag-of-words encoder."""

from __future__ import annotations

import json
import zlib
from datetime import date

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.core.spec import RetrievalSpec, retrieve
from memlab.drift.arrays import prepare_streams
from memlab.drift.content_supersession import centroid_affinity, content_keys, content_retired
from memlab.drift.intervals import bootstrap_ci, frontier, paired_bootstrap_ci
from memlab.drift.memory_systems import (
    READ_SYSTEMS,
    WRITE_POLICIES,
    Scene,
    effective_salience,
    expand_grid,
    grid_columns,
    half_life_decay,
    multi_factor_score,
    pack,
    read_system,
    reinforce,
    superseded,
    write_policy,
)
from memlab.drift.signals import auc, event_transfer, signal_separation
from memlab.drift.streams import (
    TOPICS,
    Fact,
    Query,
    Stream,
    check_disjoint,
    generate_stream,
    ground_truth,
    parse_seed_range,
)
from memlab.drift.study import (
    context_metrics,
    drift_study,
    run_stream,
)

D = date(2026, 1, 1)


def fact(text, topic, value, kind="statement", type_="profile", filed=""):
    return Fact(text, topic, type_, value, D, kind, filed)


# ---------------------------------------------------------------------------------------------
# generator


def test_same_seed_same_stream_and_other_seeds_differ():
    assert generate_stream(7) == generate_stream(7)
    assert generate_stream(7) != generate_stream(8)
    assert generate_stream(7).facts != generate_stream(8).facts


@pytest.mark.parametrize("seed", range(20))
def test_generated_streams_are_consistent(seed):
    s = generate_stream(seed)
    assert [f.date for f in s.facts] == sorted(f.date for f in s.facts)
    assert all(f.date < s.asked for f in s.facts)
    truth = ground_truth(s.facts)
    assert [q.topic for q in s.queries] == sorted(truth, key=list(TOPICS).index)
    for q in s.queries:
        assert (q.current, q.stale_values) == truth[q.topic] and q.current not in q.stale_values
        assert q.date == s.asked
    for f in s.facts:
        assert f.kind in ("statement", "paraphrase", "repeat", "correction", "distractor")
        assert (f.value == "") == (f.kind == "distractor") == (f.topic == "")
        filed = TOPICS[f.key[0]]
        # misfiled facts keep their type; a distractor is an event, or typed like its topic's facts
        assert f.key[1] in (("event", filed.type) if f.kind == "distractor" else (filed.type,))
    repeats = [f for f in s.facts if f.kind == "repeat"]
    earlier = {(f.text, f.value) for f in s.facts if f.kind != "repeat"}
    assert all((f.text, f.value) in earlier for f in repeats)  # a repeat says an earlier fact again


def test_some_distractors_are_typed_like_facts():
    """Types are no oracle: about one distractor in five carries its topic's own type."""
    distractors = [f for seed in range(200) for f in generate_stream(seed).facts if f.kind == "distractor"]
    typed = sum(f.type != "event" for f in distractors) / len(distractors)
    assert 0.15 < typed < 0.25


def test_ground_truth_of_a_hand_built_stream():
    facts = [
        fact("I live in Ames.", "city", "Ames"),
        fact("I drink tea.", "drink", "tea", type_="preference"),
        Fact("My cousin flew in from Chicago.", "", "event", "", D, "distractor", "city"),
        fact("I moved to Chicago.", "city", "Chicago", "correction"),
        fact("I moved to Seattle.", "city", "Seattle", "correction"),
        fact("I moved to Chicago.", "city", "Chicago", "correction"),  # back again
    ]
    assert ground_truth(facts) == {"city": ("Chicago", ("Ames", "Seattle")), "drink": ("tea", ())}


# ---------------------------------------------------------------------------------------------
# write policies on four facts: Ames, tea, Ames said again word for word, then Chicago

KEYS = np.array([0, 1, 0, 0])  # city, drink, city, city
COS = np.array(
    [
        [1.0, 0.1, 1.0, 0.6],
        [0.1, 1.0, 0.1, 0.1],
        [1.0, 0.1, 1.0, 0.6],
        [0.6, 0.1, 0.6, 1.0],
    ]
)


def written(name, **params) -> tuple[list[bool], list[int]]:
    res = write_policy(name).write(COS, KEYS, **params)
    return res.admitted.tolist(), res.forgotten_by.tolist()


def test_store_everything_keeps_all_four():
    assert written("store-everything") == ([True, True, True, True], [4, 4, 4, 4])


def test_dedup_skips_the_exact_repeat_and_a_correction_too_close_to_call():
    assert written("dedup", duplicate_cosine=0.9) == ([True, True, False, True], [4, 4, 4, 4])
    # at 0.5 "I moved to Chicago" (0.6 to Ames) looks like a repeat: the gate drops the update
    assert written("dedup", duplicate_cosine=0.5) == ([True, True, False, False], [4, 4, 4, 4])


def test_contradiction_aware_admits_the_correction_and_retires_ames():
    # the repeat (cosine 1.0 >= 0.9 under the same key) is skipped; Chicago (0.6 < 0.9, same
    # key) is stored and forgets Ames: forgotten_by[0] = 3
    assert written("contradiction-aware", duplicate_cosine=0.9) == ([True, True, False, True], [3, 4, 4, 4])


def test_unknown_write_policy_lists_the_choices():
    with pytest.raises(
        ValueError,
        match="unknown write policy 'lru'; available: store-everything, dedup, contradiction-aware",
    ):
        write_policy("lru")


# ---------------------------------------------------------------------------------------------
# formulas


def test_half_life_decay_pinned_and_salience():
    assert half_life_decay(30.0, 30.0) == 0.5
    assert half_life_decay(0.0, 30.0) == 1.0
    assert half_life_decay(60.0, 30.0) == 0.25
    assert half_life_decay(10_000.0, np.inf) == 1.0  # pinned: never decays
    assert effective_salience(0.8, 180.0, 180.0) == 0.4


def test_multi_factor_score_by_hand():
    # 1*0.5 + 0.2*0.5 + 0.4*0.25 + 0.1*1.0 = 0.8
    assert multi_factor_score(0.5, 0.5, 0.25, 1.0, 1.0, 0.2, 0.4, 0.1) == pytest.approx(0.8)


def test_reinforce_on_recall_refreshes_last_access():
    assert reinforce(np.array([0.0, 5.0, 20.0]), np.array([True, False, True]), 10.0).tolist() == [10, 5, 20]


def scene(cosine, *, created, last_access, half_life, prior=None, now, keys=None, types=None, mm=None):
    m = len(created)
    later = np.triu(np.ones((m, m), dtype=bool), k=1)
    keys = np.arange(m) if keys is None else np.asarray(keys)
    types = np.arange(m) if types is None else np.asarray(types)
    return Scene(
        cosine=np.asarray(cosine, dtype=float),
        visible=np.ones(m, dtype=bool),
        now=now,
        created=np.asarray(created, dtype=float),
        position=np.arange(m),
        half_life=np.asarray(half_life, dtype=float),
        prior=np.ones(m) if prior is None else np.asarray(prior, dtype=float),
        newer_same_key=later & (keys[:, None] == keys[None, :]),
        newer_same_type=later & (types[:, None] == types[None, :]),
        memory_cosine=np.eye(m) if mm is None else np.asarray(mm, dtype=float),
        last_access=np.asarray(last_access, dtype=float).reshape(1, 1, m),
    )


def test_multi_factor_system_salience_reinforced_and_pinned():
    # a profile memory (half-life 180 days) recalled on day 90, asked on day 270: salience 0.5;
    # a pinned preference written on day 0: salience 1. Only cosine and salience weigh (beta 0).
    params = grid_columns(
        [
            {
                "alpha": 1.0,
                "beta": 0.0,
                "gamma": 1.0,
                "delta": 0.0,
                "recency_half_life_days": 14.0,
                "half_life_scale": 1.0,
            }
        ]
    )
    s = scene([[0.5, 0.4]], created=[0, 0], last_access=[90, 0], half_life=[180, np.inf], now=270.0)
    assert READ_SYSTEMS["multi-factor"].score(s, params)[0, 0, 0].tolist() == pytest.approx([1.0, 1.4])
    # never recalled: 0.5 ** (270 / 180)
    s = scene([[0.5, 0.4]], created=[0, 0], last_access=[0, 0], half_life=[180, np.inf], now=270.0)
    assert READ_SYSTEMS["multi-factor"].score(s, params)[0, 0, 0, 0] == pytest.approx(0.5 + 0.5**1.5)


def test_supersession_by_key_and_by_cosine():
    # 0, 1: (city, profile), 1 newer; 2 (drink, preference) and 3 (diet, preference), 3 newer,
    # cosine 0.7 between them (a drink update filed under diet)
    keys, types = np.array([0, 0, 1, 2]), np.array([0, 0, 1, 1])
    later = np.triu(np.ones((4, 4), dtype=bool), k=1)
    same_key = later & (keys[:, None] == keys[None, :])
    same_type = later & (types[:, None] == types[None, :])
    cos = np.eye(4)
    cos[2, 3] = cos[3, 2] = 0.7
    visible = np.ones(4, dtype=bool)
    assert superseded(visible, same_key, same_type, cos, 0.6).tolist() == [True, False, True, False]
    assert superseded(visible, same_key, same_type, cos, 0.8).tolist() == [True, False, False, False]
    assert superseded(visible, same_key, same_type, cos, np.array([0.6, 0.8])).tolist() == [
        [True, False, True, False],
        [True, False, False, False],
    ]
    # the newer memory not visible (not yet said, or not stored): nothing supersedes memory 0
    hidden = np.array([True, False, True, True])
    assert superseded(hidden, same_key, same_type, cos, 0.8).tolist() == [False, False, False, False]


def test_supersession_system_excludes_or_down_weights():
    s = scene(
        [[0.5, 0.4]], created=[0, 0], last_access=[0, 0], half_life=[np.inf, np.inf], now=1.0, keys=[0, 0]
    )
    base = {
        "alpha": 1.0,
        "beta": 0.0,
        "gamma": 0.0,
        "delta": 0.0,
        "recency_half_life_days": 14.0,
        "half_life_scale": 1.0,
    }
    params = grid_columns([{**base, "supersede_cosine": 1.01, "retired_penalty": p} for p in (0.3, np.inf)])
    got = READ_SYSTEMS["supersession"].score(s, params)[:, 0, 0]
    assert got[0].tolist() == pytest.approx([0.2, 0.4])  # memory 0 is superseded by memory 1: 0.5 - 0.3
    assert got[1].tolist() == [-np.inf, pytest.approx(0.4)]  # excluded


# ---------------------------------------------------------------------------------------------
# packing and metrics


def test_pack_stops_exactly_at_the_budget():
    scores = np.array([0.9, 0.5, 0.7, -np.inf])
    tokens = np.array([3, 4, 2, 1])
    # score order 0, 2, 1 with running totals 3, 5, 9; memory 3 may never be packed
    assert pack(scores, tokens, 5).tolist() == [True, False, True, False]
    assert pack(scores, tokens, 9).tolist() == [True, True, True, False]
    assert pack(scores, tokens, 4).tolist() == [True, False, False, False]
    assert pack(scores, tokens, 2).tolist() == [False, False, False, False]
    # greedy and in order: it stops at the first memory that does not fit (memory 2 would)
    assert pack(np.array([0.9, 0.8, 0.7]), np.array([3, 4, 1]), 5).tolist() == [True, False, False]
    # several budgets at once
    assert pack(scores, tokens, np.array([5, 9])).tolist() == [
        [True, False, True, False],
        [True, True, True, False],
    ]


def test_recall_staleness_and_tokens_of_a_hand_built_context():
    # query 0's context holds its current value and a stale one; query 1's holds a distractor
    packed = np.array([[True, True, False], [False, False, True]])
    is_current = np.array([[True, False, False], [False, False, False]])
    is_stale = np.array([[False, True, False], [False, False, False]])
    recall, stale, used = context_metrics(packed, is_current, is_stale, np.array([5, 6, 7]))
    assert (recall, stale, used) == (0.5, 0.5, 9.0)  # tokens: (11 + 7) / 2


def test_recency_spec_matches_the_reference_retrieve():
    rng = np.random.default_rng(3)
    raw = rng.uniform(0.1, 0.7, size=(5, 30))
    age = rng.uniform(0, 90, size=30)
    cfg = {"candidates": 8, "inject": 3, "threshold": 0.4, "bonus": 0.1, "tau_days": 14.0}
    s = scene(raw, created=-age, last_access=np.zeros(30), half_life=np.ones(30), now=0.0)
    got = READ_SYSTEMS["recency-spec"].score(s, grid_columns([cfg]))[0, 0]
    spec = RetrievalSpec(**cfg)
    ids = tuple(str(i) for i in range(30))
    for q in range(5):
        want = {c.index for c in retrieve(raw[q], age, ids, spec) if c.injected}
        assert set(np.flatnonzero(np.isfinite(got[q]))) == want


def test_expand_grid_order_is_deterministic():
    assert expand_grid({"b": (2, 1), "a": (0,)}) == [{"a": 0, "b": 2}, {"a": 0, "b": 1}]
    assert expand_grid({}) == [{}]


# ---------------------------------------------------------------------------------------------
# ranges


def test_overlapping_ranges_are_refused():
    with pytest.raises(ValueError) as e:
        check_disjoint(range(0, 100), range(50, 150))
    assert str(e.value) == (
        "tuning seeds 0:100 and held-out seeds 50:150 overlap on 50:100; the two ranges must be disjoint"
    )
    check_disjoint(range(0, 100), range(100, 150))  # touching is fine


@pytest.mark.parametrize(
    "text, message",
    [
        ("5:3", "--seed-range: expected A:B with 0 <= A < B, got '5:3'"),
        ("4:4", "--seed-range: expected A:B with 0 <= A < B, got '4:4'"),
        ("10", "--seed-range: expected A:B with 0 <= A < B, got '10'"),
        ("a:b", "--seed-range: expected A:B with 0 <= A < B, got 'a:b'"),
        ("-1:5", "--seed-range: expected A:B with 0 <= A < B, got '-1:5'"),
    ],
)
def test_bad_seed_ranges(text, message):
    with pytest.raises(ValueError) as e:
        parse_seed_range(text)
    assert str(e.value) == message


def test_seed_range_is_half_open():
    assert parse_seed_range("3:6") == range(3, 6)


# ---------------------------------------------------------------------------------------------
# the benchmark end to end, with a bag-of-words encoder and whitespace tokens (no model)


def bag_of_words(texts: list[str], role: str) -> np.ndarray:
    out = np.zeros((len(texts), 512))
    for i, t in enumerate(texts):
        for w in t.lower().strip(".?!").replace(",", " ").split():
            out[i, zlib.crc32(w.encode()) % 512] += 1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def words(texts: list[str]) -> np.ndarray:
    return np.array([len(t.split()) for t in texts])


def test_full_history_with_room_for_everything_recalls_all_and_is_stale_wherever_a_value_changed():
    streams = [generate_stream(s) for s in range(3)]
    arrays, _ = prepare_streams(streams, bag_of_words, words)
    everything = WRITE_POLICIES["store-everything"]
    for s, a in zip(streams, arrays, strict=True):
        w = everything.write(a.memory_cosine, a.key)
        recall, stale, used = run_stream(a, w, READ_SYSTEMS["full-history"], {}, np.array([10_000]))
        assert recall[0, 0] == 1.0
        assert stale[0, 0] == np.mean([bool(q.stale_values) for q in s.queries])
        assert used[0, 0] == sum(len(f.text.split()) for f in s.facts)
        none = run_stream(a, w, READ_SYSTEMS["no-memory"], {}, np.array([10_000]))
        assert [float(x[0, 0]) for x in none] == [0.0, 0.0, 0.0]


def test_a_correction_beats_a_repeat_under_contradiction_aware_writes():
    """Ames then Chicago said far apart; dedup at 0.2 drops Chicago, contradiction-aware keeps it."""
    facts = (
        fact("I live in Ames.", "city", "Ames"),
        fact("I live in Ames.", "city", "Ames", "repeat"),
        fact(
            "Unpacking boxes at my new place in Chicago, I live there now.", "city", "Chicago", "correction"
        ),
    )
    q = Query("Which city do I live in now?", "city", "Chicago", ("Ames",), date(2026, 2, 1))
    stream = Stream(0, "T", facts, (q,), date(2026, 2, 1))
    (a,), _ = prepare_streams([stream], bag_of_words, words)
    assert 0.2 < a.memory_cosine[0, 2] < 0.9
    top = READ_SYSTEMS["top-k"]
    k = grid_columns([{"k": 1}])
    dedup = WRITE_POLICIES["dedup"].write(a.memory_cosine, a.key, duplicate_cosine=0.2)
    aware = WRITE_POLICIES["contradiction-aware"].write(a.memory_cosine, a.key, duplicate_cosine=0.9)
    assert dedup.admitted.tolist() == [True, False, False]
    assert aware.admitted.tolist() == [True, False, True] and aware.forgotten_by.tolist() == [2, 3, 3]
    assert [float(x[0, 0]) for x in run_stream(a, dedup, top, k, np.array([100]))[:2]] == [0.0, 1.0]
    assert [float(x[0, 0]) for x in run_stream(a, aware, top, k, np.array([100]))[:2]] == [1.0, 0.0]


def test_benchmark_is_deterministic_and_reports_every_pair():
    # four held-out and four tuning streams: every system, policy and pair is reported all the same
    kwargs = dict(encode=bag_of_words, count_tokens=words, tokenizer_name="words", n_boot=100)
    a = drift_study(range(100, 104), range(0, 4), (16, 64), **kwargs)
    b = drift_study(range(100, 104), range(0, 4), (16, 64), **kwargs)
    assert a.table.equals(b.table)
    t = a.table
    memory_systems = [s for s in READ_SYSTEMS.values() if not s.oracle]
    oracles = [s for s in READ_SYSTEMS.values() if s.oracle]
    assert len(t) == (len(memory_systems) * len(WRITE_POLICIES) + len(oracles)) * 2  # oracles: once
    assert t[t.oracle].write_policy.unique().tolist() == ["store-everything"]
    # the reference's paired difference to itself is exactly 0, interval included
    ref = t[(t.system == "top-k") & (t.write_policy == "store-everything")]
    assert (ref[["recall_diff", "recall_diff_lo", "recall_diff_hi", "staleness_diff"]] == 0).all().all()
    # a paired difference is the difference of the two means
    other = t[(t.system == "full-history") & (t.write_policy == "dedup")]
    assert other.recall_diff.to_numpy() == pytest.approx(other.recall.to_numpy() - ref.recall.to_numpy())
    assert (t[t.system == "no-memory"][["recall", "staleness", "tokens"]] == 0).all().all()
    assert ((t.recall_lo <= t.recall + 1e-12) & (t.recall <= t.recall_hi + 1e-12)).all()
    assert (t.tokens <= t.budget).all()
    rows = a.rows()
    assert set(rows[0]) >= {
        "system",
        "write_policy",
        "budget",
        "recall",
        "recall_ci",
        "staleness",
        "staleness_ci",
        "tokens",
    }
    supersession = a.chosen[("supersession", "dedup")].read_params
    base = a.chosen[("multi-factor", "dedup")].read_params
    assert {k: supersession[k] for k in base} == base  # starts from the multi-factor choice


def test_benchmark_refuses_overlapping_ranges_before_any_work():
    with pytest.raises(ValueError, match="overlap on 5:8"):
        drift_study(range(5, 10), range(0, 8), encode=bag_of_words, count_tokens=words)


def test_systems_may_be_named_in_any_order():
    kwargs = dict(encode=bag_of_words, count_tokens=words, tokenizer_name="words", n_boot=50)
    a = drift_study(range(100, 103), range(0, 3), (32,), systems=["multi-factor", "supersession"], **kwargs)
    b = drift_study(range(100, 103), range(0, 3), (32,), systems=["supersession", "multi-factor"], **kwargs)
    assert a.table.equals(b.table)


def test_benchmark_refuses_empty_ranges_and_no_resamples():
    with pytest.raises(ValueError, match="n_boot: expected an integer >= 1, got 0"):
        drift_study(range(5, 10), range(0, 5), encode=bag_of_words, count_tokens=words, n_boot=0)
    with pytest.raises(ValueError, match="empty seed range"):
        drift_study(range(5, 5), range(0, 5), encode=bag_of_words, count_tokens=words)


def test_bootstrap_interval_of_a_constant_is_the_constant_and_seeded():
    per = np.full((10, 2), 0.25)
    assert bootstrap_ci(per, 100, 0).tolist() == [[0.25, 0.25], [0.25, 0.25]]
    x = np.random.default_rng(1).uniform(size=(50, 3))
    assert np.array_equal(bootstrap_ci(x, 300, 7), bootstrap_ci(x, 300, 7))
    lo, hi = bootstrap_ci(x, 300, 7)
    assert (lo < x.mean(axis=0)).all() and (x.mean(axis=0) < hi).all()


# ---------------------------------------------------------------------------------------------
# the command line


@pytest.mark.model
def test_cli_json_rows(capsys, cache_dir, monkeypatch):
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(cache_dir))
    code = main(
        [
            "drift",
            "--streams",
            "3",
            "--seed-range",
            "500:510",
            "--tune-range",
            "0:3",
            "--budgets",
            "64,32",
            "--boot",
            "50",
            "--format",
            "json",
        ]
    )
    out, _ = capsys.readouterr()
    rows = json.loads(out)
    oracles = sum(s.oracle for s in READ_SYSTEMS.values())  # each under one write policy
    assert code == 0 and len(rows) == ((len(READ_SYSTEMS) - oracles) * len(WRITE_POLICIES) + oracles) * 2
    required = {
        "system",
        "write_policy",
        "budget",
        "recall",
        "recall_ci",
        "staleness",
        "staleness_ci",
        "recall_diff",
        "recall_diff_ci",
        "staleness_diff",
        "staleness_diff_ci",
        "tokens",
        "oracle",
    }
    assert all(required <= set(r) for r in rows)
    assert [r["budget"] for r in rows[:2]] == [32, 64]
    assert all(len(r["recall_ci"]) == 2 and r["streams"] == 3 for r in rows)
    assert rows[0]["tokenizer"].startswith("BertTokenizer") and "all-MiniLM-L6-v2" in rows[0]["tokenizer"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seed-range", "9:2"], "--seed-range: expected A:B with 0 <= A < B, got '9:2'"),
        (
            ["--tune-range", "0:2000"],
            "tuning seeds 0:2000 and held-out seeds 1000:1400 overlap on 1000:1400; the two ranges must be disjoint",
        ),
        (["--streams", "500"], "--streams: expected 1 to 400 (the seeds in --seed-range 1000:1400), got 500"),
        (["--budgets", "32,x"], "--budgets: expected a comma list of positive integers, got '32,x'"),
        (["--budgets", "0,32"], "--budgets: expected a comma list of positive integers, got '0,32'"),
        (["--boot", "0"], "n_boot: expected an integer >= 1, got 0"),
        (["--streams", "0"], "--streams: expected 1 to 400 (the seeds in --seed-range 1000:1400), got 0"),
        (["--decay", "exp,cos"], "unknown decay 'cos'; available: exp, gauss, lin"),
        (["--combine", "sum"], "unknown combine 'sum'; available: add, mult"),
    ],
)
def test_cli_bad_input(capsys, argv, message):
    assert main(["drift", *argv]) == 2
    assert capsys.readouterr().err.strip() == f"memlab: error: {message}"


def test_recency_spec_read_system_breaks_ties_like_the_reference():
    # raw 0.25 (written today) and 0.5 (written long ago): bonus 0.25 at tau 1 day makes both
    # finals 0.5. The reference's re-sort breaks the tie by raw score, so memory 1 is injected;
    # a tie broken by position would inject memory 0.
    spec = RetrievalSpec(candidates=2, inject=1, threshold=0.0, bonus=0.25, tau_days=1.0)
    ref = retrieve(np.array([0.25, 0.5]), np.array([0.0, np.inf]), ("m0", "m1"), spec)
    assert [c.final for c in ref] == [0.5, 0.5]
    assert [c.index for c in ref if c.injected] == [1]
    params = grid_columns([{"candidates": 2, "bonus": 0.25, "tau_days": 1.0, "threshold": 0.0, "inject": 1}])
    s = scene([[0.25, 0.5]], created=[0.0, -np.inf], last_access=[0, 0], half_life=[np.inf, np.inf], now=0.0)
    scores = read_system("recency-spec").score(s, params).reshape(-1, 2)[0]
    assert np.flatnonzero(np.isfinite(scores)).tolist() == [1]
    assert scores[1] == 0.5


def test_recency_spec_read_system_candidates_tie_in_dataset_order():
    # three equal raw scores, two candidates: the first two in dataset order, as the reference
    spec = RetrievalSpec(candidates=2, inject=3, threshold=0.0, bonus=0.0, tau_days=1.0)
    ref = retrieve(np.array([0.3, 0.3, 0.3]), np.zeros(3), ("a", "b", "c"), spec)
    assert [c.index for c in ref if c.injected] == [0, 1]
    params = grid_columns([{"candidates": 2, "bonus": 0.0, "tau_days": 1.0, "threshold": 0.0, "inject": 3}])
    s = scene([[0.3, 0.3, 0.3]], created=[0.0] * 3, last_access=[0] * 3, half_life=[np.inf] * 3, now=0.0)
    scores = read_system("recency-spec").score(s, params).reshape(-1, 3)[0]
    assert np.flatnonzero(np.isfinite(scores)).tolist() == [0, 1]


# ---------------------------------------------------------------------------------------------
# content supersession, the oracle and paired intervals


def test_centroid_affinity_matches_explicit_vectors():
    x = np.random.default_rng(0).normal(size=(5, 4))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    member = np.array([[1, 0], [1, 0], [1, 1], [0, 1], [0, 0]], dtype=bool)
    got = centroid_affinity(x @ x.T, member)
    for i in range(5):
        for k in range(2):
            others = [j for j in range(5) if member[j, k] and j != i]
            c = x[others].sum(axis=0)
            assert got[i, k] == pytest.approx(x[i] @ c / np.linalg.norm(c))
    # a group whose only member is the memory itself has no centroid to compare with
    assert np.isnan(centroid_affinity(x @ x.T, np.eye(5, 1, dtype=bool))[0, 0])


def unit(*angles_deg):
    return np.array([[np.cos(np.radians(a)), np.sin(np.radians(a))] for a in angles_deg])


def test_content_keys_refile_a_misfiled_memory_with_its_topic():
    # memories 0, 1, 2 point one way (topic A), 3, 4 the other (topic B); memory 2 is filed under
    # B's key. Same type throughout.
    x = unit(0, 10, 20, 90, 100)
    cos = x @ x.T
    key = np.array([0, 0, 1, 1, 1])
    ck, aff = content_keys(cos, key, np.array([0, 0]), np.zeros(5, int), np.ones(5, bool), key_trust=0.2)
    assert ck.tolist() == [0, 0, 0, 1, 1]
    assert aff[2] == pytest.approx(np.cos(np.radians(15)))  # to the centroid of 0 and 1 (5 deg)
    # a trust large enough keeps the extractor's key
    ck, _ = content_keys(cos, key, np.array([0, 0]), np.zeros(5, int), np.ones(5, bool), key_trust=2.0)
    assert ck.tolist() == key.tolist()


def content_params(**over):
    p = {
        "key_trust": 0.2,
        "supersede_cosine": 1.01,
        "retire_gate": -np.inf,
        "exempt_affinity": 0.0,
    }
    p.update(over)
    return {k: np.array([v], dtype=float) for k, v in p.items()}


def test_content_retirement_misfiled_fact_and_distractor_retire_nothing():
    # 0 "I live in Ames", 1 "I moved to Chicago" (same topic), 2 a job fact misfiled under city,
    # 3 three far-off memories that make the job key's centroid, 4 a distractor filed under city
    x = unit(0, 30, 90, 95, 60)
    cos = x @ x.T
    key = np.array([0, 0, 0, 1, 0])
    args = dict(
        cosine=cos,
        key=key,
        key_type=np.array([0, 0]),
        memory_type=np.zeros(5, int),
        visible=np.ones(5, bool),
        shares_term=np.zeros((5, 5), bool),
    )
    query = np.array([[0.9, 0.8, 0.1, 0.1, 0.2]])  # "Which city do I live in now?"
    everything = content_retired(query_cosine=query, params=content_params(), **args)[0, 0]
    # no gate: memory 2 is refiled under job, but the distractor (same content key) retires 1
    assert everything.tolist() == [True, True, True, False, False]
    gated = content_retired(query_cosine=query, params=content_params(retire_gate=1.5), **args)[0, 0]
    # cosine(query, j) + affinity: memory 1 reaches 0.8 + cos(30 deg to centroid of 0 and 4) > 1.5;
    # the distractor 0.2 + its affinity does not
    aff = content_keys(cos, key, np.array([0, 0]), np.zeros(5, int), np.ones(5, bool), 0.2)[1]
    assert 0.8 + aff[1] >= 1.5 > 0.2 + aff[4]
    assert gated.tolist() == [True, False, False, False, False]


def test_value_span_exemption_keeps_the_memory_a_distractor_echoes():
    x = unit(0, 40)
    shares = np.array([[True, True], [True, True]])
    args = dict(
        cosine=x @ x.T,
        query_cosine=np.array([[0.5, 0.5]]),
        key=np.array([0, 0]),
        key_type=np.array([0]),
        memory_type=np.zeros(2, int),
        visible=np.ones(2, bool),
        shares_term=shares,
    )
    # both memories' affinity is cos(40 deg) = 0.77: below 0.8 the echo is exempt, above not
    assert content_retired(params=content_params(exempt_affinity=0.8), **args)[0, 0].tolist() == [
        False,
        False,
    ]
    assert content_retired(params=content_params(exempt_affinity=0.7), **args)[0, 0].tolist() == [True, False]


def test_oracle_excludes_exactly_the_truly_superseded():
    facts = (
        fact("I live in Ames.", "city", "Ames"),
        fact("I moved to Chicago.", "city", "Chicago", "correction", filed="job"),
        Fact("My cousin flew in from Denver.", "", "profile", "", D, "distractor", "city"),
        fact("Home for me is Chicago.", "city", "Chicago", "paraphrase"),
    )
    q = Query("Which city do I live in now?", "city", "Chicago", ("Ames",), date(2026, 2, 1))
    (a,), _ = prepare_streams([Stream(0, "T", facts, (q,), date(2026, 2, 1))], bag_of_words, words)
    assert a.oracle_supersedes[0].tolist() == [False, True, False, True]
    assert not a.oracle_supersedes[1:].any()  # same value, or a distractor: nothing
    w = WRITE_POLICIES["store-everything"].write(a.memory_cosine, a.key)
    recall, stale, _ = run_stream(a, w, READ_SYSTEMS["oracle"], {}, np.array([1000]))
    assert (recall[0, 0], stale[0, 0]) == (1.0, 0.0)


def test_oracle_lines_told_a_part_of_the_truth_undo_that_noise_only():
    # the current "I moved to Chicago." is followed, under the city key, by a distractor typed like
    # a fact and by a job fact misfiled there; key-only retirement (key_trust 2: nothing refiled,
    # no gate, no cosine pass) lets either retire it
    facts = (
        fact("I live in Ames.", "city", "Ames"),
        fact("I moved to Chicago.", "city", "Chicago", "correction"),
        Fact("My cousin flew in from Denver.", "", "profile", "", D, "distractor", "city"),
        fact("I work as a nurse.", "job", "nurse", filed="city"),
        # a key with one member has no centroid to keep a memory there: a second job fact
        fact("Being a nurse keeps me busy.", "job", "nurse", "paraphrase"),
    )
    q = Query("Which city do I live in now?", "city", "Chicago", ("Ames",), date(2026, 2, 1))
    (a,), _ = prepare_streams([Stream(0, "T", facts, (q,), date(2026, 2, 1))], bag_of_words, words)
    assert a.oracle_topic.tolist() == [0, 0, -1, 1, 1]  # city, city, a distractor, job, job
    w = WRITE_POLICIES["store-everything"].write(a.memory_cosine, a.key)
    multi = {"alpha": 1.0, "beta": 0.0, "gamma": 0.0, "delta": 0.0, "recency_half_life_days": 60.0}
    params = {
        **content_params(key_trust=2.0),
        **{k: np.array([v]) for k, v in multi.items()},
        "half_life_scale": np.array([1.0]),
        "reinforce": np.array([0]),
        "retired_penalty": np.array([np.inf]),
    }

    def measured(system):
        recall, stale, _ = run_stream(a, w, READ_SYSTEMS[system], params, np.array([1000]))
        return float(recall[0, 0]), float(stale[0, 0])

    assert measured("content-supersession") == (0.0, 0.0)  # Ames retired, and Chicago too
    assert measured("oracle-distractors") == (0.0, 0.0)  # the misfiled job fact still retires it
    assert measured("oracle-filing") == (0.0, 0.0)  # the distractor still retires it
    assert measured("oracle-topic") == (1.0, 0.0)  # told both: Chicago stays, Ames goes
    assert all(READ_SYSTEMS[s].oracle for s in ("oracle-topic", "oracle-distractors", "oracle-filing"))


def test_paired_interval_is_the_interval_of_the_differences():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(size=(40, 2)), rng.uniform(size=(40, 2))
    assert np.array_equal(paired_bootstrap_ci(a, b, 200, 3), bootstrap_ci(a - b, 200, 3))
    # a system against itself: exactly zero; shifted by a constant: exactly that constant
    assert paired_bootstrap_ci(a, a, 200, 3).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert paired_bootstrap_ci(a + 0.1, a, 200, 3) == pytest.approx(np.full((2, 2), 0.1))
    with pytest.raises(ValueError, match=r"paired streams must match: \(40, 2\) against \(39, 2\)"):
        paired_bootstrap_ci(a, b[:39])


def test_frontier_picks_the_best_clean_system_and_judges_the_target():
    import pandas as pd

    base = {"write_policy": "store-everything", "budget": 64, "recall_diff_hi": 0.0, "staleness_diff": 0.0}
    table = pd.DataFrame(
        [
            {
                **base,
                "system": "top-k",
                "recall": 0.9,
                "staleness": 0.9,
                "oracle": False,
                "recall_diff": 0.0,
                "recall_diff_lo": 0.0,
            },
            {
                **base,
                "system": "a",
                "recall": 0.89,
                "staleness": 0.05,
                "oracle": False,
                "recall_diff": -0.01,
                "recall_diff_lo": -0.02,
            },
            {
                **base,
                "system": "b",
                "recall": 0.85,
                "staleness": 0.01,
                "oracle": False,
                "recall_diff": -0.05,
                "recall_diff_lo": -0.07,
            },
            {
                **base,
                "system": "oracle",
                "recall": 0.97,
                "staleness": 0.0,
                "oracle": True,
                "recall_diff": 0.07,
                "recall_diff_lo": 0.05,
            },
        ]
    )
    row = frontier(table).iloc[0]
    assert (row.system, bool(row.meets), row.oracle_recall) == ("a", True, 0.97)
    table.loc[1, "recall_diff_lo"] = -0.021
    assert not frontier(table).iloc[0].meets
    # a lower-recall system that meets the target is the frontier's pick over one that does not
    table.loc[2, ["recall_diff_lo", "staleness"]] = [-0.015, 0.01]
    row = frontier(table).iloc[0]
    assert (row.system, bool(row.meets), row.recall) == ("b", True, 0.85)


def test_event_transfer_fits_without_the_topic_it_judges():
    def stream(seed, facts):
        return Stream(seed, "T", tuple(facts), (), date(2026, 2, 1))

    job = [fact("I work as a nurse.", "job", "nurse"), fact("My job is chef.", "job", "chef")]
    events = [Fact("My aunt sings.", "", "event", "", D, "distractor", "job")]
    city = [fact("I live in Ames.", "city", "Ames"), fact("Home is Chicago.", "city", "Chicago")]
    typed = [Fact("My cousin flew in.", "", "profile", "", D, "distractor", "city")]
    # a city memory in the fit that would give the answer away if it were used: it is not
    leak = [Fact("My cousin flew in.", "", "event", "", D, "distractor", "city")]
    vectors = {
        "I work as a nurse.": unit(0)[0],
        "My job is chef.": unit(10)[0],
        "My aunt sings.": unit(90)[0],
        "I live in Ames.": unit(20)[0],
        "Home is Chicago.": unit(30)[0],
        "My cousin flew in.": unit(80)[0],
    }
    out = event_transfer([stream(0, job + events + leak)], [stream(1, city + typed)], vectors)
    assert out == {"city": 1.0}  # only city has test memories; the distractor reads like the event


def test_auc_on_paper():
    assert auc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert auc(np.array([1.0]), np.array([2.0])) == 0.0
    # pairs (2, 2) tie: 1/2; (2, 1), (3, 2), (3, 1) above: 3.5 of 4
    assert auc(np.array([2.0, 3.0]), np.array([2.0, 1.0])) == 0.875
    assert np.isnan(auc(np.array([]), np.array([1.0])))


def test_signal_separation_counts_refiling_against_the_truth():
    # city facts 0, 1 and a job fact 2 filed under city, then job facts 3, 4 it lies between
    facts = (
        fact("I live in Ames.", "city", "Ames"),
        fact("I moved to Chicago.", "city", "Chicago", "correction"),
        fact("I work as a nurse.", "job", "nurse", filed="city"),
        fact("Being a nurse keeps me busy.", "job", "nurse", "paraphrase"),
        fact("At work I'm the nurse.", "job", "nurse", "paraphrase"),
        Fact("My cousin flew in from Denver.", "", "profile", "", D, "distractor", "city"),
    )
    q = Query("Which city do I live in now?", "city", "Chicago", ("Ames",), date(2026, 2, 1))
    stream = Stream(0, "T", facts, (q,), date(2026, 2, 1))
    x = unit(0, 20, 90, 100, 95, 45)
    vectors = {f.text: v for f, v in zip(facts, x, strict=True)}

    def encode(texts, role):
        return np.array([vectors.get(t, unit(10)[0]) for t in texts])

    (a,), _ = prepare_streams([stream], encode, words)
    out = signal_separation([stream], [a], key_trust=0.1)
    assert (out["misfiled"], out["refiled_share"]) == (1, 1.0)  # fact 2 goes back to job
    assert (out["filed_right"], out["moved_share"]) == (4, 0.0)
    # the learned centroids (fit on this stream): city about 39 deg, job 97.5 deg; fact 2 (90 deg)
    # is nearer job even with the city key's bonus, the others stay
    assert (out["learned_refiled_share"], out["learned_moved_share"]) == (1.0, 0.0)
    # each city fact is nearer the centroid of the others under the city key than the distractor is
    aff = content_keys(a.memory_cosine, a.key, a.key_type, a.memory_type, np.ones(6, bool), 0.1)[1]
    assert min(aff[0], aff[1]) > aff[5]
    assert out["distractor_auc"]["affinity"] == 1.0
