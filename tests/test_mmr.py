"""MMR (maximal marginal relevance) as Qdrant computes it: a worked example on paper, the three
forms (one question, numpy over questions, the numba kernel) equal, the stage off by default
(every spec's output unchanged), refused in one line without vectors, and the export run on the
real engine (qdrant-edge-py) and in local mode, injecting exactly what memlab's reference
injects, on random stores and on the packaged datasets.
"""

from __future__ import annotations

import re
from datetime import timedelta

import numpy as np
import pytest
from helpers import REF

from memlab.core import mmr
from memlab.core.errors import InputError
from memlab.core.spec import SPEC_FIELDS, RetrievalSpec, age_days, retrieve
from memlab.core.sweep_kernels import mmr_select
from memlab.core.vectors import cosine_table
from memlab.datasets.schema import load_dataset
from memlab.qdrant.query import DEFAULT_SCHEMA, spec_body
from memlab.scores.sources import ScoreTable, Vectors
from memlab.tuning.evaluate import evaluate

PACKAGED = ("seed16", "seed16-time", "daily-lunch")


def test_a_worked_example():
    # three candidates: a and b nearly the same memory, c apart; relevance a > b > c
    rel = np.array([0.9, 0.85, 0.6], dtype=np.float32)
    sim = np.array([[1.0, 0.95, 0.1], [0.95, 1.0, 0.2], [0.1, 0.2, 1.0]], dtype=np.float32)
    # diversity 0.5: lambda 0.5; after a, b scores 0.5*0.85 - 0.5*0.95 = -0.05, c 0.5*0.6 - 0.5*0.1
    # = 0.25: c comes second, b last
    assert mmr.select(rel, sim, 0.5, 3).tolist() == [0, 2, 1]
    # diversity 0: relevance order; diversity 1: a first (relevance), then least similar to a
    assert mmr.select(rel, sim, 0.0, 3).tolist() == [0, 1, 2]
    assert mmr.select(rel, sim, 1.0, 2).tolist() == [0, 2]
    # ties: Rust's max_by_key keeps the last of equal maxima in the IndexSet's order
    flat = np.zeros((3, 3), dtype=np.float32)
    assert mmr.select(np.array([0.5, 0.5, 0.5], dtype=np.float32), flat, 0.5, 3).tolist() == [2, 1, 0]
    # after picking 2, swap_remove leaves [0, 1]; after picking 1, [0]
    assert mmr.select(np.array([0.1, 0.5, 0.9], dtype=np.float32), flat, 0.0, 3).tolist() == [2, 1, 0]
    # one candidate is returned as it is; limit 0 returns nothing
    assert mmr.select(rel[:1], sim[:1, :1], 0.5, 3).tolist() == [0]
    assert mmr.select(rel, sim, 0.5, 0).tolist() == []


def test_lambda_is_one_minus_diversity_in_float32():
    lam, mu = mmr.mmr_lambda(0.3)
    assert lam == np.float32(1) - np.float32(0.3) and lam.dtype == np.float32
    assert mu == np.float32(1) - lam


@pytest.mark.parametrize("seed", range(6))
def test_the_three_forms_agree(seed):
    rng = np.random.default_rng(seed)
    for trial in range(40):
        n_q, n_p = 6, int(rng.integers(1, 14))
        v = rng.normal(size=(n_q, n_p, 5)).astype(np.float32)
        if trial % 3 == 0:
            v = np.round(v)  # exact ties in similarity
        counts = rng.integers(0, n_p + 1, size=n_q)
        rel = np.round(rng.normal(size=(n_q, n_p)), 1 if trial % 2 else 6).astype(np.float32)
        sim = np.stack([mmr.similarities(v[q], np.arange(n_p)) for q in range(n_q)])
        div = float(rng.choice([0.0, 0.1, 0.5, 1.0, rng.random()]))
        limit = int(rng.integers(0, n_p + 2))
        want = np.full((n_q, limit), -1)
        for q in range(n_q):
            k = counts[q]
            picked = mmr.select(rel[q, :k], sim[q, :k, :k], div, limit)
            want[q, : len(picked)] = picked
        np.testing.assert_array_equal(mmr.select_many(rel, sim, counts, div, limit), want)
        got = np.empty((n_q, limit), dtype=np.int64)
        mmr_select(rel, sim, counts, *mmr.mmr_lambda(div), got)
        np.testing.assert_array_equal(got, want)


