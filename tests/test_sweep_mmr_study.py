"""`memlab sweep --mmr-pool --diversity`: MMR's axes through the one sweep study.

Every row the study streams is what the one-config reference (``evaluate``) gives for that
configuration, on random stores and on a packaged dataset with vectors of its own; the chosen
spec saved with ``--save`` carries ``mmr_pool`` and ``diversity``, and its export (``memlab spec
--spec``) injects on the real engine (qdrant-edge-py) what the reference injects; the axes are
off by default and refused in one line when given half or with a pool of 0.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import REF, criteria_for, make_dataset, problem_of
from test_sweep import same

from memlab.core.criteria import dataset_criteria
from memlab.core.grid import Grid
from memlab.core.selection import utility
from memlab.core.spec import RetrievalSpec
from memlab.core.sweep_mmr import MmrAxes
from memlab.core.vectors import cosine_table
from memlab.datasets.schema import load_dataset
from memlab.scores.problem import RetrievalProblem
from memlab.scores.sources import ScoreOptions, ScoreTable, Vectors
from memlab.tuning.evaluate import evaluate
from memlab.tuning.sweep_study import decision_margins, sweep_chunks, sweep_study

GRID = Grid(bonus=(0.0, 0.15), tau_days=(4.0,), threshold=(-1.0, 0.2), candidates=(2, 4), inject=(1, 3))
AXES = MmrAxes.of((3, 9), (0.0, 0.5, 1.0))


def random_problem(seed: int) -> RetrievalProblem:
    rng = np.random.default_rng(seed)
    n_m, n_q = 14, 5
    mem = rng.normal(size=(n_m, 5)).astype(np.float32)
    mem[7] = mem[6]  # twins: MMR's ties
    queries = rng.normal(size=(n_q, 5)).astype(np.float32)
    kinds = [str(k) for k in rng.choice(["hit", "nohit", "contradiction"], n_q)]
    dataset = make_dataset(
        rng.integers(0, 40 * 86400, n_m), kinds, [int(i) for i in rng.integers(0, n_m, n_q)], [()] * n_q
    )
    return problem_of(dataset, RetrievalSpec(), cosine_table(queries, mem), memories=mem, questions=queries)


def packaged_problem(name: str = "seed16") -> RetrievalProblem:
    """A packaged dataset with random vectors of its own (the scores their cosines)."""
    ds = load_dataset(name)
    rng = np.random.default_rng(11)
    mem = rng.normal(size=(len(ds.memories), 12)).astype(np.float32)
    queries = rng.normal(size=(len(ds.questions), 12)).astype(np.float32)
    table = ScoreTable(
        ds.question_ids, ds.memory_ids, cosine_table(queries, mem), "embedded", vectors=Vectors(mem, queries)
    )
    return RetrievalProblem.of(ds, table, RetrievalSpec(), ScoreOptions())


def rows_are_the_reference(problem: RetrievalProblem, criteria, frames) -> int:
    """Each row equals ``evaluate`` at its spec; returns on how many rows MMR changed an injection."""
    differs, seen = 0, 0
    for frame in frames:
        for config, row in frame.iterrows():
            assert config == seen  # numbered over the whole, in C order
            seen += 1
            spec = RetrievalSpec.from_row(row)
            ev = evaluate(problem.with_spec(spec), criteria=criteria)
            for c in ev.criteria:
                assert same(c.value, float(row[f"{c.name}_value"])), (config, c)
                assert c.passed == bool(row[f"{c.name}_pass"])
            assert same(ev.headroom, float(row["headroom"])) and ev.feasible == bool(row["feasible"])
            for kind in ("hit", "contradiction", "nohit"):
                assert sum(len(r.injected) for r in ev.results if r.kind == kind) == row[f"injected_{kind}"]
            plain = evaluate(problem.with_spec(RetrievalSpec.from_row(row, mmr_pool=0, diversity=0.0)))
            differs += [[c.index for c in r.injected] for r in ev.results] != [
                [c.index for c in r.injected] for r in plain.results
            ]
    assert seen == AXES.size * GRID.size
    return differs


@pytest.mark.parametrize("seed", range(3))
def test_every_streamed_row_is_the_reference_on_random_stores(seed):
    problem = random_problem(seed)
    criteria = criteria_for(problem.dataset)
    frames = list(sweep_chunks(problem, GRID, criteria, mmr=AXES))
    assert len(frames) == AXES.size  # one frame per (pool, diversity), in C order
    assert [(f["mmr_pool"].iloc[0], f["diversity"].iloc[0]) for f in frames] == [
        (p, d) for p in AXES.mmr_pool for d in AXES.diversity
    ]
    assert rows_are_the_reference(problem, criteria, frames) > 0


def test_every_streamed_row_is_the_reference_on_a_packaged_dataset():
    problem = packaged_problem()
    criteria = dataset_criteria(problem.dataset)
    assert rows_are_the_reference(problem, criteria, sweep_chunks(problem, GRID, criteria, mmr=AXES)) > 0


def test_the_study_chooses_among_the_mmr_rows_and_off_is_the_sweep_as_before():
    problem = packaged_problem()
    criteria = dataset_criteria(problem.dataset)
    study = {"nohit_weight": 1.0, "langs": ("en",)}
    out = sweep_study([problem], GRID, criteria, "max-utility", mmr=AXES, **study)
    whole = [f for f in sweep_chunks(problem, GRID, criteria, mmr=AXES)]
    assert out.choice.total == AXES.size * GRID.size
    # max-utility among every row of every (pool, diversity) frame (the rule's fallback aside)
    best = max(float(utility(f, 1.0).max()) for f in whole)
    assert out.row["mmr_pool"] in AXES.mmr_pool and out.row["diversity"] in AXES.diversity
    if not out.choice.fell_back:
        assert out.row["utility"] == best
    # the chosen row is the reference's at its spec
    spec = RetrievalSpec.from_row(out.row)
    assert spec.mmr
    assert evaluate(problem.with_spec(spec)).feasible == bool(out.row["feasible"])
    # without the axes: the plain sweep, frame for frame
    plain = list(sweep_chunks(problem, GRID, criteria))
    again = list(sweep_chunks(problem, GRID, criteria, mmr=None))
    assert all(a.equals(b) for a, b in zip(plain, again, strict=True)) and "mmr_pool" not in plain[0]
    # under diversity no margin is made up; at diversity 0 it is the plain one's
    assert (
        decision_margins([problem], spec if spec.diversity > 0 else RetrievalSpec(mmr_pool=9, diversity=0.5))
        is None
    )
    zero = RetrievalSpec(candidates=4, mmr_pool=9, diversity=0.0)
    assert (
        decision_margins([problem], zero)[0].margin
        == decision_margins([problem], RetrievalSpec(candidates=4))[0].margin
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--diversity", "0.5"], "--diversity: MMR's axes come together: give --mmr-pool too"),
        (["--mmr-pool", "8"], "--mmr-pool: MMR's axes come together: give --diversity too"),
        (["--mmr-pool", "0,8", "--diversity", "0"], "mmr_pool: the MMR axes need a pool of 1 or more"),
        (["--mmr-pool", "8", "--diversity", "0,1.5"], "diversity: expected"),
        (["--mmr-pool", "8:x:2", "--diversity", "0"], "--mmr-pool: '8:x:2' is not start:stop:step"),
        (["--mmr-pool", "8", "--diversity", "0.5"], "MMR with diversity > 0 needs the memories' vectors"),
        (["--mmr-pool", "8", "--diversity", "0", "--print-choice", "yaml"], "the choice would lose mmr_pool"),
    ],
)
def test_bad_axes_are_one_line(argv, message, capsys, tmp_path):
    from memlab.app.cli import main

    saved = tmp_path / "t.yaml"
    code = main(["sweep", "--dataset", "seed16", "--source", "published", "--save", str(saved), *argv])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("memlab: error: ") and message in err and err.count("\n") == 1, err
    assert not saved.exists()  # nothing written


def test_the_cli_sweeps_the_axes_and_prints_them(capsys):
    from memlab.app.cli import main

    base = ["sweep", "--dataset", "seed16", "--source", "published", "--tau", "7", "--candidates", "4"]
    assert main([*base, "--bonus", "0:0.1:0.05"]) == 0
    before = capsys.readouterr().out
    assert "mmr" not in before
    assert main([*base, "--bonus", "0:0.1:0.05", "--mmr-pool", "4,12", "--diversity", "0"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("grid: 2 mmr_pool x 1 diversity x 3 bonus x 1 tau x ")
    assert " mmr_pool=" in out and " diversity=0 " in out


@pytest.mark.model
@pytest.mark.qdrant_edge
def test_the_saved_choice_exports_what_the_reference_injects_on_the_engine(tmp_path, capsys):
    """On seed16 embedded by the default model: the sweep over the MMR axes saves its choice, and
    the query ``memlab spec --spec`` prints injects on qdrant-edge what ``evaluate`` injects."""
    from memlab.app.cli import main
    from memlab.qdrant import edge
    from memlab.qdrant.query import DEFAULT_SCHEMA, spec_body
    from memlab.scores.problem import build_problem
    from memlab.tuning.tuned import load_tuned

    saved = tmp_path / "tuned.yaml"
    argv = ["sweep", "--dataset", "seed16", "--tau", "7", "--candidates", "3,5", "--inject", "2,3"]
    argv += ["--mmr-pool", "6,12", "--diversity", "0.5,0.9", "--select", "max-utility", "--save", str(saved)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "no exact decision margin under MMR with diversity > 0" in out
    tuned = load_tuned(saved)
    spec = tuned.spec
    assert spec.mmr_pool in (6, 12) and spec.diversity in (0.5, 0.9)
    assert tuned.selection["decision_margin"] is None
    assert (
        main(["spec", "--spec", str(saved), "--format", "qdrant-json", "-o", str(tmp_path / "q.json")]) == 0
    )
    exported = json.loads((tmp_path / "q.json").read_text())
    assert exported["prefetch"]["query"]["mmr"] == {
        "diversity": spec.diversity,
        "candidates_limit": spec.mmr_pool,
    }
    ds = load_dataset("seed16")
    problem = build_problem(ds, ScoreOptions(source="embedded"))
    vectors = problem.scores.vectors
    shard = edge.create_shard(tmp_path / "shard", vectors.memories.shape[1], DEFAULT_SCHEMA)
    payloads = [{"memory_id": m.id, "date": DEFAULT_SCHEMA.date_value(m.date)} for m in ds.memories]
    edge.upsert(shard, range(len(ds.memories)), vectors.memories, payloads, DEFAULT_SCHEMA)
    ev = evaluate(problem.with_spec(spec))
    asked, haystack = ds.question_references(), ds.in_haystack()
    try:
        for qi, result in enumerate(ev.results):
            at = asked[qi].astype("datetime64[s]").item().replace(tzinfo=REF.tzinfo)
            mine = [{"has_id": [int(i) for i in np.flatnonzero(haystack[qi])]}]
            body = spec_body(spec, DEFAULT_SCHEMA, vectors.questions[qi], at, extra_conditions=mine)
            # the body the reference's engine run uses is the one the command exported
            assert body["prefetch"]["query"]["mmr"] == exported["prefetch"]["query"]["mmr"]
            got = [int(i) for i, _ in edge.run(shard, body)]
            assert got == [c.index for c in result.injected], (result.question_id, got)
    finally:
        shard.close()
    assert len(ev.results) == len(ds.questions) > 0


def test_scale_and_the_margin_refuse_mmr_with_diversity_in_one_line():
    from memlab.core.decisions import decision_margin
    from memlab.core.errors import InputError
    from memlab.studies.scale import scale_study

    problem = random_problem(0)
    spec = RetrievalSpec(candidates=3, mmr_pool=8, diversity=0.5)
    with pytest.raises(InputError, match=r"^no exact decision margin under MMR with diversity > 0: "):
        decision_margin(problem.raw, problem.ages(), problem.dataset.memory_ids, spec)
    with pytest.raises(InputError, match=r"^scale: an MMR stage is not modelled: "):
        scale_study(problem.with_spec(spec), [20], (np.zeros((4, 5), np.float32), np.zeros(4)))
