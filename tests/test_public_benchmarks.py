"""import-longmemeval and import-locomo on hand-written files in the published schemas.

``tests/data/locomo_tiny.json`` and ``longmemeval_tiny.json`` follow the published schemas with
made-up content; ``*_defects.json`` reproduce, with made-up content, the defects of the real
LoCoMo file (category 5 without ``answer``, empty evidence, several ids in one string, ``D:2:1``,
zero-padded and unknown ids, an int answer, observation evidence as a list and as a comma string,
a session date without turns) and the edge cases of LongMemEval. Never the real data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memlab.app.cli import main
from memlab.core.errors import InputError, UnknownNameError
from memlab.datasets.schema import load_dataset
from memlab.importers.locomo import import_locomo, parse_session_date
from memlab.importers.longmemeval import import_longmemeval, parse_lme_date

DATA = Path(__file__).parent / "data"


def kinds(dataset) -> dict[str, str]:
    return {q.id: q.kind for q in dataset.questions}


def test_locomo_tiny_observations(tmp_path):
    result = import_locomo(DATA / "locomo_tiny.json", tmp_path / "ds")
    ds = load_dataset(tmp_path / "ds")
    # 6 observations: Priya 2 + Tomas 1 in session 1, Tomas 2 + Priya 1 in session 2
    assert result.memories == 6 and len(ds.memories) == 6
    assert ds.memory_ids == (
        "conv-901:D1:o1",
        "conv-901:D1:o2",
        "conv-901:D1:o3",
        "conv-901:D2:o1",
        "conv-901:D2:o2",
        "conv-901:D2:o3",
    )
    assert ds.memory("conv-901:D1:o3").text("en") == "Tomas started cello lessons on Monday."
    assert f"{ds.memory('conv-901:D2:o1').date:%Y-%m-%d %H:%M}" == "2023-04-02 10:20"
    assert kinds(ds) == {
        "conv-901:qa0": "hit",
        "conv-901:qa1": "hit",
        "conv-901:qa2": "hit",  # "When did ...?" names no time: a hit
        "conv-901:qa3": "hit",
        "conv-901:qa4": "nohit",  # category 5
    }
    # evidence D1:2 is held by Tomas's observation; D1:2 + D2:1 by two memories, so no current
    q0, q1 = ds.question("conv-901:qa0"), ds.question("conv-901:qa1")
    assert (q0.relevant, q0.current) == (("conv-901:D1:o3",), "conv-901:D1:o3")
    assert (q1.relevant, q1.current) == (("conv-901:D1:o3", "conv-901:D2:o1"), None)
    # D1:3 is cited by both of Priya's session-1 observations
    assert ds.question("conv-901:qa3").relevant == ("conv-901:D1:o1", "conv-901:D1:o2")
    # every question is asked at the last session: 10:20 am on 2 April 2023
    assert {f"{q.date:%Y-%m-%d %H:%M}" for q in ds.questions} == {"2023-04-02 10:20"}
    assert result.log.summary()["categories"] == {
        "multi-hop": {"hit": 1},
        "temporal": {"hit": 1},
        "open-domain": {"hit": 1},
        "single-hop": {"hit": 1},
        "adversarial": {"nohit": 1},
    }
    assert json.loads((tmp_path / "ds" / "dataset.json").read_text())["date_prefix"] is False


def test_locomo_tiny_turns_carry_the_speaker_and_the_photo_caption(tmp_path):
    import_locomo(DATA / "locomo_tiny.json", tmp_path / "ds", granularity="turn")
    ds = load_dataset(tmp_path / "ds")
    assert len(ds.memories) == 6
    assert (
        ds.memory("conv-901:D1:3")
        .text("en")
        .endswith("[shares a photo: a photo of potted herbs and an orchid on a balcony railing]")
    )
    assert ds.memory("conv-901:D1:2").text("en").startswith("Tomas: Busy but fun.")
    q1 = ds.question("conv-901:qa1")
    assert q1.relevant == ("conv-901:D1:2", "conv-901:D2:1") and q1.current is None


def test_locomo_defects_are_repaired_or_rejected_with_a_reason(tmp_path):
    result = import_locomo(DATA / "locomo_defects.json", tmp_path / "ds", granularity="turn")
    ds = load_dataset(tmp_path / "ds")
    # the session_3 date has no turns: 5 turns from sessions 1 and 2 only
    assert len(ds.memories) == 5
    assert ds.memory("conv-902:D1:2").text("en") == "Ben: Congrats! I finally fixed my old road bike."
    assert (
        kinds(ds)
        == {
            "conv-902:qa0": "hit",
            "conv-902:qa1": "hit",
            "conv-902:qa2": "time",  # "on 5 June, 2023"; the evidence (session 2) is dated 6 June: the gate's +1 day
            "conv-902:qa3": "hit",
            "conv-902:qa5": "hit",
            "conv-902:qa6": "nohit",
            "conv-902:qa7": "nohit",
        }
    )
    assert ds.question("conv-902:qa1").relevant == ("conv-902:D1:2", "conv-902:D2:1")  # "D1:2; D2:1"
    assert ds.question("conv-902:qa2").current == "conv-902:D2:1"  # "D:2:1"
    assert ds.question("conv-902:qa3").relevant == ("conv-902:D1:1",)  # D1:01 kept; D9:9 and D dropped
    log = result.log.to_dict()
    assert [(r["record"], r["reason"]) for r in log["rejections"]] == [
        ("conv-902 qa[4]", "no evidence dialogue id"),
        ("conv-902 qa[8]", "unknown category"),
    ]
    assert [(r["record"], r["repair"], r["detail"]) for r in log["repairs"]] == [
        ("conv-902 qa[1]", "several ids in one string split", "D1:2; D2:1"),
        ("conv-902 qa[2]", "id rewritten", "D:2:1 -> D2:1"),
        ("conv-902 qa[3]", "id rewritten", "D1:01 -> D1:1"),
        ("conv-902 qa[3]", "id not in the conversation dropped", "D9:9"),
        ("conv-902 qa[3]", "malformed id dropped", "D"),
    ]
    assert log["categories"]["unknown (7)"] == {"rejected": 1}
    notes = {q.id: q.note for q in ds.questions}
    assert notes["conv-902:qa3"] == "LoCoMo category 1 (multi-hop); answer: 1"  # an int answer
    assert notes["conv-902:qa6"] == "LoCoMo category 5 (adversarial); adversarial_answer: Pixel"
    assert json.loads((tmp_path / "ds" / "import.json").read_text()) == json.loads(json.dumps(log))


def test_locomo_observation_evidence_as_list_and_comma_string(tmp_path):
    import_locomo(DATA / "locomo_defects.json", tmp_path / "ds")
    ds = load_dataset(tmp_path / "ds")
    # D1:1 is cited by Ana's observation ["D1:1", "D1:3"] and by "D2:2, D1:1"
    assert ds.question("conv-902:qa0").relevant == ("conv-902:D1:o1", "conv-902:D2:o2")
    # D1:3 only by the list
    assert ds.question("conv-902:qa5").relevant == ("conv-902:D1:o1",)


def test_locomo_rejects_a_question_whose_evidence_no_observation_holds(tmp_path):
    data = json.loads((DATA / "locomo_tiny.json").read_text())
    data[0]["qa"].append(
        {"question": "What did Priya ask?", "answer": "hi", "evidence": ["D1:1"], "category": 4}
    )
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    result = import_locomo(path, tmp_path / "ds")
    assert result.log.rejections == [
        {
            "record": "conv-901 qa[5]",
            "category": "single-hop",
            "reason": "no observation holds its evidence",
            "detail": "D1:1",
        }
    ]
    assert result.questions == 5


def test_locomo_conversation_by_id_or_position(tmp_path):
    data = json.loads((DATA / "locomo_tiny.json").read_text()) + json.loads(
        (DATA / "locomo_defects.json").read_text()
    )
    path = tmp_path / "two.json"
    path.write_text(json.dumps(data))
    both = load_dataset(import_locomo(path, tmp_path / "both").path)
    assert len(both.memories) == 6 + 4
    # a merged dataset: each conversation's questions asked at its own last session
    assert f"{both.question('conv-902:qa0').date:%Y-%m-%d}" == "2023-06-06"
    assert f"{both.reference_date:%Y-%m-%d}" == "2023-06-06"
    second = load_dataset(import_locomo(path, tmp_path / "c2", conversation="2").path)
    assert {m.id.split(":")[0] for m in second.memories} == {"conv-902"}
    by_id = load_dataset(import_locomo(path, tmp_path / "c1", conversation="conv-901").path)
    assert len(by_id.memories) == 6
    with pytest.raises(UnknownNameError) as e:
        import_locomo(path, tmp_path / "x", conversation="conv-1")
    assert str(e.value) == (
        "no conversation 'conv-1': give a sample_id or a position 1..2; sample_ids: conv-901, conv-902"
    )


def test_longmemeval_tiny_sessions(tmp_path):
    result = import_longmemeval(DATA / "longmemeval_tiny.json", tmp_path / "ds")
    ds = load_dataset(tmp_path / "ds")
    assert len(ds.memories) == 10 and result.memories == 10  # 3 + 3 + 2 + 2 sessions, none shared
    assert kinds(ds) == {
        "tiny0001": "contradiction",
        "tiny0002": "hit",
        "tiny0003_abs": "nohit",
        "tiny0004": "hit",
    }
    ku = ds.question("tiny0001")
    assert (ku.current, ku.stale) == ("answer_tiny0001_2", ("answer_tiny0001_1",))
    assert f"{ku.date:%Y-%m-%d %H:%M}" == "2023-06-02 19:40"
    # a session is its user turns, joined by spaces (as LongMemEval's own retrieval indexes it)
    assert ds.memory("answer_tiny0001_1").text("en") == (
        "I just signed up at IronWorks gym downtown. Can you suggest a 3-day beginner routine? "
        "Great, thanks. Should I stretch before or after?"
    )
    # "How many days passed between ...": two evidence sessions, no time named: a hit, no current
    tr = ds.question("tiny0002")
    assert tr.relevant == ("answer_tiny0002_1", "answer_tiny0002_2") and tr.current is None
    assert ds.question("tiny0004").current == "answer_tiny0004_1"
    assert result.log.summary()["categories"] == {
        "single-session-user": {"hit": 1},
        "temporal-reasoning": {"hit": 1},
        "knowledge-update": {"contradiction": 1},
        "abstention": {"nohit": 1},
    }


def test_longmemeval_tiny_turns(tmp_path):
    import_longmemeval(DATA / "longmemeval_tiny.json", tmp_path / "ds", granularity="turn")
    ds = load_dataset(tmp_path / "ds")
    # user turns only: 2 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 2
    assert len(ds.memories) == 12
    assert ds.question("tiny0004").relevant == ("answer_tiny0004_1_1",)  # has_answer true; _3 is false
    ku = ds.question("tiny0001")
    assert (ku.kind, ku.current, ku.stale) == (
        "contradiction",
        "answer_tiny0001_2_1",
        ("answer_tiny0001_1_1",),
    )


def test_longmemeval_defects(tmp_path):
    result = import_longmemeval(DATA / "longmemeval_defects.json", tmp_path / "ds")
    ds = load_dataset(tmp_path / "ds")
    # the filler recurs with another date: a variant memory
    assert ds.memory_ids == (
        "sharegpt_f1_0",
        "answer_d01_1",
        "sharegpt_f1_0~2",
        "answer_d02_1",
        "answer_d05_1",
        "answer_d05_2",
    )
    assert kinds(ds) == {"d01": "hit", "d02": "time"}
    # a knowledge update with one evidence session stays a hit; "3 days ago" from 12 July is 9 July
    assert ds.question("d01").current == "answer_d01_1"
    assert ds.question("d02").current == "answer_d02_1"
    # d05: answer_d05_1 answers on the assistant side only (LongMemEval's evaluation does not count
    # it) and answer_d05_2 is dated after the question: nothing left, as at turn granularity
    assert [(r["record"], r["reason"]) for r in result.log.rejections] == [
        ("[2] d03", "question_date unreadable"),
        ("[3] d04", "unknown question_type"),
        ("[4] d05", "no user turn of its evidence sessions is marked has_answer"),
        ("[5] d01", "duplicate question_id"),
    ]
    assert result.log.repairs == [
        {"record": "[4] d05", "repair": "evidence dated after the question dropped", "detail": "answer_d05_2"}
    ]


def test_longmemeval_turns_reject_evidence_only_in_assistant_turns(tmp_path):
    result = import_longmemeval(DATA / "longmemeval_defects.json", tmp_path / "ds", granularity="turn")
    assert ("[4] d05", "no user turn of its evidence sessions is marked has_answer") in [
        (r["record"], r["reason"]) for r in result.log.rejections
    ]
    assert result.questions == 2


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [
        (parse_session_date, "1:56 pm on 8 May, 2023", "2023-05-08 13:56"),
        (parse_session_date, "12:09 am on 13 September, 2023", "2023-09-13 00:09"),
        (parse_lme_date, "2023/05/20 (Sat) 02:21", "2023-05-20 02:21"),
        (parse_lme_date, "2023/05/20", "2023-05-20 00:00"),
    ],
)
def test_benchmark_dates(parse, text, expected):
    assert f"{parse(text):%Y-%m-%d %H:%M}" == expected


def test_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="expected a JSON list of conversations, got dict"):
        (tmp_path / "x.json").write_text("{}")
        import_locomo(tmp_path / "x.json", tmp_path / "ds")
    with pytest.raises(InputError, match=r"--granularity: 'word' is not one of session, turn"):
        import_longmemeval(DATA / "longmemeval_tiny.json", tmp_path / "ds", granularity="word")
    assert not (tmp_path / "ds").exists()


def test_cli_import_then_validate(tmp_path, capsys):
    out = tmp_path / "lme"
    assert main(["import-longmemeval", str(DATA / "longmemeval_tiny.json"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == f"wrote {out}: 10 memories, 4 questions"
    assert "knowledge-update                         0             1             0             0" in text
    assert main(["validate", str(out)]) == 0
    assert "(2 hit, 1 contradiction, 1 nohit, 0 time; 4 dated)" in capsys.readouterr().out
    assert main(["import-locomo", str(DATA / "locomo_tiny.json"), "-o", str(out)]) == 2
    assert "already exists and is not an empty folder" in capsys.readouterr().err


def test_replace_swaps_an_earlier_import_and_refuses_anything_else(tmp_path, capsys):
    """``--replace`` (a recorded import block in docs/ reruns over its own folder): an earlier
    import is replaced whole, with the same summary; a folder that is no import is refused, untouched."""
    out = tmp_path / "locomo"
    argv = ["import-locomo", str(DATA / "locomo_tiny.json"), "-o", str(out)]
    assert main(argv) == 0
    first = capsys.readouterr().out
    (out / "left-over.txt").write_text("from before")
    assert main([*argv, "--replace"]) == 0
    assert capsys.readouterr().out == first
    assert not (out / "left-over.txt").exists() and (out / "import.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locomo"]  # no temporary folder left
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's file")
    assert main(["import-locomo", str(DATA / "locomo_tiny.json"), "-o", str(mine), "--replace"]) == 2
    assert f"--replace: {mine} is not an earlier benchmark import" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    lme = tmp_path / "lme"
    lme_argv = ["import-longmemeval", str(DATA / "longmemeval_tiny.json"), "-o", str(lme)]
    assert main(lme_argv) == 0 and main([*lme_argv, "--replace"]) == 0


def test_an_import_inside_a_clone_stays_out_of_git(tmp_path):
    """Each import writes a .gitignore of ``*``: in a git work tree, ``git add -A`` leaves the
    benchmark's files out while the tree's own file goes in."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "clone"
    (repo / "data").mkdir(parents=True)
    (repo / "README.md").write_text("mine\n")

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
        return done.stdout

    git("init", "-q")
    import_locomo(DATA / "locomo_tiny.json", repo / "data" / "locomo_tiny")
    import_longmemeval(DATA / "longmemeval_tiny.json", repo / "data" / "longmemeval_tiny")
    assert (repo / "data" / "locomo_tiny" / ".gitignore").read_text().splitlines()[-1] == "*"
    git("add", "-A")
    assert git("diff", "--cached", "--name-only").splitlines() == ["README.md"]
    assert load_dataset(repo / "data" / "locomo_tiny").memory_ids[0] == "conv-901:D1:o1"


def test_default_folders_name_a_granularity_that_is_not_the_default(tmp_path, monkeypatch, capsys):
    """Both granularities of one file import side by side under data/ without -o."""
    monkeypatch.chdir(tmp_path)
    for argv, folder in (
        (["import-locomo", str(DATA / "locomo_tiny.json")], "locomo_tiny"),
        (["import-locomo", str(DATA / "locomo_tiny.json"), "--granularity", "turn"], "locomo_tiny-turn"),
        (["import-locomo", str(DATA / "locomo_tiny.json"), "--conversation", "1"], "locomo_tiny-1"),
        (["import-longmemeval", str(DATA / "longmemeval_tiny.json")], "longmemeval_tiny"),
        (
            ["import-longmemeval", str(DATA / "longmemeval_tiny.json"), "--granularity", "turn"],
            "longmemeval_tiny-turn",
        ),
    ):
        assert main(argv) == 0
        assert capsys.readouterr().out.splitlines()[0].startswith(f"wrote data/{folder}: ")
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [
        "locomo_tiny",
        "locomo_tiny-1",
        "locomo_tiny-turn",
        "longmemeval_tiny",
        "longmemeval_tiny-turn",
    ]
