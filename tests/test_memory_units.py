"""The memory unit: LoCoMo's session summaries as memories (``import-locomo --granularity
session``), and ``tune-benchmark --units``: what to store, compared held out on the same questions.

``tests/data/locomo_units.json`` is ``locomo_heldout.json`` (four made-up conversations of two
sessions each) with a ``session_summary`` written for it; conv-904's second session has none.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.app.cli import main
from memlab.datasets.schema import load_dataset
from memlab.importers.locomo import import_locomo

DATA = Path(__file__).parent / "data"
UNITS = DATA / "locomo_units.json"


def test_session_summaries_are_dated_memories_relevant_through_their_sessions_turns(tmp_path):
    result = import_locomo(UNITS, tmp_path / "ds", granularity="session")
    ds = load_dataset(tmp_path / "ds")
    # 2 + 2 + 2 + 1 summaries (conv-904 session 2 has none: skipped, said)
    assert result.memories == 7
    assert ds.memory_ids == (
        "conv-901:S1",
        "conv-901:S2",
        "conv-902:S1",
        "conv-902:S2",
        "conv-903:S1",
        "conv-903:S2",
        "conv-904:S1",
    )
    # each dated by its session's date time, its group its conversation, its text the summary
    dates = {m.id: f"{m.date:%Y-%m-%d %H:%M}" for m in ds.memories}
    assert dates["conv-901:S1"] == "2023-03-14 15:05"  # "3:05 pm on 14 March, 2023"
    assert dates["conv-901:S2"] == "2023-04-02 10:20"  # "10:20 am on 2 April, 2023"
    assert dates["conv-904:S1"] == "2023-08-03 20:40"  # "8:40 pm on 3 August, 2023"
    assert {m.group for m in ds.memories if m.id.startswith("conv-902")} == {"conv-902"}
    assert ds.memory("conv-902:S2").text("en") == (
        "Ana and Bruno talked on 20 May 2023. Bruno named his sourdough starter Dough Boy and painted "
        "his kitchen yellow. Ana bought new trail running shoes."
    )
    q = {x.id: x for x in ds.questions}
    # evidence D1:2 lies in session 1: S1 alone is relevant, hence current
    assert (q["conv-901:qa0"].relevant, q["conv-901:qa0"].current) == (("conv-901:S1",), "conv-901:S1")
    # D1:2 and D2:1: both summaries, no single one current
    assert (q["conv-901:qa1"].relevant, q["conv-901:qa1"].current) == (("conv-901:S1", "conv-901:S2"), None)
    assert q["conv-903:qa2"].relevant == ("conv-903:S2",)  # D2:2
    # conv-904 qa0 cites D1:1 and D2:2; session 2 has no summary, so only S1 holds its evidence
    assert (q["conv-904:qa0"].relevant, q["conv-904:qa0"].current) == (("conv-904:S1",), "conv-904:S1")
    # qa1 (D2:3) and qa3 (D2:1) lie only in the session without a summary: rejected with why
    assert "conv-904:qa1" not in q and "conv-904:qa3" not in q
    rejected = {r["record"]: r["reason"] for r in result.log.to_dict()["rejections"]}
    assert rejected == {
        "conv-904 qa[1]": "no session holds its evidence",
        "conv-904 qa[3]": "no session holds its evidence",
    }
    assert result.log.to_dict()["skipped"] == [
        {"record": "conv-904 session_2", "reason": "session without a summary"}
    ]
    # adversarial questions stay no-hit; every question is asked at its conversation's last session
    assert q["conv-904:qa4"].kind == "nohit"
    assert f"{q['conv-904:qa0'].date:%Y-%m-%d %H:%M}" == "2023-08-19 13:10"
    meta = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    assert meta["benchmark"]["granularity"] == "session" and meta["date_prefix"] is False


def test_a_file_without_session_summaries_says_so(tmp_path):
    """locomo_heldout.json has no session_summary: no memory, and the error says why."""
    from memlab.core.errors import InputError

    with pytest.raises(InputError) as e:
        import_locomo(DATA / "locomo_heldout.json", tmp_path / "ds", granularity="session")
    assert "no memory could be imported" in str(e.value) and "session without a summary" in str(e.value)
    assert not (tmp_path / "ds").exists()


def test_the_session_import_has_its_own_default_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["import-locomo", str(UNITS), "--granularity", "session"]) == 0
    assert (
        capsys.readouterr().out.splitlines()[0] == "wrote data/locomo_units-session: 7 memories, 18 questions"
    )


# ---------------------------------------------------------------------------------------------
# tune-benchmark --units: the study on hand-made embeddings (word counts), tokens counted by words


def bag_of_words(texts: list[str], vocabulary: list[str]):
    """Word counts over the vocabulary, unit length (a small constant keeps an empty text off zero)."""
    import re

    import numpy as np

    out = np.zeros((len(texts), len(vocabulary) + 1))
    out[:, -1] = 0.05
    index = {w: i for i, w in enumerate(vocabulary)}
    for r, text in enumerate(texts):
        for w in re.findall(r"[a-z]+", text.lower()):
            if w in index:
                out[r, index[w]] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def words(texts: list[str]):
    import numpy as np

    return np.array([len(t.split()) for t in texts])


@pytest.fixture(scope="module")
def unit_problems(tmp_path_factory):
    import re

    from helpers import problem_of

    from memlab.core.spec import RetrievalSpec

    root = tmp_path_factory.mktemp("units")
    datasets = {}
    for unit in ("turn", "observation", "session"):
        import_locomo(UNITS, root / unit, granularity=unit)
        datasets[unit] = load_dataset(root / unit)
    texts = [m.text("en") for ds in datasets.values() for m in ds.memories]
    texts += [q.text("en") for q in datasets["turn"].questions]
    vocabulary = sorted({w for t in texts for w in re.findall(r"[a-z]+", t.lower()) if len(w) > 3})
    problems = {
        unit: problem_of(
            ds,
            RetrievalSpec(),
            memories=bag_of_words([m.text("en") for m in ds.memories], vocabulary),
            questions=bag_of_words([q.text("en") for q in ds.questions], vocabulary),
        )
        for unit, ds in datasets.items()
    }
    probes = bag_of_words(["weather forecast tomorrow", "stock market prices"], vocabulary)
    return problems, probes


def units_run(problems, probes, **kw):
    from memlab.studies.hybrid import RetrieverGrid
    from memlab.studies.units import held_out_units

    grid = RetrieverGrid(
        alphas=(0.0, 1.0),
        norms=("min-max",),
        rrf_ks=(60,),
        bonus=(0.0, 0.05),
        tau_days=(7, 30),
        threshold_steps=11,
        candidates=4,
        inject=2,
    )
    kw.setdefault("hybrids", ("hybrid-weighted", "rrf-time"))  # two of the four: seconds, not tens
    return held_out_units(
        problems, words, tokenizer="words", folds=2, n_boot=200, grid=grid, probe_vectors=probes, **kw
    )


@pytest.fixture(scope="module")
def units_result(unit_problems):
    """The three units compared once (a few seconds), read by the tests below."""
    problems, probes = unit_problems
    return problems, units_run(problems, probes)


def test_units_are_compared_on_the_questions_every_unit_keeps_with_shared_folds(units_result):
    problems, result = units_result
    q = result.questions
    # conv-904 qa1 and qa3 lie in the session without a summary: left out for every unit
    assert result.details["questions"] == {"turn": 20, "observation": 20, "session": 18}
    assert result.details["common_questions"] == 18
    assert result.details["left_out"] == {"turn": 2, "observation": 2, "session": 0}
    assert set(q["question"]) == set(problems["session"].dataset.question_ids)
    assert "conv-904:qa1" not in set(q["question"])
    # every (system, unit) holds the 18 questions, each question in one fold whatever the unit
    assert q.groupby(["system", "unit"]).size().tolist() == [18] * 9
    assert (q.groupby("question")["fold"].nunique() == 1).all()
    assert (q.groupby("haystack")["fold"].nunique() == 1).all()
    # each unit's own held-out run evaluated its own questions, every one
    assert len(result.runs["turn"].questions.query("system == 'cosine'")) == 20


def test_token_cost_is_the_count_of_the_injected_memories_texts(units_result):
    """Counted again here: each question's injected ids, looked up in the unit's own dataset, their
    words summed; and the table's tokens the mean of those over the group's questions."""
    import numpy as np

    problems, result = units_result
    q = result.questions
    for (system, unit), rows in q.groupby(["system", "unit"]):
        ds = problems[unit].dataset
        for r in rows.to_dict("records"):
            assert r["tokens"] == sum(len(ds.memory(m).text("en").split()) for m in r["memories"])
            assert len(r["memories"]) == r["injected"] <= 2
        table = result.table
        t = table[(table["system"] == system) & (table["unit"] == unit)].set_index("group")
        assert t.loc["all", "tokens"] == pytest.approx(rows["tokens"].mean())
        adv = rows[rows["category"] == "adversarial"]
        assert t.loc["adversarial", "tokens"] == pytest.approx(adv["tokens"].mean())
    # cosine top-k always injects two memories: a session summary costs more words than two turns
    cos = result.table.query("system == 'cosine' and group == 'all'").set_index("unit")
    assert cos.loc["session", "tokens"] > cos.loc["turn", "tokens"]
    # the difference to the reference unit is the difference of the two means, inside its interval
    for r in result.table.query("unit != 'turn'").to_dict("records"):
        ref = result.table.query("system == @r['system'] and group == @r['group'] and unit == 'turn'").iloc[0]
        assert r["tokens_diff_turn"] == pytest.approx(r["tokens"] - ref["tokens"])
        assert r["diff_turn"] == pytest.approx(r["value"] - ref["value"])
        assert r["diff_turn_lo"] - 1e-12 <= r["diff_turn"] <= r["diff_turn_hi"] + 1e-12
        assert r["tokens_diff_turn_lo"] - 1e-12 <= r["tokens_diff_turn"] <= r["tokens_diff_turn_hi"] + 1e-12
    assert np.isnan(result.table.query("unit == 'turn'")["diff_turn"]).all()


def test_cosine_top_k_per_unit_counted_again_with_numpy(units_result):
    """Plain cosine per unit: the first two memories of the question's own conversation by raw
    score, recall_any per category, counted here from each unit's score table."""
    import numpy as np

    problems, result = units_result
    common = set(problems["session"].dataset.question_ids)
    for unit, p in problems.items():
        ds, raw, visible = p.dataset, p.scores.raw, p.dataset.visible()
        hits: dict[str, list[float]] = {}
        for i, question in enumerate(ds.questions):
            if question.id not in common:
                continue
            scores = np.where(visible[i], raw[i], -np.inf)
            top = {ds.memory_ids[m] for m in np.lexsort((np.arange(len(scores)), -scores))[:2]}
            value = 1.0 if question.kind == "nohit" else float(bool(top & set(question.relevant)))
            hits.setdefault(question.category, []).append(value)
        t = result.table.query("system == 'cosine' and unit == @unit").set_index("group")
        for category, values in hits.items():
            assert t.loc[category, "value"] == pytest.approx(np.mean(values)), (unit, category)


