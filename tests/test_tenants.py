"""Tenant filters and shards through the dataset, the commands and the exports, on
``tests/data/two-tenants`` (alice's and bob's memories in one collection, hand-written scores).

qa asks about alice: raw a1 0.62, a2 0.60, b1 0.70, b4 0.55 (bob's b1 tops it); point ids 0..7
fall on two shards as [0, 0, 1, 0, 0, 0, 1, 0] under Qdrant's hash (a3 and b3 on shard 1).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from memlab.app.cli import main
from memlab.datasets.schema import DatasetError, load_dataset
from memlab.qdrant.sharding import point_hash, shard_of, siphash

DATA = Path(__file__).parent / "data" / "two-tenants"
EVAL = ["evaluate", "--dataset", str(DATA), "--source", "published", "--threshold", "0.5", "--format", "json"]


def injected(capsys, *extra) -> dict[str, list[str]]:
    assert main([*EVAL, *extra]) == 0
    out = json.loads(capsys.readouterr().out)
    return {q["id"]: [c["memory"] for c in q["candidates"] if c["injected"]] for q in out["questions"]}


@pytest.mark.hostile
def test_no_output_under_a_filter_names_another_tenants_memory(capsys):
    """Not even its date: evaluate's JSON listed every memory's date (bob's four among them)."""
    assert main([*EVAL, "--filter", "user_id=alice"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"]["dates"] == ["2026-09-01", "2026-09-09", "2026-08-01", "2026-07-01", *[None] * 4]


def test_the_filter_keeps_each_users_query_to_their_memories(capsys):
    every = injected(capsys, "--candidates", "3", "--inject", "2")
    assert every["qa"] == ["b1", "a2"]  # bob's b1 (final 0.743) outranks alice's memories
    alice = injected(capsys, "--candidates", "3", "--inject", "2", "--filter", "user_id=alice")
    assert alice["qa"] == ["a2", "a1"]  # finals 0.6466, 0.6455: a2's bonus lifts it over a1
    bob = injected(capsys, "--candidates", "3", "--inject", "2", "--filter", "user_id=bob")
    assert bob["qb"] == ["b1", "b4"]
    assert main([*EVAL, "--filter", "user_id=alice"]) == 0
    assert json.loads(capsys.readouterr().out)["collection"] == {
        "filter": {"user_id": "alice"},
        "shards": 1,
        "shard_key": None,
    }


def test_two_shards_widen_the_pool(capsys):
    """candidates=1: unsharded qa's one candidate is b1; on two shards shard 1 adds its best, a3
    (0.20, under the threshold): the pool grows, the injected set does not."""
    assert main([*EVAL[:-2], "--candidates", "1", "--shards", "2"]) == 0
    out = capsys.readouterr().out
    assert "collection: 2 shards (Qdrant's id hashing)" in out
    assert shard_of(list(range(8)), 2).tolist() == [0, 0, 1, 0, 0, 0, 1, 0]
    two = json.loads(_json(capsys, "--candidates", "1", "--shards", "2"))["questions"][0]["candidates"]
    assert [c["memory"] for c in two] == ["b1", "a3"]
    # a shard key: one shard per user; each user's best memory is a candidate
    keyed = json.loads(_json(capsys, "--candidates", "1", "--inject", "2", "--shard-key", "user_id"))
    assert [c["memory"] for c in keyed["questions"][0]["candidates"]] == ["b1", "a1"]


def _json(capsys, *extra) -> str:
    assert main([*EVAL, *extra]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--filter", "team=red"],
            "--filter team=red: no memory has payload field 'team'; payload fields: user_id",
        ),
        (["--filter", "user_id"], "--filter 'user_id': expected key=value, e.g. user_id=alice"),
        (["--shards", "0"], "--shards: expected an integer in [1, 1024], got 0"),
        (
            ["--shards", "2", "--shard-key", "user_id"],
            "give --shards (Qdrant's default sharding) or --shard-key (one shard per key value), not both",
        ),
        (["--shard-key", "team"], "--shard-key team: no memory has payload field 'team'"),
        (
            ["--filter", "user_id=carol"],
            "--filter user_id=carol: no memory of the 8 meets it (values held: user_id: alice, bob)",
        ),
        (
            ["--filter", "user_id=alice", "--filter", "user_id=bob"],
            "--filter user_id=alice and user_id=bob: no memory of the 8 meets it (values held: user_id: alice, bob)",
        ),
    ],
)
def test_bad_collection_options_are_one_line(capsys, extra, message):
    assert main([*EVAL, *extra]) == 2
    assert capsys.readouterr().err.strip() == f"memlab: error: {message}"


def test_the_export_carries_the_filter_in_every_format(capsys):
    spec = [
        "spec",
        "--dataset",
        str(DATA),
        "--source",
        "published",
        "--threshold",
        "0.5",
        "--filter",
        "user_id=alice",
    ]
    assert main([*spec, "--format", "qdrant-json", "--at", "2026-09-10"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["prefetch"]["filter"]["must"] == [
        {"key": "date", "range": {"lte": "2026-09-10T00:00:00Z"}},
        {"key": "user_id", "match": {"value": "alice"}},
    ]
    assert main([*spec, "--format", "python"]) == 0
    assert "{'key': 'user_id', 'match': {'value': 'alice'}}" in capsys.readouterr().out
    assert main([*spec, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["filter"] == {
        "must": [{"key": "user_id", "match": {"value": "alice"}}]
    }
    assert main([*spec, "--format", "table"]) == 0
    assert capsys.readouterr().out.strip().endswith("; filter user_id=alice")
    assert main([*spec, "--format", "setup", "--collection", "notes"]) == 0
    setup = capsys.readouterr().out
    assert '{"field_name": "user_id", "field_schema": {"type": "keyword", "is_tenant": true}}' in setup
    assert "client.create_payload_index('notes', 'user_id', field_schema=models.KeywordIndexParams(" in setup


def test_the_setup_index_is_a_valid_request(capsys):
    """The printed index body reads as Qdrant's REST request (qdrant-client's own model)."""
    assert main(["spec", "--dataset", str(DATA), "--format", "setup", "--filter", "user_id=bob"]) == 0
    lines = capsys.readouterr().out.splitlines()
    index = models.CreateFieldIndex(
        **json.loads(next(x for x in lines if x.startswith('{"field_name": "user_id"')))
    )
    assert index.field_schema == models.KeywordIndexParams(
        type=models.KeywordIndexType.KEYWORD, is_tenant=True
    )


@pytest.mark.parametrize(
    "line, problem",
    [
        ({"payload": ["alice"]}, "payload: expected a JSON object of keyword values, got ['alice']"),
        (
            {"payload": {"user_id": 1.5}},
            "payload: user_id: expected a non-empty string or an integer (a keyword value), got 1.5",
        ),
        (
            {"payload": {"user_id": True}},
            "payload: user_id: expected a non-empty string or an integer (a keyword value), got True",
        ),
        (
            {"payload": {"user_id": 7}},
            "payload: user_id: an integer where earlier ones hold a string: store one type",
        ),
        ({"point_id": -1}, "point_id: -1 is outside 0..2^64-1 (Qdrant's integer point ids)"),
        (
            {"point_id": "note-3"},
            "point_id: expected an unsigned integer or a UUID (a Qdrant point id), got 'note-3'",
        ),
        ({"point_id": 0}, "point_id: 0 is also memory 'a1''s"),
    ],
)
def test_bad_payloads_name_the_file_line_and_field(tmp_path, line, problem):
    folder = tmp_path / "ds"
    shutil.copytree(DATA, folder)
    rows = (folder / "memories.jsonl").read_text().splitlines()
    rows[7] = json.dumps({**json.loads(rows[7]), **line})  # b4, line 8
    (folder / "memories.jsonl").write_text("\n".join(rows) + "\n")
    with pytest.raises(DatasetError) as e:
        load_dataset(folder)
    assert e.value.problems == [f"{folder}/memories.jsonl:8: {problem}"]


def test_an_integer_field_is_filtered_as_an_integer(tmp_path, capsys):
    folder = tmp_path / "ds"
    shutil.copytree(DATA, folder)
    rows = [json.loads(x) for x in (folder / "memories.jsonl").read_text().splitlines()]
    for r in rows:
        r["payload"] = {"user_id": 1 if r["payload"]["user_id"] == "alice" else 2}
    (folder / "memories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = [
        "spec",
        "--dataset",
        str(folder),
        "--source",
        "published",
        "--threshold",
        "0.5",
        "--format",
        "json",
    ]
    assert main([*argv, "--filter", "user_id=1"]) == 0
    assert json.loads(capsys.readouterr().out)["filter"]["must"] == [
        {"key": "user_id", "match": {"value": 1}}
    ]
    assert main([*argv, "--filter", "user_id=alice"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "memlab: error: --filter user_id=alice: user_id holds integers, got 'alice'"
    )


def test_import_keeps_the_named_fields_and_the_point_ids(tmp_path):
    client = QdrantClient(path=str(tmp_path / "q"))
    client.create_collection(
        "mem", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    rng = np.random.default_rng(0)
    client.upsert(
        "mem",
        points=[
            models.PointStruct(
                id=i,
                vector=rng.normal(size=2).tolist(),
                payload={
                    "when": f"2026-09-0{i + 1}T00:00:00Z",
                    "body": f"memory {i}",
                    "user_id": u,
                    "x": 1,
                },
            )
            for i, u in enumerate(["alice", "bob", "alice"])
        ],
    )
    client.close()
    argv = ["import-qdrant", "--path", str(tmp_path / "q"), "--collection", "mem", "--date-field", "when"]
    argv += [
        "--text-field",
        "body",
        "--keep-field",
        "user_id",
        "-o",
        str(tmp_path / "ds"),
        "--language",
        "en",
    ]
    assert main([*argv, "--reference-date", "2026-09-10"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "ds" / "memories.jsonl").read_text().splitlines()]
    assert [r["payload"] for r in rows] == [{"user_id": "alice"}, {"user_id": "bob"}, {"user_id": "alice"}]
    assert [r["point_id"] for r in rows] == [0, 1, 2]
    assert json.loads((tmp_path / "ds" / "dataset.json").read_text())["qdrant"]["kept_fields"] == ["user_id"]
    missing = ["import-qdrant", "--path", str(tmp_path / "q"), "--collection", "mem", "--date-field", "when"]
    missing += ["--text-field", "body", "--keep-field", "team", "-o", str(tmp_path / "ds2")]
    assert main(missing) == 2
    assert not (tmp_path / "ds2").exists()


def test_qdrants_hash_ring_as_its_sources_state_it():
    """SipHash-2-4 is the reference one (the paper's vector, key 00..0f, message 00..0e); the
    ring keeps Qdrant's own property (hash_ring.rs test_repartition): adding shard 3 moves points
    only onto shard 3; integer and UUID ids hash with their discriminants."""
    from siphash24 import siphash24

    assert siphash24(bytes(range(15)), key=bytes(range(16))).intdigest() & (2**64 - 1) == 0xA129CA6149BE45E5
    assert point_hash(5) == siphash(b"\0" * 8 + (5).to_bytes(8, "little"))
    uid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    assert point_hash(uid) == siphash(
        (1).to_bytes(8, "little") + (16).to_bytes(8, "little") + bytes.fromhex(uid.replace("-", ""))
    )
    three, four = shard_of(list(range(2000)), 3), shard_of(list(range(2000)), 4)
    assert set(four[three != four].tolist()) == {3}
    counts = np.bincount(four, minlength=4)
    assert counts.min() > 350  # about a quarter each (100 places per shard)


def test_a_tenant_field_named_as_the_date_field_is_refused_at_export(tmp_path, capsys):
    """A payload field "date" beside the date the cut-off reads: the filter and the setup index
    would both land on the datetime field, so the export refuses it by name."""
    shutil.copytree(DATA, tmp_path / "ds")
    rows = [json.loads(line) for line in (tmp_path / "ds" / "memories.jsonl").read_text().splitlines()]
    for r in rows:
        r["payload"]["date"] = "2020-01-01"
    (tmp_path / "ds" / "memories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for fmt in ("qdrant-json", "setup"):
        args = ["spec", "--dataset", str(tmp_path / "ds"), "--filter", "date=2020-01-01", "--format", fmt]
        assert main(args) == 2
        assert capsys.readouterr().err.strip() == (
            "memlab: error: --filter date=2020-01-01: 'date' is the collection's date field (--date-field), "
            "which the exported query reads as such; store the tenant under another payload field"
        )


def test_the_tuned_spec_file_keeps_the_collection_it_was_tuned_for(tmp_path, capsys, monkeypatch):
    """sweep --save under a filter and two shards records them; spec --spec applies them (and
    says so) from another folder, the dataset named by its absolute path."""
    tuned = tmp_path / "tuned.yaml"
    sweep = ["sweep", "--dataset", str(DATA), "--source", "published", "--threshold", "0.5:0.7:0.1"]
    assert (
        main(
            [
                *sweep,
                "--bonus",
                "0:0.1:0.05",
                "--tau",
                "7,30",
                "--filter",
                "user_id=alice",
                "--shards",
                "2",
                "--save",
                str(tuned),
            ]
        )
        == 0
    )
    capsys.readouterr()
    import yaml

    saved = yaml.safe_load(tuned.read_text())
    assert saved["collection"] == {"filters": ["user_id=alice"], "shards": 2, "shard_key": None}
    assert saved["dataset"]["reference"] == str(DATA.resolve())
    monkeypatch.chdir(tmp_path)
    assert main(["spec", "--spec", str(tuned), "--format", "qdrant-json"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0].endswith("; tuned for the collection as --filter user_id=alice --shards 2")
    assert {"key": "user_id", "match": {"value": "alice"}} in json.loads(out[out.index("{") :])["prefetch"][
        "filter"
    ]["must"]


def test_a_question_carrying_a_tenant_is_kept_by_its_filter_only(tmp_path, capsys):
    """qa is alice's and qb bob's (their payload); qn carries none and stays under either filter,
    and declared criteria about the other tenant's question go with it."""
    shutil.copytree(DATA, tmp_path / "ds")
    path = tmp_path / "ds" / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["payload"], rows[1]["payload"] = {"user_id": "alice"}, {"user_id": "bob"}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["evaluate", "--dataset", str(tmp_path / "ds"), "--source", "published", "--threshold", "0.5"]
    for user, asked in (("alice", ["qa", "qn"]), ("bob", ["qb", "qn"])):
        assert main([*base, "--format", "json", "--filter", f"user_id={user}"]) == 0
        assert [q["id"] for q in json.loads(capsys.readouterr().out)["questions"]] == asked
    assert main([*base, "--format", "json"]) == 0
    assert [q["id"] for q in json.loads(capsys.readouterr().out)["questions"]] == ["qa", "qb", "qn"]
    rows[2]["payload"] = {"user_id": ""}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DatasetError) as e:
        load_dataset(tmp_path / "ds")
    assert str(e.value) == (
        f"{path}:3: payload: user_id: expected a non-empty string or an integer (a keyword value), got ''"
    )


def test_spec_on_shards_says_the_limit_is_per_shard(capsys):
    assert main(["spec", "--dataset", str(DATA), "--shards", "2", "--format", "qdrant-json"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == (
        "collection: 2 shards (Qdrant's id hashing): the query is the same on every shard; its prefetch "
        "limit (candidates) applies per shard, as memlab modelled it"
    )


# -- a tuned file's tenant filter in every command that reads it --------------------------------


@pytest.fixture
def asked(tmp_path) -> Path:
    """two-tenants with qa asked by alice and qb by bob (their payload); qn by no one in particular."""
    shutil.copytree(DATA, tmp_path / "ds")
    path = tmp_path / "ds" / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["payload"], rows[1]["payload"] = {"user_id": "alice"}, {"user_id": "bob"}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "ds"


def alices_file(capsys, folder: Path, tmp_path: Path, *extra: str) -> Path:
    tuned = tmp_path / "alice.yaml"
    sweep = ["sweep", "--dataset", str(folder), "--source", "published", "--threshold", "0.5:0.7:0.1"]
    grid = ["--bonus", "0:0.1:0.05", "--tau", "7,30", "--filter", "user_id=alice", *extra]
    assert main([*sweep, *grid, "--save", str(tuned)]) == 0
    capsys.readouterr()
    return tuned


BOBS = ("b1", "b2", "b3", "b4", "qb")


@pytest.mark.hostile
@pytest.mark.parametrize("command", ["robustness", "metrics"])
def test_a_tuned_files_filter_is_applied_by_the_commands_that_score(asked, tmp_path, capsys, command):
    """Before, robustness and metrics had no --filter and scored bob's memories and question for
    alice's spec without a word: now the file's filter is applied (stderr says so) and the output
    is the one --filter gives."""
    tuned = alices_file(capsys, asked, tmp_path)
    extra = ["--boot", "20"] if command == "robustness" else ["--per-question"]
    assert main([command, "--spec", str(tuned), "--format", "json", *extra]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0].endswith("; tuned for the collection as --filter user_id=alice")
    assert not [word for word in BOBS if f'"{word}"' in out]
    spec = ["--bonus", "0.05", "--tau", "30", "--threshold", "0.5"]
    given = [command, "--dataset", str(asked), "--source", "published", *spec, "--format", "json", *extra]
    assert main([*given, "--filter", "user_id=alice"]) == 0
    assert capsys.readouterr().out == out
    assert main(given) == 0
    assert '"qb"' in capsys.readouterr().out  # without the filter bob's question is measured


@pytest.mark.hostile
def test_another_tenant_given_beside_the_file_is_said(asked, tmp_path, capsys):
    tuned = alices_file(capsys, asked, tmp_path)
    assert main(["evaluate", "--spec", str(tuned), "--filter", "user_id=bob", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0].endswith(
        "; given beside it, overriding the file: --filter user_id=bob (the file's --filter user_id=alice)"
    )
    assert [q["id"] for q in json.loads(out)["questions"]] == ["qb", "qn"]


@pytest.mark.hostile
def test_answer_under_a_tuned_files_filter_never_sends_another_tenants_memory(asked, tmp_path, capsys):
    """Before, answer --spec dropped the filter: bob's memories went to the chat model with
    alice's question. The fake echoes every block it is sent: no bob memory in any of them."""
    from chat_fake import FakeChat

    tuned = alices_file(capsys, asked, tmp_path)
    fake = FakeChat()
    try:
        argv = ["answer", "--spec", str(tuned), "--chat-url", fake.url, "--conditions", "raw,today,tuned"]
        run = [*argv, "--no-llm-judge", "--cache-dir", str(tmp_path / "cache"), "--boot", "20"]
        assert main([*run, "--format", "json"]) == 0
        capsys.readouterr()
        assert main([*run, "--questions", "qb"]) == 2  # was: "no question 'qb'"
        assert capsys.readouterr().err.splitlines()[-1] == (
            "memlab: error: question 'qb' is another tenant's: the tenant filter leaves it out (questions "
            "asked under it: qa, qn)"
        )
    finally:
        fake.close()
    sent = json.dumps(fake.bodies)
    assert fake.bodies and "alice" in sent and "bob" not in sent
    assert "what does bob drink" not in sent


@pytest.mark.hostile
@pytest.mark.parametrize("command", ["robustness", "scale", "calibrate"])
def test_a_file_tuned_on_shards_is_refused_where_shards_are_not_modelled(asked, tmp_path, capsys, command):
    """Before, scale and calibrate dropped the file's filter and shards without a word; now they
    take its filter, and a command whose study is one shard's refuses the shards in one line."""
    tuned = alices_file(capsys, asked, tmp_path, "--shards", "2")
    assert main([command, "--spec", str(tuned)]) == 2
    assert capsys.readouterr().err == (
        f"memlab: error: {tuned}: tuned for the collection as --filter user_id=alice --shards 2, and memlab "
        f"{command} cannot take --shards: it would measure one shard instead; use a command that takes "
        "it (evaluate, metrics, answer, explain, ...), or tune again without it\n"
    )
    assert main(["metrics", "--spec", str(tuned)]) == 0  # metrics models the shards


@pytest.mark.hostile
def test_sweep_and_feasible_under_a_filter_build_the_criteria_of_its_questions(asked, capsys):
    """Before, the default criteria were built before the filter dropped bob's question:
    "criterion 'current_qb' names question 'qb', which is not in the dataset"."""
    base = ["--dataset", str(asked), "--source", "published", "--tau", "7,30", "--filter", "user_id=alice"]
    assert main(["sweep", *base, "--bonus", "0:0.1:0.05", "--threshold", "0.5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "grid: 3 bonus x 2 tau x 1 threshold x 1 candidates x 1 inject = 6 configurations, "
    )
    assert "6 configurations, 2 questions, swept" in out and "current_qb" not in out
    assert main(["feasible", *base, "--threshold", "0.5"]) == 0
    assert "criteria: nohit, current_qa; " in capsys.readouterr().out


@pytest.mark.hostile
def test_another_tenants_question_is_named_as_such(asked, capsys):
    prompt = ["prompt", "--dataset", str(asked), "--source", "published", "--filter", "user_id=alice"]
    assert main([*prompt, "--question", "qb"]) == 2
    assert capsys.readouterr().err == (
        "memlab: error: question 'qb' is another tenant's: the tenant filter leaves it out (questions "
        "asked under it: qa, qn)\n"
    )
    assert main([*prompt, "--question", "qz"]) == 2  # and bob's question is not listed
    assert (
        capsys.readouterr().err
        == "memlab: error: no question 'qz' in dataset 'two-tenants'; questions: qa, qn\n"
    )


def test_calibrate_under_a_filter_is_calibrate_on_the_tenants_own_store():
    """Two independent paths agree: the filter's store (alice's 15 of 30 memories, bob's left
    out) calibrates exactly as a store holding alice's memories alone."""
    from dataclasses import replace

    from helpers import make_dataset, problem_of

    from memlab.core.spec import RetrievalSpec
    from memlab.datasets.probes import load_probes
    from memlab.qdrant.sharding import Scope
    from memlab.studies.calibration import calibrate

    rng = np.random.default_rng(3)
    n = 30
    every = make_dataset(rng.integers(0, 30 * 86400, n), [], [], [])
    users = ["alice" if i % 2 == 0 else "bob" for i in range(n)]
    every = replace(
        every,
        memories=tuple(
            replace(m, payload={"user_id": u}) for m, u in zip(every.memories, users, strict=True)
        ),
    )
    mem = rng.normal(size=(n, 8))
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    probe_set = load_probes()
    probes = rng.normal(size=(20, 8))  # the first 20 probes of the set: the fits take 0.1 s each
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    noise = rng.normal(size=(500, 8))
    basis = (noise / np.linalg.norm(noise, axis=1, keepdims=True), rng.uniform(0, 365, 500), "noise")
    spec = RetrievalSpec(bonus=0.02, tau_days=14, threshold=0.9)
    run = {"basis": basis, "n_boot": 20, "false_rate": 0.1}
    filtered = problem_of(every, spec, memories=mem).with_scope(Scope((("user_id", "alice"),)))
    alone = replace(every, memories=every.memories[::2])
    a = calibrate(filtered, probe_set, probes, **run)
    b = calibrate(problem_of(alone, spec, memories=mem[::2]), probe_set, probes, **run)
    assert a.summary == b.summary and a.summary["memories"] == 15
    assert a.probes == b.probes and a.attractors == b.attractors
    assert {p["memory"] for p in a.probes} <= {m.id for m in alone.memories}
    every_cal = calibrate(problem_of(every, spec, memories=mem), probe_set, probes, **run)
    assert {p["memory"] for p in every_cal.probes} - {m.id for m in alone.memories}  # bob's, unfiltered


@pytest.mark.hostile
def test_scale_under_a_filter_is_scale_on_the_tenants_own_store():
    """N counts the tenant's memories: alice's 3 of 6 under the filter measure and predict as a
    store of her 3 alone (bob's memories, closer to every query, are never candidates)."""
    from dataclasses import replace

    from helpers import make_dataset, problem_of

    from memlab.core.spec import RetrievalSpec
    from memlab.qdrant.sharding import Scope
    from memlab.studies.scale import scale_sizes, scale_study, store_size

    rng = np.random.default_rng(5)
    day = 86_400
    every = make_dataset(
        [800 * day, 10 * day, 1 * day, 2 * day, 3 * day, 4 * day], ["nohit", "hit"], [-1, 2], [[], []]
    )
    users = ["alice"] * 3 + ["bob"] * 3
    every = replace(
        every,
        memories=tuple(
            replace(m, payload={"user_id": u}) for m, u in zip(every.memories, users, strict=True)
        ),
    )
    qs = rng.normal(size=(2, 16))
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    mem = rng.normal(size=(6, 16))
    mem[3:] = qs[[0, 1, 0]] + 0.1 * mem[3:]  # bob's: near the queries
    mem /= np.linalg.norm(mem, axis=1, keepdims=True)
    spec = RetrievalSpec(candidates=4, bonus=0.05, tau_days=14.0, threshold=0.6)
    pool = rng.normal(size=(400, 16)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    pool_ages = rng.integers(0, 365, size=400).astype(np.float64)
    filtered = problem_of(every, spec, memories=mem, questions=qs).with_scope(Scope((("user_id", "alice"),)))
    alone = problem_of(replace(every, memories=every.memories[:3]), spec, memories=mem[:3], questions=qs)
    assert store_size(filtered) == 3 and scale_sizes(every, "3,203", stored=3) == [3, 203]
    a = scale_study(filtered, [3, 203, 403], (pool, pool_ages), block=10)
    b = scale_study(alone, [3, 203, 403], (pool, pool_ages), block=10)
    assert a.rows == b.rows and a.hits == b.hits and a.basis == b.basis
    assert a.basis.startswith("3 dataset memories")
    c = scale_study(
        problem_of(every, spec, memories=mem, questions=qs), [6, 206], (pool, pool_ages), block=10
    )
    assert c.rows[0]["nohit_max"] > a.rows[0]["nohit_max"]  # bob's memory, unfiltered


@pytest.mark.hostile
def test_a_notebook_or_the_panel_refuses_a_file_tuned_for_one_tenant(asked, tmp_path, capsys):
    """Before, a notebook's spec_file and the panel dropped the file's filter: every tenant's
    memories measured for alice's spec, without a word."""
    from memlab.app.panel import TuningPanel
    from memlab.core.errors import InputError
    from memlab.datasets.schema import load_dataset
    from memlab.scores.sources import ScoreOptions
    from memlab.tuning.tuned import tuned_problem

    tuned = alices_file(capsys, asked, tmp_path)
    said = (
        f"{tuned}: tuned for the collection as --filter user_id=alice, and {{}} takes no tenant filter or "
        f"shards: it would measure every memory of the dataset; use memlab evaluate, robustness or scale "
        f"--spec {tuned} (they apply it), or tune again without it"
    )
    with pytest.raises(InputError) as e:
        tuned_problem(str(tuned), str(asked), ScoreOptions("published"))
    assert str(e.value) == said.format("a notebook's spec_file")
    with pytest.raises(InputError) as e:
        TuningPanel(load_dataset(asked), spec_file=str(tuned))
    assert str(e.value) == said.format("the panel")


@pytest.mark.hostile
def test_a_criteria_file_about_another_tenants_question_is_said(asked, tmp_path, capsys):
    """Before: "criterion 'bob_drinks' names question 'qb', which is not in the dataset (qa, qn)"."""
    criteria = tmp_path / "criteria.yaml"
    criteria.write_text(
        "- {name: alice_drinks, kind: current_reaches, question: qa}\n"
        "- {name: bob_drinks, kind: current_reaches, question: qb}\n"
    )
    argv = ["sweep", "--dataset", str(asked), "--source", "published", "--bonus", "0:0.1:0.05", "--tau", "14"]
    assert main([*argv, "--threshold", "0.5", "--filter", "user_id=alice", "--criteria", str(criteria)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == (
        "--criteria: bob_drinks (question qb): about another tenant's question, which the filter leaves "
        "out: not checked"
    )
    assert "alice_drinks=" in out and "bob_drinks" not in out


@pytest.mark.hostile
def test_compare_under_a_filter_is_compare_on_the_tenants_own_store(asked):
    """Every retriever's route (vector, BM25, the time gate) sees alice's memories only under her
    filter: the comparison equals the one on a store of her memories alone."""
    from dataclasses import replace

    from memlab.qdrant.sharding import Scope
    from memlab.retrieval.inputs import build_inputs
    from memlab.scores.problem import build_problem
    from memlab.scores.sources import ScoreOptions
    from memlab.studies.hybrid import RetrieverGrid, compare

    dataset = load_dataset(asked)
    problem = build_problem(dataset, ScoreOptions("published"), scope=Scope((("user_id", "alice"),)))
    raw = problem.scores.raw
    filtered = build_inputs(problem.dataset, raw, allowed=problem.pool.allowed)
    alices = np.array([m.payload["user_id"] == "alice" for m in dataset.memories])
    alone_ds = replace(
        problem.dataset, memories=tuple(m for m in dataset.memories if m.payload["user_id"] == "alice")
    )
    alone = build_inputs(alone_ds, raw[:, alices])
    assert np.isnan(filtered.keyword[:, ~alices]).all()
    np.testing.assert_array_equal(filtered.keyword[:, alices], alone.keyword)  # the index: hers alone
    grid = RetrieverGrid(
        alphas=(0.0, 0.5), rrf_ks=(10.0,), bonus=(0.0, 0.05), tau_days=(14.0,), threshold_steps=21
    )
    a, b = compare(filtered, grid=grid), compare(alone, grid=grid)
    for x, y in ((a.chosen, b.chosen), (a.questions, b.questions), (a.by_kind, b.by_kind)):
        assert x.equals(y)


@pytest.mark.hostile
def test_robustness_under_a_filter_is_robustness_on_the_tenants_own_store():
    """The closed-form region under alice's filter (bob's memories unknown scores) equals the one
    on a store of her memories alone, resample by resample."""
    from dataclasses import replace

    from helpers import make_dataset, problem_of

    from memlab.core.spec import RetrievalSpec
    from memlab.qdrant.sharding import Scope
    from memlab.studies.robustness import robustness

    rng = np.random.default_rng(7)
    day = 86_400
    ages = [1 * day, 5 * day, 20 * day, 2 * day, 3 * day, 40 * day]
    every = make_dataset(ages, ["hit", "hit", "nohit"], [1, 0, -1], [[0], [], []])
    users = ["alice"] * 3 + ["bob"] * 3
    every = replace(
        every,
        memories=tuple(
            replace(m, payload={"user_id": u}) for m, u in zip(every.memories, users, strict=True)
        ),
    )
    raw = rng.uniform(0.3, 0.7, size=(3, 6))
    raw[:, 3:] += 0.2  # bob's memories: above alice's for every question
    spec = RetrievalSpec(candidates=2, inject=1, bonus=0.02, tau_days=14.0, threshold=0.5)
    filtered = problem_of(every, spec, raw).with_scope(Scope((("user_id", "alice"),)))
    alone = problem_of(replace(every, memories=every.memories[:3]), spec, raw[:, :3])
    a, b = robustness(filtered, n_boot=10), robustness(alone, n_boot=10)
    assert a.equals(b)
    assert not robustness(problem_of(every, spec, raw), n_boot=10).equals(a)  # bob's, unfiltered
