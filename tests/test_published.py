"""The seed's published numbers: memlab recomputes every stated figure from the raw scores."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memlab.core.spec import RetrievalSpec, age_days, recency_bonus
from memlab.datasets.schema import dataset_dir
from memlab.scores.sources import load_published
from memlab.tuning.evaluate import SEED_CANDIDATES, candidate_table, evaluate


def stated_table():
    path = dataset_dir("seed16") / "published_table.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_four_candidate_table_equals_the_seed_to_3_decimals(seed, published):
    table = candidate_table(seed, published, SEED_CANDIDATES)
    for row, want in zip(table.to_dict("records"), stated_table(), strict=True):
        assert (row["bonus"], row["tau_days"]) == (want["bonus"], want["tau_days"])
        assert round(row["a_value"], 3) == want["nohit_max"]
        assert round(row["b_value"], 3) == want["c1_current"]
        assert round(row["c_value"], 3) == want["h2_current"]
        assert row["verdict"] == want["verdict"]
    assert table["chosen"].tolist() == [False, False, False, True]
    assert table["feasible"].tolist() == [False, False, False, True]


def test_every_stated_number_is_recomputed(seed, published):
    """Each pair's stated bonus and final at (0.05, 14) follow from its raw score and date."""
    ages = dict(zip(seed.memory_ids, age_days(seed.memory_dates(), seed.reference_date), strict=True))
    rows = load_published(seed)
    assert len(rows) == 17
    for s in rows:
        bonus = float(recency_bonus(ages[s.memory], 0.05, 14.0))
        if "raw" in s.stated:
            assert s.raw == s.stated["raw"]
        if "bonus" in s.stated:
            assert round(bonus, 3) == s.stated["bonus"], s
        if "final" in s.stated:
            assert round(s.raw + bonus, 3) == s.stated["final"], s


def test_nohit_maxima_before_and_after_the_bonus(seed, published):
    """The seed's 'Effect on unrelated memories' table, from the sparse raw scores."""
    ev = evaluate(seed, published, RetrievalSpec())
    stated = {"N1": (0.404, 0.434), "N2": (0.400, 0.427), "N3": (0.345, 0.371), "N4": (0.353, 0.389)}
    for qid, (before, after) in stated.items():
        cands = ev.result(qid).candidates
        assert round(max(c.raw for c in cands), 3) == before
        assert round(max(c.final for c in cands), 3) == after
        assert not any(c.injected for c in cands)
    # "The headroom under 0.45 shrank from 0.046 to 0.016 on N1"
    assert round(ev.headroom, 3) == 0.016
    no_bonus = evaluate(seed, published, RetrievalSpec(bonus=0.0))
    assert round(no_bonus.headroom, 3) == 0.046


def test_rerun_tables_c1_and_h2(seed, published):
    ev = evaluate(seed, published)
    c1 = [
        (c.memory_id, round(c.raw, 3), round(c.bonus, 3), round(c.final, 3), c.injected)
        for c in ev.result("C1").candidates
    ]
    assert c1 == [("m01", 0.471, 0.011, 0.482, True), ("m02", 0.441, 0.026, 0.467, True)]
    h2 = [(c.memory_id, round(c.final, 3)) for c in ev.result("H2").candidates]
    assert h2 == [("m03", 0.476), ("m04", 0.464), ("m05", 0.455)]
    # H1: "café au lait at 0.497 overtook mentaiko pasta at 0.488 for first place"
    h1 = [(c.memory_id, round(c.final, 3)) for c in ev.result("H1").candidates]
    assert h1 == [("m02", 0.497), ("m12", 0.488)]
    cafe, pasta = ev.result("H1").candidates
    assert pasta.raw > cafe.raw  # pasta was first before the bonus
    # H4: fall anime and café au lait cross 0.45 only after the bonus
    for c in ev.result("H4").candidates:
        assert c.raw < 0.45 <= c.final


def test_unknown_pairs_are_missing_not_zero(seed, published):
    assert published.raw.shape == (10, 16)
    assert np.isnan(published.row("C1")[seed.memory_ids.index("m05")])
    assert np.count_nonzero(~np.isnan(published.raw)) == 17
    assert not (published.raw == 0).any()


def test_every_inference_is_marked(seed):
    rows = load_published(seed)
    inferred = {(s.question, s.memory): s.inferred for s in rows}
    # stated outright by the seed's rerun tables
    assert inferred["C1", "m02"] == () and inferred["H2", "m05"] == ()
    # raw turned back from a post-bonus score
    assert "raw" in inferred["H1", "m02"] and "raw" in inferred["C2", "m10"]
    # the seed names no memory for N3's maximum
    assert "memory" in inferred["N3", "m02"]
    for s in rows:
        assert s.table, s
        if s.inferred:
            assert s.note, s


def test_smallest_bonus_rule_picks_the_seed_choice_and_ties_are_stable(seed, published):
    # the same feasible pair listed twice: the first listed wins
    table = candidate_table(seed, published, [(0.05, 14), (0.06, 14), (0.05, 14)])
    assert table["chosen"].tolist() == [True, False, False]
    assert table["verdict"].tolist() == ["adopted", "feasible", "feasible"]
    # max-headroom prefers the smaller bonus (more room under the threshold)
    table = candidate_table(seed, published, [(0.06, 14), (0.05, 14)], rule="max-headroom")
    assert table["chosen"].tolist() == [False, True]


def test_unknown_rule_lists_the_rules(seed, published):
    with pytest.raises(ValueError) as e:
        candidate_table(seed, published, rule="cheapest")
    assert (
        str(e.value)
        == "unknown selection rule 'cheapest'; available: smallest-bonus, max-headroom, max-margin, max-utility"
    )
