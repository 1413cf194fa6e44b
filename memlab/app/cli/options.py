"""Options shared by several commands, declared once, and the helpers that read them."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memlab.app.parameters import GROUPS, TYPES, parameter
from memlab.core.errors import InputError
from memlab.core.files import atomic_write_text, note_input
from memlab.core.spec import COMBINES, DECAYS, RetrievalSpec
from memlab.datasets.schema import Dataset, Memory, load_dataset, parse_datetime
from memlab.qdrant.presets import PRESETS

DEFAULTS = RetrievalSpec()


class Given(argparse.Action):
    """Store the value and record that the option was given (``given``): a value given beside a
    tuned-spec file overrides the file's, a default does not."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        given_set = getattr(namespace, "given_options", None)
        if given_set is None:
            given_set = set()
            namespace.given_options = given_set
        given_set.add(self.dest)


class GivenEach(Given):
    """A repeatable option (a ``list`` parameter): each value given is appended."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, [*(getattr(namespace, self.dest, None) or []), values])


def given(args: argparse.Namespace) -> set[str]:
    """The options given on the command line (those added through ``add_parameters``)."""
    return set(getattr(args, "given_options", None) or ())


def add_parameters(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    names: Iterable[str],
    *,
    defaults: Mapping[str, Any] | None = None,
    lists: Iterable[str] = (),
    help_extra: Mapping[str, str] | None = None,
    empty: Mapping[str, str] | None = None,
    command: str | None = None,
    required: Iterable[str] = (),
) -> None:
    """Add the declared parameters ``names`` as options: the flag, the type, the choices (unless
    the parameter is in ``lists``: a comma list, checked by whoever reads it), the default
    (``defaults`` overrides the declared one for this command, and the help shows it; an empty
    string is None) and the help as ``command`` words it (``Parameter.wording``), with the default
    that applies (``empty``: what an empty value means for this command, instead of the declared
    meaning; a help that says its default itself is not told it twice). ``required``: options
    this command cannot run without."""
    defaults = defaults or {}
    lists, extra, empties, needed = set(lists), help_extra or {}, empty or {}, set(required)
    for name in names:
        p = parameter(name)
        if p.flag is None:
            raise InputError(f"parameter {name!r} has no command-line flag")
        default = defaults.get(name, p.default)
        default = None if default in ("", []) else default
        meaning = empties.get(name, p.empty)
        text = p.help_for(command) + (f"; {extra[name]}" if name in extra else "")
        if default is None and meaning:
            text += f" (default: {meaning})"
        if p.type == "bool":  # a --no-X flag that turns a default-on setting off
            parser.add_argument(p.flag, dest=name, action="store_false", help=text)
            continue
        choices = None if p.choices is None or name in lists else list(p.choices())
        kind = str if name in lists or p.type == "list" else TYPES.get(p.type, str)
        shown = f" (default: {default})" if default is not None and "(default: " not in text else ""
        if name in lists and p.choices is not None:
            text = f"comma list of: {', '.join(p.choices())}; {text}"
        parser.add_argument(
            p.flag,
            dest=name,
            type=kind,
            default=default,
            choices=choices,
            action=GivenEach if p.type == "list" else Given,
            help=(text + shown).replace("%", "%%"),
            **({"required": True} if name in needed else {}),
        )


def add_group(
    parser: argparse.ArgumentParser, group: str, *, omit: Iterable[str] = (), **options: Any
) -> None:
    """One declared group of options, under its title (``omit`` leaves some out)."""
    title, names = GROUPS[group]
    g = parser.add_argument_group(title)
    add_parameters(g, [n for n in names if n not in set(omit)], **options)


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one-line help, the arguments it declares and what runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def add_source_options(p: argparse.ArgumentParser) -> None:
    """The score options (``memlab.app.parameters`` group ``scores``) and the embedding server's."""
    add_group(p, "scores")
    add_server_options(p)


def add_server_options(p: argparse.ArgumentParser) -> None:
    add_group(p, "server")


def server_options_given(args: argparse.Namespace) -> list[str]:
    """The flags of the embedding server's options given on the command line, but ``--embed-url``
    (``--no-embed-fallback`` counts as given when it is)."""
    _, names = GROUPS["server"]
    told = given(args)
    return [
        str(parameter(n).flag)
        for n in names
        if n != "embed_url"
        and (n in told or (n == "embed_fallback" and getattr(args, "embed_fallback", True) is False))
    ]


