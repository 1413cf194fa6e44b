"""Messages the hostile walkthrough (bench/hostile_walk.py, issue 37) found unclear: each input with
the fragment its one-line error must hold. A 5,000-digit integer in a tuned file names its line and
field; a query log's time no format reads says so and why, instead of naming a format that fails
next."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlab.app.cli import main
from memlab.core.errors import InputError
from memlab.datasets.records import parse_instant
from memlab.tuning.tuned import load_tuned

pytestmark = pytest.mark.hostile


@pytest.fixture(scope="module")
def tuned_text(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tuned") / "t.yaml"
    assert main(["sweep", "--source", "published", "--bonus", "0:0.1:0.05", "--save", str(path)]) == 0
    return path.read_text()


def line_of(text: str, key: str) -> int:
    return next(i for i, x in enumerate(text.splitlines(), 1) if x.strip().startswith(key + ":"))


TUNED = [  # (field, what replaces its value, fragment after "file:line: ")
    ("candidates", "9" * 5000, "spec.candidates: an integer of 5,000 digits: not a number memlab reads"),
    ("inject", "-" + "1" * 4301, "spec.inject: an integer of 4,301 digits"),
    ("candidates", "1_" + "0" * 4400, "spec.candidates: an integer of 4,401 digits"),
]


@pytest.mark.parametrize(("field", "value", "fragment"), TUNED)
def test_huge_integer_in_tuned_file_names_line_and_field(tmp_path, tuned_text, field, value, fragment):
    text = re.sub(rf"^(\s+{field}): .*$", rf"\1: {value}", tuned_text, count=1, flags=re.M)
    assert text != tuned_text
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        load_tuned(path)
    assert str(e.value).startswith(f"{path}:{line_of(text, field)}: {fragment}")
    assert "\n" not in str(e.value)


def test_integer_at_the_limit_is_read_then_checked(tmp_path, tuned_text):
    """4,300 digits is a number Python converts: the field's own check refuses it, not the reader."""
    text = re.sub(r"^(\s+candidates): .*$", r"\1: " + "9" * 4300, tuned_text, count=1, flags=re.M)
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        load_tuned(path)
    assert f"{path}:6: spec.candidates: expected an integer in [1, 2147483647]" in str(e.value)
    assert "not a number memlab reads" not in str(e.value)


RANGE = "memlab reads instants from year 1 to 9999"
TIMES = [  # (value, --time-format, fragment)
    (1e300, "auto", f"1e+300 is out of range: {RANGE}"),
    (1e300, "epoch-ms", f"1e+300 is out of range as epoch-ms: {RANGE}"),
    (1e300, "epoch-s", f"1e+300 is out of range as epoch-s: {RANGE}"),
    (-1e15, "auto", f"-1000000000000000.0 is out of range: {RANGE}"),
    (10**30, "auto", f"{10**30} is out of range: {RANGE}"),
    (253_402_300_800, "epoch-s", f"253402300800 is out of range as epoch-s: {RANGE}"),
    (-1e12, "auto", "-1000000000000.0 looks like epoch milliseconds (1938-04-24T22:13:20+00:00 as such)"),
    (1.7e12, "auto", "1700000000000.0 looks like epoch milliseconds (2023-11-14T22:13:20+00:00 as such)"),
    (float("nan"), "epoch-s", "nan is not a finite number"),
    (float("-inf"), "auto", "-inf is not a finite number"),
]


@pytest.mark.parametrize(("value", "fmt", "fragment"), TIMES)
def test_out_of_range_time_says_what_and_why(value, fmt, fragment):
    with pytest.raises(InputError) as e:
        parse_instant(value, fmt, flag="--time-format")
    assert fragment in str(e.value)


def test_the_suggested_format_then_reads_it():
    """What the auto message suggests works: -1e12 ms is 1938-04-24 22:13:20 UTC (by hand:
    -1e9 s = -11,574 days 1h46m40s before 1970)."""
    assert parse_instant(-1e12, "epoch-ms") == datetime(1938, 4, 24, 22, 13, 20, tzinfo=UTC)
    assert parse_instant(0, "epoch-s") == datetime(1970, 1, 1, tzinfo=UTC)
    assert parse_instant(-62_135_596_800, "epoch-s") == datetime(1, 1, 1, tzinfo=UTC)
    assert parse_instant(1_700_000_000.5, "epoch-s") == datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=UTC)