def test_a_unit_compared_with_itself_differs_by_nothing(unit_problems):
    problems, probes = unit_problems
    same = {"session": problems["session"], "again": problems["session"]}
    result = units_run(same, probes)
    again = result.table.query("unit == 'again'")
    assert len(again) == 3 * 6  # 3 systems x (all + 5 categories)
    for col in ("diff_session", "diff_session_lo", "diff_session_hi", "tokens_diff_session"):
        assert (again[col] == 0).all(), col
    assert (again["wins_session"] == 0).all() and (again["losses_session"] == 0).all()


@pytest.mark.slow  # imports transformers (several seconds)
def test_the_drift_counter_counts_the_injected_memories_as_the_tokenizer_does(units_result):
    """The tokens the command counts (the drift study's counter: the bundled BertTokenizer, no
    special tokens), summed over each question's injected memories by ``injected_tokens``, equal
    the count of the same texts by the tokenizer loaded here directly."""
    from transformers import AutoTokenizer

    from memlab.drift.arrays import default_token_counter
    from memlab.embedding.engines import sentence_transformers_package
    from memlab.studies.units import injected_tokens

    problems, result = units_result
    count, name = default_token_counter("multilingual-e5-small")
    assert name.startswith("BertTokenizer of all-MiniLM-L6-v2")
    tokenizer = AutoTokenizer.from_pretrained(sentence_transformers_package("all-MiniLM-L6-v2")[0])
    for unit, p in problems.items():
        ds = p.dataset
        counts = dict(
            zip(ds.memory_ids, (int(n) for n in count([m.text("en") for m in ds.memories])), strict=True)
        )
        q = result.questions[result.questions["unit"] == unit]
        got = injected_tokens(q["memories"], counts)
        want = [sum(len(tokenizer.tokenize(ds.memory(m).text("en"))) for m in ids) for ids in q["memories"]]
        assert got.tolist() == want and sum(want) > 0


