"""Every parameter memlab takes, declared once: name, type, default, range and help.

The notebooks' ``parameters`` cells (``parameters_cell``, ``make notebooks``), the CLI's options
(``memlab.app.cli.options.add_parameters``: flags, types, choices, defaults and help),
``memlab run``'s check of ``-p`` keys and the parameter tables of ``docs/parameters.md``
(``parameters_table``) all come from ``PARAMETERS``. Which notebook takes which parameter is
the notebook registry's (``memlab.app.notebooks``).

A parameter's ``default`` is what a notebook and a command use when nothing is given, the same
for both. A default that follows the scores (the threshold, the sweep's threshold and bonus
ranges: the model's, ``memlab.scores.problem.RetrievalProblem.defaults``) is declared empty
(None, or "" for a range), and ``empty`` says what applies then, with the model cards' numbers.
Where a command truly needs another default (``table``'s seed rule), it passes it to
``add_parameters`` at its call site, and its help says the value that applies.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlab.app.answer_parameters import ANSWER_PARAMETERS
from memlab.app.explain_parameters import EXPLAIN_PARAMETERS
from memlab.app.notebooks import NOTEBOOKS, takers
from memlab.core.errors import InputError
from memlab.core.grid import TAU_RANGE
from memlab.core.http import MAX_ATTEMPTS, MAX_TIMEOUT
from memlab.core.selection import DEFAULT_RULE
from memlab.core.spec import COMBINES, DECAYS, SPEC_BOUNDS, RetrievalSpec
from memlab.datasets.records import READ_DATE_FORMATS
from memlab.drift.arrays import DRIFT_MODEL
from memlab.drift.study import DEFAULT_BUDGETS
from memlab.embedding.models import DEFAULT_MODEL
from memlab.embedding.server import ENCODINGS, SERVER_ROLES, ServerConfig
from memlab.qdrant.presets import PRESETS
from memlab.studies.hybrid import RetrieverGrid
from memlab.studies.robustness import robustness

SPEC = RetrievalSpec()
TYPES: dict[str, Callable[[str], Any]] = {"str": str, "int": int, "float": float}


def _sources() -> list[str]:
    from memlab.scores.sources import SOURCES

    return list(SOURCES)


def _rerankers() -> list[str]:
    from memlab.core.rerank_stage import RERANKERS

    return list(RERANKERS)


def _selection_rules() -> list[str]:
    from memlab.core.selection import SELECTION_RULES

    return list(SELECTION_RULES)


@dataclass(frozen=True)
class Parameter:
    """One parameter. ``flag``: its CLI option (None: notebooks only); ``notebook``: whether the
    notebooks take it; ``choices``: the registry its value names; ``bounds``: the range the
    library checks (``memlab.core.numbers.check_number``), for the tables; ``empty``: what an
    empty value (None, or "" for text) means, for a parameter whose default is empty (the CLI's
    default is then None)."""

    name: str
    type: str  # str | int | float | list | bool
    default: Any
    help: str
    flag: str | None = None
    notebook: bool = True
    choices: Callable[[], Sequence[str]] | None = None
    bounds: Mapping[str, float] = field(default_factory=dict)
    group: str = ""
    empty: str = ""
    short: str = ""  # the notebook cell's comment, when the help's first clause will not do
    # the help as one command words it, by command name: the same option means a little more or
    # less there (verify's --collection defaults to the recorded one), said here, not at the call
    wording: Mapping[str, str] = field(default_factory=dict)

    def help_for(self, command: str | None) -> str:
        """The help as ``command`` words it (the declared help where it has no wording of its own)."""
        return self.wording.get(command or "", self.help)

    @property
    def comment(self) -> str:
        """The few words a notebook's parameters cell says (the whole help is docs/parameters.md):
        the help's first clause, without the values a registry or a model card fills in, so adding
        a decay or a model changes no notebook."""
        if self.short:
            return self.short
        head, sep, rest = self.help.partition(": ")
        prefix = head + sep if sep and self.group and " " not in head else ""
        body = rest if prefix else self.help
        return prefix + re.split(r"; | \(|: ", body, maxsplit=1)[0]

    @property
    def text(self) -> str:
        """The help, with what an empty value means."""
        return self.help + (f"; empty: {self.empty}" if self.empty else "")

    @property
    def range_text(self) -> str:
        """The allowed values in words (for the tables)."""
        if self.choices is not None:
            return ", ".join(self.choices())
        b = {k: v if isinstance(v, int) else f"{v:g}" for k, v in self.bounds.items()}  # 8388608, not 8.4e+06
        parts = [f">= {b['minimum']}"] if "minimum" in b else []
        parts += [f"> {b['above']}"] if "above" in b else []
        parts += [f"<= {b['maximum']}"] if "maximum" in b else []
        return " and ".join(parts)


def _model_thresholds() -> str:
    """The thresholds that apply when none is given, from the model cards and the seed."""
    from memlab.embedding.models import DEFAULT_MODEL, model_card
    from memlab.scores.sources import SEED_DEFAULTS

    card = model_card(DEFAULT_MODEL)
    words = {"en": "English", "ja": "Japanese"}
    each = ", ".join(f"{v:g} {words.get(lang, lang)}" for lang, v in card.thresholds.items())
    return f"the model's ({each} for {card.name}; {SEED_DEFAULTS.threshold:g} for published scores)"


def _model_ranges(kind: str) -> str:
    """The sweep range of the threshold or the bonus that applies when none is given."""
    from memlab.embedding.models import MODELS
    from memlab.scores.sources import SEED_DEFAULTS

    each = "; ".join(
        f"{getattr(c, kind)} for {c.name}" for c in MODELS.values() if getattr(c, kind) and c.thresholds
    )
    return f"the model's range ({each}; {getattr(SEED_DEFAULTS, kind)} for published scores)"


def _default(fn: Callable, name: str) -> Any:
    """A library function's own default for its argument ``name``: the registry restates none."""
    return inspect.signature(fn).parameters[name].default