def test_explain_log_names_the_line_and_the_range(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"text": "a", "time": 1e300}) + "\n")
    assert main(["explain", "--source", "embedded", "--log", str(log), "--time-format", "epoch-ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[-1].startswith("memlab: error: ")
        and "log.jsonl:1: time: 1e+300 is out of range as epoch-ms" in err[-1]
    )
    assert Path(log).read_text().count("\n") == 1


def test_tune_benchmark_boot_past_memory_is_one_line(tmp_path, capsys):
    """10**30 resamples were numpy's "Maximum allowed dimension exceeded" traceback; the bound is
    memlab's 2 GiB budget over 16 bytes a question a resample."""
    from memlab.importers.locomo import import_locomo

    root = tmp_path / "ds"
    import_locomo(Path(__file__).parent / "data" / "locomo_heldout.json", root, granularity="turn")
    assert main(["tune-benchmark", "--dataset", str(root), "--folds", "2", "--boot", str(10**30)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("memlab: error: n_boot: 1,000,000,000,000,000,000,000")
    assert "more than memlab's budget of 2.0 GiB: at most" in err[0]


@pytest.fixture(scope="module")
def locomo_ds(tmp_path_factory) -> Path:
    from memlab.importers.locomo import import_locomo

    root = tmp_path_factory.mktemp("locomo") / "ds"
    import_locomo(Path(__file__).parent / "data" / "locomo_heldout.json", root, granularity="turn")
    return root


RERANK_ALONE = [  # (options without --rerank-url, the options the line names): were ignored
    (["--rerank-attempts", "-1"], "--rerank-attempts: it shapes"),
    (["--rerank-timeout", "nan"], "--rerank-timeout: it shapes"),
    (["--rerank-subset", "1"], "--rerank-subset: it shapes"),
    (
        ["--rerank-depth", "4", "--rerank-concurrency", "2"],
        "--rerank-concurrency, --rerank-depth: they shape",
    ),
]


@pytest.mark.parametrize(("extra", "fragment"), RERANK_ALONE)
def test_tune_benchmark_rerank_options_without_a_reranker_are_refused(locomo_ds, capsys, extra, fragment):
    assert main(["tune-benchmark", "--dataset", str(locomo_ds), "--folds", "2", "--boot", "5", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"memlab: error: {fragment} the held-out + rerank system, which runs only with --rerank-url: "
        f"add it, or drop {'them' if 'they' in fragment else 'it'}"
    ]


def test_tune_benchmark_without_rerank_options_still_runs(locomo_ds, capsys):
    assert main(["tune-benchmark", "--dataset", str(locomo_ds), "--folds", "2", "--boot", "5"]) == 0
    assert "recency+calibrated" in capsys.readouterr().out


def test_tune_benchmark_systems_without_units_is_refused(locomo_ds, capsys):
    """--systems shapes only the --units table: it was ignored, 'bogus' included."""
    assert main(["tune-benchmark", "--dataset", str(locomo_ds), "--systems", "bogus"]) == 2
    assert capsys.readouterr().err == (
        "memlab: error: --systems: it names the systems compared across --units (with "
        "--benchmark-file): add those two, or drop it (the held-out table compares every system)\n"
    )


ANSWER_BOOT = [  # (--boot, the line): checked before any chat request (port 9 is never asked)
    ("-1", "memlab: error: --boot: expected an integer >= 1, got -1"),
    ("0", "memlab: error: --boot: expected an integer >= 1, got 0"),
    (
        str(10**30),
        "memlab: error: --boot: 1,000,000,000,000,000,000,000,000,000,000 bootstrap resamples would",
    ),
]


@pytest.mark.parametrize(("boot", "line"), ANSWER_BOOT)
def test_answer_boot_is_checked_before_the_chat(tmp_path, capsys, boot, line):
    argv = ["answer", "--source", "published", "--chat-url", "http://127.0.0.1:9/v1", "--chat-model", "m"]
    argv += ["--no-llm-judge", "--questions", "H1", "--chat-attempts", "1", "--boot", boot]
    assert main([*argv, "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(line)
    assert "cannot connect" not in err[0]
