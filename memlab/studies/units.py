"""The memory unit, held out: what to store (LoCoMo's turns, observations or session summaries;
LongMemEval's sessions or turns), each unit with its own tuned pipeline, on the same questions.

Each unit is one dataset imported from the same benchmark file (``memlab import-locomo
--granularity``), so its questions are the benchmark's, with the same ids and categories. Each
runs the held-out study (``memlab.studies.heldout.held_out``) on its own memories: every system is
tuned on the other folds of that unit's questions. The folds are the same for every unit: the
haystacks (conversations) are dealt in one order, the first unit's first-seen order and then any
haystack only a later unit has.

Compared per question, on the questions every unit keeps (an import rejects a question no memory
of its unit holds the evidence of: at observation granularity, LoCoMo questions whose evidence
turns no observation cites; the count each unit leaves out is reported): for each system named,
each unit's ``recall_any``, false-injection rate and utility per category and overall, as in the
held-out study, the paired difference to the first unit with its 95% bootstrap interval, and the
questions it does better and worse on. Beside them the prompt's token cost:

- ``tokens``: per question, the tokens of the injected memories' texts, summed, counted as the
  drift study counts a packed context (``memlab.drift.arrays.default_token_counter``: the bundled
  tokenizer, no special tokens; ``memlab.drift.study.context_metrics`` sums the packed memories'
  counts). The B-format block's fixed instructions and each memory's date prefix are not counted:
  they cost the same for every unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.registry import lookup
from memlab.drift.arrays import TokenCounter
from memlab.studies.heldout import DEFAULT_FOLDS, SYSTEMS, HeldOut, compare_systems, haystack_units, held_out

if TYPE_CHECKING:
    import pandas as pd

    from memlab.scores.problem import RetrievalProblem

UNIT_SYSTEMS = ("cosine", "recency", "hybrid")  # the systems compared across units by default


@dataclass(frozen=True)
class UnitsHeldOut:
    questions: pd.DataFrame  # per system, unit and common question: the held-out values and tokens
    table: pd.DataFrame  # per group, system and unit: mean value and tokens, d to the first unit
    runs: dict[str, HeldOut]  # each unit's own held-out study (every system, all its questions)
    details: dict[str, Any]


def injected_tokens(memories: pd.Series, counts: Mapping[str, int]) -> np.ndarray:
    """Per question: the summed token counts of its injected memories (``memories``: id tuples)."""
    return np.array([sum(counts[m] for m in ids) for ids in memories], dtype=float)


def held_out_units(
    problems: Mapping[str, RetrievalProblem],
    count_tokens: TokenCounter,
    *,
    tokenizer: str = "",
    systems: Sequence[str] = UNIT_SYSTEMS,
    folds: int | None = None,
    seed: int = 0,
    n_boot: int = 1000,
    progress: bool = False,
    **held_out_options: Any,
) -> UnitsHeldOut:
    """Run the held-out study on each unit's problem (``problems``: unit name -> its problem, the
    first the reference) with shared folds, and compare the units per system (see the module).
    ``held_out_options`` go to ``held_out`` (grid, false_rate, probes, probe_vectors, hybrids)."""
    import pandas as pd

    if not problems:
        raise InputError("--units: name at least one memory unit")
    for name in systems:
        lookup(SYSTEMS, name, "system for --systems")
    if "hybrid" in systems and not held_out_options.get("hybrids", True):
        raise InputError("--systems names hybrid, and --hybrids names no hybrid retriever to choose it from")
    names = list(problems)
    haystacks = list(dict.fromkeys(h for p in problems.values() for h in haystack_units(p)))
    if folds is None:
        folds = max(2, min(DEFAULT_FOLDS, len(haystacks)))
    runs = {}
    for unit in names:
        runs[unit] = held_out(
            problems[unit],
            folds=folds,
            seed=seed,
            n_boot=n_boot,
            progress=progress,
            haystacks=haystacks,
            **held_out_options,
        )
    # the questions every unit keeps, in the first unit's order
    kept = [set(runs[u].questions["question"]) for u in names]
    common = [q for q in dict.fromkeys(runs[names[0]].questions["question"]) if all(q in k for k in kept)]
    if not common:
        raise InputError(
            f"--units {','.join(names)}: no question is kept by every unit (are they one benchmark?)"
        )
    frames = []
    for unit in names:
        p = problems[unit]
        texts = [m.text(p.lang) for m in p.dataset.memories]
        counts = dict(zip(p.dataset.memory_ids, (int(n) for n in count_tokens(texts)), strict=True))
        q = runs[unit].questions
        q = q[q["system"].isin(systems)].set_index("question")
        frames.append((unit, q, counts))
    rows = []
    for system in systems:
        for unit, q, counts in frames:
            mine = q[q["system"] == system].loc[common].reset_index()
            mine.insert(1, "unit", unit)
            mine["tokens"] = injected_tokens(mine["memories"], counts)
            rows.append(mine)
    questions = pd.concat(rows, ignore_index=True)
    # the same question must sit in the same fold and category whichever unit stores it
    first = questions[questions["unit"] == names[0]].set_index(["system", "question"])
    for unit in names[1:]:
        other = questions[questions["unit"] == unit].set_index(["system", "question"])
        for field in ("fold", "category"):
            differs = first[field] != other.loc[first.index, field]
            if differs.any():
                system, qid = differs[differs].index[0]
                raise InputError(
                    f"--units: question {qid} has {field} {first.loc[(system, qid), field]!r} in "
                    f"{names[0]} and {other.loc[(system, qid), field]!r} in {unit}: the units must "
                    "come from one benchmark file"
                )
    tables = []
    for system in systems:
        mine = questions[questions["system"] == system]
        t = compare_systems(mine, n_boot, seed, by="unit", references=(names[0],), costs=("tokens",))
        t.insert(2, "system", system)
        tables.append(t)
    table = pd.concat(tables, ignore_index=True)
    first_run = runs[names[0]].details
    details = {
        "benchmark": first_run["benchmark"],
        "units": names,
        "reference": names[0],
        "systems": list(systems),
        "datasets": {u: runs[u].details["dataset"] for u in names},
        "memories": {u: len(problems[u].dataset.memories) for u in names},
        "questions": {u: runs[u].details["questions"] for u in names},
        "common_questions": len(common),
        # of each unit's questions, those another unit does not keep (left out of the comparison)
        "left_out": {u: runs[u].details["questions"] - len(common) for u in names},
        "haystacks": len(haystacks),
        "folds": folds,
        "fold_haystacks": first_run["fold_haystacks"],
        "seed": seed,
        "boot": n_boot,
        "objective": first_run["objective"],
        "candidates": first_run["candidates"],
        "inject": first_run["inject"],
        "model": first_run["model"],
        "source": first_run["source"],
        "tokenizer": tokenizer,
    }
    return UnitsHeldOut(questions, table, runs, details)
