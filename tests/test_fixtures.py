"""The packaged fixture and the loader's validation, one exact message per mistake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from memlab.app.cli import main
from memlab.datasets.schema import DatasetError, dataset_dir, load_dataset


def test_seed16_shape(seed):
    assert seed.name == "seed16"
    assert f"{seed.reference_date:%Y-%m-%d}" == "2026-09-10"
    assert len(seed.memories) == 16 and len(seed.questions) == 10
    kinds = [q.kind for q in seed.questions]
    assert kinds.count("hit") == 4 and kinds.count("contradiction") == 2 and kinds.count("nohit") == 4
    assert seed.question_ids == ("H1", "H2", "H3", "H4", "C1", "C2", "N1", "N2", "N3", "N4")


def test_seed16_what_the_seed_determines(seed):
    def date(mid):
        return f"{seed.memory(mid).date:%m-%d}"

    c1, h2 = seed.question("C1"), seed.question("H2")
    assert (c1.current, c1.stale) == ("m02", ("m01",))
    assert (date("m01"), date("m02")) == ("08-20", "09-01")
    assert seed.languages == ("en", "ja")
    assert seed.memory("m02").texts == {
        "en": "2026-09-01: The user has been drinking sweet café au lait lately.",
        "ja": "2026-09-01: ユーザーは最近甘いカフェオレばかり飲んでいる",
    }
    assert h2.current == "m05" and date("m05") == "09-09"
    assert (date("m03"), date("m04")) == ("08-28", "09-08")
    # keyboard +0.030 and fall anime +0.035 at 0.05/14 days: 7 and 5 days old
    assert (date("m06"), date("m07")) == ("09-03", "09-05")
    assert seed.memory("m02").supersedes == "m01" and seed.memory("m10").supersedes == "m11"
    sources = [m.provenance for m in seed.memories]
    assert sources.count("seed") == 12 and sources.count("reconstructed") == 4
    assert c1.texts["ja"] == "私コーヒーどうやって飲むんだっけ"


def test_every_memory_text_starts_with_its_date(seed):
    for m in seed.memories:
        for text in m.texts.values():
            assert text.startswith(f"{m.date:%Y-%m-%d}: ")


def test_nohit_questions_have_no_labels(seed):
    for q in seed.questions:
        if q.kind == "nohit":
            assert (q.relevant, q.current, q.stale) == ((), None, ())


BAD = [
    (
        "memories.jsonl",
        3,
        {"date": "2026-13-01"},
        "memories.jsonl:3: date: '2026-13-01' is not a date (YYYY-MM-DD or ISO 8601)",
    ),
    ("memories.jsonl", 16, {"id": "m01"}, "memories.jsonl:16: id: duplicate id 'm01' (first on line 1)"),
    (
        "memories.jsonl",
        4,
        {"date": "2026-09-11", "text": "2026-09-11: x", "text_ja": "2026-09-11: x"},
        "memories.jsonl:4: date: 2026-09-11 is after the reference date 2026-09-10",
    ),
    ("memories.jsonl", 2, {"text_ja": ...}, "memories.jsonl:2: text_ja: missing"),
    ("memories.jsonl", 2, {"text": "  "}, "memories.jsonl:2: text: empty"),
    (
        "memories.jsonl",
        2,
        {"text": "The user likes tea."},
        "memories.jsonl:2: text: must start with the date, as '2026-09-01: ...'",
    ),
    ("memories.jsonl", 2, {"supersedes": "m99"}, "memories.jsonl:2: supersedes: unknown memory id 'm99'"),
    (
        "memories.jsonl",
        5,
        {"provenance": "guess"},
        "memories.jsonl:5: provenance: 'guess' is not one of seed, reconstructed, imported, synthetic, user",
    ),
    (  # a file written before 0.2 names the field "source"
        "memories.jsonl",
        5,
        {"provenance": ..., "source": "guess"},
        "memories.jsonl:5: source: 'guess' is not one of seed, reconstructed, imported, synthetic, user",
    ),
    (
        "memories.jsonl",
        6,
        {"colour": "red"},
        "memories.jsonl:6: colour: unknown field (allowed: date, group, id, note, payload, pinned, point_id, provenance, supersedes, text, text_ja, topic, type)",
    ),
    ("memories.jsonl", 6, {"pinned": "yes"}, "memories.jsonl:6: pinned: expected true or false, got 'yes'"),
    (
        "questions.jsonl",
        5,
        {"date": "2026-09-20"},
        "questions.jsonl:5: date: 2026-09-20 is after the reference date 2026-09-10",
    ),
    (
        "questions.jsonl",
        5,
        {"date": "2026-08-25", "relevant": ["m01"]},
        "questions.jsonl:5: current: 'm02' is dated after the question (2026-08-25), so it cannot be retrieved",
    ),
    (
        "questions.jsonl",
        5,
        {"relevant": ["m01", "m77"]},
        "questions.jsonl:5: relevant: unknown memory id 'm77'",
    ),
    ("questions.jsonl", 5, {"current": "m42"}, "questions.jsonl:5: current: unknown memory id 'm42'"),
    ("questions.jsonl", 5, {"stale": ["m02"]}, "questions.jsonl:5: current: 'm02' is also listed as stale"),
    (
        "questions.jsonl",
        7,
        {"kind": "maybe"},
        "questions.jsonl:7: kind: 'maybe' is not one of hit, contradiction, nohit, time",
    ),
    (
        "questions.jsonl",
        7,
        {"current": "m06"},
        "questions.jsonl:7: kind: a nohit question has no relevant, current or stale memories",
    ),
    ("questions.jsonl", 2, {"id": "H1"}, "questions.jsonl:2: id: duplicate id 'H1' (first on line 1)"),
    (
        "questions.jsonl",
        3,
        {"time_range": {"start": "2026-09-09", "end": "2026-09-08"}},
        "questions.jsonl:3: time_range: start 2026-09-09 is after end 2026-09-08",
    ),
    (
        "questions.jsonl",
        3,
        {"time_range": {"start": "2026-09-31", "end": "2026-10-01"}},
        "questions.jsonl:3: time_range: start: 2026-09-31 is not a calendar date (day is out of range for month)",
    ),
    (
        "questions.jsonl",
        3,
        {"time_range": {"start": "2026-09-01", "end": "2026-09-02T10:00"}},
        "questions.jsonl:3: time_range: end: expected a day as YYYY-MM-DD, got '2026-09-02T10:00'",
    ),
    (
        "questions.jsonl",
        3,
        {"time_range": "yesterday"},
        'questions.jsonl:3: time_range: expected {"start": "YYYY-MM-DD", "end": "YYYY-MM-DD"}, got \'yesterday\'',
    ),
    ("questions.jsonl", 9, {"text": ...}, "questions.jsonl:9: text: missing"),
]


@pytest.mark.parametrize(
    ("fname", "line", "change", "message"), BAD, ids=[b[3].split(": ", 1)[1] for b in BAD]
)
def test_bad_input_names_file_line_and_field(dataset_copy, fname, line, change, message):
    root, edit = dataset_copy
    edit(fname, line, **change)
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [f"{root}/{message}"]
    assert {p.name: p.read_bytes() for p in root.iterdir()} == before  # nothing changed on disk


def test_invalid_json_and_every_problem_listed(dataset_copy):
    root, edit = dataset_copy
    edit("memories.jsonl", 1, date="yesterday")
    with (root / "questions.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "X1", "kind": \n')
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [
        f"{root}/memories.jsonl:1: date: 'yesterday' is not a date (YYYY-MM-DD or ISO 8601)",
        f"{root}/questions.jsonl:11: invalid JSON: Expecting value",
    ]
    assert str(e.value) == "\n".join(e.value.problems)


def test_bad_reference_date(dataset_copy):
    root, _ = dataset_copy
    meta = json.loads((root / "dataset.json").read_text())
    meta["reference_date"] = "10/09/2026"
    (root / "dataset.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [
        f"{root}/dataset.json: reference_date: '10/09/2026' is not a date (YYYY-MM-DD or ISO 8601)"
    ]


def test_unknown_dataset_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    message = (
        "no dataset 'seed99': not a packaged dataset (packaged: daily-lunch, seed16, seed16-time), "
        f"not under {tmp_path / 'data'}, {tmp_path.parent / 'data'}, and not a folder ({tmp_path / 'seed99'})"
    )
    with pytest.raises(FileNotFoundError) as e:
        dataset_dir("seed99")
    assert str(e.value) == message
    assert main(["evaluate", "--source", "published", "--dataset", "seed99"]) == 2
    assert capsys.readouterr().err == f"memlab: error: {message}\n"


def test_names_find_packaged_datasets_then_data_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(dataset_dir("daily-lunch"), tmp_path / "data" / "my-device")
    shutil.copytree(dataset_dir("daily-lunch"), tmp_path / "data" / "seed16")  # a packaged name wins
    assert dataset_dir("my-device") == (tmp_path / "data" / "my-device").resolve()
    assert dataset_dir("seed16").parent.name == "packaged"
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # a notebook run in JupyterLab finds ../data
    assert dataset_dir("my-device") == (tmp_path / "data" / "my-device").resolve()
    monkeypatch.setenv("MEMLAB_DATA_DIR", str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError):
        dataset_dir("my-device")


def test_the_worked_example_under_data_validates():
    root = Path(__file__).resolve().parents[1] / "data" / "example-companion"
    ds = load_dataset(root)
    kinds = [q.kind for q in ds.questions]
    assert (len(ds.memories), kinds.count("hit"), kinds.count("contradiction"), kinds.count("time")) == (
        12,
        4,
        2,
        2,
    )
    assert ds.languages == ("en", "ja") and ds.question_ids[0] == "q1"


def test_question_dates_set_ages_and_what_is_retrievable(dataset_copy):
    """A question asked on Sep 5 sees memories up to Sep 5, aged from Sep 5."""
    root, edit = dataset_copy
    edit("questions.jsonl", 7, date="2026-09-05")  # N1
    ds = load_dataset(root)
    n1 = ds.question_ids.index("N1")
    ages, visible = ds.ages(), ds.visible()
    assert ages[n1, ds.memory_ids.index("m07")] == 0.0  # fall anime, Sep 5
    assert ages[n1, ds.memory_ids.index("m01")] == 16.0  # black coffee, Aug 20
    assert ages[0, ds.memory_ids.index("m01")] == 21.0  # other questions: from Sep 10
    assert ages[n1, ds.memory_ids.index("m05")] == np.inf  # written after the question
    hidden = sorted(m for m, v in zip(ds.memory_ids, visible[n1], strict=True) if not v)
    assert hidden == ["m04", "m05", "m10"]  # Sep 8, Sep 9, Sep 6
    assert visible.sum() == 16 * 10 - 3


def test_empty_files(dataset_copy):
    root, _ = dataset_copy
    (root / "memories.jsonl").write_text("")
    (root / "questions.jsonl").write_text("\n")
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    # said once, not as an unknown memory id on every question (issue 23)
    assert e.value.problems[-1] == (
        f"{root}/memories.jsonl: the file is empty: a dataset needs at least one memory, one JSON object per line"
    )


def test_declared_criteria_are_checked(dataset_copy):
    root, _ = dataset_copy
    meta = json.loads((root / "dataset.json").read_text())
    meta["criteria"][1]["question"] = "Z9"
    meta["criteria"][2]["kind"] = "often"
    (root / "dataset.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [
        f"{root}/dataset.json: criteria[2]: question: unknown question id 'Z9'",
        f"{root}/dataset.json: criteria[3]: criterion 'c': unknown kind 'often'; "
        "available: nohit_below, current_reaches, current_injected, no_stale_injected, current_above_stale",
    ]


def test_a_dataset_without_declared_criteria_gets_generic_ones(tmp_path):
    """The README's example: no-hit questions stay quiet, every current memory reaches the threshold,
    no stale memory gets in and none is ranked before the current one."""
    from memlab.core.criteria import dataset_criteria

    (tmp_path / "dataset.json").write_text('{"reference_date": "2026-11-29", "language": "en"}')
    (tmp_path / "memories.jsonl").write_text(
        '{"id": "m1", "date": "2026-11-20", "text": "2026-11-20: The user started learning the guitar."}\n'
        '{"id": "m2", "date": "2026-11-27", "text": "2026-11-27: The user gave up the guitar for the piano.", '
        '"supersedes": "m1", "pinned": false, "type": "fact"}\n'
    )
    (tmp_path / "questions.jsonl").write_text(
        '{"id": "q1", "text": "Which instrument am I learning?", "kind": "contradiction", '
        '"relevant": ["m1", "m2"], "current": "m2", "stale": ["m1"]}\n'
        '{"id": "q2", "text": "What\'s the capital of Peru?", "kind": "nohit"}\n'
    )
    ds = load_dataset(tmp_path)
    assert [(c.name, c.kind, c.question) for c in dataset_criteria(ds)] == [
        ("nohit", "nohit_below", None),
        ("current_q1", "current_reaches", "q1"),
        ("no_stale", "no_stale_injected", None),
        ("current_first", "current_above_stale", None),
    ]
    assert ds.memory("m2").pinned is False and ds.memory("m2").type == "fact"


def test_time_question_labels_are_checked_against_the_time_named(dataset_copy):
    """A time question whose current memory lies outside the time it names can never be found by
    the gate: the loader says so, for a time_range and for the text as memlab.datasets.timeparse reads it."""
    root, edit = dataset_copy
    edit("questions.jsonl", 3, kind="time")  # H3: "Where did I go for the hot spring trip?" (m09, Aug 23)
    edit("questions.jsonl", 4, kind="time", text="What happened with the keyboard yesterday?")  # m06 is Sep 3
    edit(
        "questions.jsonl", 1, kind="time", time_range={"start": "2026-08-01", "end": "2026-08-05"}
    )  # m12 Aug 10
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [
        f"{root}/questions.jsonl:1: current: 'm12' is dated 2026-08-10, outside time_range 2026-08-01..2026-08-05",
        f"{root}/questions.jsonl:3: text: a time question must name a time memlab reads (`memlab timeparse TEXT` shows what it reads), or give a time_range",
        f"{root}/questions.jsonl:3: text_ja: a time question must name a time memlab reads (`memlab timeparse TEXT` shows what it reads), or give a time_range",
        f"{root}/questions.jsonl:4: current: 'm06' is dated 2026-09-03, outside the time its en text names "
        "(2026-09-09..2026-09-09, 'yesterday')",
        # its Japanese text still names no time
        f"{root}/questions.jsonl:4: text_ja: a time question must name a time memlab reads (`memlab timeparse TEXT` shows what it reads), or give a time_range",
    ]
    # a time_range refused (its start after its end) is the one problem: the text is not blamed too
    edit("questions.jsonl", 1, kind="time", time_range={"start": "2026-08-15", "end": "2026-08-05"})
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert (
        e.value.problems[0]
        == f"{root}/questions.jsonl:1: time_range: start 2026-08-15 is after end 2026-08-05"
    )
    assert not any(p.startswith(f"{root}/questions.jsonl:1: text") for p in e.value.problems)


@pytest.mark.parametrize(
    ("write", "problem"),
    [
        (
            lambda root: (root / "memories.jsonl").write_text('[{"id": "m1"},\n {"id": "m2"}]\n'),
            "memories.jsonl: expected JSON lines, one JSON object per line; this file is a JSON array "
            "(line 1 starts with '['): write each element on its own line",
        ),
        (
            lambda root: (root / "memories.jsonl").write_text("id,date,text\nm1,2026-08-20,coffee\n"),
            "memories.jsonl: expected JSON lines, one JSON object per line; line 1 looks like CSV: "
            "'id,date,text'",
        ),
        (
            lambda root: ((root / "memories.jsonl").rename(root / "memories.csv"),),
            "memories.jsonl: file missing in {root} (expected JSON lines, one JSON object per line); "
            "found memories.csv: convert it to memories.jsonl",
        ),
    ],
)
def test_a_file_that_is_not_json_lines_is_one_message(dataset_copy, write, problem):
    root, _ = dataset_copy
    write(root)
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [f"{root}/{problem.format(root=root)}"]  # no cascade of unknown ids


def test_texts_without_the_date_prefix_get_one_hint(dataset_copy):
    root, _ = dataset_copy
    lines = (root / "memories.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        obj["text"] = obj["text"].split(": ", 1)[1]
        obj["text_ja"] = obj["text_ja"].split(": ", 1)[1]
        out.append(json.dumps(obj, ensure_ascii=False))
    (root / "memories.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        load_dataset(root)
    assert e.value.problems == [
        f"{root}/memories.jsonl: no text starts with its date (as '2026-08-20: ...'); "
        'if your texts carry no date prefix, set "date_prefix": false in dataset.json'
    ]
    meta = json.loads((root / "dataset.json").read_text(encoding="utf-8"))
    (root / "dataset.json").write_text(json.dumps({**meta, "date_prefix": False}), encoding="utf-8")
    assert len(load_dataset(root).memories) == 16