def test_wins_and_losses_count_the_questions_per_direction(units_result):
    _, result = units_result
    q = result.questions
    for r in result.table.query("unit != 'turn' and group == 'all'").to_dict("records"):
        mine = q.query("system == @r['system'] and unit == @r['unit']").set_index("question")["utility"]
        ref = q.query("system == @r['system'] and unit == 'turn'").set_index("question")["utility"]
        d = mine - ref.loc[mine.index]
        assert (r["wins_turn"], r["losses_turn"]) == (int((d > 0).sum()), int((d < 0).sum()))


def test_units_refused_with_a_reason(tmp_path, capsys):
    from memlab.core.errors import InputError
    from memlab.importers.benchmarks import unit_names

    assert unit_names(UNITS, ["turn", "session"]) == "locomo"
    with pytest.raises(InputError) as e:
        unit_names(UNITS, ["turn", "sessions"])
    assert (
        str(e.value) == "--units: 'sessions' is not a locomo granularity; one of observation, turn, session"
    )
    with pytest.raises(InputError) as e:
        unit_names(DATA / "longmemeval_tiny.json", ["observation"])
    assert str(e.value) == "--units: 'observation' is not a longmemeval granularity; one of session, turn"
    with pytest.raises(InputError) as e:
        unit_names(UNITS, ["turn", "turn"])
    assert str(e.value) == "--units: turn, turn names a unit twice"
    assert main(["tune-benchmark", "--units", "turn"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("--units and --benchmark-file go together: the units are imported from that file")
    )
    assert (
        main(["tune-benchmark", "--units", "turn", "--benchmark-file", str(UNITS), "--systems", "nope"]) == 2
    )
    assert "system for --systems" in capsys.readouterr().err
    argv = ["tune-benchmark", "--units", "turn", "--benchmark-file", str(UNITS), "--hybrids", ","]
    assert main(argv) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("--systems names hybrid, and --hybrids names no hybrid retriever to choose it from")
    )


