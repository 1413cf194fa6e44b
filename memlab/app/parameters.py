"""Every parameter memlab takes, declared once: name, type, default, range and help.

The notebooks' ``parameters`` cells (``parameters_cell``, ``make notebooks``), the CLI's options
(``add_parameters``: flags, types, choices, defaults and help), ``memlab run``'s check of ``-p``
keys and the parameter tables of ``docs/parameters.md`` (``parameters_table``) all come from
``PARAMETERS``. Which notebook takes which parameter is the notebook registry's
(``memlab.app.notebooks``).

A parameter's ``default`` is what a notebook and a command use when nothing is given. Where a
command's default is another (its own grid resolution, say), the command passes it to
``add_parameters`` at its call site, and the help says so.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlab.app.answer_parameters import ANSWER_PARAMETERS
from memlab.core.errors import InputError
from memlab.core.spec import COMBINES, DECAYS, SPEC_BOUNDS, RetrievalSpec

SPEC = RetrievalSpec()
TYPES: dict[str, Callable[[str], Any]] = {"str": str, "int": int, "float": float}


def _sources() -> list[str]:
    from memlab.scores.sources import SOURCES

    return list(SOURCES)


def _selection_rules() -> list[str]:
    from memlab.core.selection import SELECTION_RULES

    return list(SELECTION_RULES)


def _server_roles() -> list[str]:
    from memlab.embedding.server import SERVER_ROLES

    return list(SERVER_ROLES)


def _encodings() -> list[str]:
    from memlab.embedding.server import ENCODINGS

    return list(ENCODINGS)


@dataclass(frozen=True)
class Parameter:
    """One parameter. ``flag``: its CLI option (None: notebooks only); ``notebook``: whether the
    notebooks take it; ``choices``: the registry its value names; ``bounds``: the range the
    library checks (``memlab.core.numbers.check_number``), for the tables; ``empty``: how a
    notebook says "none" (the CLI's default is then None)."""

    name: str
    type: str  # str | int | float | list | bool
    default: Any
    help: str
    flag: str | None = None
    notebook: bool = True
    choices: Callable[[], Sequence[str]] | None = None
    bounds: Mapping[str, float] = field(default_factory=dict)
    group: str = ""

    @property
    def range_text(self) -> str:
        """The allowed values in words (for the tables)."""
        if self.choices is not None:
            return ", ".join(self.choices())
        b = self.bounds
        parts = [f">= {b['minimum']:g}"] if "minimum" in b else []
        parts += [f"> {b['above']:g}"] if "above" in b else []
        parts += [f"<= {b['maximum']:g}"] if "maximum" in b else []
        return " and ".join(parts)


def _spec(name: str, flag: str, help: str, type: str) -> Parameter:
    return Parameter(name, type, getattr(SPEC, name), help, flag, bounds=SPEC_BOUNDS[name], group="spec")


PARAMETERS: tuple[Parameter, ...] = (
    # scores: where they come from, which model embeds
    Parameter(
        "source",
        "str",
        "published",
        "score source: published (the seed's numbers) or embedded",
        "--source",
        choices=_sources,
        group="scores",
    ),
    Parameter("lang", "str", "en", "text language to embed: en or ja", "--lang", group="scores"),
    Parameter(
        "model",
        "str",
        "",
        "embedding model name or folder; empty: the model an imported dataset records, else "
        "multilingual-e5-small (07_drift: all-MiniLM-L6-v2)",
        "--model",
        group="scores",
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
        "dataset", "str", "seed16", "packaged dataset name or dataset folder", "--dataset", group="scores"
    ),
    Parameter(
        "truncate_dim",
        "int",
        None,
        "truncate embeddings to this many dimensions (then L2-normalise)",
        "--truncate-dim",
        notebook=False,
        group="scores",
    ),
    Parameter(
        "qdrant_path",
        "str",
        None,
        "score in this local Qdrant folder (a scratch collection of memlab's own, removed after)",
        "--qdrant-path",
        notebook=False,
        group="scores",
    ),
    Parameter(
        "qdrant_url",
        "str",
        None,
        "score on this Qdrant server (a scratch collection of memlab's own, removed after)",
        "--qdrant-url",
        notebook=False,
        group="scores",
    ),
    Parameter(
        "cache_dir",
        "str",
        None,
        "embedding cache (empty: $MEMLAB_CACHE_DIR or ~/.cache/memlab)",
        "--cache-dir",
        notebook=False,
        group="scores",
    ),
    Parameter(
        "embed_api_key_env",
        "str",
        None,
        "environment variable holding the server's API key (sent as Bearer, never recorded)",
        "--embed-api-key-env",
        notebook=False,
        group="server",
    ),
    Parameter(
        "embed_roles",
        "str",
        "input-type",
        "how the query/document role reaches the server: an input_type field, an E5 "
        "'query: '/'passage: ' prefix memlab adds, or none",
        "--embed-roles",
        notebook=False,
        choices=_server_roles,
        group="server",
    ),
    Parameter(
        "embed_encoding",
        "str",
        "float",
        "how the server sends vectors",
        "--embed-encoding",
        notebook=False,
        choices=_encodings,
        group="server",
    ),
    Parameter("embed_batch", "int", 32, "texts per request", "--embed-batch", notebook=False, group="server"),
    Parameter(
        "embed_timeout",
        "float",
        30.0,
        "seconds per request",
        "--embed-timeout",
        notebook=False,
        group="server",
    ),
    Parameter(
        "embed_attempts",
        "int",
        3,
        "tries per request, backoff 0.5 s doubling",
        "--embed-attempts",
        notebook=False,
        group="server",
    ),
    Parameter(
        "embed_fallback",
        "bool",
        True,
        "fall back to the local model when the server fails, if it is the same model "
        "(--no-embed-fallback: stop instead)",
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
        SPEC.threshold,
        "post-bonus score a memory needs to be injected (inclusive); commands default to the model's "
        "(0.845 English, 0.875 Japanese for multilingual-e5-small; 0.45 for published scores)",
        "--threshold",
        bounds=SPEC_BOUNDS["threshold"],
        group="spec",
    ),
    _spec("candidates", "--candidates", "raw nearest neighbours fetched before the re-sort", "int"),
    _spec("inject", "--inject", "most memories injected into the prompt", "int"),
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
    # the sweep's grid
    Parameter(
        "bonus_range",
        "str",
        "0:0.1:0.001",
        "sweep: bonus values, start:stop:step or a comma list",
        "--bonus",
        group="grid",
    ),
    Parameter("tau_range", "str", "1:60:1", "sweep: tau_days values", "--tau", group="grid"),
    Parameter(
        "threshold_range",
        "str",
        "0.40:0.50:0.005",
        "sweep: threshold values (commands default to the model's range: 0.80:0.90:0.005 for "
        "multilingual-e5-small, 0.40:0.50:0.005 for published scores)",
        "--threshold",
        group="grid",
    ),
    Parameter(
        "select",
        "str",
        "max-margin",
        "sweep: selection rule",
        "--select",
        choices=_selection_rules,
        group="grid",
    ),
    # studies
    Parameter(
        "n_range",
        "str",
        "16,100,1000,10000,100000,1000000",
        "scale: memory counts N to measure",
        "--n",
        group="studies",
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
        200,
        "robustness, drift and answers: bootstrap resamples (of each kind)",
        "--boot",
        bounds={"minimum": 1},
        group="studies",
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
        "1,2,10,60",
        "hybrid: RRF k values, score 1/(k + rank)",
        "--rrf-k",
        group="hybrid",
    ),
    Parameter(
        "hybrid_bonus_range",
        "str",
        "0:0.3:0.01",
        "hybrid: recency bonus values of decay retrievers",
        group="hybrid",
    ),
    Parameter(
        "hybrid_tau_range",
        "str",
        "1,3,7,14,30,60",
        "hybrid: tau_days values of decay retrievers",
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
        "16,32,64,128,256,512",
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
        "benchmark: observation|turn (LoCoMo) or session|turn; empty: default",
        group="benchmark",
    ),
    # answers: the chat model, the conditions, the judge (memlab.app.answer_parameters)
    *(Parameter(**fields) for fields in ANSWER_PARAMETERS),
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
    "spec": ("retrieval spec", ("bonus", "tau_days", "threshold", "candidates", "inject")),
    "family": ("decay family", ("decay", "combine")),
}


def parameter(name: str) -> Parameter:
    from memlab.core.registry import lookup

    return lookup(BY_NAME, name, "parameter")


def add_parameters(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    names: Iterable[str],
    *,
    defaults: Mapping[str, Any] | None = None,
    lists: Iterable[str] = (),
    help_extra: Mapping[str, str] | None = None,
) -> None:
    """Add the declared parameters ``names`` as options: the flag, the type, the choices (unless
    the parameter is in ``lists``: a comma list, checked by whoever reads it), the default
    (``defaults`` overrides the declared one for this command; an empty string is None) and the
    help, with the default that applies."""
    defaults = defaults or {}
    lists, extra = set(lists), help_extra or {}
    for name in names:
        p = parameter(name)
        if p.flag is None:
            raise InputError(f"parameter {name!r} has no command-line flag")
        default = defaults.get(name, p.default)
        default = None if default == "" else default
        text = p.help + (f"; {extra[name]}" if name in extra else "")
        if p.type == "bool":  # a --no-X flag that turns a default-on setting off
            parser.add_argument(p.flag, dest=name, action="store_false", help=text)
            continue
        choices = None if p.choices is None or name in lists else list(p.choices())
        kind = str if name in lists else TYPES.get(p.type, str)
        shown = f" (default: {default})" if default is not None else ""
        if name in lists and p.choices is not None:
            text = f"comma list of: {', '.join(p.choices())}; {text}"
        parser.add_argument(
            p.flag,
            dest=name,
            type=kind,
            default=default,
            choices=choices,
            help=(text + shown).replace("%", "%%"),
        )


def add_group(
    parser: argparse.ArgumentParser, group: str, *, omit: Iterable[str] = (), **options: Any
) -> None:
    """One declared group of options, under its title (``omit`` leaves some out)."""
    title, names = GROUPS[group]
    g = parser.add_argument_group(title)
    add_parameters(g, [n for n in names if n not in set(omit)], **options)


# ---------------------------------------------------------------------------------------------
# notebooks


def literal(value: Any) -> str:
    """A default as the cell writes it (ruff's style: double-quoted strings)."""
    return json.dumps(value) if isinstance(value, str | list) else repr(value)


def parameters_cell(notebook: str | None = None) -> str:
    """The source of a notebook's ``parameters`` cell (every parameter when none is named)."""
    from memlab.app.notebooks import notebook_parameters

    params = NOTEBOOK_PARAMETERS if notebook is None else notebook_parameters(notebook)
    return "\n".join(f"{p.name}: {p.type} = {literal(p.default)}  # {p.help}" for p in params)


def defaults(notebook: str | None = None) -> dict[str, Any]:
    from memlab.app.notebooks import notebook_parameters

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
    from memlab.app.notebooks import takers

    rows = [
        "| parameter | type | default | allowed | CLI flag | notebooks | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in PARAMETERS:
        nbs = ", ".join(n[:2] for n in takers(p.name)) if p.notebook else "-"
        default = "-" if p.default in (None, "") else f"`{literal(p.default)}`"
        rows.append(
            f"| `{p.name}` | {p.type} | {default} | {p.range_text or '-'} | "
            f"{'`' + p.flag + '`' if p.flag else '-'} | {nbs or '-'} | {p.help.replace('|', '/')} |"
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
