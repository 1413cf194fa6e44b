"""The LLM judge against the checkable judge (issue 37): their agreement is printed beside the
LLM judge's rates, and below the floor its rates are printed as unreliable, not as results."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from chat_fake import FakeChat

from memlab.answers.judge import KAPPA_FLOOR, cohen_kappa, judge_agreement
from memlab.answers.rates import rates
from memlab.app.cli import main

T, F = True, False


@pytest.mark.parametrize(
    ("a", "b", "kappa"),
    [
        # p_o = 3/4; yes rates 1/2 and 1/4: p_e = 1/2 1/4 + 1/2 3/4 = 1/2; (3/4 - 1/2) / (1/2) = 1/2
        ([T, T, F, F], [T, F, F, F], 0.5),
        ([T, F, T, F], [T, F, T, F], 1.0),  # the same verdicts, both kinds
        ([T, F, T, F], [F, T, F, T], -1.0),  # opposite
        # one judge says YES throughout: p_e = the other's pass rate = p_o, so kappa 0
        ([T, T, T, T], [T, F, T, T], 0.0),
        # 40 YES/pass, 12 YES/fail, 8 NO/pass: p_o = 2/3, p_e = (52 48 + 8 12) / 60^2 = 18/25,
        # kappa = (2/3 - 18/25) / (7/25) = -4/21
        ([T] * 40 + [T] * 12 + [F] * 8, [T] * 40 + [F] * 12 + [T] * 8, -4 / 21),
    ],
)
def test_cohen_kappa_on_paper(a, b, kappa):
    assert cohen_kappa(a, b) == pytest.approx(kappa, abs=1e-12)


def test_kappa_is_undefined_when_both_judges_give_one_verdict_throughout():
    assert np.isnan(cohen_kappa([T, T, T], [T, T, T]))
    # weights: each reply counted as often as its question is drawn (0: left out)
    assert cohen_kappa([T, T, F, F], [T, F, F, F], [1, 1, 1, 1]) == pytest.approx(0.5)
    assert np.isnan(cohen_kappa([T, T, F], [T, F, F], [1, 0, 0]))


def _smollm_replies() -> pd.DataFrame:
    """SmolLM2-135M's pattern on seed16 (docs/answers.md): YES to C1's three replies, which lack
    café au lait, and to N1-N4's, but NO to one reply of N2 and of N3; the phrases pass every
    no-hit reply. 15 replies both judged, 10 agreed; 13 YES and 12 passes of 15:
    p_e = (13 12 + 2 3) / 15^2 = 18/25, so kappa = (2/3 - 18/25) / (7/25) = -4/21."""
    rows = []
    for q, kind in (
        ("C1", "contradiction"),
        ("N1", "nohit"),
        ("N2", "nohit"),
        ("N3", "nohit"),
        ("N4", "nohit"),
    ):
        for r in range(3):
            judge = not (q in ("N2", "N3") and r == 0)
            rows.append(
                {
                    "condition": "off",
                    "question_id": q,
                    "kind": kind,
                    "repeat": r,
                    "judge": judge,
                    "phrases": q != "C1",
                }
            )
    rows.append(  # a hit question: no phrase, so the checkable judge does not judge it
        {"condition": "off", "question_id": "H1", "kind": "hit", "repeat": 0, "judge": True, "phrases": None}
    )
    return pd.DataFrame(rows)


def test_the_135m_judges_agreement_is_below_the_floor():
    a = judge_agreement(_smollm_replies(), n_boot=200, seed=0)
    assert (a.replies, a.questions, a.agreed) == (15, 5, 10)
    assert a.share == pytest.approx(2 / 3) and a.kappa == pytest.approx(-4 / 21)
    assert a.lo <= a.kappa <= a.hi and a.hi < KAPPA_FLOOR and not a.reliable
    assert a.text() == (
        "LLM judge against the checkable judge: same verdict on 10 of 15 replies both judged (0.67, "
        f"5 questions), Cohen's kappa -0.19 [{a.lo:.2f}, {a.hi:.2f}]; below the floor 0.60: "
        "UNRELIABLE, its rates are not results"
    )
    # the rates say so beside the LLM judge's rows; the checkable judge's rows are no judge's
    table = rates(_smollm_replies(), n_boot=50)
    assert set(table[table["score"] == "judge"]["reliable"]) == {False}
    assert set(table[table["score"] == "phrases"]["reliable"]) == {None}


@pytest.mark.parametrize(
    ("judge", "phrases", "want"),
    [
        ([None, None], [T, F], None),  # the LLM judge left both unjudged: nothing both judged
        ([T, F], [None, None], None),  # no phrase for these questions
        ([T, T], [T, T], "undefined"),  # one same verdict throughout: not shown to discriminate
    ],
)
def test_agreement_without_replies_both_judged_or_undefined(judge, phrases, want):
    frame = pd.DataFrame(
        {"condition": "off", "question_id": ["q1", "q2"], "kind": "hit", "judge": judge, "phrases": phrases}
    )
    a = judge_agreement(frame, n_boot=20)
    if want is None:
        assert a is None
    else:
        assert np.isnan(a.kappa) and not a.reliable and np.isnan(a.lo)
        assert "Cohen's kappa undefined (both judges gave one verdict to every reply)" in a.text()


def _answer(capsys, tmp_path, judge_reply, fmt="table"):
    def reply(body):
        if body["messages"][0]["content"].startswith("You grade"):
            return judge_reply(body["messages"][1]["content"])
        system = [m["content"] for m in body["messages"] if m["role"] == "system"]
        return system[0] if system else "No idea."

    server = FakeChat(reply, model="judge-and-chat")
    try:
        args = ["answer", "--source", "published", "--chat-url", server.url, "--conditions", "off,today"]
        code = main([*args, "--cache-dir", str(tmp_path), "--boot", "50", "--format", fmt])
    finally:
        server.close()
    assert code == 0
    return capsys.readouterr().out


@pytest.mark.hostile
def test_a_judge_that_says_yes_to_everything_is_printed_as_unreliable(capsys, tmp_path):
    """A judge that answers YES to every reply (as SmolLM2-135M does to hit and contradiction
    replies) printed contradiction 1.00 [1.00, 1.00] as a result. On seed16's checkable questions
    (C1, N1-N4, under off and today: 10 replies) it agrees on the 9 that pass and not on C1's
    reply without memory: kappa 0 (a constant verdict), below the floor."""
    out = _answer(capsys, tmp_path, lambda _: "YES\nfine").splitlines()
    title = next(i for i, x in enumerate(out) if x.startswith("LLM judge (judge-and-chat): YES rate"))
    assert out[title + 1] == (
        "LLM judge against the checkable judge: same verdict on 9 of 10 replies both judged (0.90, "
        "5 questions), Cohen's kappa 0.00 [0.00, 0.00]; below the floor 0.60: UNRELIABLE, its rates "
        "are not results"
    )
    assert out[title + 2] == "(in parentheses: the LLM judge's rates, unreliable, not results)"
    assert out[title + 4].split()[:2] == ["off", "(1.00"]  # every cell in parentheses
    # the checkable judge's own block is a result as before
    check = next(i for i, x in enumerate(out) if x.startswith("checkable judge"))
    assert "(" not in out[check + 2]


def test_a_judge_that_agrees_with_the_phrases_is_printed_as_a_result(capsys, tmp_path):
    """YES to a no-hit reply and to a reply that holds café au lait, NO otherwise: the same
    verdict as the checkable judge on every reply both judged (kappa 1), so its rates are
    results, without parentheses, and the JSON's rates say reliable."""

    def judge(content: str) -> str:
        replied = content.split("replied:")[1]
        return "YES\nok" if "nearest this question" in content or "café au lait" in replied else "NO\nno"

    out = _answer(capsys, tmp_path, judge).splitlines()
    title = next(i for i, x in enumerate(out) if x.startswith("LLM judge (judge-and-chat): YES rate"))
    assert out[title + 1] == (
        "LLM judge against the checkable judge: same verdict on 10 of 10 replies both judged (1.00, "
        "5 questions), Cohen's kappa 1.00 [1.00, 1.00]; at or above the floor 0.60"
    )
    assert out[title + 3].startswith("off ") and "(" not in out[title + 3]
    doc = json.loads(_answer(capsys, tmp_path, judge, "json"))
    assert {r["reliable"] for r in doc["rates"] if r["score"] == "judge"} == {True}