def test_off_by_default_and_left_out_of_every_output():
    spec = RetrievalSpec()
    assert not spec.mmr and "mmr_pool" not in spec.as_row() and "diversity" not in spec.as_dict()
    assert "prefetch" not in spec_body(spec)["prefetch"]  # the body as before: one prefetch
    on = RetrievalSpec(mmr_pool=20, diversity=0.4)
    assert on.as_row()["mmr_pool"] == 20 and on.as_row()["diversity"] == 0.4
    assert RetrievalSpec.from_row(on.as_row()) == on and RetrievalSpec.from_row(spec.as_row()) == spec
    assert set(SPEC_FIELDS) >= {"mmr_pool", "diversity"}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"diversity": 0.5}, "diversity 0.5 needs an MMR pool (mmr_pool >= 1)"),
        ({"mmr_pool": 8, "diversity": 1.5}, "diversity: expected"),
        ({"mmr_pool": -1}, "mmr_pool: expected"),
        ({"mmr_pool": 20_000}, "mmr_pool: expected"),
    ],
)
def test_bad_fields_are_one_line(fields, message):
    with pytest.raises(InputError, match=re.escape(message)):
        RetrievalSpec(**fields)


def test_diversity_without_vectors_is_refused_in_one_line():
    ds = load_dataset("seed16")
    raw = np.random.default_rng(0).uniform(0.3, 0.8, size=(len(ds.questions), len(ds.memories)))
    table = ScoreTable(ds.question_ids, ds.memory_ids, raw, "published")
    with pytest.raises(InputError, match=r"^MMR with diversity > 0 needs the memories' vectors"):
        evaluate(ds, table, RetrievalSpec(mmr_pool=8, diversity=0.5))
    # diversity 0 is relevance alone: no vectors needed, and the candidates are the top ones
    plain = evaluate(ds, table, RetrievalSpec(candidates=5))
    zero = evaluate(ds, table, RetrievalSpec(candidates=5, mmr_pool=12, diversity=0.0))
    for a, b in zip(plain.results, zero.results, strict=True):
        assert [c.index for c in a.candidates] == [c.index for c in b.candidates]


def random_specs(rng, n: int):
    for _ in range(n):
        yield RetrievalSpec(
            candidates=int(rng.integers(1, 10)),
            inject=int(rng.integers(1, 6)),
            threshold=float(rng.choice([-1.0, 0.0, 0.2])),
            bonus=float(rng.choice([0.0, 0.05, 0.3])),
            tau_days=float(rng.choice([3.0, 14.0])),
            decay=str(rng.choice(["exp", "gauss", "lin"])),
            combine=str(rng.choice(["add", "mult"])),
            mmr_pool=int(rng.integers(1, 40)),
            diversity=float(rng.choice([0.0, 0.3, 0.5, 0.8, 1.0, round(rng.random(), 3)])),
        )


def random_store(rng, n: int, dim: int):
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    dates = [REF - timedelta(seconds=int(s)) for s in rng.integers(-2 * 86400, 40 * 86400, n)]
    return vecs, dates


def reference(vecs, dates, q, spec):
    days = age_days(np.array([d.replace(tzinfo=None) for d in dates], dtype="datetime64[s]"), REF)
    raw = np.where(days >= 0, cosine_table(q[None], vecs)[0], np.nan)
    ids = tuple(f"m{i}" for i in range(len(dates)))
    return [
        c.index
        for c in retrieve(raw, np.where(days >= 0, days, np.inf), ids, spec, vectors=vecs)
        if c.injected
    ]