def server_from(args: argparse.Namespace):
    """The ServerConfig the --embed-* options describe, or None without --embed-url (then any
    other --embed-* option given is refused: it shapes the server's requests, and there is none,
    so it would be ignored)."""
    if getattr(args, "embed_url", None) is None:
        unused = server_options_given(args)
        if unused:
            raise InputError(
                f"{', '.join(unused)}: {'it shapes' if len(unused) == 1 else 'they shape'} the "
                "embedding server's requests, and no --embed-url names a server, so "
                f"{'it' if len(unused) == 1 else 'they'} would be ignored: add --embed-url, or drop "
                f"{'it' if len(unused) == 1 else 'them'}"
            )
        return None
    from memlab.embedding.server import ServerConfig

    return ServerConfig(
        url=args.embed_url,
        model=args.embed_model,
        api_key_env=args.embed_api_key_env,
        roles=args.embed_roles,
        encoding=args.embed_encoding,
        batch_size=args.embed_batch,
        timeout=args.embed_timeout,
        attempts=args.embed_attempts,
        fallback=args.embed_fallback,
    )


def add_spec_options(p: argparse.ArgumentParser, spec_file: bool = True) -> None:
    """``--spec FILE --bonus --tau --threshold --candidates --inject`` (``spec_file``: with
    ``--spec``, a tuned-spec file); ``--threshold`` defaults to the one that follows the scores
    (the model's)."""
    add_group(p, "spec", omit=() if spec_file else ("spec_file",))


def add_collection_options(p: argparse.ArgumentParser, shards: bool = True) -> None:
    """``--filter key=value`` (repeatable), ``--shards N``, ``--shard-key FIELD``: which memories
    a query sees and how the collection splits them (``memlab.qdrant.sharding.Scope``).
    ``shards`` false: the tenant filter only, for a study that does not model the shards (a
    tuned-spec file recording shards is then refused, ``apply_spec_file``)."""
    add_group(p, "collection", omit=() if shards else ("shards", "shard_key"))


def scope_from(args: argparse.Namespace, dataset):
    """The ``Scope`` the collection options give, the filter's values typed by the dataset."""
    from memlab.datasets.payload import parse_filters
    from memlab.qdrant.sharding import Scope

    return Scope(
        parse_filters(getattr(args, "filters", None) or [], dataset.memories),
        1 if getattr(args, "shards", None) is None else args.shards,
        getattr(args, "shard_key", None) or None,
    )


def add_family_options(p: argparse.ArgumentParser, many: bool = False) -> None:
    """``--decay`` and ``--combine``; ``many``: comma lists (sweep and feasible axes)."""
    add_group(p, "family", lists=FAMILY_NAMES if many else ())


FAMILY_NAMES = ("decay", "combine")


def add_mmr_options(p: argparse.ArgumentParser) -> None:
    """``--mmr-pool`` and ``--diversity``: the MMR stage, for the commands that run one spec
    through the reference or export it (the sweep does not take them yet)."""
    add_group(p, "mmr")


