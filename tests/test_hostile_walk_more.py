"""More of what the hostile walkthrough (``bench/hostile_walk.py``, issue 37) found: options accepted
and then ignored, empty lists taken as the default, counts without a bound, a flag's value named
without its flag, an id no one can read back, an empty questions file said through the criteria
that name its questions. Each input is one ``memlab:`` line with the fragment it must carry, given
before any work (nothing embedded, no server asked), in bounded time."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from memlab.app.cli import main
from memlab.datasets.schema import dataset_dir
from memlab.embedding.embedder import Embedder

pytestmark = pytest.mark.hostile
HUGE = "1" + "0" * 30
PUBLISHED = ["--source", "published"]
ANSWER = [  # a chat server at port 9 is never there: a line about it means the check came too late
    "answer",
    *PUBLISHED,
    "--chat-url",
    "http://127.0.0.1:9/v1",
    "--chat-model",
    "m",
    "--questions",
    "H1",
    "--chat-attempts",
    "1",
]
NO_SERVER = (
    "it shapes the embedding server's requests, and no --embed-url names a server, so it would be ignored"
)


@pytest.fixture(autouse=True)
def nothing_is_embedded(monkeypatch):
    """Every case is refused before a text is embedded."""

    def refuse(self, texts, role):
        raise AssertionError("embedded before the option was checked")

    monkeypatch.setattr(Embedder, "encode", refuse)


def one_line(capsys, argv: list[str]) -> str:
    t0 = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - t0 < 20
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("memlab: error: "), err
    return err[0]


IGNORED = [  # (argv, fragment): each option was accepted, then ignored
    (
        ["evaluate", *PUBLISHED, "--embed-batch", "5"],
        "--embed-batch: --source published reads stored scores and embeds nothing, so it would be ignored",
    ),
    (
        ["sweep", *PUBLISHED, "--embed-timeout", "5", "--embed-attempts", "2"],
        "--embed-timeout, --embed-attempts: --source published reads stored scores and embeds nothing, "
        "so they would be ignored",
    ),
    (["evaluate", "--embed-attempts", "2"], f"--embed-attempts: {NO_SERVER}: add --embed-url, or drop it"),
    (["evaluate", "--no-embed-fallback"], f"--no-embed-fallback: {NO_SERVER}"),
    (["metrics", "--embed-roles", "none"], f"--embed-roles: {NO_SERVER}"),
    (["drift", "--embed-batch", "4"], f"--embed-batch: {NO_SERVER}"),
    (["drift", "--embed-timeout", "5"], f"--embed-timeout: {NO_SERVER}"),
    (
        [*ANSWER, "--no-llm-judge", "--judge-url", "http://127.0.0.1:9/v1"],
        "--judge-url: it shapes the LLM judge, and --no-llm-judge asks none, so it would be ignored: "
        "drop it, or drop --no-llm-judge",
    ),
    (
        [*ANSWER, "--no-llm-judge", "--judge-model", "j", "--judge-format", "text"],
        "--judge-model, --judge-format: they shape the LLM judge, and --no-llm-judge asks none",
    ),
]


@pytest.mark.parametrize(("argv", "fragment"), IGNORED)
def test_an_option_that_would_be_ignored_is_refused_naming_it(capsys, argv, fragment):
    assert fragment in one_line(capsys, argv)


def test_the_server_options_with_a_server_are_taken(monkeypatch):
    """With --embed-url the same options shape its requests: not refused as ignored."""
    from memlab.app.cli import build_parser
    from memlab.app.cli.options import server_from

    args = build_parser().parse_args(
        ["evaluate", "--embed-url", "http://127.0.0.1:9/v1", "--embed-batch", "5"]
    )
    assert server_from(args).batch_size == 5
    assert server_from(build_parser().parse_args(["evaluate"])) is None


def test_a_judge_option_with_the_judge_is_taken():
    from memlab.app.cli import build_parser
    from memlab.app.cli.answers import check_judge_options

    check_judge_options(build_parser().parse_args(["answer", "--judge-model", "j"]))  # no error


EMPTY = [  # (argv, fragment): an empty list was the default, silently
    (
        ["table", *PUBLISHED, "--pairs", ""],
        "--pairs: empty: expected BONUS:TAU_DAYS pairs separated by commas, or no --pairs for the "
        "dataset's own candidates",
    ),
    (["table", *PUBLISHED, "--pairs", " "], "--pairs: empty"),
    (
        ["scale", "--n", ""],
        "--n: empty: expected memory counts (start:stop:step or a comma list), or no --n for the "
        "dataset's own size",
    ),
    (["scale", "--n", "  "], "--n: empty"),
]


@pytest.mark.parametrize(("argv", "fragment"), EMPTY)
def test_an_empty_list_is_refused_not_taken_as_the_default(capsys, argv, fragment):
    assert fragment in one_line(capsys, argv)


BOUNDS = [  # (argv, line's end): -1 dropped the last rows (a slice), 10**30 was taken
    (["explain", "--fragile", "-1"], "--fragile: expected an integer in [0, 2147483647], got -1"),
    (["explain", "--fragile", HUGE], "--fragile: expected an integer in [0, 2147483647], got an integer of"),
    (["calibrate", "--show", "-1"], "--show: expected an integer in [0, 2147483647], got -1"),
    (["calibrate", "--show", HUGE], "--show: expected an integer in [0, 2147483647], got an integer of"),
    (["run", "--jobs", HUGE], "--jobs: expected an integer in [1, 64], got an integer of about 31 digits"),
    (["run", "--jobs", "65"], "--jobs: expected an integer in [1, 64], got 65"),
    (["run", "--jobs", "0"], "--jobs: expected an integer in [1, 64], got 0"),
]


@pytest.mark.parametrize(("argv", "fragment"), BOUNDS)
def test_a_count_past_its_bound_is_one_line_before_any_work(tmp_path, capsys, argv, fragment):
    if argv[0] == "run":
        argv = [*argv, "--out", str(tmp_path / "out")]
    assert fragment in one_line(capsys, argv)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("ref", ["nan", "", "2026-02-30", "yesterday"])
def test_timeparse_names_ref(capsys, ref):
    assert one_line(capsys, ["timeparse", "yesterday", "--ref", ref]).startswith(
        f"memlab: error: --ref: {ref!r}"
    )


def test_timeparse_reads_a_good_ref(capsys):
    assert main(["timeparse", "yesterday", "--ref", "2026-01-01"]) == 0
    assert json.loads(capsys.readouterr().out)["start"] == "2025-12-31"


def seed_copy(tmp_path: Path, name: str = "ds") -> Path:
    root = tmp_path / name
    shutil.copytree(dataset_dir("seed16"), root)
    return root


def rewrite(path: Path, line: int, **fields) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[line - 1].update(fields)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def dataset_lines(capsys, argv: list[str]) -> list[str]:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "memlab: invalid dataset:", err
    return err[1:]


IDS = [  # (the character put into the first memory's id, how the line names it)
    ("\u2028", "U+2028 (LINE SEPARATOR) at character 2"),
    ("\u2029", "U+2029 (PARAGRAPH SEPARATOR) at character 2"),
    ("\u0085", "U+0085 (a control character) at character 2"),
    ("\t", "U+0009 (a control character) at character 2"),
    ("\x00", "U+0000 (a control character) at character 2"),
    ("\x1b", "U+001B (a control character) at character 2"),
    ("\u200b", "U+200B (ZERO WIDTH SPACE) at character 2"),
    ("\u202e", "U+202E (RIGHT-TO-LEFT OVERRIDE) at character 2"),
    ("\ufeff", "U+FEFF (ZERO WIDTH NO-BREAK SPACE) at character 2"),
]


@pytest.mark.parametrize(("char", "named"), IDS)
@pytest.mark.parametrize("command", ["validate", "evaluate"])
def test_an_id_holding_an_invisible_character_is_named_at_its_line(tmp_path, capsys, char, named, command):
    """Was accepted, then said as "unknown memory id 'm01'" on the lines that name m01."""
    root = seed_copy(tmp_path)
    rewrite(root / "memories.jsonl", 1, id=f"m{char}01")
    argv = (
        ["validate", str(root)] if command == "validate" else ["evaluate", *PUBLISHED, "--dataset", str(root)]
    )
    lines = dataset_lines(capsys, argv)
    assert lines == [
        f"{root}/memories.jsonl:1: id: {f'm{char}01'!r} holds {named}: an id is visible text on one line"
    ]


def test_a_question_id_holding_a_line_separator_is_named_at_its_line(tmp_path, capsys):
    root = seed_copy(tmp_path)
    rewrite(root / "questions.jsonl", 3, id="H\u20282")
    lines = dataset_lines(capsys, ["validate", str(root)])
    assert (
        f"{root}/questions.jsonl:3: id: 'H\\u20282' holds U+2028 (LINE SEPARATOR) at character 2" in lines[0]
    )


def test_an_id_of_visible_text_is_taken(tmp_path, capsys):
    """Spaces, accents and other scripts are text: an id renamed to one of them in every file
    that names it is taken."""
    root = seed_copy(tmp_path)
    for old, new in (("m01", "m 01"), ("m02", "mémoire-02"), ("m03", "記憶03")):
        for path in root.iterdir():
            if path.suffix in (".json", ".jsonl"):
                path.write_text(
                    path.read_text().replace(json.dumps(old), json.dumps(new, ensure_ascii=False))
                )
    assert main(["validate", str(root)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("command", ["validate", "evaluate", "sweep"])
def test_an_empty_questions_file_is_said_as_such(tmp_path, capsys, command):
    """Was said as "dataset.json: criteria[3]: question: unknown question id 'H2'"."""
    root = seed_copy(tmp_path)
    (root / "questions.jsonl").write_text("")
    argv = {
        "validate": ["validate", str(root)],
        "evaluate": ["evaluate", *PUBLISHED, "--dataset", str(root)],
        "sweep": ["sweep", *PUBLISHED, "--dataset", str(root)],
    }[command]
    assert dataset_lines(capsys, argv) == [
        f"{root}/questions.jsonl: no questions, yet dataset.json's criteria or tables name some: add "
        "the questions (one JSON object per line), or drop what names them from dataset.json"
    ]


def test_an_empty_questions_file_without_criteria_is_a_store_to_label(tmp_path):
    """No criteria or tables name a question: the store loads (what import-qdrant writes)."""
    from memlab.datasets.schema import load_dataset

    root = seed_copy(tmp_path)
    (root / "questions.jsonl").write_text("")
    meta = json.loads((root / "dataset.json").read_text())
    meta.pop("criteria", None)
    meta.pop("tables", None)
    (root / "dataset.json").write_text(json.dumps(meta))
    ds = load_dataset(root)
    assert ds.questions == () and len(ds.memories) == 16


def test_drift_says_its_work_and_time_before_it_starts(monkeypatch, capsys):
    """``drift --streams 4`` still tunes on the 200 streams of --tune-range (minutes) and said
    nothing until done. The line comes once the inputs are checked, before any text is embedded.
    On paper, the default grid: 12,793 configurations at 6 budgets on 200 streams, 150 s by the
    measured rate (docs/drift.md), plus 28 pairs on 4 held-out streams, 9 s / 400 * 4 = 0.09 s."""
    import memlab.drift.study as study
    from memlab.core.errors import InputError

    def stop(*args, **kwargs):
        raise InputError("stopped before the embedding")

    monkeypatch.setattr(study, "default_encoder", stop)
    assert main(["drift", "--streams", "4", "--boot", "20"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "drift: 12,793 configurations tuned on 200 streams (--tune-range), 28 systems measured on 4 "
        "held-out streams, at 6 budgets: about 150 s on two cores, embeddings cached after the first "
        "run (fewer --tune-range streams finish sooner)",
        "memlab: error: stopped before the embedding",
    ]
    assert study.drift_work() == (12_793, 28)
    # a second decay family doubles the recency spec's 360 configurations under each write policy:
    # (360 + 1800 + 1800) more
    assert study.drift_work(families={"decay": ("exp", "gauss"), "combine": ("add",)})[0] == 12_793 + 3_960


def test_drift_refuses_a_bad_input_before_saying_its_work(capsys):
    assert main(["drift", "--streams", "4", "--budgets", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("memlab: error: --budgets"), err


RERANK = [
    "rerank",
    *PUBLISHED,
    "--rerank-url",
    "http://127.0.0.1:9/v1",
    "--rerank-model",
    "m",
    "--rerank-attempts",
    "1",
]


@pytest.mark.parametrize("name", ["memories.jsonl", "published_scores.jsonl", "questions.jsonl"])
@pytest.mark.parametrize("flag", ["--save", "-o"])
def test_an_output_onto_an_input_is_refused_before_the_server_is_asked(tmp_path, capsys, name, flag):
    """rerank asked its server (port 9: a connection error, no word of the file) before the
    write refused its input; now the output is checked once the inputs are read."""
    root = seed_copy(tmp_path)
    before = (root / name).read_bytes()
    line = one_line(capsys, [*RERANK, "--dataset", str(root), flag, str(root / name)])
    assert line == (
        f"memlab: error: {root / name}: is one of this command's input files: memlab never writes over "
        "what it reads; give another output path"
    )
    assert (root / name).read_bytes() == before


def test_answer_output_onto_a_folder_is_refused_before_the_chat(tmp_path, capsys):
    line = one_line(capsys, [*ANSWER, "--no-llm-judge", "-o", str(tmp_path)])
    assert line.startswith(f"memlab: error: {tmp_path}: is a folder, not a regular file")


@pytest.mark.parametrize(
    ("value", "line"),
    [
        (HUGE, "--max-tokens: expected an integer in [1, 8388608], got an integer of about 31 digits"),
        ("8388609", "--max-tokens: expected an integer in [1, 8388608], got 8388609"),
        ("0", "--max-tokens: expected an integer in [1, 8388608], got 0"),
    ],
)
def test_max_tokens_past_what_a_reply_holds_is_refused_before_the_chat(capsys, value, line):
    """10**30 was sent to the server: a token streams one byte at least, a reply holds 8 MiB."""
    assert one_line(capsys, [*ANSWER, "--no-llm-judge", "--max-tokens", value]) == f"memlab: error: {line}"


@pytest.fixture(scope="module")
def locomo_ds(tmp_path_factory) -> Path:
    from memlab.importers.locomo import import_locomo

    root = tmp_path_factory.mktemp("locomo") / "ds"
    import_locomo(Path(__file__).parent / "data" / "locomo_heldout.json", root, granularity="turn")
    return root


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--rerank-subset-seed", "-1"], "--rerank-subset-seed: it shapes the held-out + rerank system"),
        (["--rerank-subset-seed", HUGE], "--rerank-subset-seed: it shapes the held-out + rerank system"),
        (["--no-rerank-cache"], "--no-rerank-cache: it shapes the held-out + rerank system"),
    ],
)
def test_tune_benchmark_refuses_the_subsets_options_without_a_reranker(locomo_ds, capsys, extra, fragment):
    """They were ignored: the whole held-out tuning ran (over 20 s on the walk's loaded machine)."""
    argv = ["tune-benchmark", "--dataset", str(locomo_ds), "--folds", "2", "--boot", "5", *extra]
    line = one_line(capsys, argv)
    assert fragment in line and line.endswith("which runs only with --rerank-url: add it, or drop it")


STORES = [  # (argv, line): the flag the user typed, not import-qdrant's --path
    (
        ["calibrate", "--preset", "langchain", "--qdrant-path", "{tmp}/no-q", "--collection", "c"],
        "--qdrant-path {tmp}/no-q: no such folder (a local Qdrant storage folder)",
    ),
    (
        ["explain", "--preset", "langchain", "--qdrant-path", "{tmp}/no-q", "--collection", "c"],
        "--qdrant-path {tmp}/no-q: no such folder (a local Qdrant storage folder)",
    ),
    (
        ["calibrate", "--preset", "langchain", "--qdrant-url", "ftp://x", "--collection", "c"],
        "--qdrant-url: expected an http:// or https:// URL, got 'ftp://x'",
    ),
    (
        [
            "import-qdrant",
            "--preset",
            "langchain",
            "--path",
            "{tmp}/no-q",
            "--collection",
            "c",
            "-o",
            "{tmp}/o",
        ],
        "--path {tmp}/no-q: no such folder (a local Qdrant storage folder)",
    ),
    (
        ["import-qdrant", "--preset", "langchain", "--url", "ftp://x", "--collection", "c", "-o", "{tmp}/o"],
        "--url: expected an http:// or https:// URL, got 'ftp://x'",
    ),
    # the store to score in (evaluate): was "[Errno 17] File exists", and a line naming no flag
    (
        ["evaluate", "--qdrant-path", "{tmp}/file"],
        "--qdrant-path {tmp}/file: is not a folder: local mode keeps its collections in a folder",
    ),
    (
        ["evaluate", "--qdrant-path", "{tmp}/q", "--qdrant-url", "http://127.0.0.1:9"],
        "--qdrant-path and --qdrant-url: give one of them (a local Qdrant folder, or a Qdrant server)",
    ),
]


@pytest.mark.parametrize(("argv", "line"), STORES)
def test_a_store_that_is_not_there_is_named_by_the_flag_given(tmp_path, capsys, argv, line):
    (tmp_path / "file").write_text("not a folder\n")
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert line.format(tmp=tmp_path) in one_line(capsys, argv)
    assert not (tmp_path / "q").exists() and not (tmp_path / "o").exists()
    assert (tmp_path / "file").read_text() == "not a folder\n"
