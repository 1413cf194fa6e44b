"""Packaged probe sets: off-topic questions for calibrating a threshold without labels.

A probe set is a folder under ``memlab/datasets/probesets/``: ``probes.json`` (``name``,
``version``, ``languages``, ``description``, ``categories``) and ``probes.jsonl`` (one probe a
line: ``id``, ``category``, and one text per language, ``en``, ``ja``). ``offtopic`` (version
1.0.0) holds 216 probes, 72 per category (chatter, knowledge, request), in English and Japanese.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from memlab.core.errors import InputError
from memlab.core.registry import lookup
from memlab.core.textfiles import load_json
from memlab.datasets.schema import DatasetError, JsonRecord, read_jsonl

DEFAULT_PROBES = "offtopic"


@dataclass(frozen=True)
class Probe:
    id: str
    category: str
    texts: dict[str, str]


@dataclass(frozen=True)
class ProbeSet:
    name: str
    version: str
    languages: tuple[str, ...]
    probes: tuple[Probe, ...]
    description: str = ""

    def texts(self, lang: str) -> list[str]:
        if lang not in self.languages:
            raise InputError(
                f"probe set {self.name!r} has no language {lang!r}; it has: {', '.join(self.languages)}"
            )
        return [p.texts[lang] for p in self.probes]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.probes)


def probe_sets() -> dict[str, Path]:
    """Name -> folder of every packaged probe set."""
    root = resources.files("memlab.datasets") / "probesets"
    return {d.name: Path(str(d)) for d in sorted(root.iterdir(), key=lambda d: d.name) if d.is_dir()}


def load_probes(name_or_path: str | Path = DEFAULT_PROBES) -> ProbeSet:
    """A packaged probe set by name, or a folder of the same shape; every problem reported together."""
    path = Path(name_or_path)
    root = path if path.is_dir() else lookup(probe_sets(), str(name_or_path), "probe set")
    problems: list[str] = []
    try:
        meta = load_json(root / "probes.json")
    except FileNotFoundError as e:
        raise InputError(f"{root / 'probes.json'}: {e}") from None
    if not isinstance(meta, dict):
        raise InputError(f"{root / 'probes.json'}: expected a JSON object, got {type(meta).__name__}")
    languages = tuple(meta.get("languages", ()))
    version = meta.get("version")
    if not isinstance(version, str) or not version:
        problems.append("probes.json: version: missing")
    if not languages:
        problems.append("probes.json: languages: missing")
    probes: list[Probe] = []
    seen: dict[str, int] = {}
    for lineno, obj in read_jsonl(root / "probes.jsonl", problems):
        r = JsonRecord("probes.jsonl", lineno, obj, problems)
        r.unknown_fields({"id", "category", *languages})
        pid = r.unique_id(seen, lineno)
        category = r.text("category")
        texts = {lang: t for lang in languages if (t := r.text(lang)) is not None}
        if pid is not None and category is not None and len(texts) == len(languages):
            probes.append(Probe(pid, category, texts))
    if not problems and not probes:
        problems.append("probes.jsonl: no probes")
    if problems:
        raise DatasetError([f"{root}/{p}" for p in problems])
    return ProbeSet(
        str(meta.get("name", root.name)), version, languages, tuple(probes), meta.get("description", "")
    )