def family_values(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The comma lists of ``--decay`` and ``--combine``, each name checked."""
    from memlab.core.registry import check_names

    decays = check_names(DECAYS, [d.strip() for d in args.decay.split(",")], "decay")
    combines = check_names(COMBINES, [c.strip() for c in args.combine.split(",")], "combine")
    return decays, combines


EMBEDDING_OPTIONS = ("model", "truncate_dim", "qdrant_path", "qdrant_url", "cache_dir", "embed_url")


def options_from(args: argparse.Namespace, used_elsewhere: tuple[str, ...] = ()):
    """The ``ScoreOptions`` the score and server options describe. An embedding option given
    with a source that embeds nothing (``--source published``) is refused, not ignored, unless the
    command uses it for something else too (``used_elsewhere``: ``memlab answer``'s reply cache
    lives in ``--cache-dir``)."""
    from memlab.scores.sources import EMBEDDING_SOURCES, ScoreOptions

    source = getattr(args, "source", "embedded")
    unused = [
        f"--{n.replace('_', '-')}"
        for n in EMBEDDING_OPTIONS
        if n not in used_elsewhere and getattr(args, n, None) is not None
    ] + server_options_given(args)
    if source not in EMBEDDING_SOURCES and unused:
        raise InputError(
            f"{', '.join(unused)}: --source {source} reads stored scores and embeds nothing, so "
            f"{'it' if len(unused) == 1 else 'they'} would be ignored: drop "
            f"{'it' if len(unused) == 1 else 'them'}, or use --source embedded"
        )

    return ScoreOptions(
        source=getattr(args, "source", "embedded"),
        lang=getattr(args, "lang", "en"),
        model=getattr(args, "model", None),
        truncate_dim=getattr(args, "truncate_dim", None),
        qdrant_path=getattr(args, "qdrant_path", None),
        qdrant_url=getattr(args, "qdrant_url", None),
        cache_dir=getattr(args, "cache_dir", None),
        server=server_from(args),
        progress=sys.stderr.isatty(),
    )


def spec_fields(args: argparse.Namespace) -> dict[str, object]:
    """The spec fields the command's options give (None: the default; a threshold not given
    follows the scores)."""
    from memlab.core.spec import SPEC_FIELDS

    return {name: getattr(args, name) for name in SPEC_FIELDS if hasattr(args, name)}


def require_questions(args: argparse.Namespace, dataset) -> None:
    """A command that measures the questions refuses a dataset without any (a store imported
    from Qdrant, say), saying what works without them."""
    if not dataset.questions:
        raise InputError(
            f"dataset {dataset.name!r} has no questions ({dataset.path}/questions.jsonl is empty): "
            f"memlab {args.command} measures retrieval on labelled questions; add some (docs/datasets.md), "
            "or use calibrate, explain --log or spec, which read a store without questions"
        )


def problem_from(
    args: argparse.Namespace,
    dataset=None,
    used_elsewhere: tuple[str, ...] = (),
    questions: bool = True,
    **fields,
):
    """The retrieval problem the options describe: the dataset, its scores and the whole spec,
    built once (``memlab.scores.problem.build_problem``), and held to the ``--spec`` file's model
    and dataset (``memlab.tuning.tuned.check_tuned``). ``questions``: the command measures the
    dataset's questions, so it must have some."""
    from memlab.scores.problem import build_problem
    from memlab.scores.sources import EMBEDDING_SOURCES

    dataset = load_dataset(args.dataset) if dataset is None else dataset
    if questions:
        require_questions(args, dataset)
    problem = build_problem(
        dataset,
        options_from(args, used_elsewhere),
        scope=scope_from(args, dataset),
        **{**spec_fields(args), **fields},
    )
    check_spec_file(args, problem)
    stored = dataset.path / "published_scores.jsonl" if dataset.path is not None else None
    if problem.options.source not in EMBEDDING_SOURCES and stored is not None and stored.is_file():
        note_input(stored)  # read when the scores are first asked for: an input all the same
    check_outputs(args)  # before the command's work: an output onto an input is refused now, not after
    return problem


def check_outputs(args: argparse.Namespace) -> None:
    """The files the command will write (``-o``, ``--save``), checked as the write will check
    them (``memlab.core.files.output_target``: no input, no folder or device, no link to nothing)
    once the inputs are read: refused in one line before the work, not after it."""
    from memlab.core.files import output_target

    for name in ("output", "save"):
        path = getattr(args, name, None)
        if isinstance(path, str) and path and path != "-":
            output_target(path)


def apply_dataset_language(args: argparse.Namespace) -> None:
    """``--lang`` not given, and the dataset has no text in the default language (a store kept in
    Japanese only): the dataset's own language, said on stderr. Run once, before the command."""
    from memlab.datasets.declared import declared_languages

    if not hasattr(args, "lang") or "lang" in given(args) or not getattr(args, "dataset", None):
        return
    languages = declared_languages(args.dataset)
    if languages and args.lang not in languages:
        print(
            f"--lang {languages[0]}: the dataset's language (it has no {args.lang!r} text)", file=sys.stderr
        )
        args.lang = languages[0]