def test_longmemeval_sessions_beside_turns(tmp_path):
    """LongMemEval's two units (a session's user turns joined, or each user turn) compared on the
    hand-written file: the same four questions in the same folds, each unit's tokens its own
    injected memories' words."""
    import re

    from helpers import problem_of

    from memlab.core.spec import RetrievalSpec
    from memlab.importers.longmemeval import import_longmemeval

    datasets = {}
    for unit in ("session", "turn"):
        import_longmemeval(DATA / "longmemeval_tiny.json", tmp_path / unit, granularity=unit)
        datasets[unit] = load_dataset(tmp_path / unit)
    texts = [m.text("en") for ds in datasets.values() for m in ds.memories]
    vocabulary = sorted({w for t in texts for w in re.findall(r"[a-z]+", t.lower()) if len(w) > 3})
    problems = {
        unit: problem_of(
            ds,
            RetrievalSpec(),
            memories=bag_of_words([m.text("en") for m in ds.memories], vocabulary),
            questions=bag_of_words([q.text("en") for q in ds.questions], vocabulary),
        )
        for unit, ds in datasets.items()
    }
    probes = bag_of_words(["weather forecast tomorrow"], vocabulary)
    result = units_run(problems, probes, systems=("cosine",))
    assert result.details["common_questions"] == 4 and result.details["haystacks"] == 4
    q = result.questions
    assert sorted(set(q["question"])) == ["tiny0001", "tiny0002", "tiny0003_abs", "tiny0004"]
    assert (q.groupby("question")["fold"].nunique() == 1).all()
    for r in q.to_dict("records"):
        ds = datasets[r["unit"]]
        assert r["tokens"] == sum(len(ds.memory(m).text("en").split()) for m in r["memories"])
    # a session is its user turns joined: top-2 sessions cost more words than top-2 turns here
    cos = result.table.query("group == 'all'").set_index("unit")
    assert cos.loc["session", "tokens"] > cos.loc["turn", "tokens"]


