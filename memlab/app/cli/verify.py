"""``memlab verify``: the exported query run on the user's own store, against memlab's reference."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from memlab.app.cli.options import (
    Command,
    add_collection_options,
    add_family_options,
    add_group,
    add_output_options,
    add_parameters,
    add_server_options,
    add_spec_options,
    check_spec_file,
    emit,
    options_from,
    require_questions,
    scope_from,
    spec_fields,
    spec_line,
)
from memlab.core.errors import InputError
from memlab.datasets.schema import load_dataset


def cmd_verify(args: argparse.Namespace) -> int:
    from memlab.qdrant.query import CollectionSchema
    from memlab.qdrant.sharding import point_ids
    from memlab.qdrant.verify import Asked, open_store, point_key, verify
    from memlab.scores.problem import build_problem
    from memlab.tuning.evaluate import evaluate

    where = {"path": args.qdrant_path, "url": args.qdrant_url, "edge_path": args.edge_path}
    if sum(bool(v) for v in where.values()) != 1:  # said before anything is embedded
        open_store(schema=CollectionSchema(), dim=0, **where)
    if args.edge_path and args.collection:
        raise InputError("--collection: a qdrant-edge shard folder is one collection of its own; drop it")
    dataset = load_dataset(args.dataset)
    require_questions(args, dataset)
    grouped = [q.id for q in dataset.questions if q.haystack is not None]
    if grouped:
        raise InputError(
            f"questions {', '.join(grouped[:5])} search a haystack of their own, which the exported "
            "query does not filter on: memlab verify checks questions that search the whole store"
        )
    # the user's store is what is checked, never where scores are computed (that would write a
    # scratch collection into it): the questions' vectors come from the dataset's model
    options = replace(options_from(args), qdrant_path=None, qdrant_url=None)
    problem = build_problem(dataset, options, scope=scope_from(args, dataset), **spec_fields(args))
    check_spec_file(args, problem)
    spec, dataset = problem.spec, problem.dataset  # the dataset's questions under the filter
    schema = CollectionSchema.from_dataset(dataset)
    ev = evaluate(problem)
    vectors = problem.question_vectors()
    asked = [
        Asked(q.id, vectors[i], q.date or dataset.reference_date, r.candidates)
        for i, (q, r) in enumerate(zip(dataset.questions, ev.results, strict=True))
    ]
    # each point by the memory id import-qdrant recorded for it: no renumbering
    memories = dataset.memories
    unnamed = [m.id for m in memories if m.point_id is None]
    if dataset.qdrant and unnamed:  # imported, but without the point ids (an older memlab)
        raise InputError(
            f"dataset {dataset.name!r} was imported from Qdrant, but memories {', '.join(unnamed[:3])} "
            "record no point_id: import the collection again (memlab import-qdrant records them)"
        )
    memory_of = {point_key(p): m.id for p, m in zip(point_ids(memories), memories, strict=True)}
    collection = args.collection or (dataset.qdrant or {}).get("collection")
    store = open_store(schema=schema, dim=int(vectors.shape[1]), collection=collection, **where)
    try:
        checks = verify(store, spec, schema, asked, memory_of, problem.scope.conditions())
    finally:
        store.close()
    agreeing = sum(c.agree for c in checks)
    summary = f"{agreeing} of {len(checks)} questions agree"
    print(
        f"verify: the query memlab spec prints, filled per question, on {store.describe()}; "
        f"spec {spec_line(spec)}" + (f"; {problem.scope.describe()}" if not problem.scope.trivial else ""),
        file=sys.stderr,
    )
    if args.format == "json":
        out = {
            "store": {"kind": store.kind, "where": store.where, "collection": store.collection},
            "spec": spec.as_dict(),
            **({"filter": {"must": problem.scope.conditions()}} if problem.scope.filters else {}),
            "questions": [
                {
                    "id": c.question_id,
                    "agree": c.agree,
                    "returned": [
                        {"point_id": r.point_id, "memory": r.memory_id, "score": r.score} for r in c.returned
                    ],
                    "reference": [{"memory": m, "final": f} for m, f in c.reference],
                }
                for c in checks
            ],
            "agree": agreeing,
            "total": len(checks),
            "summary": summary,
        }
        emit(json.dumps(out, indent=2, ensure_ascii=False), args.output)
    else:
        lines = [
            f"{c.question_id}: the store returned {_returned(c.returned)}; "
            f"memlab's reference injects {_listed(c.reference)}"
            for c in checks
            if not c.agree
        ]
        emit("\n".join([*lines, summary]), args.output)
    return 0 if agreeing == len(checks) else 1


def _listed(items) -> str:
    return ", ".join(f"{m} {s:.6f}" for m, s in items) or "nothing"


def _returned(returned) -> str:
    named = [
        (r.memory_id if r.memory_id is not None else f"point {r.point_id} (not in the dataset)", r.score)
        for r in returned
    ]
    return _listed(named)


def add_verify_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "your store (one of them; only queries are sent: nothing in it is written or changed)"
    )
    add_parameters(g, ["qdrant_path", "qdrant_url"], command="verify")
    g.add_argument(
        "--edge-path",
        default=None,
        help="a qdrant-edge shard folder: Qdrant's own engine, in-process, without a server",
    )
    add_parameters(g, ["collection"], command="verify")
    # the scores come from the dataset (its stored vectors, its questions embedded with its model):
    # --qdrant-path and --qdrant-url name the store checked, never one to score in
    add_group(p, "scores", omit=("source", "qdrant_path", "qdrant_url"))
    add_server_options(p)
    add_spec_options(p)
    add_family_options(p)
    add_collection_options(p, shards=False)  # one shard: local mode, a shard folder
    add_output_options(p, ["text", "json"])


COMMANDS = (
    Command(
        "verify",
        "run the exported query on your own collection for every question and diff it against evaluate",
        add_verify_arguments,
        cmd_verify,
    ),
)
