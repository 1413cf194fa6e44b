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
