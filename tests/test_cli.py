"""The command line, as the README and later checks call it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.app.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_evaluate_published_json(capsys):
    code, out, _ = run(capsys, "evaluate", "--source", "published", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) >= {"spec", "questions", "criteria", "headroom"}
    assert doc["spec"]["bonus"] == 0.05 and doc["spec"]["tau_days"] == 14
    assert {k: (round(v["value"], 3), v["pass"]) for k, v in doc["criteria"].items()} == {
        "a": (0.434, True),
        "b": (0.467, True),
        "c": (0.455, True),
    }
    assert round(doc["headroom"], 3) == 0.016
    c1 = next(q for q in doc["questions"] if q["id"] == "C1")
    assert c1["kind"] == "contradiction"
    assert [(c["memory"], c["date"], c["injected"]) for c in c1["candidates"]] == [
        ("m01", "2026-08-20", True),
        ("m02", "2026-09-01", True),
    ]
    assert set(c1["candidates"][0]) >= {"memory", "date", "raw", "bonus", "final", "injected"}


def test_evaluate_with_other_values_fails_c(capsys):
    code, out, _ = run(
        capsys, "evaluate", "--source", "published", "--bonus", "0.04", "--tau", "14", "--format", "json"
    )
    doc = json.loads(out)
    assert code == 0 and doc["criteria"]["c"]["pass"] is False
    assert round(doc["criteria"]["c"]["value"], 3) == 0.445


def test_table_json(capsys):
    code, out, _ = run(capsys, "table", "--source", "published", "--format", "json")
    rows = json.loads(out)
    assert code == 0
    assert [(r["bonus"], r["tau_days"], r["chosen"]) for r in rows] == [
        (0.03, 30, False),
        (0.04, 30, False),
        (0.04, 14, False),
        (0.05, 14, True),
    ]
    assert [round(r["criteria"]["c"]["value"], 3) for r in rows] == [0.437, 0.447, 0.445, 0.455]
    assert [r["feasible"] for r in rows] == [False, False, False, True]
    assert all(
        set(r) >= {"bonus", "tau_days", "threshold", "headroom", "criteria", "feasible", "chosen"}
        for r in rows
    )


def test_table_text(capsys):
    code, out, _ = run(capsys, "table", "--source", "published")
    lines = out.splitlines()
    assert code == 0
    assert lines[-1].split() == ["0.05", "14", "0.434", "0.467", "0.455", "0.016", "adopted"]
    assert lines[2].split() == ["0.03", "30", "0.428", "0.463", "0.437", "0.022", "fails", "(c)"]
    # each column as wide as its name: every value ends under its name's last letter
    header = lines[1]
    for name in ("a: no-hit max", "b: C1 current", "c: H2 current", "headroom"):
        end = header.index(name) + len(name)
        assert all(line[end - 1] != " " and line[end : end + 1] in (" ", "") for line in lines[2:]), name
    code, out, _ = run(capsys, "table", "--source", "published", "--threshold", "0.9")
    assert out.splitlines()[-1] == (
        "no pair meets every criterion at threshold 0.9: memlab sweep searches the whole grid (bonus, "
        "tau, threshold) and says which criteria conflict"
    )


def test_table_candidates_given_declared_or_the_seeds_with_a_warning(capsys, tmp_path):
    import shutil

    from memlab.datasets.schema import dataset_dir

    code, out, _ = run(
        capsys, "table", "--source", "published", "--pairs", "0.05:14,0.04:30", "--format", "json"
    )
    assert code == 0 and [(r["bonus"], r["tau_days"]) for r in json.loads(out)] == [(0.05, 14), (0.04, 30)]
    # a copy of seed16 that declares no tables: the seed's four, and a warning saying so
    folder = tmp_path / "mine"
    shutil.copytree(dataset_dir("seed16"), folder)
    meta = json.loads((folder / "dataset.json").read_text())
    del meta["tables"]
    (folder / "dataset.json").write_text(json.dumps(meta))
    code, out, err = run(
        capsys, "table", "--dataset", str(folder), "--source", "published", "--format", "json"
    )
    assert code == 0 and [(r["bonus"], r["tau_days"]) for r in json.loads(out)] == [
        (0.03, 30),
        (0.04, 30),
        (0.04, 14),
        (0.05, 14),
    ]
    assert err == (
        f"memlab: warning: {meta['name']} declares no candidate pairs (dataset.json: tables.candidates); "
        "showing the seed's 0.03:30, 0.04:30, 0.04:14, 0.05:14; pass --pairs BONUS:TAU_DAYS,... "
        "for your own\n"
    )
    # without declared criteria the generic ones, stale kinds included, label their columns too
    del meta["criteria"]
    (folder / "dataset.json").write_text(json.dumps(meta))
    code, out, _ = run(capsys, "table", "--dataset", str(folder), "--source", "published")
    header = out.splitlines()[1]
    assert code == 0 and "no_stale: best stale" in header and "current_first: gap to stale" in header
    code, _, err = run(capsys, "table", "--source", "published", "--pairs", "0.05:14,0.1")
    assert code == 2 and err == (
        "memlab: error: --pairs: expected BONUS:TAU_DAYS pairs separated by commas (bonus >= 0, "
        "tau_days > 0), got '0.1' in '0.05:14,0.1'\n"
    )


def test_prompt_c1(capsys):
    code, out, _ = run(capsys, "prompt", "--question", "C1", "--source", "published")
    assert code == 0
    assert out.startswith("<retrieved_memory>\nToday is 2026-09-10.")
    assert out.rstrip().endswith(
        "2026-08-20: The user drinks coffee black.\n"
        "2026-09-01: The user has been drinking sweet café au lait lately.\n"
        "</retrieved_memory>"
    )
    assert "prefer the one with the newer date" in out


def test_prompt_dates_memories_whose_texts_carry_no_date(capsys, tmp_path):
    """A dataset without the date prefix (every imported store, LoCoMo): the block still starts
    each memory with its date, written as the prefix would be, so it reads as the seed's does."""
    import shutil

    from memlab.datasets.schema import dataset_dir

    ds = tmp_path / "undated"
    shutil.copytree(dataset_dir("seed16"), ds)
    meta = json.loads((ds / "dataset.json").read_text(encoding="utf-8"))
    (ds / "dataset.json").write_text(json.dumps({**meta, "date_prefix": False}), encoding="utf-8")
    lines = []
    for line in (ds / "memories.jsonl").read_text(encoding="utf-8").splitlines():
        m = json.loads(line)
        m["text"] = m["text"].split(": ", 1)[1]  # "2026-08-20: The user..." -> "The user..."
        m["text_ja"] = m["text_ja"].split(": ", 1)[1]
        lines.append(json.dumps(m, ensure_ascii=False))
    (ds / "memories.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert json.loads(lines[0])["text"] == "The user drinks coffee black."
    code, seed_block, _ = run(capsys, "prompt", "--question", "C1", "--source", "published")
    code2, block, _ = run(capsys, "prompt", "--question", "C1", "--source", "published", "--dataset", str(ds))
    assert code == code2 == 0 and block == seed_block
    assert "2026-08-20: The user drinks coffee black.\n" in block
    _, ja, _ = run(
        capsys, "prompt", "--question", "C1", "--lang", "ja", "--source", "published", "--dataset", str(ds)
    )
    assert "2026-09-01: ユーザーは最近甘いカフェオレばかり飲んでいる" in ja


def test_prompt_japanese(capsys):
    code, out, _ = run(capsys, "prompt", "--question", "C1", "--lang", "ja", "--source", "published")
    assert code == 0
    assert "2026-09-01: ユーザーは最近甘いカフェオレばかり飲んでいる" in out
    assert "今日は2026-09-10です。" in out


def test_prompt_nohit_is_empty(capsys):
    code, out, err = run(capsys, "prompt", "--question", "N1", "--source", "published")
    assert code == 0 and out == "\n"
    assert err == "nothing injected for N1: no candidate reaches the threshold 0.45\n"


def test_spec_formats(capsys):
    code, out, _ = run(capsys, "spec", "--format", "qdrant-json", "--bonus", "0.04", "--tau", "30")
    body = json.loads(out)
    assert code == 0
    assert body["query"]["formula"]["sum"][1]["mult"][0] == 0.04
    assert body["query"]["formula"]["sum"][1]["mult"][1]["exp_decay"]["scale"] == 30 * 86400
    # the default threshold follows the model and the language (memlab.embedding.models.MODELS)
    for options, threshold in (
        ((), 0.845),
        (("--lang", "ja"), 0.875),
        (("--model", "all-MiniLM-L6-v2"), 0.27),
        (("--model", "Qwen/Qwen3-Embedding-0.6B"), 0.45),
        (("--model", "my/own-model", "--threshold", "0.5"), 0.5),  # given: nothing to embed
        (("--threshold", "0.5"), 0.5),
    ):
        code, out, _ = run(capsys, "spec", "--format", "table", *options)
        assert out.strip() == (
            f"candidates=8 inject=3 threshold={threshold:g} bonus=0.05 tau_days=14 reference=2026-09-10"
        )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["prompt", "--question", "Z9", "--source", "published"],
            "memlab: error: no question 'Z9' in dataset 'seed16'; questions: H1, H2, H3, H4, C1, C2, N1, N2, N3, N4\n",
        ),
        (
            ["evaluate", "--source", "published", "--candidates", "0"],
            "memlab: error: candidates: expected an integer in [1, 2147483647], got 0\n",
        ),
    ],
)
def test_errors_are_one_clear_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert (code, out, err) == (2, "", message)


