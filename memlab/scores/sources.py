"""Score sources: where the raw cosine between each question and each memory comes from.

A source returns a ``ScoreTable``: raw cosine, question x memory, with NaN where a pair is
unknown (the published numbers are sparse: an unknown pair is missing, never zero).

Sources are a registry (``SOURCES``): ``published`` (the seed's own numbers), ``embedded``
(embed the dataset text with the default multilingual-e5-small, another model or a server, store
it in Qdrant and score). ``score_defaults`` gives the threshold and sweep ranges that follow the
scores: the seed's for published ones, the model card's or the distribution's for embedded ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memlab.core.errors import InputError, MissingFileError
from memlab.core.registry import lookup
from memlab.core.textfiles import load_json
from memlab.core.vectors import cosine_table
from memlab.datasets.schema import Dataset, DatasetError, JsonRecord, read_jsonl
from memlab.embedding.embedder import ModelIdentity
from memlab.embedding.models import MODELS, SEED_MODEL


@dataclass(frozen=True)
class Vectors:
    """The vectors an embedded score table was computed from (unit length, float32)."""

    memories: np.ndarray  # (memories, d)
    questions: np.ndarray  # (questions, d)


@dataclass(frozen=True)
class ScoreTable:
    question_ids: tuple[str, ...]
    memory_ids: tuple[str, ...]
    raw: np.ndarray  # float64, shape (questions, memories), NaN = unknown
    source: str
    details: dict[str, Any] = field(default_factory=dict, compare=False)  # never the model: ``model`` is
    model: ModelIdentity | None = field(default=None, compare=False)  # who made the scores: the one record
    vectors: Vectors | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        shape = (len(self.question_ids), len(self.memory_ids))
        if self.raw.shape != shape:
            raise InputError(f"score table has shape {self.raw.shape}, expected {shape}")

    @property
    def model_label(self) -> str | None:
        """The model a command names beside the scores (read from ``model``, the one record of
        it): the published scores' model by its name, an embedder by its id; None if none made them."""
        if self.model is None:
            return None
        return self.model.name if self.source == "published" else self.model.model_id

    @property
    def card_name(self) -> str | None:
        """The name a model card may be under (``memlab.embedding.models``): the local model's;
        None for a server's model of its own, published scores and no model."""
        if self.model is None or self.source != "embedded":
            return None
        return None if self.model.identity.get("engine") == "openai-compatible" else self.model.name

    def model_record(self) -> dict[str, Any]:
        """The model as a result file records it (``memlab.tuning.evaluate``'s ``source``, in the
        form those files always had): ``model``, and for embedded scores ``model_name`` (the
        card's name, null for a server's model of its own)."""
        if self.model is None:
            return {}
        if self.source == "published":
            return {"model": self.model_label}
        return {"model": self.model_label, "model_name": self.card_name}

    def row(self, question_id: str) -> np.ndarray:
        return self.raw[self.question_ids.index(question_id)]

    def retrievable(self, dataset: Dataset, default_reference=None) -> np.ndarray:
        """Raw scores with NaN where the memory did not exist yet when the question was asked."""
        return np.where(dataset.visible(default_reference), self.raw, np.nan)


# ---------------------------------------------------------------------------------------------
# published: the numbers the seed write-up states (Qwen3-Embedding-0.6B, 256 dimensions)


@dataclass(frozen=True)
class PublishedScore:
    question: str
    memory: str
    raw: float
    stated: dict[str, float]  # the seed's own numbers for this pair (raw, bonus, final, maxima)
    table: str  # which table of the seed states them
    inferred: tuple[str, ...]  # what had to be inferred: memory identity, date, raw
    note: str = ""


_PUBLISHED_FIELDS = {"question", "memory", "raw", "stated", "table", "inferred", "note"}
_INFERABLE = ("memory", "date", "raw")