def _axis(values: Sequence[float]) -> str:
    """A library grid's axis as the comma list a range parameter writes."""
    return ",".join(f"{v:g}" for v in values)


def _spec(name: str, flag: str, help: str, type: str) -> Parameter:
    return Parameter(name, type, getattr(SPEC, name), help, flag, bounds=SPEC_BOUNDS[name], group="spec")


PARAMETERS: tuple[Parameter, ...] = (
    # scores: where they come from, which model embeds
    Parameter(
        "source",
        "str",
        "embedded",
        "score source: embedded (the texts, embedded) or published (the seed's numbers)",
        "--source",
        choices=_sources,
        group="scores",
    ),
    Parameter(
        "lang",
        "str",
        "en",
        "text language to embed: en or ja",
        "--lang",
        group="scores",
        wording={
            "calibrate": "probe language: en or ja (default: en, or the dataset's when it has no English)"
        },
    ),
    Parameter(
        "model",
        "str",
        "",
        "embedding model name or folder; empty: the model an imported dataset records, else "
        f"{DEFAULT_MODEL} (07_drift: {DRIFT_MODEL})",
        "--model",
        group="scores",
        wording={
            "calibrate": "embedding model: the one the stored vectors were made with (a dataset's recorded "
            f"model by default), else what embeds the memories and the probes (default: {DEFAULT_MODEL})"
        },
    ),
    Parameter(
        "embed_url",
        "str",
        "",
        "embedding server URL (OpenAI-compatible), tried first; empty: the local model only",
        "--embed-url",
        group="server",
    ),
    Parameter(
        "embed_model",
        "str",
        "",
        "model asked of the server; empty: the local model's name (which it must serve)",
        "--embed-model",
        group="server",
    ),
    Parameter(
        "dataset",
        "str",
        "seed16",
        "packaged dataset name or dataset folder",
        "--dataset",
        group="scores",
        wording={"calibrate": "dataset name or folder"},
    ),
    Parameter(
        "truncate_dim",
        "int",
        None,
        "truncate embeddings to this many dimensions (then L2-normalise)",
        "--truncate-dim",
        notebook=False,
        group="scores",
        wording={"calibrate": "truncate embeddings (then L2-normalise)"},
    ),
    Parameter(
        "qdrant_path",
        "str",
        None,
        "score in this local Qdrant folder (a scratch collection of memlab's own, removed after)",
        "--qdrant-path",
        notebook=False,
        group="scores",
        wording={
            "calibrate": "local Qdrant folder holding --collection",
            "verify": "local Qdrant folder holding --collection (qdrant-client's local mode)",
        },
    ),
    Parameter(
        "qdrant_url",
        "str",
        None,
        "score on this Qdrant server (a scratch collection of memlab's own, removed after)",
        "--qdrant-url",
        notebook=False,
        group="scores",
        wording={
            "calibrate": "Qdrant server holding --collection",
            "verify": "Qdrant server holding --collection (searched exactly)",
        },
    ),
    Parameter(
        "cache_dir",
        "str",
        None,
        "embedding cache (empty: $MEMLAB_CACHE_DIR or ~/.cache/memlab)",
        "--cache-dir",
        notebook=False,
        group="scores",
        wording={"calibrate": "embedding cache (default: $MEMLAB_CACHE_DIR or ~/.cache/memlab)"},
    ),
    Parameter(
        "embed_api_key_env",
        "str",
        ServerConfig.api_key_env,
        "environment variable holding the server's API key (sent as Bearer, never recorded)",
        "--embed-api-key-env",
        notebook=False,
        group="server",
    ),
    Parameter(
        "embed_roles",
        "str",
        ServerConfig.roles,
        "how the query/document role reaches the server: an input_type field, an E5 "
        "'query: '/'passage: ' prefix memlab adds, or none",
        "--embed-roles",
        notebook=False,
        choices=lambda: list(SERVER_ROLES),
        group="server",
    ),
    Parameter(
        "embed_encoding",
        "str",
        ServerConfig.encoding,
        "how the server sends vectors",
        "--embed-encoding",
        notebook=False,
        choices=lambda: list(ENCODINGS),
        group="server",
    ),
    Parameter(
        "embed_batch",
        "int",
        ServerConfig.batch_size,
        "texts per request",
        "--embed-batch",
        notebook=False,
        bounds={"minimum": 1},
        group="server",
    ),
    Parameter(
        "embed_timeout",
        "float",
        ServerConfig.timeout,
        "seconds per request",
        "--embed-timeout",
        notebook=False,
        bounds={"above": 0, "maximum": MAX_TIMEOUT},
        group="server",
    ),
    Parameter(
        "embed_attempts",
        "int",
        ServerConfig.attempts,
        f"tries per request, backoff {ServerConfig.backoff:g} s doubling",
        "--embed-attempts",
        notebook=False,
        bounds={"minimum": 1, "maximum": MAX_ATTEMPTS},
        group="server",
    ),
    Parameter(
        "embed_fallback",
        "bool",
        ServerConfig.fallback,
        "stop when the embedding server fails (by default memlab falls back to the local model, "
        "when it is the same model)",
        "--no-embed-fallback",
        notebook=False,
        group="server",
    ),
    # the spec
    _spec("bonus", "--bonus", "recency bonus at age 0 (cosine units)", "float"),
    _spec(
        "tau_days", "--tau", "recency decay constant (days): the decay's weight is 1/e at this age", "float"
    ),
    Parameter(
        "threshold",
        "float",
        None,
        "post-bonus score a memory needs to be injected (inclusive)",
        "--threshold",
        bounds=SPEC_BOUNDS["threshold"],
        group="spec",
        empty=_model_thresholds(),
    ),
    _spec("candidates", "--candidates", "raw nearest neighbours fetched before the re-sort", "int"),
    _spec("inject", "--inject", "most memories injected into the prompt", "int"),
    # MMR (Qdrant's maximal marginal relevance, before the bonus): off unless a pool is given
    Parameter(
        "mmr_pool",
        "int",
        SPEC.mmr_pool,
        "MMR's pool: the raw nearest neighbours Qdrant's mmr diversifies down to --candidates "
        "(0: no MMR stage)",
        "--mmr-pool",
        bounds=SPEC_BOUNDS["mmr_pool"],
        group="mmr",
        short="MMR: raw neighbours diversified down to candidates (0: no MMR)",
    ),
    Parameter(
        "diversity",
        "float",
        SPEC.diversity,
        "MMR's diversity (Qdrant's Mmr.diversity, lambda = 1 - diversity): 0 picks by relevance "
        "alone, 1 by distance from the memories already picked; needs --mmr-pool and vectors",
        "--diversity",
        bounds=SPEC_BOUNDS["diversity"],
        group="mmr",
        short="MMR: 0 picks by relevance alone, 1 by distance from earlier picks",
    ),
    Parameter(
        "decay",
        "str",
        SPEC.decay,
        "recency decay family, weight 1 at age 0 and 1/e at tau_days: "
        + "; ".join(f"{d.name} {d.title.format(tau='tau')}" for d in DECAYS.values()),
        "--decay",
        choices=lambda: list(DECAYS),
        group="family",
    ),
    Parameter(
        "combine",
        "str",
        SPEC.combine,
        "how the bonus enters: " + "; ".join(f"{c.name} {c.formula}" for c in COMBINES.values()),
        "--combine",
        choices=lambda: list(COMBINES),
        group="family",
    ),
    # the collection: tenant filter and shards (memlab.qdrant.sharding.Scope)
    Parameter(
        "filters",
        "list",
        [],
        "tenant filter: key=value on a memory's payload (repeatable: all must hold); in the exported "
        "query a must condition beside the date cut-off",
        "--filter",
        group="collection",
    ),
    Parameter(
        "shards",
        "int",
        1,
        "shards the collection has, points placed by Qdrant's hash of the point id: each shard's top "
        "candidates make the pool",
        "--shards",
        bounds={"minimum": 1, "maximum": 1024},
        group="collection",
    ),
    Parameter(
        "shard_key",
        "str",
        "",
        "custom sharding: the payload field naming each memory's shard key",
        "--shard-key",
        group="collection",
        empty="Qdrant's default sharding (--shards)",
    ),
    # a Qdrant collection read as it is (import-qdrant, and calibrate, explain, spec and verify,
    # which read one as import-qdrant does or write the query for one)
    Parameter(
        "collection",
        "str",
        None,
        "the Qdrant collection holding the memories",
        "--collection",
        notebook=False,
        wording={
            "explain": "the collection holding the memories",
            "spec": "collection name, for --format setup",
            "verify": "the collection the dataset was imported from (default: the one dataset.json records)",
        },
    ),
    Parameter(
        "preset",
        "str",
        None,
        "the payload layout a library writes: "
        + "; ".join(
            f"{p.name}: text {p.text_field}, date {p.date_field}, user {p.user_field}"
            for p in PRESETS.values()
        )
        + " (docs/integrations.md)",
        "--preset",
        notebook=False,
        choices=lambda: sorted(PRESETS),
    ),
    Parameter(
        "date_field",
        "str",
        None,
        "payload field with the memory's date; needed without --preset",
        "--date-field",
        notebook=False,
        wording={
            "import-qdrant": "payload field with the memory's date; dots step into objects (metadata.date); "
            "needed without --preset",
            "spec": "payload field with the memory's date (default: date)",
        },
    ),
    Parameter(
        "text_field",
        "str",
        None,
        "payload field with the memory's text; needed without --preset",
        "--text-field",
        notebook=False,
    ),
    Parameter(
        "vector_name",
        "str",
        None,
        "which named vector (if the collection has several)",
        "--vector-name",
        notebook=False,
        wording={"spec": "the named vector to search (the query's `using`)"},
    ),
    Parameter(
        "id_field",
        "str",
        None,
        "payload field with your own memory id (default: the point id)",
        "--id-field",
        notebook=False,
        wording={"spec": "payload field with your memory id (default: memory_id)"},
    ),
    Parameter(
        "date_format",
        "str",
        "auto",
        "how the date is stored (default: auto: ISO strings, or numbers as epoch seconds)",
        "--date-format",
        notebook=False,
        choices=lambda: list(READ_DATE_FORMATS),
        # memlab spec's --date-format is not this one: the formats a query writes (no auto)
        wording={"explain": "how the collection stores the date"},
    ),
    # the sweep's grid
    Parameter(
        "bonus_range",
        "str",
        "",
        "sweep: bonus values, start:stop:step or a comma list",
        "--bonus",
        group="grid",
        empty=_model_ranges("bonus_range"),
    ),
    Parameter("tau_range", "str", TAU_RANGE, "sweep: tau_days values", "--tau", group="grid"),
    Parameter(
        "threshold_range",
        "str",
        "",
        "sweep: threshold values",
        "--threshold",
        group="grid",
        empty=_model_ranges("threshold_range"),
    ),
    Parameter(
        "select",
        "str",
        DEFAULT_RULE,
        "sweep: selection rule among the feasible configurations; when none is feasible, max-utility",
        "--select",
        choices=_selection_rules,
        group="grid",
    ),
    Parameter(
        "nohit_weight",
        "float",
        1.0,
        "sweep: the weight of a memory injected on a no-hit question in max-utility's utility: current "
        "memories injected - stale injections - wrong injections - nohit_weight x no-hit injections",
        "--nohit-weight",
        bounds={"minimum": 0},
        group="grid",
        short="sweep: max-utility's weight of a no-hit injection",
    ),
    Parameter(
        "spec_file",
        "str",
        "",
        "a tuned spec (memlab sweep --save): its spec, model and dataset; spec values given beside it "
        "override the file's",
        "--spec",
        group="spec",
        empty="no file: the spec values and their defaults",
    ),
    # studies
    Parameter(
        "n_range",
        "str",
        "",
        "scale: memory counts N to measure (each counts the dataset's own memories)",
        "--n",
        group="studies",
        empty="the dataset's own memory count, then each of 100, 1000, 10000, 100000, 1000000 above it",
    ),
    Parameter(
        "pool",
        "int",
        5000,
        "scale: real embedded distractors (cached after the first run)",
        "--pool",
        bounds={"minimum": 1},
        group="studies",
    ),
    Parameter(
        "boot",
        "int",
        _default(robustness, "n_boot"),
        "robustness, drift, answers and 08's held-out stages: bootstrap resamples (of each kind)",
        "--boot",
        bounds={"minimum": 1},
        group="studies",
        short="bootstrap resamples (of each kind)",
    ),
    Parameter(
        "seed",
        "int",
        0,
        "random seed: scale, robustness, drift, answers (the chat's and the bootstrap's)",
        "--seed",
        bounds={"minimum": 0},
        group="studies",
    ),
    Parameter(
        "hybrid_datasets",
        "str",
        "seed16-time,daily-lunch",
        "hybrid: datasets to compare the retrievers on (comma list)",
        group="hybrid",
    ),
    Parameter(
        "retrievers",
        "str",
        "",
        "hybrid: retrievers to compare (comma list); empty for all",
        "--retrievers",
        group="hybrid",
    ),
    Parameter(
        "alpha_range",
        "str",
        "0:1:0.1",
        "hybrid: weight of the vector route in weighted fusion",
        "--alpha",
        group="hybrid",
    ),
    Parameter(
        "rrf_k_range",
        "str",
        _axis(RetrieverGrid.rrf_ks),
        "hybrid: RRF k values, score 1/(k + rank)",
        "--rrf-k",
        group="hybrid",
    ),
    Parameter(
        "hybrid_bonus_range",
        "str",
        "0:0.3:0.01",
        "hybrid: recency bonus values of decay retrievers",
        "--bonus",
        group="hybrid",
    ),
    Parameter(
        "hybrid_tau_range",
        "str",
        _axis(RetrieverGrid.tau_days),
        "hybrid: tau_days values of decay retrievers",
        "--tau",
        group="hybrid",
    ),
    Parameter(
        "streams",
        "int",
        400,
        "drift: held-out streams, the first N seeds of seed_range",
        "--streams",
        bounds={"minimum": 1},
        group="drift",
    ),
    Parameter(
        "seed_range",
        "str",
        "1000:1400",
        "drift: held-out seeds A:B (B excluded)",
        "--seed-range",
        group="drift",
    ),
    Parameter(
        "tune_range",
        "str",
        "0:200",
        "drift: tuning seeds C:D, disjoint from seed_range",
        "--tune-range",
        group="drift",
    ),
    Parameter(
        "budgets",
        "str",
        _axis(DEFAULT_BUDGETS),
        "drift: token budgets, a comma list",
        "--budgets",
        group="drift",
    ),
    Parameter(
        "benchmark_file",
        "str",
        "",
        "benchmark: LoCoMo or LongMemEval JSON you downloaded; empty: 08 does nothing",
        group="benchmark",
    ),
    Parameter(
        "benchmark_granularity",
        "str",
        "",
        "benchmark: observation|turn|session (LoCoMo), session|turn; empty: default",
        group="benchmark",
    ),
    Parameter(
        "rerank_url",
        "str",
        "",
        "benchmark: the reranker's URL for the held-out + rerank; empty: no + rerank",
        group="benchmark",
    ),
    Parameter(
        "reranker",
        "str",
        "chat",
        "benchmark: chat (the chat model's P(yes)) or endpoint (a /v1/rerank endpoint)",
        choices=_rerankers,
        group="benchmark",
        short="benchmark: chat or endpoint",
    ),
    Parameter(
        "rerank_subset",
        "int",
        10,
        "benchmark: + rerank on N questions of each conversation, drawn with seed",
        bounds={"minimum": 1},
        group="benchmark",
    ),
    *(Parameter(**fields) for fields in (*ANSWER_PARAMETERS, *EXPLAIN_PARAMETERS)),
    Parameter(
        "out_dir", "str", "results/notebook", "folder for this notebook's tables and figures", group="output"
    ),
    Parameter(
        "fig_formats",
        "list",
        ["html", "png"],
        "figure formats: html always; png and svg need Chromium",
        group="output",
    ),
)
BY_NAME: dict[str, Parameter] = {p.name: p for p in PARAMETERS}
NOTEBOOK_PARAMETERS: tuple[Parameter, ...] = tuple(p for p in PARAMETERS if p.notebook)

