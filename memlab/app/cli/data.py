"""Commands about datasets: datasets, init, validate, import-qdrant, import-longmemeval,
import-locomo, generate, timeparse."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from memlab.app.cli.options import Command, add_output_options, add_parameters, emit
from memlab.core.errors import InputError
from memlab.core.labels import QUESTION_KINDS
from memlab.core.memory_text import delimiter_tag, line_break_at
from memlab.core.numbers import counted
from memlab.core.paths import plain_name
from memlab.datasets.schema import DEFAULT_DATASET, DatasetError, load_dataset


def cmd_validate(args: argparse.Namespace) -> int:
    dataset = load_dataset(args.dataset)  # DatasetError: every problem, file:line: field: problem
    if dataset.path is not None and (dataset.path / "published_scores.jsonl").is_file():
        from memlab.scores.sources import load_published

        load_published(dataset)  # what --source published reads: every problem, as evaluate says it
    kinds = [q.kind for q in dataset.questions]
    dated = sum(q.date is not None for q in dataset.questions)
    print(
        f"{dataset.path}: ok: {counted(len(dataset.memories), 'memory')}, "
        f"{counted(len(dataset.questions), 'question')} "
        f"({', '.join(f'{kinds.count(k)} {k}' for k in QUESTION_KINDS)}; {dated} dated), "
        f"languages {', '.join(dataset.languages)}, "
        f"reference date {dataset.reference_date.date().isoformat()}"
    )
    if not dataset.questions:
        print(
            "no questions yet: calibrate, explain --log and spec read the store as it is; evaluate, sweep "
            "and the studies measure labelled questions (questions.jsonl, docs/datasets.md)"
        )
    for m in dataset.memories:  # escaped in every prompt, and said: the user should know
        for lang, text in m.texts.items():
            tag = delimiter_tag(text)
            if tag is not None:
                print(
                    f"warning: memory {m.id!r} ({lang}) holds the prompt block's tag {tag[1]!r} at character "
                    f"{tag[0] + 1}: memlab escapes it in every prompt (its '<' becomes '&lt;'), so it cannot "
                    "close the <retrieved_memory> block"
                )
            at = line_break_at(text)
            if at is not None:
                print(
                    f"warning: memory {m.id!r} ({lang}) holds the line break U+{ord(text[at]):04X} at "
                    f"character {at + 1}: memlab continues it with two spaces in every prompt, so it cannot "
                    "start a line of its own"
                )
    uncurrent = [q.id for q in dataset.questions if q.kind == "hit" and q.current is None]
    if uncurrent:  # accepted (a benchmark hit with several evidence memories has none), and said
        print(
            f"note: {len(uncurrent)} hit question{'s' * (len(uncurrent) > 1)} without a current memory "
            f"({', '.join(uncurrent)}): no current_* criterion or margin_<id> column scores "
            f"{'them; they count' if len(uncurrent) > 1 else 'it; it counts'} only in injected_hit "
            "and wrong_injected"
        )
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from memlab.datasets.template import write_template

    out = write_template(args.folder)
    print(
        f"wrote {out}: dataset.json, memories.jsonl and questions.jsonl with example lines to replace, "
        f"and README.md saying what each field means; then: memlab validate {args.folder}"
    )
    return 0


def cmd_import_qdrant(args: argparse.Namespace) -> int:
    from memlab.importers.qdrant import import_qdrant

    out = import_qdrant(
        collection=args.collection,
        date_field=args.date_field,
        text_field=args.text_field,
        out=args.output or default_out(args.collection, "--collection"),
        path=args.path,
        url=args.url,
        vector_name=args.vector_name,
        id_field=args.id_field,
        date_format=args.date_format,
        model=args.model,
        questions=args.questions,
        reference_date=args.reference_date,
        language=args.language or "en",
        progress=sys.stderr.isatty(),
        keep_fields=tuple(dict.fromkeys(args.keep_field or ())),
        preset=args.preset,
    )
    n = len((out / "memories.jsonl").read_text(encoding="utf-8").splitlines())
    meta = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    if args.language is None:  # each default said once, on stderr
        print("note: --language not given: the stored texts are taken as en", file=sys.stderr)
    if args.reference_date is None:
        print(
            f"note: --reference-date not given: the newest memory's time, {meta['reference_date']}, "
            "is the reference date (ages count from it)",
            file=sys.stderr,
        )
    langs = meta.get("languages", [meta["language"]])
    print(
        f"wrote {out}: {n} memories with their stored vectors"
        + (f"; questions in {', '.join(langs)}" if len(langs) > 1 else "")
    )
    if args.questions is None:
        print(
            f"next: write your questions into {out / 'questions.jsonl'} "
            f"(docs/datasets.md#the-folder-format), then memlab validate {shlex.quote(str(out))}"
        )
    return 0


def default_out(name: str, where: str) -> Path:
    """An import's default folder, ``data/NAME``: NAME (a collection, a file's stem, a
    conversation's id) must be a plain name, so the folder stays inside data/."""
    try:
        plain_name(name, where)
    except InputError as e:
        raise InputError(
            f"{e}: the default output folder data/{name} would not be one folder inside data/; pass -o DIR"
        ) from None
    return Path("data") / name


