"""memlab explain: a query log replayed on a store. Every step and margin on a five-memory store
worked out on paper; every injected set equal to evaluate's (scores read back from Qdrant, an
independent path); the log's bad lines with their exact messages; the JSON's shape."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.core.errors import InputError
from memlab.core.spec import RetrievalSpec
from memlab.datasets.querylog import load_log
from memlab.datasets.schema import Dataset, Memory, Question, load_dataset
from memlab.qdrant.store import MemoryStore
from memlab.scores.problem import RetrievalProblem
from memlab.scores.sources import ScoreTable
from memlab.tuning.evaluate import evaluate
from memlab.tuning.explain import replay
from memlab.tuning.explain_summary import explain_document, summary

REF = datetime(2026, 9, 10, tzinfo=UTC)
# the hand store: each memory's cosine to the query e1, its age in days at the query (None: dated
# the day after it), what it supersedes
HAND = {
    "m0": (0.80, 0, None),
    "m1": (0.70, 14, None),
    "m2": (0.75, 7, "m1"),
    "m3": (0.60, 1, None),
    "m4": (0.90, None, None),
}
SPEC = RetrievalSpec(candidates=3, inject=1, threshold=0.75, bonus=0.05, tau_days=14)


def unit(c: float) -> list[float]:
    return [c, math.sqrt(1 - c * c), 0.0]


def write_store(root, memories=HAND) -> None:
    """A dataset folder whose stored vectors have the cosines of ``memories`` to e1."""
    root.mkdir()
    meta = {
        "name": "hand",
        "reference_date": "2026-09-11",
        "language": "en",
        "date_prefix": False,
        "vectors": {
            "file": "vectors.npy",
            "dim": 3,
            "model": "multilingual-e5-small",
            "order": "memories.jsonl",
        },
    }
    (root / "dataset.json").write_text(json.dumps(meta))
    rows = []
    for mid, (_, age, sup) in memories.items():
        when = REF + timedelta(days=1) if age is None else REF - timedelta(days=age)
        rows.append({"id": mid, "date": when.isoformat(), "text": f"memory {mid}", "provenance": "user"})
        if sup:
            rows[-1]["supersedes"] = sup
    (root / "memories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "questions.jsonl").write_text(
        json.dumps({"id": "q", "kind": "nohit", "text": "a question"}) + "\n"
    )
    np.save(root / "vectors.npy", np.array([unit(c) for c, _, _ in memories.values()], dtype=np.float32))


def write_log(path, lines) -> str:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return str(path)


@pytest.fixture
def hand(tmp_path):
    write_store(tmp_path / "store")
    log = write_log(
        tmp_path / "log.jsonl",
        [
            {"id": "a", "vector": [1, 0, 0], "time": REF.isoformat(), "injected": ["m2", "m9"]},
            {"id": "b", "vector": [2, 0, 0], "time": int((REF + timedelta(days=2)).timestamp())},
        ],
    )
    store = load_dataset(tmp_path / "store")
    problem = RetrievalProblem.of(store, ScoreTable((), store.memory_ids, np.zeros((0, 5)), "embedded"), SPEC)
    return problem, load_log(log), tmp_path


def test_every_step_and_margin_on_paper(hand):
    problem, log, _ = hand
    rep = replay(problem, log, [("t86", replace(SPEC, threshold=0.86))], watch=["m3", "m4"])
    e = rep.explain("a")
    b1, b2 = 0.05 * math.exp(-14 / 14), 0.05 * math.exp(-7 / 14)  # m1 and m2's bonus; m0's is 0.05
    got = {c.memory_id: c for c in (*e.candidates, *e.watched)}
    # the candidates: the top 3 raw (0.80, 0.75, 0.70), re-sorted by final
    assert [c.memory_id for c in e.candidates] == ["m0", "m2", "m1"]
    assert got["m0"].final == pytest.approx(0.85, abs=1e-6)
    assert got["m2"].final == pytest.approx(0.75 + b2, abs=1e-6)
    assert got["m1"].bonus == pytest.approx(b1, abs=1e-9)
    # m0 injected; m2 reaches the threshold but inject is 1, so m0 made it by m0 - m2's final
    assert (got["m0"].step, got["m0"].margin_of) == ("injected", "passed_over")
    assert got["m0"].margin == pytest.approx(0.05 - b2 + 0.05, abs=1e-6)
    assert (got["m2"].step, got["m2"].margin_of) == ("past_limit", "last_injected")
    assert got["m2"].margin == pytest.approx(-(0.10 - b2), abs=1e-6)
    assert (got["m1"].step, got["m1"].margin_of) == ("below_threshold", "threshold")
    assert got["m1"].margin == pytest.approx(0.70 + b1 - 0.75, abs=1e-6)
    # m1 is superseded by m2, written 7 days before the query: stale
    assert (got["m1"].stale, got["m1"].superseded_by) == (True, "m2")
    assert got["m0"].stale is False
    # the candidate cut: m3's raw 0.60 against the last candidate's 0.70; the candidates' against 0.60
    assert (got["m3"].step, got["m3"].margin_of) == ("not_candidate", "cut")
    assert got["m3"].margin == pytest.approx(-0.10, abs=1e-6)
    assert [round(c.cut_margin, 6) for c in e.candidates] == [0.2, 0.15, 0.1]
    # m4 is dated the day after the query
    assert (got["m4"].step, got["m4"].margin) == ("not_written", None)
    assert (e.not_written, e.not_candidate) == (1, 1)
    # the closest decision: m0 over m2 at the cut (0.0697), nearer than m0 at the threshold (0.10)
    assert e.decision_margin == pytest.approx(0.10 - b2, abs=1e-6)
    assert e.decides == "m0 over m2 at the cut (inject 1)"
    # at threshold 0.86 nothing reaches it: an empty result, and why
    t = rep.explain("a", "t86")
    assert t.injected == ()
    assert t.empty_reason == "the best candidate, m0, has final 0.8500, 0.0100 below the threshold 0.86"
    # two days later m4 (raw 0.90, written a day before) is the candidate that wins
    later = rep.explain("b")
    assert later.injected == ("m4",)
    assert later.candidates[0].final == pytest.approx(0.90 + 0.05 * math.exp(-1 / 14), abs=1e-6)


def test_summaries_on_paper(hand):
    problem, log, _ = hand
    rep = replay(problem, log, [("t86", replace(SPEC, threshold=0.86))])
    s = summary(rep)
    assert s["specs"]["current"] == {
        "queries": 2,
        "injecting": 2,
        "injection_rate": 1.0,
        "empty": 0,
        "empty_rate": 0.0,
        "empty_no_memory": 0,
        "empty_below_threshold": 0,
        "injected_per_query": 1.0,
        "stale_injected": 0,
        "stale_queries": 0,
    }
    # at 0.86, query a injects nothing, query b still injects m4 (final 0.9464)
    assert s["specs"]["t86"]["empty"] == 1
    assert s["changes"]["t86"] == {"changed": 1, "queries": [{"query": "a", "gained": [], "lost": ["m0"]}]}
    assert [f["query"] for f in s["fragile"]] == ["a", "b"]
    # production injected m2 and m9 for query a; memlab injects m0
    assert s["production"] == {
        "logged": 1,
        "agree": 0,
        "differ": [
            {
                "query": "a",
                "logged_only": [
                    {
                        "memory": "m2",
                        "step": "past_limit",
                        "margin": pytest.approx(-(0.10 - 0.05 * math.exp(-0.5)), abs=1e-6),
                        "margin_of": "final - the last injected memory's final",
                    },
                    {"memory": "m9", "step": "not_in_store", "margin": None, "margin_of": ""},
                ],
                "memlab_only": ["m0"],
            }
        ],
    }


def test_json_shape(hand, capsys):
    _, _, tmp = hand
    code = main(
        [
            "explain",
            "--dataset",
            str(tmp / "store"),
            "--log",
            str(tmp / "log.jsonl"),
            "--candidates",
            "3",
            "--inject",
            "1",
            "--threshold",
            "0.75",
            "--against",
            "threshold=0.86",
            "--memory",
            "m3",
            "--format",
            "json",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"store", "log", "specs", "steps", "margins", "scope", "summary", "queries"}
    assert doc["scope"] == "one shard, no filter"
    assert [s["label"] for s in doc["specs"]] == ["current", "threshold=0.86"]
    assert doc["log"] == {"path": str(tmp / "log.jsonl"), "queries": 2, "embedded": 0, "logged_injections": 1}
    a = doc["queries"][0]
    assert (a["id"], a["line"], a["time"], a["logged_injected"]) == (
        "a",
        1,
        "2026-09-10T00:00:00Z",
        ["m2", "m9"],
    )
    cur = a["specs"]["current"]
    assert set(cur) == {
        "injected",
        "empty_reason",
        "decision_margin",
        "decides",
        "candidates",
        "memories",
        "steps",
    }
    assert cur["injected"] == ["m0"]
    assert cur["steps"] == {
        "not_written": 1,
        "filtered_out": 0,
        "not_candidate": 1,
        "below_threshold": 1,
        "past_limit": 1,
        "injected": 1,
    }
    assert set(cur["candidates"][0]) == {
        "memory", "date", "step", "margin", "margin_of", "raw", "bonus", "final", "rank", "cut_margin", "stale",
        "superseded_by",
    }  # fmt: skip
    # watched: --memory m3, and production's m2 (a candidate: listed once, with its candidate facts)
    assert [(w["memory"], w["step"]) for w in cur["memories"]] == [
        ("m3", "not_candidate"),
        ("m2", "past_limit"),
    ]
    assert a["specs"]["threshold=0.86"]["injected"] == []


def test_table(hand, capsys):
    _, _, tmp = hand
    args = ["explain", "--dataset", str(tmp / "store"), "--log", str(tmp / "log.jsonl")]
    assert main([*args, "--candidates", "3", "--inject", "1", "--threshold", "0.75"]) == 0
    out = capsys.readouterr().out
    assert (
        "    m2          2026-09-03    0.7500  0.0303  0.7803  past the inject limit   "
        "-0.0697 (final - the last injected memory's final)\n"
    ) in out
    assert "STALE (superseded by m2)" in out
    assert "  a: production only: m2 (past the inject limit, -0.0697 (final - the last injected" in out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "log.jsonl:2: invalid JSON: Expecting value"),
        ({"vector": [1, 0, 0]}, "log.jsonl:2: time: missing"),
        ({"time": "2026-09-10"}, "log.jsonl:2: text: missing: a logged query needs its text or its vector"),
        (
            {"text": "x", "time": "yesterday"},
            "log.jsonl:2: time: 'yesterday' is not a date (YYYY-MM-DD or ISO 8601)",
        ),
        (
            {"text": "x", "time": 1789000000000},
            "log.jsonl:2: time: 1789000000000 looks like epoch milliseconds (2026-09-10T00:26:40+00:00 as "
            "such): pass --time-format epoch-ms",
        ),
        ({"vector": [0, 0, 0], "time": "2026-09-10"}, "log.jsonl:2: vector: a zero vector"),
        ({"vector": [1, "x"], "time": "2026-09-10"}, "log.jsonl:2: vector: expected a list of numbers"),
        ({"vector": [1, True], "time": "2026-09-10"}, "log.jsonl:2: vector: expected a list of numbers"),
        (
            {"vector": [1, 0], "time": "2026-09-10"},
            "log.jsonl:2: vector: 2 dimensions, where line 1's vector has 3",
        ),
        (
            {"id": "a", "text": "x", "time": "2026-09-10"},
            "log.jsonl:2: id: duplicate id 'a' (first on line 1)",
        ),
        (
            {"text": "x", "time": "2026-09-10", "injected": "m1"},
            "log.jsonl:2: injected: expected a list of memory ids (strings or integers), got 'm1'",
        ),
        (
            {"text": "x", "time": "2026-09-10", "user": "u1"},
            "log.jsonl:2: user: unknown field (allowed: extra, id, injected, text, time, vector)",
        ),
    ],
)
def test_bad_log_lines(tmp_path, line, message):
    path = write_log(tmp_path / "log.jsonl", [{"id": "a", "vector": [1, 0, 0], "time": "2026-09-10"}, line])
    with pytest.raises(InputError) as e:
        load_log(path)
    assert str(e.value) == message


def test_bad_log_counts_the_other_problems(tmp_path):
    path = write_log(tmp_path / "log.jsonl", [{"text": "x"}, {"text": "y"}, {"vector": [], "time": 1}])
    with pytest.raises(InputError, match=r"^log.jsonl:1: time: missing \(and 2 more problems in the log\)$"):
        load_log(path)


def test_bad_log_on_the_command_line(hand, tmp_path, capsys):
    write_log(tmp_path / "bad.jsonl", [{"vector": [1, 0, 0, 0], "time": "2026-09-10"}])
    args = ["explain", "--dataset", str(tmp_path / "store"), "--log", str(tmp_path / "bad.jsonl")]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        "memlab: error: bad.jsonl:1: vector: 4 dimensions, but the store's memory vectors have 3"
    )


def test_epoch_milliseconds_with_the_flag(tmp_path):
    ms = int(REF.timestamp() * 1000)
    log = load_log(write_log(tmp_path / "log.jsonl", [{"text": "x", "time": ms}]), "epoch-ms")
    assert log.queries[0].time == REF


@pytest.mark.parametrize(
    ("seed", "shards", "tenant"),
    [(0, 1, None), (1, 1, None), (2, 2, None), (3, 4, None), (4, 1, "a"), (5, 4, "b")],
)
def test_injected_sets_equal_evaluate(seed, shards, tenant):
    """Questions turned into a log: every candidate list (order included) and injected set equals
    evaluate's, whose raw scores come back from Qdrant (local mode), not from explain's numpy; on
    one shard and on several (Qdrant's hashing of the point ids), with and without a tenant
    filter (issue 27b's pool, which both paths narrow through)."""
    from memlab.qdrant.sharding import Scope

    rng = np.random.default_rng(seed)
    n_mem, n_q, dim = 40, 12, 8
    memories = tuple(
        Memory(
            f"m{i}",
            REF - timedelta(seconds=int(rng.integers(0, 60 * 86400))),
            {"en": f"m{i}"},
            "",
            "user",
            payload={"user_id": "ab"[i % 2]},
            point_id=i,
        )
        for i in range(n_mem)
    )
    questions = tuple(
        Question(
            f"q{j}", "hit", {"en": f"q{j}"}, date=REF - timedelta(seconds=int(rng.integers(0, 20 * 86400)))
        )
        for j in range(n_q)
    )
    dataset = Dataset("random", REF, ("en",), memories, questions)
    mem = rng.normal(size=(n_mem, dim)).astype(np.float32)
    qv = rng.normal(size=(n_q, dim)).astype(np.float32)
    store = MemoryStore.from_dataset(dataset, mem / np.linalg.norm(mem, axis=1, keepdims=True))
    raw = store.score_table(qv)
    store.drop()
    scores = ScoreTable(dataset.question_ids, dataset.memory_ids, raw, "embedded")
    lines = [
        {"id": q.id, "vector": qv[j].tolist(), "time": q.date.isoformat()} for j, q in enumerate(questions)
    ]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        log = load_log(write_log(Path(tmp) / "log.jsonl", lines))
    specs = [
        RetrievalSpec(
            candidates=int(rng.integers(1, 10)),
            inject=int(rng.integers(1, 5)),
            threshold=float(rng.uniform(-0.2, 0.6)),
            bonus=float(rng.uniform(0, 0.3)),
            tau_days=float(rng.uniform(1, 40)),
            decay=str(rng.choice(["exp", "gauss", "lin"])),
            combine=str(rng.choice(["add", "mult"])),
        )
        for _ in range(3)
    ]
    scope = Scope(filters=(("user_id", tenant),) if tenant else (), shards=shards)
    problem = RetrievalProblem.of(dataset, scores, specs[0], scope=scope)
    rep = replay(problem, log, [(f"s{i}", s) for i, s in enumerate(specs)], memory_vectors=mem)
    for i, spec in enumerate(specs):
        ev = evaluate(problem.with_spec(spec))
        for j, r in enumerate(ev.results):
            e = rep.explain(j, f"s{i}")
            assert [c.memory_id for c in e.candidates] == [c.memory_id for c in r.candidates]
            assert e.injected == tuple(c.memory_id for c in r.injected)
            if tenant:
                assert all(int(c.memory_id[1:]) % 2 == "ab".index(tenant) for c in e.candidates)
            assert [c.raw for c in e.candidates] == pytest.approx([c.raw for c in r.candidates], abs=1e-6)


def test_json_document_lists_the_queries_asked(hand):
    problem, log, _ = hand
    doc = explain_document(replay(problem, log), queries=[1])
    assert [q["id"] for q in doc["queries"]] == ["b"]
    assert doc["summary"]["specs"]["current"]["queries"] == 2  # summaries over the whole log


@pytest.mark.model
def test_explain_reads_the_dataset_questions_as_evaluate_does(capsys):
    """End to end on seed16, the model embedding both: explain without --log replays the
    dataset's questions; its injected sets are evaluate's."""
    assert main(["explain", "--format", "json"]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert main(["evaluate", "--format", "json"]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    want = {q["id"]: [c["memory"] for c in q["candidates"] if c["injected"]] for q in evaluated["questions"]}
    assert {q["id"]: q["specs"]["current"]["injected"] for q in explained["queries"]} == want


def test_shard_counts_in_the_summary(hand, capsys):
    """``--shards 1,2,4``: the first count is the collection's, each other one replayed and
    compared with it; the counts agree with replays built directly."""
    problem, log, tmp = hand
    args = ["explain", "--dataset", str(tmp / "store"), "--log", str(tmp / "log.jsonl"), "--candidates", "1"]
    assert main([*args, "--inject", "1", "--threshold", "0.75", "--shards", "1,2,4", "--format", "json"]) == 0
    shards = json.loads(capsys.readouterr().out)["summary"]["shards"]
    assert [x["shards"] for x in shards] == [1, 2, 4]
    from memlab.qdrant.sharding import Scope

    one = replay(replace(problem, spec=replace(SPEC, candidates=1)), log)
    for x in shards[1:]:
        other = replay(one.problem.with_scope(Scope(shards=x["shards"])), log)
        changed = sum(
            a != b for a, b in zip(one.runs[0].injected_sets(), other.runs[0].injected_sets(), strict=True)
        )
        assert x["changed"] == changed


def test_shards_list_is_checked(hand, capsys):
    _, _, tmp = hand
    args = ["explain", "--dataset", str(tmp / "store"), "--log", str(tmp / "log.jsonl"), "--shards", "1,x"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        "memlab: error: --shards: expected shard counts separated by commas, got 'x' in '1,x'"
    )


def test_table_lists_the_queries_asked_and_counts_the_rest_once(hand, capsys):
    """--query a lists a alone (b is left out of the overview; the summaries stay whole), and
    the memories watched with --memory are not counted again in the "+" line: at the query m3 is
    the one memory outside the three candidates and m4 is written the day after."""
    _, _, tmp = hand
    args = [
        "explain",
        "--dataset",
        str(tmp / "store"),
        "--log",
        str(tmp / "log.jsonl"),
        "--threshold",
        "0.75",
    ]
    assert main([*args, "--candidates", "3", "--inject", "1", "--query", "a", "--memory", "m3"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.split("\nquery ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]]
    assert rows == ["a"]
    assert "    + 0 more not among the candidates, 1 written after the query\n" in out
    assert "log: " in out and ": 2 queries (" in out


def test_an_against_value_the_spec_refuses_names_the_option(hand, capsys):
    _, _, tmp = hand
    args = ["explain", "--dataset", str(tmp / "store"), "--log", str(tmp / "log.jsonl"), "--against", "tau=0"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        "memlab: error: --against tau=0: tau_days: expected a finite number > 0, got 0"
    )
