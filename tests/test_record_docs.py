"""memlab.app.record on a small page of its own: cheap commands, checked on paper."""

import subprocess

import pytest

from memlab.app import record
from memlab.core.errors import InputError


def page(tmp_path, body: str):
    p = tmp_path / "page.md"
    p.write_text(body, encoding="utf-8")
    return p


def cmd(code: str) -> str:
    return f'python -c "{code}"'


def test_rewrite_then_check_is_fresh(tmp_path):
    p = page(
        tmp_path, f"# t\n\n<!-- recorded: {cmd('print(chr(124) + 1)')} -->\nold\n<!-- /recorded -->\ntail\n"
    )
    # chr(124)+1 is a TypeError: the command fails, the page is unchanged and the error names it
    before = p.read_text()
    assert record.main([str(p)]) == 2
    assert p.read_text() == before
    p = page(
        tmp_path, f"# t\n\n<!-- recorded: {cmd('print(chr(124) * 2)')} -->\nold\n<!-- /recorded -->\ntail\n"
    )
    assert record.main([str(p), "--check"]) == 1  # 'old' is not what the command prints
    assert p.read_text().count("old") == 1  # --check wrote nothing
    assert record.main([str(p)]) == 0
    lines = p.read_text().split("\n")
    assert lines[3] == "||"
    assert lines[4].startswith("<sub>Recorded by `python -c") and " at commit " in lines[4]
    assert lines[5] == "<!-- /recorded -->" and lines[6] == "tail"
    assert record.main([str(p), "--check"]) == 0  # the record line itself is not compared


def test_text_block_is_fenced_and_timing_masks_numbers(tmp_path):
    timing = cmd("print(chr(116), 1.5, chr(115))")  # prints 't 1.5 s'
    p = page(tmp_path, f"<!-- recorded timing: {timing} -->\n```text\nt 9.25 s\n```\n<!-- /recorded -->\n")
    assert record.main([str(p), "--check"]) == 0  # same rows, other seconds: not stale
    p = page(tmp_path, f"<!-- recorded timing: {timing} -->\n```text\nu 9.25 s\n```\n<!-- /recorded -->\n")
    assert record.main([str(p), "--check"]) == 1  # a label changed
    p = page(
        tmp_path, f"<!-- recorded text: {cmd('print(0.25)')} -->\n```text\n0.26\n```\n<!-- /recorded -->\n"
    )
    assert record.main([str(p), "--check"]) == 1  # a deterministic figure is byte-compared
    assert record.main([str(p)]) == 0
    assert p.read_text().split("\n")[:3] == [
        "<!-- recorded text: " + cmd("print(0.25)") + " -->",
        "```text",
        "0.25",
    ]


def test_only_and_list(tmp_path, capsys):
    p = page(
        tmp_path,
        f"<!-- recorded: {cmd('print(1)')} -->\n1\n<!-- /recorded -->\n"
        f"<!-- recorded text: {cmd('print(2)')} -->\nx\n<!-- /recorded -->\n",
    )
    assert record.main([str(p), "--check", "--only", "print(1)"]) == 0  # the stale second is not run
    assert record.main([str(p), "--check"]) == 1
    assert "page.md:4" in capsys.readouterr().err
    assert record.main([str(p), "--list"]) == 0
    listed = capsys.readouterr().out.strip().split("\n")
    assert [ln.split("\t")[1] for ln in listed] == ["markdown", "text"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<!-- recorded: python -c 1 -->\nx\n", "page.md:1: recorded block never closed"),
        ("x\n<!-- /recorded -->\n", "page.md:2: '<!-- /recorded -->' without an opening"),
        ("<!-- recorded python -->\n", "page.md:1: recorded marker: expected"),
        (
            "<!-- recorded: a -->\n<!-- recorded: b -->\n<!-- /recorded -->\n",
            "page.md:2: recorded block opened inside",
        ),
    ],
)
def test_bad_markers_are_one_line(tmp_path, body, message):
    p = page(tmp_path, body)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        record.parse(p, body)


def test_command_runs_in_the_repository_with_it_on_the_path(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "probe_mod.py").write_text("X = 7\n")
    p = tmp_path / "docs" / "p.md"
    p.write_text(f"<!-- recorded: {cmd('import probe_mod; print(probe_mod.X)')} -->\n<!-- /recorded -->\n")
    assert record.main([str(p)]) == 0
    assert p.read_text().split("\n")[1] == "7"


def test_needs_skips_a_block_whose_data_is_absent_and_leaves_it(tmp_path, capsys):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    body = (
        f"<!-- recorded needs=data/external/bench.json: {cmd('print(3)')} -->\nold\n<!-- /recorded -->\n"
        f"<!-- recorded text needs=module:no_such_module_here: {cmd('print(4)')} -->\nx\n<!-- /recorded -->\n"
        f"<!-- recorded needs=module:json: {cmd('print(5)')} -->\n5\n<!-- /recorded -->\n"
    )
    p = tmp_path / "docs" / "p.md"
    p.write_text(body)
    assert record.main([str(p), "--check"]) == 0  # the two missing ones are not stale, the third is fresh
    err = capsys.readouterr().err
    assert "p.md:1 `python -c" in err and "(needs data/external/bench.json)" in err
    assert "p.md:4" in err and "(needs module:no_such_module_here)" in err
    (tmp_path / "data" / "external").mkdir(parents=True)
    (tmp_path / "data" / "external" / "bench.json").write_text("{}")
    assert record.main([str(p), "--check"]) == 1  # now it runs, and 'old' is not what it prints
    assert record.main([str(p)]) == 0
    lines = p.read_text().split("\n")
    assert lines[1] == "3" and " s).</sub>" in lines[2]  # the record line carries the seconds
    assert lines[5] == "x"  # the module one still skipped, untouched
    assert record.main([str(p), "--list"]) == 0
    listed = [ln.split("\t") for ln in capsys.readouterr().out.strip().split("\n")]
    assert [row[2] for row in listed] == [
        "data/external/bench.json",
        "module:no_such_module_here",
        "module:json",
    ]


@pytest.mark.parametrize("need", ["/etc/passwd", "../outside.json", "data/../../x"])
def test_needs_outside_the_repository_is_refused(tmp_path, need):
    body = f"<!-- recorded needs={need}: python -c 1 -->\n<!-- /recorded -->\n"
    with pytest.raises(InputError, match=r"page.md:1: needs=.*inside the repository"):
        record.parse(tmp_path / "page.md", body)


def test_a_commands_own_seconds_are_not_compared(tmp_path):
    # prints 'x 0.25' and 'computed in 1.5 s': the figure is compared, the command's seconds are not
    printed = cmd("print(chr(120), 0.25); print(chr(99) + 'omputed in 1.5 s')")
    fresh = (
        f"<!-- recorded text: {printed} -->\n```text\nx 0.25\ncomputed in 312.0 s\n```\n<!-- /recorded -->\n"
    )
    assert record.main([str(page(tmp_path, fresh)), "--check"]) == 0
    stale = fresh.replace("x 0.25", "x 0.26")
    assert record.main([str(page(tmp_path, stale)), "--check"]) == 1
    other = fresh.replace("computed in 312.0 s", "computed in 312.0 minutes")  # not the seconds line
    assert record.main([str(page(tmp_path, other)), "--check"]) == 1
