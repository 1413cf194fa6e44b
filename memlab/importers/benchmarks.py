"""One entry point for the benchmark importers: which benchmark a file holds, and its import."""

from __future__ import annotations

from pathlib import Path

from memlab.core.errors import InputError
from memlab.importers.benchmark_io import ImportResult, read_json_file

BENCHMARKS = ("locomo", "longmemeval")


def detect_benchmark(data: object, path: str | Path) -> str:
    """``locomo`` (a list of conversations with ``qa``) or ``longmemeval`` (a list of questions with
    ``haystack_sessions``), from the first record."""
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, dict) and "qa" in first and "conversation" in first:
        return "locomo"
    if isinstance(first, dict) and "haystack_sessions" in first and "question_id" in first:
        return "longmemeval"
    raise InputError(
        f"{path}: neither LoCoMo (a list of {{qa, conversation, ...}}) nor LongMemEval "
        "(a list of {question_id, haystack_sessions, ...})"
    )


def import_benchmark(file: str | Path, out: str | Path, granularity: str = "") -> ImportResult:
    """Import a LoCoMo or LongMemEval file (detected) at ``granularity`` (empty: the importer's default)."""
    from memlab.importers.locomo import import_locomo
    from memlab.importers.longmemeval import import_longmemeval

    kind = detect_benchmark(read_json_file(file, "benchmark"), file)
    options = {"granularity": granularity} if granularity else {}
    if kind == "locomo":
        return import_locomo(file, out, **options)
    return import_longmemeval(file, out, **options)


def unit_names(file: str | Path, units: list[str]) -> str:
    """The benchmark ``file`` holds, with each of ``units`` checked to be one of its granularities
    (``memlab tune-benchmark --units``)."""
    from memlab.importers import locomo, longmemeval

    kind = detect_benchmark(read_json_file(file, "benchmark"), file)
    known = (locomo if kind == "locomo" else longmemeval).GRANULARITIES
    if not units:
        raise InputError(f"--units: name at least one of {', '.join(known)}")
    for unit in units:
        if unit not in known:
            raise InputError(f"--units: {unit!r} is not a {kind} granularity; one of {', '.join(known)}")
    if len(set(units)) < len(units):
        raise InputError(f"--units: {', '.join(units)} names a unit twice")
    return kind