def test_invalid_dataset_lists_problems(capsys, dataset_copy):
    root, edit = dataset_copy
    edit("memories.jsonl", 2, date="2026-02-30")
    code, _, err = run(capsys, "evaluate", "--source", "published", "--dataset", str(root))
    assert code == 2
    assert err == (
        f"memlab: invalid dataset:\n{root}/memories.jsonl:2: date: "
        "'2026-02-30' is not a date (YYYY-MM-DD or ISO 8601)\n"
    )


def test_output_file_is_written_whole(capsys, tmp_path):
    target = tmp_path / "out" / "table.json"
    code, out, err = run(capsys, "table", "--source", "published", "--format", "json", "-o", str(target))
    assert code == 0 and out == "" and err == f"wrote {target}\n"
    assert len(json.loads(target.read_text())) == 4
    assert [p.name for p in target.parent.iterdir()] == ["table.json"]  # no temporary left behind


@pytest.mark.model
def test_console_script_evaluates_embedded(tmp_path, cache_dir, embedded):
    exe = Path(sys.executable).parent / "memlab"
    assert exe.is_file(), "the console script is installed beside the interpreter"
    proc = subprocess.run(
        [str(exe), "evaluate", "--source", "embedded", "--format", "json", "--cache-dir", str(cache_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    doc = json.loads(proc.stdout)
    assert doc["source"]["name"] == "embedded" and doc["source"]["dim"] == 384
    assert doc["source"]["models_loaded"] == 0  # warm cache from the session fixture
    c1 = next(q for q in doc["questions"] if q["id"] == "C1")
    assert len(c1["candidates"]) == 8
    raws = [round(c["raw"], 6) for c in c1["candidates"]]
    ids = [c["memory"] for c in c1["candidates"]]
    assert raws == [round(embedded.row("C1")[int(m[1:]) - 1], 6) for m in ids]


def test_an_unknown_option_is_told_with_the_commands_own_usage(capsys):
    with pytest.raises(SystemExit) as e:
        main(["timeparse", "what did I eat yesterday?", "--at", "2026-09-10"])
    err = capsys.readouterr().err.splitlines()
    assert e.value.code == 2
    assert err == [
        "usage: memlab timeparse [-h] [--ref REF] text",
        "memlab timeparse: error: unrecognized arguments: --at 2026-09-10",
    ]


def test_version_and_the_datasets_command(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == "memlab 0.1.0\n"
    assert main(["datasets", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["seed16"]["where"], rows["seed16"]["memories"], rows["seed16"]["questions"]) == (
        "packaged",
        16,
        10,
    )
    assert rows["seed16"]["kinds"] == {"hit": 4, "contradiction": 2, "nohit": 4}


def test_every_listed_dataset_opens_by_the_name_listed(tmp_path, monkeypatch, capsys):
    """An imported store is listed by its folder (what --dataset finds), not by the collection
    name its dataset.json records; a folder that a packaged dataset shadows is listed by path."""
    import shutil

    from memlab.datasets.schema import dataset_dir, load_dataset

    data = tmp_path / "data"
    data.mkdir()
    shutil.copytree(dataset_dir("seed16"), data / "my-store")
    meta = json.loads((data / "my-store" / "dataset.json").read_text(encoding="utf-8"))
    (data / "my-store" / "dataset.json").write_text(
        json.dumps({**meta, "name": "memories"}), encoding="utf-8"
    )
    shutil.copytree(dataset_dir("seed16"), data / "seed16")  # shadowed by the packaged seed16
    monkeypatch.setenv("MEMLAB_DATA_DIR", str(data))
    assert main(["datasets", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in rows]
    assert "my-store" in names and "memories" not in names and str(data / "seed16") in names
    assert next(r for r in rows if r["name"] == "my-store")["title"] == "memories"
    for r in rows:
        assert str(load_dataset(r["name"]).path.resolve()) == str(Path(r["path"]).resolve()), r["name"]
    assert main(["datasets"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in table[1:]] == names


def test_every_option_has_help_text():
    import argparse

    from memlab.app.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [
        f"{name} {' / '.join(a.option_strings) or a.dest}"
        for name, p in sub.choices.items()
        for a in p._actions
        if not isinstance(a, argparse._HelpAction) and not a.help
    ]
    assert missing == []


def test_sweep_prints_its_choice_ready_to_paste(capsys):
    argv = [
        "sweep",
        "--source",
        "published",
        "--bonus",
        "0:0.1:0.005",
        "--tau",
        "7:30:1",
        "--threshold",
        "0.45",
        "--select",
        "smallest-bonus",
    ]
    assert main([*argv, "--print-choice", "flags"]) == 0
    out, err = capsys.readouterr()
    # stdout holds the flags alone (memlab evaluate $(memlab sweep ... --print-choice flags)), the
    # report goes to stderr
    assert len(out.splitlines()) == 1 and err.startswith("grid: ")
    flags = out.splitlines()[-1]
    assert (
        flags
        == "--dataset seed16 --source published --lang en --bonus 0.045 --tau 15 --threshold 0.45 --candidates 8 --inject 3"
    )
    # the flags evaluate to the configuration the sweep chose: feasible
    assert main(["evaluate", *flags.split()]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "feasible: yes"
    # and memlab spec takes them as they are, exporting those numbers
    assert main(["spec", *flags.split(), "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert {k: exported[k] for k in ("bonus", "tau_days", "threshold", "candidates", "inject")} == {
        "bonus": 0.045,
        "tau_days": 15.0,
        "threshold": 0.45,
        "candidates": 8,
        "inject": 3,
    }
    assert main([*argv, "--print-choice", "yaml"]) == 0
    import yaml

    doc = yaml.safe_load(capsys.readouterr().out)  # the whole of stdout is the batch YAML
    assert doc["runs"][0]["parameters"] == {
        "dataset": "seed16",
        "source": "published",
        "lang": "en",
        "bonus": 0.045,
        "tau_days": 15,
        "threshold": 0.45,
        "candidates": 8,
        "inject": 3,
    }


def test_init_writes_a_folder_that_validates_as_written_and_refuses_a_used_one(tmp_path, capsys):
    from memlab.datasets.schema import load_dataset

    folder = tmp_path / "my-device"
    code, out, _ = run(capsys, "init", str(folder))
    assert code == 0 and out.startswith(f"wrote {folder}: dataset.json, memories.jsonl")
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "dataset.json",
        "memories.jsonl",
        "questions.jsonl",
    ]
    code, out, _ = run(capsys, "validate", str(folder))
    assert code == 0 and out.startswith(
        f"{folder}: ok: 3 memories, 5 questions (2 hit, 1 contradiction, 1 nohit"
    )
    ds = load_dataset(folder)
    assert ds.name == "my-device" and ds.memory("m2").supersedes == "m1"
    assert {q.kind for q in ds.questions} == {"hit", "contradiction", "nohit", "time"}
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for field in (
        "reference_date",
        "date_prefix",
        "supersedes",
        "current",
        "stale",
        "time_range",
        "text_<lang>",
    ):
        assert f"`{field}`" in readme, field
    # a folder that holds anything is refused, and left as it was
    code, _, err = run(capsys, "init", str(folder))
    assert code == 2 and err == f"memlab: error: {folder} already exists and is not an empty folder\n"
    code, _, err = run(capsys, "init", str(folder / "memories.jsonl"))  # a file, not a folder
    assert code == 2 and err == (
        f"memlab: error: {folder / 'memories.jsonl'} already exists and is a file, not a folder: give a new "
        "folder's name\n"
    )
    (tmp_path / "empty").mkdir()
    assert run(capsys, "init", str(tmp_path / "empty"))[0] == 0  # an empty one is filled


def one_memory_store(folder: Path, questions: str) -> Path:
    """A dataset folder of one memory and the given questions.jsonl text."""
    folder.mkdir()
    (folder / "dataset.json").write_text(json.dumps({"name": folder.name, "reference_date": "2026-09-10"}))
    (folder / "memories.jsonl").write_text(
        json.dumps({"id": "m1", "date": "2026-09-01", "text": "2026-09-01: The user drinks café au lait."})
        + "\n"
    )
    (folder / "questions.jsonl").write_text(questions)
    return folder


def test_validate_says_one_memory_and_one_question(tmp_path, capsys):
    folder = one_memory_store(
        tmp_path / "one",
        json.dumps({"id": "q1", "kind": "hit", "text": "What does the user drink?", "relevant": ["m1"]})
        + "\n",
    )
    assert main(["validate", str(folder)]) == 0
    assert capsys.readouterr().out.startswith(f"{folder}: ok: 1 memory, 1 question (1 hit, 0 contradiction")


def test_a_store_without_questions_loads_and_the_commands_that_measure_questions_say_so(tmp_path, capsys):
    """What import-qdrant writes (an empty questions.jsonl): validate and spec read it; evaluate,
    sweep and feasible refuse it in one line that says what works without questions."""
    folder = one_memory_store(tmp_path / "store", "")
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{folder}: ok: 1 memory, 0 questions")
    assert out.splitlines()[1].startswith(
        "no questions yet: calibrate, explain --log and spec read the store"
    )
    assert main(["spec", "--dataset", str(folder), "--source", "published"]) == 0
    assert '"limit": 8' in capsys.readouterr().out
    for command in ("evaluate", "sweep", "feasible"):
        assert main([command, "--dataset", str(folder), "--source", "published"]) == 2
        assert capsys.readouterr().err == (
            f"memlab: error: dataset 'store' has no questions ({folder}/questions.jsonl is empty): memlab "
            f"{command} measures retrieval on labelled questions; add some (docs/datasets.md), or use "
            "calibrate, explain --log or spec, which read a store without questions\n"
        )


def test_without_lang_a_japanese_only_dataset_is_read_in_japanese(tmp_path, capsys):
    from memlab.app.cli import build_parser
    from memlab.app.cli.options import apply_dataset_language
    from memlab.datasets.declared import declared_languages

    folder = tmp_path / "jaonly"
    folder.mkdir()
    (folder / "dataset.json").write_text(
        json.dumps({"name": "jaonly", "reference_date": "2026-12-01", "language": "ja"})
    )
    assert declared_languages(folder) == ("ja",)
    assert declared_languages("seed16") == ("en", "ja")
    assert declared_languages(tmp_path / "nowhere") == ()
    for command in ("evaluate", "sweep", "calibrate", "explain"):
        args = build_parser().parse_args([command, "--dataset", str(folder)])
        apply_dataset_language(args)
        assert args.lang == "ja", command
        assert capsys.readouterr().err == "--lang ja: the dataset's language (it has no 'en' text)\n"
    told = build_parser().parse_args(["evaluate", "--dataset", str(folder), "--lang", "en"])
    apply_dataset_language(told)  # given: kept, and the command says the dataset has no English
    assert told.lang == "en" and capsys.readouterr().err == ""
    seed = build_parser().parse_args(["evaluate"])
    apply_dataset_language(seed)
    assert seed.lang == "en"


def test_a_tuned_spec_whose_dataset_folder_moved_asks_for_dataset(tmp_path, capsys):
    import shutil

    from memlab.datasets.schema import dataset_dir

    shutil.copytree(dataset_dir("seed16"), tmp_path / "a")
    spec = tmp_path / "t.yaml"
    assert (
        main(["sweep", "--dataset", str(tmp_path / "a"), "--source", "published", "--save", str(spec)]) == 0
    )
    (tmp_path / "a").rename(tmp_path / "b")
    capsys.readouterr()
    assert main(["evaluate", "--spec", str(spec)]) == 2
    assert capsys.readouterr().err == (
        f"memlab: error: {spec}: tuned on the dataset folder {tmp_path / 'a'}, which is not there: "
        "pass --dataset DIR (where that folder is now)\n"
    )
    assert main(["evaluate", "--spec", str(spec), "--dataset", str(tmp_path / "b")]) == 0


def test_a_long_sweep_says_how_long_before_it_starts(capsys, monkeypatch):
    import memlab.app.cli.sweep as sweep_cli

    assert main(["sweep", "--source", "published"]) == 0
    out, err = capsys.readouterr()
    assert not err.startswith("sweeping")  # a second's sweep says nothing first
    total = int(out.split(" = ")[1].split(" configurations")[0].replace(",", ""))
    monkeypatch.setattr(sweep_cli, "SWEEP_RATE", total / 40)  # as if it took 40 s
    assert main(["sweep", "--source", "published"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == (
        f"sweeping {total:,} configurations of 10 questions: about 40 s on two cores (a coarser step "
        "or a narrower axis finishes sooner)"
    )


def test_sweep_refuses_table_options_without_a_table(capsys):
    assert main(["sweep", "--source", "published", "--format", "parquet", "--long"]) == 2
    assert capsys.readouterr().err == (
        "memlab: error: --format parquet and --long: they shape the table written with -o FILE (or -o - "
        "for stdout); without -o only the summary is printed: add -o, or drop it\n"
    )


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """``memlab sweep -o - | head -1``: the pipe closes under the writer; no error is printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memlab", "sweep", "--source", "published", "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline().startswith(b"decay,combine,bonus,")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Broken pipe" not in err and "Traceback" not in err


def test_a_date_in_isos_basic_form_asks_for_the_prefix_in_the_usual_form(tmp_path, capsys):
    folder = one_memory_store(tmp_path / "basic", "")
    memory = {"id": "m1", "date": "20261110", "text": "2026-11-10: The user runs."}
    (folder / "dataset.json").write_text(json.dumps({"name": "basic", "reference_date": "2026-12-01"}))
    (folder / "memories.jsonl").write_text(json.dumps(memory) + "\n")
    assert main(["validate", str(folder)]) == 0  # 2026-11-10 is the date 20261110 names
    memory["text"] = "Nov 10: The user runs."
    (folder / "memories.jsonl").write_text(json.dumps(memory) + "\n")
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 2
    assert capsys.readouterr().err == (
        f"memlab: invalid dataset:\n{folder}/memories.jsonl: no text starts with its date (as '2026-11-10: ...'); "
        'if your texts carry no date prefix, set "date_prefix": false in dataset.json\n'
    )
