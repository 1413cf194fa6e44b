"""``memlab init DIR``: a dataset folder to fill in, valid as written.

JSON and JSON lines hold no comments, so the example lines are real records (a memory that
replaces another, and one question of each kind) and the explanations go in the folder's
README.md. The folder is checked by the loader before it appears, and appears whole or not at
all; a folder that exists and holds anything is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

REFERENCE_DATE = "2026-11-29"

MEMORIES = (
    {
        "id": "m1",
        "date": "2026-11-20",
        "text": "2026-11-20: The user started learning the guitar.",
        "topic": "music",
    },
    {
        "id": "m2",
        "date": "2026-11-27",
        "text": "2026-11-27: The user gave up the guitar for the piano.",
        "topic": "music",
        "supersedes": "m1",
    },
    {
        "id": "m3",
        "date": "2026-11-24",
        "text": "2026-11-24: The user's sister Emma lives in Lyon.",
        "topic": "family",
    },
)

QUESTIONS = (
    {
        "id": "q1",
        "text": "Which instrument am I learning?",
        "kind": "contradiction",
        "relevant": ["m1", "m2"],
        "current": "m2",
        "stale": ["m1"],
    },
    {"id": "q2", "text": "Where does my sister live?", "kind": "hit", "relevant": ["m3"], "current": "m3"},
    {
        "id": "q3",
        "text": "What did I start last week?",
        "kind": "hit",
        "relevant": ["m1"],
        "current": "m1",
        "date": "2026-11-25",
    },
    {
        "id": "q4",
        "text": "What was I practising the week before?",
        "kind": "time",
        "current": "m1",
        "time_range": {"start": "2026-11-16", "end": "2026-11-22"},
    },
    {"id": "q5", "text": "What's the capital of Peru?", "kind": "nohit"},
)

README = """\
# {name}: a memlab dataset to fill in

Replace the example lines with your own, then check the folder:

    memlab validate {name}/        # every problem as file:line: field: problem
    memlab evaluate --source embedded --dataset {name}/
    memlab sweep --source embedded --dataset {name}/

JSON files hold no comments: the explanations are here, and every example line is a real,
valid record (`memlab validate` accepts the folder as written).

## dataset.json

- `name`: what the commands call the dataset (`--dataset` finds it by its folder).
- `reference_date`: "today" for every question without a `date` of its own: ages count from it,
  and no memory may be dated after it (YYYY-MM-DD or ISO 8601).
- `language`: the language of `text` (en, ja, ...). A second language is a field `text_<lang>`
  on every memory and question, and `"languages": ["en", "ja"]` here.
- `description`: a line for people.
- Optional: `"date_prefix": false` when your texts do not start with their date (by default
  each memory's text starts with it, `"2026-11-20: ..."`, as stored for the embedding);
  `criteria` and `tables` (see docs/sweep.md and docs/notebooks.md). Without criteria a
  dataset gets the generic ones: nothing reaches the threshold on a no-hit question, every
  current memory does, and no stale memory is injected or ranked before the current one.

## memories.jsonl: one memory a line

- `id`: unique; `date`: when it was written (YYYY-MM-DD or ISO 8601);
- `text`: the memory as stored, starting with its date unless `date_prefix` is false;
- optional: `topic`, `supersedes` (the id of the memory this one replaces: m2 replaces m1
  above), `type`, `pinned` (true or false), `provenance` (user by default), `note`,
  `payload` (keyword fields such as `{{"user_id": "alice"}}`, for `--filter user_id=alice`),
  `point_id` (its id in your Qdrant collection).

## questions.jsonl: one question a line

- `id`: unique; `text`: what the user says;
- `kind`: `hit` (a memory answers it), `contradiction` (a newer memory replaced an older one),
  `nohit` (nothing should be injected), `time` (it names a time; `current` is the memory from
  then);
- `relevant`: the memories that bear on it; `current`: the one that must be injected;
  `stale`: older ones that must not be;
- optional: `date` (when it is asked: ages count from it, and memories written after it cannot
  be retrieved for it), `time_range` (`{{"start": day, "end": day}}`, inclusive: the days a time
  question asks about, as your application's tool call would pass them), `provenance`, `note`,
  `payload` (the tenant who asks it: a filter asks only its own questions).
"""


def template_files(name: str) -> dict[str, str]:
    """The files of a new dataset folder called ``name``."""
    meta = {
        "name": name,
        "reference_date": REFERENCE_DATE,
        "language": "en",
        "description": "replace me: what these memories are and where they come from",
    }

    def lines(records) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)

    return {
        "dataset.json": json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
        "memories.jsonl": lines(MEMORIES),
        "questions.jsonl": lines(QUESTIONS),
        "README.md": README.format(name=name),
    }


def write_template(out: str | Path) -> Path:
    """Write the folder ``out`` (it must not exist, or be empty), checked by the loader first."""
    from memlab.core.files import write_folder_atomically
    from memlab.core.paths import check_links
    from memlab.datasets.schema import load_dataset

    out = check_links(Path(out).expanduser()).resolve()  # no loop, no link to nothing
    return write_folder_atomically(out, template_files(out.name), check=load_dataset)