def apply_spec_file(args: argparse.Namespace) -> None:
    """``--spec FILE``: where the command line gives no value, the file's spec fields, and the
    score source, dataset, language and model it was tuned with; each value given beside it
    overrides the file's, and stderr says which. Run once, before the command reads its options."""
    from memlab.core.spec import SPEC_FIELDS
    from memlab.tuning.tuned import collection_flags, load_tuned, merge_spec

    tuned = load_tuned(args.spec_file)
    args.tuned = tuned
    told = given(args)
    reference = tuned.dataset.get("reference") or tuned.dataset["name"]
    scored = {"dataset": reference, "source": tuned.source, "lang": tuned.languages[0]}
    model = tuned.model or {}
    # the file's model only where the scores are embedded: with --source published beside a file
    # tuned on embedded scores, the check of the model (check_tuned) says what is wrong
    source = args.source if "source" in told else tuned.source
    if source == "embedded" and model.get("identity", {}).get("engine") != "openai-compatible":
        scored["model"] = model.get("name") or None
    moved = Path(reference).is_absolute() and not Path(reference).is_dir()  # or is on another machine
    if hasattr(args, "dataset") and "dataset" not in told and moved:
        raise InputError(
            f"{args.spec_file}: tuned on the dataset folder {reference}, which is not there: "
            "pass --dataset DIR (where that folder is now)"
        )
    for name, value in scored.items():
        if hasattr(args, name) and name not in told:
            setattr(args, name, value)
    # the collection it was tuned for (tenant filter, shards): applied, or refused where the
    # command cannot take them (measuring every user's memories for one user's spec, silently,
    # would put another tenant's memories in its numbers, or in its prompts)
    scope = {k: v for k, v in tuned.collection.items() if v not in (None, 1, [])}
    untaken = [k for k in scope if not hasattr(args, k)]
    if untaken:
        flag = {"filters": "--filter", "shards": "--shards", "shard_key": "--shard-key"}[untaken[0]]
        instead = "every tenant's memories" if flag == "--filter" else "one shard"
        raise InputError(
            f"{args.spec_file}: tuned for the collection as {collection_flags(scope)}, and memlab "
            f"{args.command} cannot take {flag}: it would measure {instead} instead; use a command "
            "that takes it (evaluate, metrics, answer, explain, ...), or tune again without it"
        )
    taken = [k for k in scope if k not in told]
    for name in taken:
        setattr(args, name, scope[name])
    fields, notes = merge_spec(
        tuned, {n: getattr(args, n) for n in SPEC_FIELDS if n in told and hasattr(args, n)}
    )
    # another tenant or layout given beside the file: legitimate, and said like a spec field
    for name, none in (("filters", []), ("shards", 1), ("shard_key", None)):
        file_value, value = scope.get(name, none), getattr(args, name, none) or none
        if name in told and file_value != value:
            notes.append(
                f"{collection_flags({name: value}) or f'--{name} {value}'} "
                f"(the file's {collection_flags({name: file_value}) or 'none'})"
            )
    for name, value in fields.items():
        if hasattr(args, name):
            setattr(args, name, value)
    joint = (
        f"; tuned jointly on {', '.join(tuned.languages)}, using {args.lang}"
        if len(tuned.languages) > 1
        else ""
    )
    rule = tuned.selection.get("rule")
    print(
        f"spec: from {tuned.label} (tuned on {tuned.dataset['name']}"
        + (f" by {rule}" if rule else "")
        + (f", {tuned.tuned_at}" if tuned.tuned_at else "")
        + f"){joint}"
        + (f"; tuned for the collection as {collection_flags({k: scope[k] for k in taken})}" if taken else "")
        + (f"; given beside it, overriding the file: {', '.join(notes)}" if notes else ""),
        file=sys.stderr,
    )


def check_spec_file(args: argparse.Namespace, problem) -> None:
    """The ``--spec`` file (if any) against the problem: another model refused, another dataset
    a warning."""
    tuned = getattr(args, "tuned", None)
    if tuned is not None:
        from memlab.tuning.tuned import check_tuned

        check_tuned(tuned, problem)


def spec_file_shortfall(args: argparse.Namespace, problem, criteria=None) -> str | None:
    """The ``--spec`` file holds a spec that fails its criteria (the sweep's fallback, when
    nothing was feasible): what it fails on the problem's questions, in the one line every command
    says it in (``memlab.tuning.tuned.spec_shortfall``); None otherwise."""
    from memlab.tuning.tuned import fallback_reason, spec_shortfall

    tuned = getattr(args, "tuned", None)
    reason = None if tuned is None else fallback_reason(tuned.selection)
    if reason is None or not problem.dataset.questions:
        return None
    return spec_shortfall(problem, criteria, what=tuned.label, fallback=reason)