@pytest.mark.model
def test_tune_benchmark_units_command_end_to_end(tmp_path, capsys, cache_dir):
    """The command on the hand-written file with the default model: three imports, one table."""
    args = ["tune-benchmark", "--units", "turn,observation,session", "--benchmark-file", str(UNITS)]
    small = [
        "--cache-dir",
        str(cache_dir),
        "--folds",
        "2",
        "--boot",
        "50",
        "--candidates",
        "4",
        "--inject",
        "2",
    ]
    assert main([*args, *small, "--hybrids", "hybrid-weighted", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["units"] == ["turn", "observation", "session"] and doc["reference"] == "turn"
    assert doc["memories"] == {"turn": 24, "observation": 24, "session": 7}
    assert (
        doc["questions"] == {"turn": 20, "observation": 20, "session": 18} and doc["common_questions"] == 18
    )
    assert doc["tokenizer"].startswith("BertTokenizer of all-MiniLM-L6-v2")
    assert len(doc["table"]) == 3 * 6 * 3  # systems x (all + 5 categories) x units
    assert {r["unit"] for r in doc["table"]} == {"turn", "observation", "session"}
    assert main([*args, *small, "--hybrids", "hybrid-weighted", "--systems", "cosine"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("memory units held out: locomo as turn, observation, session (turn: 24 memories")
    assert (
        "compared on the 18 questions every unit keeps (left out of a unit's own: turn 2, observation 2;"
        in out
    )


@pytest.mark.slow  # two imports, two held-out studies and the tokenizer's first load: seconds
def test_tune_benchmark_units_on_longmemeval_through_the_command(tmp_path, capsys):
    """``tune-benchmark --units session,turn`` on the hand-written LongMemEval file, end to end
    against the word-count embedding server: each unit's plain cosine (the first two memories of
    the question's own haystack by raw score) and its prompt tokens (the bundled tokenizer's count
    of the injected texts), counted again here from the server's own embedding function."""
    import numpy as np
    from embed_fake import MODEL, EmbedServer, embed

    from memlab.drift.arrays import default_token_counter
    from memlab.importers.longmemeval import import_longmemeval

    file = DATA / "longmemeval_tiny.json"
    argv = ["tune-benchmark", "--units", "session,turn", "--benchmark-file", str(file), "--systems", "cosine"]
    argv += [
        "--folds",
        "2",
        "--boot",
        "50",
        "--candidates",
        "4",
        "--inject",
        "2",
        "--hybrids",
        "hybrid-weighted",
    ]
    with EmbedServer() as url:
        argv += ["--embed-url", url, "--embed-model", MODEL, "--cache-dir", str(tmp_path / "cache")]
        assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["benchmark"]["name"] == "longmemeval" and doc["units"] == ["session", "turn"]
    assert doc["common_questions"] == 4 and doc["folds"] == 2
    count, _ = default_token_counter(None)
    for unit in ("session", "turn"):
        import_longmemeval(file, tmp_path / unit, granularity=unit)
        ds = load_dataset(tmp_path / unit)
        assert doc["memories"][unit] == len(ds.memories)

        def unit_vectors(texts):
            v = np.array([embed(t) for t in texts])
            return v / np.linalg.norm(v, axis=1, keepdims=True)

        raw = (
            unit_vectors([q.text("en") for q in ds.questions])
            @ unit_vectors([m.text("en") for m in ds.memories]).T
        )
        visible = ds.visible()
        values, tokens = {}, []
        for i, question in enumerate(ds.questions):
            scores = np.where(visible[i], raw[i], -np.inf)
            top = [int(m) for m in np.lexsort((np.arange(len(scores)), -scores))[:2]]
            ids = {ds.memory_ids[m] for m in top}
            value = 1.0 if question.kind == "nohit" else float(bool(ids & set(question.relevant)))
            values.setdefault(question.category, []).append(value)
            tokens.append(int(sum(count([ds.memories[m].text("en") for m in top]))))
        rows = {r["group"]: r for r in doc["table"] if r["unit"] == unit and r["system"] == "cosine"}
        for category, got in values.items():
            assert rows[category]["value"] == pytest.approx(np.mean(got)), (unit, category)
        assert rows["all"]["tokens"] == pytest.approx(np.mean(tokens)), unit