# the groups commands take together, and their argparse titles
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "scores": (
        "scores",
        ("source", "dataset", "lang", "model", "truncate_dim", "qdrant_path", "qdrant_url", "cache_dir"),
    ),
    "server": (
        "embedding server (OpenAI-compatible POST /v1/embeddings, tried first; the local model "
        "is the fallback only when the server is the same model)",
        (
            "embed_url",
            "embed_model",
            "embed_api_key_env",
            "embed_roles",
            "embed_encoding",
            "embed_batch",
            "embed_timeout",
            "embed_attempts",
            "embed_fallback",
        ),
    ),
    "spec": ("retrieval spec", ("spec_file", "bonus", "tau_days", "threshold", "candidates", "inject")),
    "family": ("decay family", ("decay", "combine")),
    "mmr": ("MMR stage (Qdrant's mmr, before the bonus)", ("mmr_pool", "diversity")),
    "collection": ("collection: tenant filter and shards", ("filters", "shards", "shard_key")),
}


def parameter(name: str) -> Parameter:
    from memlab.core.registry import lookup

    return lookup(BY_NAME, name, "parameter")


# ---------------------------------------------------------------------------------------------
# notebooks


def literal(value: Any) -> str:
    """A default as the cell writes it (ruff's style: double-quoted strings)."""
    return json.dumps(value) if isinstance(value, str | list) else repr(value)