def import_name(file: str, granularity: str, default: str, conversation: str | None = None) -> str:
    """A benchmark import's default folder name: the file's stem, the conversation, and the
    granularity when it is not the importer's ``default``, so every import of one file lives side
    by side."""
    return (
        Path(file).stem
        + (f"-{conversation}" if conversation else "")
        + (f"-{granularity}" if granularity != default else "")
    )


def import_summary(result) -> str:
    """What a benchmark import kept, per category and kind, and why it rejected what it did."""
    summary = result.log.summary()
    lines = [
        f"wrote {result.path}: {counted(result.memories, 'memory')}, {counted(result.questions, 'question')}"
    ]
    kinds = [*QUESTION_KINDS, "rejected"]
    lines.append(f"{'category':<28}" + "".join(f"{k:>14}" for k in kinds))
    for category, counts in summary["categories"].items():
        lines.append(f"{category:<28}" + "".join(f"{counts.get(k, 0):>14}" for k in kinds))
    for title, key in (
        ("rejected", "rejected_by_reason"),
        ("repaired", "repaired_by_kind"),
        ("skipped", "skipped_by_reason"),
    ):
        for reason, n in summary[key].items():
            lines.append(f"{title}: {n} x {reason}")
    lines.append(f"every record is listed in {result.path / 'import.json'}")
    return "\n".join(lines)


def cmd_import_longmemeval(args: argparse.Namespace) -> int:
    from memlab.importers.longmemeval import DEFAULT_GRANULARITY, import_longmemeval

    stem = import_name(args.file, args.granularity, DEFAULT_GRANULARITY)
    out = args.output or default_out(stem, "the file's name")
    result = import_longmemeval(args.file, out, granularity=args.granularity, replace=args.replace)
    print(import_summary(result))
    return 0


def cmd_import_locomo(args: argparse.Namespace) -> int:
    from memlab.importers.locomo import DEFAULT_GRANULARITY, import_locomo

    stem = import_name(args.file, args.granularity, DEFAULT_GRANULARITY, args.conversation)
    out = args.output or default_out(stem, "--conversation" if args.conversation else "the file's name")
    result = import_locomo(
        args.file, out, conversation=args.conversation, granularity=args.granularity, replace=args.replace
    )
    print(import_summary(result))
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from datetime import date

    from memlab.datasets.generate import write_generated

    options = {"seed": args.seed, "days": args.days}
    if args.reference:
        try:
            options["reference"] = date.fromisoformat(args.reference)
        except ValueError:
            raise InputError(f"--reference: expected YYYY-MM-DD, got {args.reference!r}") from None
    out = write_generated(args.generator, args.output, **options)
    print(f"wrote {out}")
    return 0


def cmd_timeparse(args: argparse.Namespace) -> int:
    from memlab.datasets.schema import parse_datetime
    from memlab.datasets.timeparse import parse_time

    ref = load_dataset(DEFAULT_DATASET).reference_date
    try:
        ref = parse_datetime(args.ref) if args.ref is not None else ref
    except InputError as e:  # the value names no flag: say which one it came from
        raise InputError(f"--ref: {e}") from None
    found = parse_time(args.text, ref)
    print(json.dumps(None if found is None else found.as_dict(), ensure_ascii=False))
    return 0


def dataset_names() -> list[tuple[str, str]]:
    """(where, name) for every dataset ``--dataset`` finds: a packaged one by its name, one under
    a data folder by its folder's name, or by its path where a packaged dataset (or an earlier
    data folder) already holds that name. Each name opens the dataset it is listed for."""
    from memlab.datasets.locations import dataset_dir, packaged_datasets, user_datasets

    rows = [("packaged", name) for name in packaged_datasets()]
    for d in user_datasets():
        rows.append(("data/", d.name if dataset_dir(d.name).resolve() == d.resolve() else str(d)))
    return rows


def cmd_datasets(args: argparse.Namespace) -> int:
    out = []
    for where, ref in dataset_names():
        try:
            ds = load_dataset(ref)
        except DatasetError as e:
            out.append({"name": ref, "where": where, "path": ref, "problems": len(e.problems)})
            continue
        kinds = [q.kind for q in ds.questions]
        out.append(
            {
                "name": ref,  # what --dataset accepts
                "title": ds.name,  # what dataset.json calls it (an imported store: its collection)
                "where": where,
                "path": str(ds.path),
                "memories": len(ds.memories),
                "questions": len(ds.questions),
                "kinds": {k: kinds.count(k) for k in QUESTION_KINDS if k in kinds},
                "languages": list(ds.languages),
                "reference_date": ds.reference_date.date().isoformat(),
            }
        )
    if args.format == "json":
        emit(json.dumps(out, indent=2, ensure_ascii=False), args.output)
        return 0
    lines = [f"{'name':<20} {'where':<9} {'memories':>8} {'questions':>9}  languages  kinds"]
    for r in out:
        if "problems" in r:
            problems = f"invalid: {r['problems']} problems (memlab validate {shlex.quote(str(r['path']))})"
            lines.append(f"{r['name']:<20} {r['where']:<9} {problems}")
            continue
        kinds = ", ".join(f"{n} {k}" for k, n in r["kinds"].items())
        lines.append(
            f"{r['name']:<20} {r['where']:<9} {r['memories']:>8} {r['questions']:>9}  "
            f"{','.join(r['languages']):<9}  {kinds}"
        )
    emit("\n".join(lines), args.output)
    return 0


