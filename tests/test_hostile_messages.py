"""The fault-and-hostile-input tier (issue 23): inputs that used to end in a traceback or in an
unclear message, each now one line (the exact text), and what memlab writes for the user to
paste (flags, YAML, dates) reading back as written.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import yaml

from memlab.app.cli import main
from memlab.app.panel import batch_yaml, cli_flags
from memlab.app.runner import load_batch
from memlab.core.spec import RetrievalSpec
from memlab.datasets.schema import dataset_dir
from memlab.datasets.timeparse import parse_time
from memlab.embedding.embedder import Embedder
from memlab.output.prompt import b_format
from memlab.qdrant.query import rfc3339

pytestmark = pytest.mark.hostile
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
ONE = ["--source", "published", "--bonus", "0.05", "--tau", "14", "--threshold", "0.45"]
DEEP = "[" * 100_000 + "]" * 100_000
UTF8 = "save the file as UTF-8"


def write(t: Path, name: str, data: bytes | str) -> str:
    path = t / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def seed(t: Path, meta=None, memories=None, questions=None, published=None) -> str:
    d = t / "d"
    shutil.copytree(dataset_dir("seed16"), d)
    if meta is not None:
        m = json.loads((d / "dataset.json").read_text())
        meta(m)
        (d / "dataset.json").write_text(json.dumps(m))
    for name, data in (
        ("memories.jsonl", memories),
        ("questions.jsonl", questions),
        ("published.json", published),
    ):
        if data is not None:
            (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(d)


def benchmark(name: str, edit) -> bytes:
    text = (DATA / name).read_text()
    return edit(text).encode()


def surrogate_in(key: str):
    def edit(text: str) -> str:
        i = text.index(f'"{key}": "') + len(key) + 5
        return text[:i] + "\\ud800" + text[i:]

    return edit


CASES = [
    # (case, argv from tmp_path, the exact stderr; {tmp} is tmp_path)
    # -- files that are not UTF-8
    (
        "criteria YAML in Latin-1",
        lambda t: [
            "sweep",
            *ONE,
            "--criteria",
            write(t, "c.yaml", b"- name: caf\xe9\n  kind: nohit_below\n"),
        ],
        f"memlab: error: {{tmp}}/c.yaml:1: not UTF-8 text (byte 0xe9 at column 12): {UTF8}",
    ),
    (
        "criteria YAML in UTF-16",
        lambda t: [
            "sweep",
            *ONE,
            "--criteria",
            write(t, "c.yaml", "- name: a\n  kind: nohit_below\n".encode("utf-16")),
        ],
        "memlab: error: {tmp}/c.yaml: is UTF-16 text (it starts with a UTF-16 byte-order mark): save it as UTF-8",
    ),
    (
        "batch YAML in Latin-1",
        lambda t: ["run", "--config", write(t, "b.yaml", b"runs:\n  - name: caf\xe9\n")],
        f"memlab: error: {{tmp}}/b.yaml:2: not UTF-8 text (byte 0xe9 at column 14): {UTF8}",
    ),
    (
        "LoCoMo file in Latin-1",
        lambda t: ["import-locomo", write(t, "l.json", b'[{"sample_id": "caf\xe9"}]'), "-o", str(t / "o")],
        f"memlab: error: {{tmp}}/l.json:1: not UTF-8 text (byte 0xe9 at column 20): {UTF8}",
    ),
    (
        "LongMemEval file in Latin-1",
        lambda t: [
            "import-longmemeval",
            write(t, "l.json", b'[{"question_id": "caf\xe9"}]'),
            "-o",
            str(t / "o"),
        ],
        f"memlab: error: {{tmp}}/l.json:1: not UTF-8 text (byte 0xe9 at column 22): {UTF8}",
    ),
    (
        "memories.jsonl in UTF-16 (not 'looks like CSV')",
        lambda t: ["validate", seed(t, memories='{"id": "m01"}\n'.encode("utf-16"))],
        "memlab: invalid dataset:\n{tmp}/d/memories.jsonl: is UTF-16 text (it starts with a UTF-16 byte-order "
        "mark): save it as UTF-8",
    ),
    (
        "dataset.json in UTF-32",
        lambda t: ["validate", seed(t, meta=lambda m: None) and _utf32(t)],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: is UTF-32 text (it starts with a UTF-32 byte-order "
        "mark): save it as UTF-8",
    ),
    # -- nesting and numbers the decoders refuse
    (
        "LoCoMo file nested 100,000 deep",
        lambda t: ["import-locomo", write(t, "l.json", DEEP), "-o", str(t / "o")],
        "memlab: error: {tmp}/l.json: nested deeper than memlab reads (about 1000 levels of [ or {)",
    ),
    (
        "LongMemEval file nested 100,000 deep",
        lambda t: ["import-longmemeval", write(t, "l.json", DEEP), "-o", str(t / "o")],
        "memlab: error: {tmp}/l.json: nested deeper than memlab reads (about 1000 levels of [ or {)",
    ),
    (
        "criteria YAML nested 100,000 deep",
        lambda t: ["sweep", *ONE, "--criteria", write(t, "c.yaml", DEEP)],
        "memlab: error: {tmp}/c.yaml: nested deeper than memlab reads (about 1000 levels of [ or {)",
    ),
    (
        "batch YAML nested 100,000 deep",
        lambda t: ["run", "--config", write(t, "b.yaml", "parameters: " + DEEP)],
        "memlab: error: {tmp}/b.yaml: nested deeper than memlab reads (about 1000 levels of [ or {)",
    ),
    (
        "dataset.json nested 100,000 deep",
        lambda t: ["validate", _deep_meta(t)],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: nested deeper than memlab reads (about 1000 levels "
        "of [ or {)",
    ),
    (
        "a memories.jsonl line nested 100,000 deep",
        lambda t: ["validate", seed(t, memories='{"id": ' + DEEP + "}\n")],
        "memlab: invalid dataset:\n{tmp}/d/memories.jsonl:1: nested deeper than memlab reads (about 1000 "
        "levels of [ or {)",
    ),
    (
        "an integer of 10,000 digits in a LoCoMo file",
        lambda t: [
            "import-locomo",
            write(t, "l.json", '[{"sample_id": ' + "9" * 10_000 + "}]"),
            "-o",
            str(t / "o"),
        ],
        "memlab: error: {tmp}/l.json: holds an integer of more than 4300 digits: not a number memlab reads",
    ),
    (
        "an integer of 10,000 digits in published_scores.jsonl",
        lambda t: ["evaluate", "--source", "published", "--dataset", _big_int_score(t)],
        "memlab: invalid dataset:\n{tmp}/d/published_scores.jsonl:1: holds an integer of more than 4300 "
        "digits: not a number memlab reads",
    ),
    # -- lone surrogates in imported files
    (
        "a lone surrogate in a LoCoMo question",
        lambda t: [
            "import-locomo",
            write(t, "l.json", benchmark("locomo_tiny.json", surrogate_in("question"))),
            "-o",
            str(t / "o"),
        ],
        "memlab: error: {tmp}/l.json: [0].qa[0].question: lone surrogate escape \\ud800 at character 1: not "
        "valid Unicode text",
    ),
    (
        "a lone surrogate in a LongMemEval turn",
        lambda t: [
            "import-longmemeval",
            write(t, "l.json", benchmark("longmemeval_tiny.json", surrogate_in("content"))),
            "-o",
            str(t / "o"),
        ],
        "memlab: error: {tmp}/l.json: [0].haystack_sessions[0][0].content: lone surrogate escape \\ud800 at "
        "character 1: not valid Unicode text",
    ),
    # -- published.json, the qdrant block
    (
        "published.json is a list",
        lambda t: ["evaluate", "--source", "published", "--dataset", seed(t, published="[1, 2]")],
        "memlab: error: {tmp}/d/published.json: expected a JSON object whose 'model' names the model that made "
        "the scores, got list",
    ),
    (
        "published.json without a model",
        lambda t: ["evaluate", "--source", "published", "--dataset", seed(t, published='{"model": 5}')],
        "memlab: error: {tmp}/d/published.json: expected a JSON object whose 'model' names the model that made "
        "the scores, got model 5",
    ),
    (
        "published.json is not JSON",
        lambda t: ["evaluate", "--source", "published", "--dataset", seed(t, published="{model: x")],
        "memlab: error: {tmp}/d/published.json:1: invalid JSON: Expecting property name enclosed in double "
        "quotes",
    ),
    (
        "a qdrant block that is a number",
        lambda t: ["validate", seed(t, meta=lambda m: m.__setitem__("qdrant", 5))],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: qdrant: expected an object (collection, date_field, "
        "date_format, ...), got 5",
    ),
    (
        "a qdrant block with a list for a field and an unknown format",
        lambda t: [
            "validate",
            seed(t, meta=lambda m: m.__setitem__("qdrant", {"date_field": ["a"], "date_format": "ns"})),
        ],
        "memlab: invalid dataset:\n{tmp}/d/dataset.json: qdrant: date_field: expected a name (text) or null, "
        "got ['a']\n{tmp}/d/dataset.json: qdrant: date_format: expected one of iso, epoch-s, epoch-ms, got 'ns'",
    ),
    # -- values on the command line
    (
        "-p with an unclosed list",
        lambda t: ["run", "-p", "fig_formats=[html"],
        "memlab: error: -p fig_formats=[html: invalid YAML: expected ',' or ']', but got '<stream end>'",
    ),
    (
        "a negative range after a flag is a value",
        lambda t: ["sweep", "--source", "published", "--bonus", "-0.1:0:0.05"],
        "memlab: error: bonus: expected a finite number >= 0, got -0.1",
    ),
    (
        "a negative pair after a flag is a value",
        lambda t: ["table", "--source", "published", "--pairs", "-0.1:30"],
        "memlab: error: --pairs: expected BONUS:TAU_DAYS pairs separated by commas (bonus >= 0, tau_days > 0), "
        "got '-0.1:30' in '-0.1:30'",
    ),
    (
        "embedding options with a source that embeds nothing",
        lambda t: [
            "evaluate",
            "--source",
            "published",
            "--truncate-dim",
            "100000",
            "--qdrant-url",
            "http://h:1",
        ],
        "memlab: error: --truncate-dim, --qdrant-url: --source published reads stored scores and embeds nothing, "
        "so they would be ignored: drop them, or use --source embedded",
    ),
    (
        "a one-question dataset in robustness",
        lambda t: ["robustness", "--source", "published", "--dataset", _one_question(t)],
        "memlab: error: robustness needs at least 2 questions, 'seed16' has 1: leaving one out would leave "
        "nothing to measure",
    ),
    # -- unclear before
    (
        "an empty memories.jsonl (not unknown ids)",
        lambda t: ["validate", seed(t, memories="")],
        "memlab: invalid dataset:\n{tmp}/d/memories.jsonl: the file is empty: a dataset needs at least one "
        "memory, one JSON object per line",
    ),
    (
        "a criteria file that is a folder",
        lambda t: ["sweep", *ONE, "--criteria", str(t)],
        "memlab: error: --criteria {tmp}: is a folder, not a criteria file (YAML)",
    ),
    (
        "a cache folder where a file is",
        lambda t: ["evaluate", "--cache-dir", write(t, "f", "x")],
        "memlab: error: embedding cache: cannot make the folder {tmp}/f/embeddings: a file is in the way; "
        "pass --cache-dir (or set MEMLAB_CACHE_DIR) to a folder",
    ),
    (
        "-p with an integer of 5,000 digits",
        lambda t: ["run", "-p", "seed=" + "9" * 5000],
        "memlab: error: -p: seed: expected int, got '" + "9" * 59 + "... (5,000 characters)",
    ),
    (
        "generate a billion years",
        lambda t: ["generate", "daily-lunch", str(t / "o"), "--days", "100000000000"],
        "memlab: error: days: expected an integer in [1, 36525], got 100000000000",
    ),
    (
        "generate before year one",
        lambda t: ["generate", "daily-lunch", str(t / "o"), "--reference", "0001-03-01"],
        "memlab: error: --reference 0001-03-01: the questions and 50 days of lunches would reach back before "
        "year 1: pick a later day",
    ),
    (
        "a missing criteria file",
        lambda t: ["sweep", *ONE, "--criteria", str(t / "nope.yaml")],
        "memlab: error: no criteria file {tmp}/nope.yaml",
    ),
]


def _utf32(t: Path) -> str:
    (t / "d" / "dataset.json").write_bytes(json.dumps({"name": "x"}).encode("utf-32"))
    return str(t / "d")


def _deep_meta(t: Path) -> str:
    d = seed(t)
    (Path(d) / "dataset.json").write_text(DEEP)
    return d


def _big_int_score(t: Path) -> str:
    d = seed(t)
    (Path(d) / "published_scores.jsonl").write_text(
        '{"question": "C1", "memory": "m01", "raw": ' + "9" * 10_000 + "}\n"
    )
    return d


def _one_question(t: Path) -> str:
    def keep_one(m):
        m.pop("tables")
        m["criteria"] = m["criteria"][:1]

    lines = (dataset_dir("seed16") / "questions.jsonl").read_text().splitlines()
    nohit = next(line for line in lines if '"nohit"' in line)
    qid = json.loads(nohit)["id"]
    scores = (dataset_dir("seed16") / "published_scores.jsonl").read_text().splitlines()
    d = seed(t, meta=keep_one, questions=nohit + "\n")
    (Path(d) / "published_scores.jsonl").write_text("".join(s + "\n" for s in scores if f'"{qid}"' in s))
    return d


@pytest.mark.parametrize(("case", "argv", "message"), CASES, ids=[c for c, _, _ in CASES])
def test_once_a_traceback_or_unclear_now_one_line(tmp_path, capsys, case, argv, message):
    assert main(argv(tmp_path)) == 2
    assert capsys.readouterr().err == message.replace("{tmp}", str(tmp_path)) + "\n"
    assert not (tmp_path / "o").exists()  # an import that fails writes nothing


def test_a_utf8_byte_order_mark_is_read_not_refused(tmp_path, capsys):
    d = Path(seed(tmp_path))
    for name in ("memories.jsonl", "questions.jsonl", "dataset.json"):
        (d / name).write_bytes(b"\xef\xbb\xbf" + (d / name).read_bytes())
    assert main(["validate", str(d)]) == 0
    assert capsys.readouterr().out.startswith(f"{d}: ok: 16 memories, 10 questions")


def test_a_write_that_fails_names_the_users_file_not_the_temporary_one(tmp_path, capsys):
    out = tmp_path / ("a" * 250)  # a name the file system takes; the temporary one beside it is longer
    assert main(["evaluate", "--source", "published", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    extra = len(f".{out.name}.{os.getpid()}.12345678.tmp") - len(out.name)
    assert err == (
        f"memlab: error: [Errno 36] File name too long (memlab writes it through a temporary file beside it, "
        f"{extra} characters longer): shorten the name: '{out}'\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_import_that_fails_its_check_names_the_folder_asked_for(tmp_path, monkeypatch):
    """A generated or imported folder is checked before it is renamed into place: the problems
    name the folder the user asked for, never the temporary one (which is gone)."""
    from memlab.core import files
    from memlab.datasets.schema import DatasetError

    def broken(tmp):
        raise DatasetError([f"{tmp}/memories.jsonl:1: text: missing", f"{tmp}/dataset.json: name: odd"])

    out = tmp_path / "out"
    with pytest.raises(DatasetError) as e:
        files.write_folder_atomically(out, {"memories.jsonl": "{}\n"}, check=broken)
    assert e.value.problems == [f"{out}/memories.jsonl:1: text: missing", f"{out}/dataset.json: name: odd"]
    assert str(e.value) == "\n".join(e.value.problems)
    assert list(tmp_path.iterdir()) == []


def test_a_truncation_beyond_the_models_dimension_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(
        Embedder, "_compute", lambda self, texts, role: np.eye(len(texts), 4, dtype=np.float32)
    )
    assert main(["evaluate", "--truncate-dim", "100000", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memlab: error: --truncate-dim 100000: multilingual-e5-small@")
    assert err.endswith(
        "gives 4-dimensional vectors, so there is nothing to truncate: pass at most 4, or drop it\n"
    )
    assert list(tmp_path.rglob("*.npy")) == []


@pytest.mark.parametrize(
    ("text", "matched"),
    [
        ("1234日前", None),
        ("123日前", "123日前"),
        ("2026年12月1日", "12月1日"),
        ("112月1日", None),
        ("10週間前", "10週間前"),
        ("310週間前", None),
    ],
)
def test_japanese_numbers_have_a_left_boundary(text, matched):
    found = parse_time(text, datetime(2026, 9, 10, tzinfo=UTC))
    assert (found and found.matched) == matched


def test_a_date_before_year_one_names_no_time():
    assert parse_time("999日前", datetime(1, 1, 5, tzinfo=UTC)) is None


# -- what memlab writes for the user to paste reads back as written -------------------------------

AWKWARD = "/data/my store: #1 'quoted' \"too\" & more"


def test_flags_for_the_shell_are_quoted():
    spec = RetrievalSpec(bonus=0.045, tau_days=15.0, threshold=0.4512345678901)
    words = shlex.split(cli_flags(AWKWARD, "embedded", "ja", spec))
    assert words == [
        "--dataset", AWKWARD, "--source", "embedded", "--lang", "ja", "--bonus", "0.045", "--tau", "15",
        "--threshold", "0.4512345678901", "--candidates", "8", "--inject", "3",
    ]  # fmt: skip


def test_yaml_for_a_batch_file_is_dumped_and_reads_back(tmp_path):
    spec = RetrievalSpec(bonus=0.045, tau_days=15.0, threshold=0.45, decay="lin")
    (tmp_path / "b.yaml").write_text(batch_yaml(AWKWARD, "embedded", "en", spec))
    assert yaml.safe_load((tmp_path / "b.yaml").read_text())["runs"][0]["parameters"] == {
        "dataset": AWKWARD,
        "source": "embedded",
        "lang": "en",
        "bonus": 0.045,
        "tau_days": 15.0,
        "threshold": 0.45,
        "candidates": 8,
        "inject": 3,
        "decay": "lin",
        "combine": "add",
    }
    with pytest.raises(Exception) as e:  # memlab's own reader: the folder is looked for as written
        load_batch(tmp_path / "b.yaml")
    assert str(e.value) == f"{tmp_path}/b.yaml: runs[1] (tuned): dataset: no dataset folder {AWKWARD}"


def test_the_next_step_after_an_import_is_quoted(tmp_path, capsys):
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp_path / "q"))
    client.create_collection("c", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert("c", [models.PointStruct(id=1, vector=[1.0, 0.0], payload={"d": "2026-09-01", "t": "x"})])
    client.close()
    out = tmp_path / "my data"
    argv = ["import-qdrant", "--path", str(tmp_path / "q"), "--collection", "c", "--date-field", "d"]
    assert main([*argv, "--text-field", "t", "-o", str(out)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert shlex.split(last.split(", then ")[1]) == ["memlab", "validate", str(out)]


def test_a_collection_name_in_the_setups_rest_path_is_encoded(capsys):
    assert main(["spec", "--format", "setup", "--collection", 'my "mem" /x']) == 0
    out = capsys.readouterr().out
    assert "PUT /collections/my%20%22mem%22%20%2Fx/index\n" in out
    assert "client.create_payload_index('my \"mem\" /x', 'date'" in out


def test_dates_are_rfc3339_in_any_year():
    early = datetime(999, 1, 2, 3, 4, 5, 678, tzinfo=UTC)
    assert rfc3339(early) == "0999-01-02T03:04:05Z"  # strftime's %Y gave 999-01-02
    block = b_format(["0999-01-01: a very old memory"], early)
    assert "Today is 0999-01-02." in block
    from memlab.app.cli.options import spec_line

    assert spec_line(RetrievalSpec(reference_date=early)).endswith("reference=0999-01-02")
