"""What the framework tests share: the companion's memories for two users, the tuning through
``memlab sweep --save`` on the imported dataset, and the reference a retriever is held to."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

from memlab.app.cli import main
from memlab.datasets.schema import Dataset, dataset_dir, load_dataset
from memlab.qdrant.sharding import Scope
from memlab.scores.problem import build_problem
from memlab.scores.sources import ScoreOptions
from memlab.tuning.evaluate import evaluate
from memlab.tuning.tuned import load_tuned

COMPANION = dataset_dir("example-companion")
REFERENCE_DATE = "2026-11-29"  # the companion's
# two users in one collection: the companion's own memories are ann's, these two are bob's
BOB = [
    ("b1", "2026-11-28", "2026-11-28: The user lives in Leeds and hates tea."),
    ("b2", "2026-11-20", "2026-11-20: The user moved to Paris."),
]
TOL = 1e-6  # the engine scores in float32, memlab in float64


def companion_memories() -> list[dict]:
    rows = [json.loads(line) for line in (COMPANION / "memories.jsonl").read_text().splitlines()]
    return [{"id": r["id"], "date": r["date"], "text": r["text"], "user": "ann"} for r in rows] + [
        {"id": i, "date": d, "text": t, "user": "bob"} for i, d, t in BOB
    ]


def tune(dataset: Path, out: Path, user_filter: str, cache: Path) -> Path:
    """``memlab sweep --save`` on the imported dataset, for ann's memories."""
    saved = out / "tuned.yaml"
    args = ["sweep", "--dataset", str(dataset), "--source", "embedded", "--cache-dir", str(cache)]
    assert main([*args, "--filter", user_filter, "--save", str(saved)]) == 0
    return saved


@dataclass(frozen=True)
class Reference:
    """memlab's reference (``evaluate``) of the tuned spec on the imported dataset."""

    dataset: Dataset
    evaluation: object
    filters: tuple

    @classmethod
    def of(cls, dataset: Path, tuned: Path, cache: Path) -> Reference:
        ds = load_dataset(dataset)
        spec = load_tuned(tuned)
        filters = tuple(tuple(f.split("=", 1)) for f in spec.collection["filters"])
        problem = build_problem(
            ds, ScoreOptions(cache_dir=cache), spec=spec.spec, scope=Scope(filters=filters)
        )
        return cls(problem.dataset, evaluate(problem), filters)

    def asked(self):
        return [
            d.astype("datetime64[s]").item().replace(tzinfo=UTC) for d in self.dataset.question_references()
        ]

    def check(self, retrieve: Callable[[str, object], list[tuple[object, float, float]]]) -> int:
        """Each question through ``retrieve(text, asked) -> [(point id, raw, final)]`` gives the
        reference's injected memories, in its order, with its scores; returns how many memories
        were injected over all questions (a test shows it is not nothing)."""
        by_point = {str(m.point_id): m.id for m in self.dataset.memories}
        total = 0
        for q, result, at in zip(self.dataset.questions, self.evaluation.results, self.asked(), strict=True):
            got = retrieve(q.text("en"), at)
            want = result.injected
            assert [by_point[str(p)] for p, _, _ in got] == [c.memory_id for c in want], (q.id, got, want)
            for (_, raw, final), c in zip(got, want, strict=True):
                assert abs(raw - c.raw) <= TOL and abs(final - c.final) <= TOL, (q.id, raw, final, c)
            total += len(want)
        return total