def load_published(dataset: Dataset) -> list[PublishedScore]:
    """Read ``published_scores.jsonl`` beside the dataset, checking every id it names."""
    if dataset.path is None or not (dataset.path / "published_scores.jsonl").is_file():
        raise MissingFileError(
            f"dataset {dataset.name!r} has no published_scores.jsonl: source 'published' is only "
            "available for the seed fixture (use --source embedded)"
        )
    problems: list[str] = []
    rows: list[PublishedScore] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, obj in read_jsonl(dataset.path / "published_scores.jsonl", problems):
        r = JsonRecord("published_scores.jsonl", lineno, obj, problems)
        r.unknown_fields(_PUBLISHED_FIELDS)
        q, m = r.text("question"), r.text("memory")
        if q in dataset.questions_left_out:  # another tenant's question, left out by the filter
            continue
        if q is not None and q not in dataset.question_index:
            r.problem("question", f"unknown question id {q!r}")
            q = None
        if m is not None and m not in dataset.memory_index:
            r.problem("memory", f"unknown memory id {m!r}")
            m = None
        raw = obj.get("raw")
        if not isinstance(raw, int | float) or isinstance(raw, bool) or not -1 <= raw <= 1:
            r.problem("raw", f"expected a cosine in [-1, 1], got {raw!r}")
            raw = None
        inferred = r.ids("inferred")
        for item in inferred:
            if item not in _INFERABLE:
                r.problem("inferred", f"{item!r} is not one of {', '.join(_INFERABLE)}")
        stated = obj.get("stated", {})
        if not isinstance(stated, dict):
            r.problem("stated", f"expected an object, got {stated!r}")
            stated = {}
        if q is not None and m is not None:
            if (q, m) in seen:
                r.problem("memory", f"pair ({q}, {m}) already given on line {seen[q, m]}")
                continue
            seen[q, m] = lineno
        if q is not None and m is not None and raw is not None:
            rows.append(
                PublishedScore(
                    q,
                    m,
                    float(raw),
                    dict(stated),
                    r.text("table") or "",
                    tuple(inferred),
                    r.text("note", required=False) or "",
                )
            )
    if problems:
        raise DatasetError([f"{dataset.path}/{p}" for p in problems])
    return rows


def published_scores(dataset: Dataset, options: ScoreOptions | None = None, embedder=None) -> ScoreTable:
    """The seed's published raw scores as a sparse table: unknown pairs are NaN."""
    rows = load_published(dataset)
    raw = np.full((len(dataset.questions), len(dataset.memories)), np.nan)
    qi, mi = dataset.question_index, dataset.memory_index
    for s in rows:
        raw[qi[s.question], mi[s.memory]] = s.raw
    meta_path = Path(dataset.path or ".") / "published.json"
    try:
        meta = load_json(meta_path)  # not UTF-8, invalid or nested JSON: one line
    except FileNotFoundError:
        raise MissingFileError(
            f"{meta_path}: missing: published scores need it to say which model made them"
        ) from None
    model = meta.get("model") if isinstance(meta, dict) else None
    if not isinstance(model, str) or not model.strip():
        raise InputError(
            f"{meta_path}: expected a JSON object whose 'model' names the model that made the scores, "
            f"got {'model ' + repr(model) if isinstance(meta, dict) else type(meta).__name__}"
        )
    return ScoreTable(
        dataset.question_ids,
        dataset.memory_ids,
        raw,
        "published",
        {"pairs": len(rows)},
        model=ModelIdentity(model, f"{model} (published scores)", {"engine": "published", "model": model}),
    )


@dataclass(frozen=True)
class ScoreOptions:
    """Where scores come from and how texts are embedded: the options every command, notebook and
    study takes (``--source``, ``--lang``, ``--model``, ``--embed-url`` ...), as one record."""

    source: str = "embedded"
    lang: str = "en"
    model: str | None = None  # None: the model an imported dataset records, else the default
    truncate_dim: int | None = None
    qdrant_path: str | None = None
    qdrant_url: str | None = None
    cache_dir: str | Path | None = None
    server: Any = None  # a memlab.embedding.server.ServerConfig: embed on a server first
    progress: bool = False


def dataset_model(dataset: Dataset, options: ScoreOptions) -> str | None:
    """The model new texts for this dataset are embedded with: the one its stored vectors record
    (another one named by ``--model`` or ``--embed-model`` is refused, naming both), else
    ``options.model`` (None: the default)."""
    if not dataset.vectors:
        return options.model
    from memlab.embedding.embedder import declared_same
    from memlab.embedding.engines import loads_locally, model_id

    made_with = dataset.vectors.get("model")
    if made_with is None:
        if options.model is None:
            raise InputError(
                f"dataset {dataset.name!r} keeps vectors from an unrecorded model: pass --model, "
                "the model that made them, to embed new texts alike"
            )
        return options.model
    if options.model is not None and model_id(options.model) != model_id(made_with):
        raise InputError(
            f"dataset {dataset.name!r} keeps vectors made with {made_with!r}, not {options.model!r} "
            f"(--model): new texts must be embedded with {made_with!r}"
        )
    server = options.server
    if server is None and not loads_locally(made_with):  # a server's own model: only it embeds alike
        raise InputError(
            f"dataset {dataset.name!r} keeps vectors made with {made_with!r} (dataset.json: vectors: "
            "model), a model memlab cannot load here (not one it knows, nor a model folder, nor in the "
            "Hugging Face cache): embed new texts with the server that made them, --embed-url URL "
            f"--embed-model {made_with}"
        )
    if server is not None and not declared_same(server, made_with):
        raise InputError(
            f"dataset {dataset.name!r} keeps vectors made with {made_with!r}, not the server's "
            f"{server.model!r} (--embed-model): new texts must be embedded with {made_with!r}"
        )
    return made_with