@pytest.mark.qdrant_edge
@pytest.mark.parametrize("seed", range(3))
def test_the_real_engine_injects_what_the_reference_does(tmp_path, seed):
    from memlab.qdrant import edge

    rng = np.random.default_rng(seed)
    n, dim = 70, 6
    vecs, dates = random_store(rng, n, dim)
    shard = edge.create_shard(tmp_path / "shard", dim, DEFAULT_SCHEMA)
    payloads = [{"memory_id": f"m{i}", "date": DEFAULT_SCHEMA.date_value(d)} for i, d in enumerate(dates)]
    edge.upsert(shard, range(n), vecs, payloads, DEFAULT_SCHEMA)
    differs = 0
    for spec in random_specs(rng, 60):
        q = rng.normal(size=dim).astype(np.float32)
        want = reference(vecs, dates, q, spec)
        got = [int(i) for i, _ in edge.run(shard, spec_body(spec, DEFAULT_SCHEMA, q, REF))]
        assert got == want, (spec, got, want)
        # MMR changed what is injected in some of the cases (else the comparison proves little)
        differs += want != reference(
            vecs, dates, q, RetrievalSpec(**{**spec.as_row(), "mmr_pool": 0, "diversity": 0})
        )
    assert differs >= 10


@pytest.mark.qdrant_edge
def test_a_leaf_mmr_prefetch_does_not_diversify_on_the_engine(tmp_path):
    """Why the export nests the pool: Qdrant runs an ``mmr`` query in a leaf prefetch as a plain
    nearest search of ``candidates_limit`` points (planned_query.rs)."""
    from memlab.qdrant import edge

    rng = np.random.default_rng(5)
    vecs, dates = random_store(rng, 50, 6)
    shard = edge.create_shard(tmp_path / "shard", 6, DEFAULT_SCHEMA)
    payloads = [{"memory_id": f"m{i}", "date": DEFAULT_SCHEMA.date_value(d)} for i, d in enumerate(dates)]
    edge.upsert(shard, range(50), vecs, payloads, DEFAULT_SCHEMA)
    spec = RetrievalSpec(candidates=5, inject=5, threshold=-1.0, bonus=0.0, mmr_pool=30, diversity=0.9)
    plain = RetrievalSpec(candidates=5, inject=5, threshold=-1.0, bonus=0.0)
    for _ in range(10):
        q = rng.normal(size=6).astype(np.float32)
        body = spec_body(spec, DEFAULT_SCHEMA, q, REF)
        leaf = {**body, "prefetch": {**body["prefetch"]["prefetch"], "query": body["prefetch"]["query"]}}
        assert edge.run(shard, leaf) == edge.run(shard, spec_body(plain, DEFAULT_SCHEMA, q, REF))
        assert [i for i, _ in edge.run(shard, body)] == reference(vecs, dates, q, spec)


@pytest.mark.parametrize("seed", range(2))
def test_local_mode_injects_what_the_reference_does(seed):
    from qdrant_client import models

    from memlab.qdrant.store import MemoryStore

    rng = np.random.default_rng(100 + seed)
    n, dim = 60, 6
    vecs, dates = random_store(rng, n, dim)
    store = MemoryStore(dim)
    store.add([f"m{i}" for i in range(n)], vecs, dates)
    for spec in random_specs(rng, 30):
        q = rng.normal(size=dim).astype(np.float32)
        req = models.QueryRequest.model_validate(spec_body(spec, DEFAULT_SCHEMA, q, REF))
        points = store.client.query_points(
            store.collection,
            prefetch=req.prefetch,
            query=req.query,
            score_threshold=req.score_threshold,
            limit=req.limit,
            with_payload=True,
        ).points
        got = [int(p.payload["memory_id"][1:]) for p in points]
        assert got == reference(vecs, dates, q, spec), spec