# arguments: each command declares its own


def add_validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", help="dataset folder (or a packaged dataset name)")


def add_init_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="the new dataset folder (must not exist, or be empty)")


def add_import_qdrant_arguments(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--path", help="local Qdrant folder")
    where.add_argument("--url", help="Qdrant server URL")
    add_parameters(
        p,
        ["collection", "preset", "date_field", "text_field", "vector_name", "id_field", "date_format"],
        command="import-qdrant",
        required=["collection"],
    )
    p.add_argument(
        "--model", default=None, help="the model that made the vectors (questions are embedded with it)"
    )
    p.add_argument(
        "--keep-field",
        action="append",
        default=None,
        metavar="FIELD",
        help="a payload field to keep as the memory's payload (repeatable), e.g. user_id: what --filter "
        "and --shard-key read",
    )
    p.add_argument("--questions", default=None, help="questions.jsonl to include")
    p.add_argument(
        "--reference-date", default=None, help="default: the newest memory's time (said on stderr)"
    )
    p.add_argument(
        "--language",
        default=None,
        help="language of the stored texts, e.g. en or ja (default: en, said on stderr); the questions' "
        "text_<lang> fields add their languages",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="new dataset folder (default: data/COLLECTION, where --dataset finds it)",
    )


def add_import_longmemeval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="longmemeval_s/_m/_oracle[_cleaned].json, downloaded by you")
    p.add_argument(
        "--granularity",
        choices=["session", "turn"],
        default="session",
        help="one memory per session (its user turns) or per user turn (default: %(default)s)",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="new dataset folder (default: data/FILE-STEM, data/FILE-STEM-turn)",
    )
    add_replace_argument(p)


def add_import_locomo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="locomo10.json, downloaded by you")
    p.add_argument(
        "--conversation", default=None, help="one conversation: its sample_id (conv-26) or position (1..)"
    )
    p.add_argument(
        "--granularity",
        choices=["observation", "turn", "session"],
        default="observation",
        help="one memory per session observation, per dialogue turn or per session summary "
        "(default: %(default)s)",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="new dataset folder (default: data/FILE-STEM[-CONVERSATION][-turn|-session])",
    )
    add_replace_argument(p)


def add_replace_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace the output folder if it holds an earlier benchmark import (anything else is "
        "still refused); the new one is written whole first",
    )


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("generator", choices=["daily-lunch"], help="which dataset to generate")
    p.add_argument("output", help="new dataset folder (must not exist, or be empty)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generator (default: %(default)s)")
    p.add_argument(
        "--days",
        type=int,
        default=50,
        help="days of lunches, at least 47 to reach the oldest day asked about (default: %(default)s)",
    )
    p.add_argument("--reference", default=None, help="the day the questions are asked (default: 2026-09-10)")


def add_timeparse_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", help='a question, e.g. "what did I eat the day before yesterday?"')
    p.add_argument("--ref", default=None, help="reference date (default: the seed's 2026-09-10)")


def add_datasets_arguments(p: argparse.ArgumentParser) -> None:
    add_output_options(p, ["table", "json"])


COMMANDS = (
    Command(
        "datasets",
        "the datasets --dataset can name (packaged, and under data/), by the name it accepts",
        add_datasets_arguments,
        cmd_datasets,
    ),
    Command(
        "init",
        "write a dataset folder to fill in: example lines (valid as written) and a README of the fields",
        add_init_arguments,
        cmd_init,
    ),
    Command(
        "validate",
        "check a dataset folder; every problem as file:line: field: problem",
        add_validate_arguments,
        cmd_validate,
    ),
    Command(
        "import-qdrant",
        "turn an existing Qdrant collection into a dataset, vectors kept",
        add_import_qdrant_arguments,
        cmd_import_qdrant,
    ),
    Command(
        "import-longmemeval",
        "turn a LongMemEval file into a dataset (sessions or turns as dated memories)",
        add_import_longmemeval_arguments,
        cmd_import_longmemeval,
    ),
    Command(
        "import-locomo",
        "turn a LoCoMo file into a dataset (observations or turns as dated memories)",
        add_import_locomo_arguments,
        cmd_import_locomo,
    ),
    Command(
        "generate",
        "write a generated dataset folder (daily-lunch: near-duplicate daily events)",
        add_generate_arguments,
        cmd_generate,
    ),
    Command(
        "timeparse",
        "the date range an explicit time expression names (English, Japanese)",
        add_timeparse_arguments,
        cmd_timeparse,
    ),
)