def test_the_bootstraps_kappa_formula_is_scikit_learns():
    """The interval's resamples use ``kappa_of_tables`` (one array operation); each equals
    scikit-learn's kappa of the same verdicts weighted by how often their question is drawn."""
    from memlab.answers.judge import kappa_of_tables
    from memlab.drift.intervals import resample_counts

    frame = _smollm_replies().dropna(subset=["phrases"])
    llm, check = frame["judge"].to_numpy(bool), frame["phrases"].to_numpy(bool)
    ids = list(dict.fromkeys(frame["question_id"]))
    index = frame["question_id"].map({q: i for i, q in enumerate(ids)}).to_numpy()
    cell = np.select([llm & check, llm & ~check, ~llm & check], [0, 1, 2], 3)
    tables = np.zeros((len(ids), 4))
    np.add.at(tables, (index, cell), 1)
    counts = resample_counts(len(ids), 300, 4)
    fast = kappa_of_tables(counts @ tables)
    slow = np.array([cohen_kappa(llm, check, c[index]) for c in counts])
    assert np.array_equal(np.isnan(fast), np.isnan(slow)) and np.isnan(fast).any()  # without C1
    np.testing.assert_allclose(fast[~np.isnan(fast)], slow[~np.isnan(slow)], atol=1e-12)
    assert kappa_of_tables(np.array([40, 12, 8, 0])) == pytest.approx(-4 / 21)
    assert np.isnan(kappa_of_tables(np.array([0, 0, 0, 0])))