def dataset_embedder(dataset: Dataset, options: ScoreOptions):
    """The embedder of ``dataset_model`` (``memlab.embedding.embedder.Embedder``), through the
    server first when the options name one."""
    from memlab.embedding.embedder import make_embedder
    from memlab.embedding.engines import loads_locally

    model, server = dataset_model(dataset, options), options.server
    if server is not None and model is not None and dataset.vectors and not loads_locally(model):
        # the stored vectors came from the server's own model (``dataset_model`` held the names
        # equal): embedded there under its own identity, never checked against or replaced by a
        # local model, which does not exist here
        model, server = None, replace(server, model=model)
    return make_embedder(
        model,
        truncate_dim=options.truncate_dim,
        cache_dir=options.cache_dir,
        progress=options.progress,
        server=server,
    )


def check_scoring_store(options: ScoreOptions) -> None:
    """The store ``--qdrant-path``/``--qdrant-url`` names to score in: one of them, and a path that
    is a folder (or nothing yet: local mode makes it), refused in one line naming the flag."""
    from pathlib import Path

    if options.qdrant_path and options.qdrant_url:
        raise InputError(
            "--qdrant-path and --qdrant-url: give one of them (a local Qdrant folder, or a Qdrant server)"
        )
    path = Path(options.qdrant_path) if options.qdrant_path else None
    if path is not None and (path.exists() or path.is_symlink()) and not path.is_dir():
        raise InputError(
            f"--qdrant-path {path}: is not a folder: local mode keeps its collections in a folder "
            "(a new one is made where nothing is)"
        )


def embedded_scores(dataset: Dataset, options: ScoreOptions, embedder=None) -> ScoreTable:
    """Embed the dataset (cached) and score every pair as Qdrant's Cosine distance does
    (``cosine_table``), or, when the options name a Qdrant store, in a scratch collection there.

    ``embedder`` (default: ``dataset_embedder``) embeds; an imported dataset keeps its stored
    memory vectors and only its questions are embedded. The table records the model's identity
    and the vectors, and its details which path served each vector (``vectors``: cache, server,
    local)."""
    lang = options.lang
    if lang not in dataset.languages and (dataset.questions or not dataset.vectors):
        raise InputError(
            f"dataset {dataset.name!r} has no language {lang!r}; it has: {', '.join(dataset.languages)}"
        )
    check_scoring_store(options)  # before anything is embedded
    embedder = dataset_embedder(dataset, options) if embedder is None else embedder
    if dataset.vectors:  # imported: the memory vectors are kept as stored, only questions are embedded
        from memlab.datasets.schema import stored_vectors

        mem_vecs = stored_vectors(dataset)
        q_vecs = embedder.encode_queries([q.text(lang) for q in dataset.questions])
        if not dataset.questions:  # a store without questions (calibration): nothing to score
            q_vecs = np.zeros((0, mem_vecs.shape[1]), dtype=np.float32)
        if q_vecs.shape[1] != mem_vecs.shape[1]:
            raise InputError(
                f"questions embed to {q_vecs.shape[1]} dimensions with {embedder.model_id}, "
                f"but the stored memory vectors have {mem_vecs.shape[1]}"
            )
    else:
        mem_vecs = embedder.encode_documents([m.text(lang) for m in dataset.memories])
        q_vecs = embedder.encode_queries([q.text(lang) for q in dataset.questions])
    if dataset.questions and (options.qdrant_path or options.qdrant_url):
        from memlab.qdrant.store import MemoryStore  # (qdrant-client takes a second to import)

        # the user named a store to score in: a scratch collection of memlab's own there, removed
        # afterwards; nothing of what the store already holds is read, replaced or deleted
        store = MemoryStore.from_dataset(
            dataset, mem_vecs, lang=lang, path=options.qdrant_path, url=options.qdrant_url, scratch=True
        )
        try:
            raw = store.score_table(q_vecs)
        finally:
            store.drop()
    else:
        # Qdrant's Cosine score of every pair, without a store: one float32 product (the tests
        # hold it equal to local mode's and to the real engine's scores)
        raw = cosine_table(q_vecs, mem_vecs)
    return ScoreTable(
        dataset.question_ids,
        dataset.memory_ids,
        raw,
        "embedded",
        {
            "dim": int(mem_vecs.shape[1]),
            "lang": lang,
            "models_loaded": embedder.loads,
            **embedder.record(),
        },
        model=embedder.model,
        vectors=Vectors(np.asarray(mem_vecs), np.asarray(q_vecs)),
    )