def qdrant_dataset(args: argparse.Namespace, tmp: Path) -> Dataset:
    """The collection's stored vectors and payloads (through ``import_qdrant``, nothing re-embedded)
    as a dataset without questions: the store ``memlab calibrate`` and ``memlab explain`` read from
    ``--qdrant-path``/``--qdrant-url`` with ``--collection`` and the collection's field names."""
    from memlab.importers.qdrant import import_qdrant

    preset = getattr(args, "preset", None)
    for flag in ("collection", "date_field", "text_field"):
        if not getattr(args, flag) and (flag == "collection" or preset is None):
            also = "" if flag == "collection" else f" (or --preset {'|'.join(sorted(PRESETS))})"
            raise InputError(f"--{flag.replace('_', '-')} is needed with --qdrant-path/--qdrant-url{also}")
    out = import_qdrant(
        collection=args.collection,
        date_field=args.date_field,
        text_field=args.text_field,
        preset=preset,
        out=tmp / "collection",
        path=args.qdrant_path,
        url=args.qdrant_url,
        vector_name=args.vector_name,
        id_field=getattr(args, "id_field", None),
        date_format=getattr(args, "date_format", None) or "auto",
        model=args.model,
        progress=sys.stderr.isatty(),
        # a tenant filter reads the fields it names: the filter then keeps the tenant's memories
        # as it does on a dataset (``scope_from``), and a field no point holds is one line
        filter_fields=tuple(text.partition("=")[0] for text in getattr(args, "filters", None) or ()),
        flags=("--qdrant-path", "--qdrant-url"),
    )
    meta = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (out / "memories.jsonl").read_text(encoding="utf-8").splitlines()]
    memories = tuple(
        Memory(
            r["id"],
            parse_datetime(r["date"]),
            {meta["language"]: r["text"]},
            "",
            "imported",
            payload=r.get("payload", {}),
            point_id=r["point_id"],
        )
        for r in rows
    )
    return Dataset(
        meta["name"],
        parse_datetime(meta["reference_date"]),
        (meta["language"],),
        memories,
        (),
        path=out,
        vectors=meta["vectors"],
    )


def add_output_options(p: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    p.add_argument(
        "--format", choices=list(formats), default=formats[0], help="output format (default: %(default)s)"
    )
    p.add_argument("-o", "--output", default=None, help="write to this file instead of stdout (- for stdout)")


def emit(text: str, output: str | None) -> None:
    """``text`` to the ``-o`` file (atomically), or to standard output when none or ``-``."""
    if output and output != "-":
        path = atomic_write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {path}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def fmt(x: float | None, signed: bool = False, beside: float | None = None) -> str:
    """``x`` with 3 decimals ("-" for none), or more, up to 6, where 3 would show it equal to
    ``beside`` (the threshold it is checked against) while it is not: 0.87461 beside a threshold
    of 0.875 reads 0.8746, so a score shown below the threshold is below it."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    decimals = 3
    if beside is not None and math.isfinite(x) and math.isfinite(beside):
        while decimals < 6 and x != beside and round(x, decimals) == round(beside, decimals):
            decimals += 1
    return f"{x:+.{decimals}f}" if signed else f"{x:.{decimals}f}"


def spec_line(spec: RetrievalSpec) -> str:
    ref = spec.reference_date.date().isoformat() if spec.reference_date else "dataset"
    return (
        f"candidates={spec.candidates} inject={spec.inject} threshold={spec.threshold:g} "
        f"bonus={spec.bonus:g} tau_days={spec.tau_days:g} reference={ref}"
        + ("" if spec.default_family else f" decay={spec.decay} combine={spec.combine}")
    )


CRITERIA_HELP = (
    "YAML file declaring criteria (default: the dataset's own criteria: those its dataset.json "
    "declares, else the generic set: nothing reaches the threshold on a no-hit question, every "
    "current memory does, and where questions label stale memories none is injected or ranked "
    "before the current one)"
)


def add_criteria_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--criteria", default=None, help=CRITERIA_HELP)


def criteria_from(args: argparse.Namespace, dataset):
    """The ``--criteria`` file's criteria, else the dataset's own; a criterion about a question
    the tenant filter leaves out (another tenant's) goes with it, as a declared one does, and
    stderr says so."""
    from memlab.core.criteria import dataset_criteria
    from memlab.datasets.criteria_file import load_criteria

    if not args.criteria:
        return dataset_criteria(dataset)
    criteria = load_criteria(args.criteria)
    gone = [c for c in criteria if c.question in dataset.questions_left_out]
    if gone:
        print(
            f"--criteria: {', '.join(f'{c.name} (question {c.question})' for c in gone)}: about another "
            "tenant's question, which the filter leaves out: not checked",
            file=sys.stderr,
        )
    return tuple(c for c in criteria if c not in gone)