@pytest.mark.qdrant_edge
def test_the_engine_on_the_packaged_datasets(tmp_path):
    """Each packaged dataset with random vectors of its own: memlab's one-config reference
    (``evaluate`` over a score table that keeps the vectors) injects, per question at its own
    time and within its haystack, what the engine injects from the exported query."""
    from memlab.qdrant import edge

    schema = DEFAULT_SCHEMA
    rng = np.random.default_rng(7)
    for d_i, name in enumerate(PACKAGED):
        ds = load_dataset(name)
        n, dim = len(ds.memories), 16
        mem = rng.normal(size=(n, dim)).astype(np.float32)
        queries = rng.normal(size=(len(ds.questions), dim)).astype(np.float32)
        table = ScoreTable(
            ds.question_ids,
            ds.memory_ids,
            cosine_table(queries, mem),
            "embedded",
            vectors=Vectors(mem, queries),
        )
        shard = edge.create_shard(tmp_path / f"shard-{d_i}", dim, schema)
        payloads = [
            {schema.id_field: m.id, schema.date_field: schema.date_value(m.date)} for m in ds.memories
        ]
        edge.upsert(shard, range(n), mem, payloads, schema)
        asked = ds.question_references()
        haystack = ds.in_haystack()
        for spec in (
            RetrievalSpec(candidates=4, inject=3, threshold=0.0, mmr_pool=12, diversity=0.6),
            RetrievalSpec(candidates=6, inject=4, threshold=-1.0, bonus=0.2, mmr_pool=n, diversity=0.9),
            RetrievalSpec(candidates=3, inject=3, threshold=0.1, decay="gauss", mmr_pool=8, diversity=0.25),
        ):
            ev = evaluate(ds, table, spec)
            for qi, result in enumerate(ev.results):
                at = asked[qi].astype("datetime64[s]").item().replace(tzinfo=REF.tzinfo)
                mine = [{"has_id": [int(i) for i in np.flatnonzero(haystack[qi])]}]
                body = spec_body(spec, schema, queries[qi], at, extra_conditions=mine)
                got = [int(i) for i, _ in edge.run(shard, body)]
                assert got == [c.index for c in result.injected], (name, result.question_id, spec)


def test_the_commands_take_the_fields_and_the_panel_writes_them(capsys):
    import json

    from memlab.app.cli import main
    from memlab.app.panel import cli_flags

    flags = cli_flags("seed16", "published", "en", RetrievalSpec(mmr_pool=12, diversity=0.0))
    assert flags.endswith("--inject 3 --mmr-pool 12 --diversity 0")
    assert "--mmr-pool" not in cli_flags("seed16", "published", "en", RetrievalSpec())
    assert main(["evaluate", *flags.split(), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["spec"]["mmr_pool"] == 12 and doc["spec"]["diversity"] == 0.0
    assert (
        main(
            ["spec", "--dataset", "seed16", "--source", "published", "--mmr-pool", "12", "--diversity", "0.4"]
        )
        == 0
    )
    body = json.loads(capsys.readouterr().out)
    assert body["prefetch"]["query"]["mmr"] == {"diversity": 0.4, "candidates_limit": 12}
    assert body["prefetch"]["prefetch"]["limit"] == 12 and body["prefetch"]["limit"] == 8
    assert (
        main(
            [
                "evaluate",
                "--dataset",
                "seed16",
                "--source",
                "published",
                "--mmr-pool",
                "12",
                "--diversity",
                "0.4",
            ]
        )
        != 0
    )
    assert capsys.readouterr().err == (
        "memlab: error: MMR with diversity > 0 needs the memories' vectors, and these scores have none "
        "(score with --source embedded)\n"
    )


def test_a_tuned_file_carries_the_mmr_fields(tmp_path, capsys):
    """A tuned file (written by memlab sweep --save) given MMR's fields reads back with them, the
    export writes the mmr stage, and a bad value is one line naming file, line and field."""
    import json

    import yaml

    from memlab.app.cli import main
    from memlab.tuning.tuned import load_tuned

    path = tmp_path / "tuned.yaml"
    sweep = [
        "sweep",
        "--source",
        "published",
        "--bonus",
        "0:0.1:0.05",
        "--tau",
        "7,14",
        "--threshold",
        "0.45",
    ]
    assert main([*sweep, "--save", str(path)]) == 0
    capsys.readouterr()
    doc = yaml.safe_load(path.read_text())
    assert "mmr_pool" not in doc["spec"]  # off: not written
    doc["spec"].update(mmr_pool=16, diversity=0.0)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    tuned = load_tuned(path)
    assert (tuned.spec.mmr_pool, tuned.spec.diversity) == (16, 0.0)
    assert main(["spec", "--spec", str(path)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["prefetch"]["query"]["mmr"] == {"diversity": 0.0, "candidates_limit": 16}
    doc["spec"]["diversity"] = 2
    text = yaml.safe_dump(doc, sort_keys=False)
    path.write_text(text)
    line = [x.startswith("  diversity:") for x in text.splitlines()].index(True) + 1
    with pytest.raises(InputError) as e:
        load_tuned(path)
    assert str(e.value) == f"{path}:{line}: spec.diversity: expected a finite number in [0, 1], got 2"