# a source: (dataset, options, embedder or None) -> ScoreTable
ScoreSource = Callable[..., ScoreTable]
SOURCES: dict[str, ScoreSource] = {"published": published_scores, "embedded": embedded_scores}
EMBEDDING_SOURCES = ("embedded",)  # the sources whose scores come from an embedding model here


def available_sources(dataset: Dataset) -> tuple[str, ...]:
    """The score sources this dataset can use: ``published`` only where it ships its scores."""
    published = dataset.path is not None and (dataset.path / "published_scores.jsonl").is_file()
    return tuple(s for s in SOURCES if s != "published" or published)


def load_scores(
    source: str, dataset: Dataset, options: ScoreOptions | None = None, **fields: Any
) -> ScoreTable:
    """Scores from a named source (see ``SOURCES``); ``fields`` are ``ScoreOptions`` fields."""
    fn = lookup(SOURCES, source, "score source")
    options = replace(options or ScoreOptions(), source=source, **fields)
    return fn(dataset, options)


# ---------------------------------------------------------------------------------------------
# defaults that follow the model


@dataclass(frozen=True)
class ScoreDefaults:
    """The threshold and sweep ranges a command uses when the user gives none."""

    threshold: float
    threshold_range: str
    bonus_range: str
    basis: str  # where they come from


def _seed_defaults() -> ScoreDefaults:
    """The seed model's card (``memlab.embedding.models.SEED_MODEL``): its threshold is the spec's
    own default."""
    card = MODELS[SEED_MODEL]
    return ScoreDefaults(
        card.thresholds["en"],
        card.threshold_range,
        card.bonus_range,
        "from the seed's Qwen3-Embedding calibration",
    )


SEED_DEFAULTS = _seed_defaults()


def distribution_defaults(raw: np.ndarray) -> ScoreDefaults:
    """Defaults from a score table alone, for a model (or language) memlab has not measured: the
    threshold at the 98th percentile of the known raw cosines (rounded to 0.005; on seed16 it
    lands inside multilingual-e5-small's feasible interval in both languages), the threshold range
    from the median to the maximum plus 0.05 in 20 steps, the bonus from 0 to four standard
    deviations of the cosines in 100 steps."""
    vals = raw[np.isfinite(raw)]
    if vals.size < 2:
        return SEED_DEFAULTS
    p50, p98, top = (float(x) for x in np.percentile(vals, [50, 98, 100]))
    lo, hi = round(p50, 3), round(top + 0.05, 3)
    spread = max(0.001, round(4 * float(vals.std()), 3))
    return ScoreDefaults(
        round(round(p98 / 0.005) * 0.005, 4),
        f"{lo:g}:{hi:g}:{max(0.0005, round((hi - lo) / 20, 4)):g}",
        f"0:{spread:g}:{max(0.00001, round(spread / 100, 5)):g}",
        "from the distribution of this table's raw cosines (98th percentile)",
    )


def model_defaults(source: str, model: str | None, lang: str) -> ScoreDefaults | None:
    """The defaults known before any score is computed: the seed's for published scores, the
    model card's for a model memlab measured in this language (``memlab.embedding.models``);
    None when only the scores' own distribution can say (a model without a card)."""
    if source != "embedded":
        return SEED_DEFAULTS
    from memlab.embedding.models import model_card

    card = model_card(model)  # None: the default model
    threshold = card.thresholds.get(lang) if card else None
    if card is None or threshold is None:
        return None
    return ScoreDefaults(
        threshold,
        card.threshold_range or SEED_DEFAULTS.threshold_range,
        card.bonus_range or SEED_DEFAULTS.bonus_range,
        f"measured for {card.name} on seed16 (memlab.embedding.models.MODELS)",
    )


def score_defaults(scores: ScoreTable, dataset: Dataset | None = None) -> ScoreDefaults:
    """Published scores: the seed's 0.45. Embedded: the model card's measured threshold for the
    language (``model_defaults``), else values from the table's own distribution (the
    retrievable pairs only, when the dataset is given)."""
    name = scores.card_name
    if scores.source == "embedded" and name is None:  # a server's model of its own: no card
        known = None
    else:
        known = model_defaults(scores.source, name, scores.details.get("lang", "en"))
    if known is not None:
        return known
    return distribution_defaults(scores.retrievable(dataset) if dataset is not None else scores.raw)