def notebook_parameters(name: str) -> tuple[Parameter, ...]:
    """The parameters one notebook takes, in declaration order (every notebook parameter, for a
    notebook memlab does not know)."""
    nb = NOTEBOOKS.get(name)
    return (
        NOTEBOOK_PARAMETERS
        if nb is None
        else tuple(p for p in NOTEBOOK_PARAMETERS if p.name in nb.parameters)
    )


def parameters_cell(notebook: str | None = None) -> str:
    """The source of a notebook's ``parameters`` cell (every parameter when none is named)."""
    params = NOTEBOOK_PARAMETERS if notebook is None else notebook_parameters(notebook)
    return "\n".join(f"{p.name}: {p.type} = {literal(p.default)}  # {p.comment}" for p in params)


def defaults(notebook: str | None = None) -> dict[str, Any]:
    params = NOTEBOOK_PARAMETERS if notebook is None else notebook_parameters(notebook)
    return {p.name: p.default for p in params}


def rewrite_parameters_cell(script: str, notebook: str | None = None) -> str:
    """A jupytext percent script with its ``parameters`` cell replaced by the current definition."""
    marker = '# %% tags=["parameters"]\n'
    head, found, rest = script.partition(marker)
    if not found:
        raise InputError("no '# %% tags=[\"parameters\"]' cell")
    _, sep, tail = rest.partition("\n# %%")
    if not sep:
        raise InputError("the parameters cell is the last cell; expected code after it")
    return head + marker + parameters_cell(notebook) + "\n\n" + "# %%" + tail


def parameters_table() -> str:
    """The parameters as a Markdown table: name, type, default, allowed values, CLI flag, the
    notebooks that take it, and what it means (``docs/parameters.md``)."""
    rows = [
        "| parameter | type | default | allowed | CLI flag | notebooks | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in PARAMETERS:
        nbs = ", ".join(n[:2] for n in takers(p.name)) if p.notebook else "-"
        default = "-" if p.default in (None, "") else f"`{literal(p.default)}`"
        rows.append(
            f"| `{p.name}` | {p.type} | {default} | {p.range_text or '-'} | "
            f"{'`' + p.flag + '`' if p.flag else '-'} | {nbs or '-'} | {p.text.replace('|', '/')} |"
        )
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m memlab.app.parameters notebooks/*.py``: rewrite each script's parameters cell.

    Run ``jupytext --sync`` on the scripts afterwards (``make notebooks`` does both) so the
    .ipynb files follow and keep their cell ids.
    """
    import sys
    from pathlib import Path

    from memlab.core.files import atomic_write_text

    for name in sys.argv[1:] if argv is None else argv:
        path = Path(name)
        atomic_write_text(path, rewrite_parameters_cell(path.read_text(encoding="utf-8"), path.stem))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
