"""The parameters every memlab notebook takes, in the order of its ``parameters`` cell.

One definition: the notebooks' cells are checked against it (papermill.inspect_notebook) by the
tests, and ``memlab run`` rejects a ``-p`` key that is not here.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from memlab.core.errors import InputError


class Parameter(NamedTuple):
    name: str
    type: str
    default: Any
    help: str


NOTEBOOK_PARAMETERS: tuple[Parameter, ...] = (
    Parameter("source", "str", "published", "score source: published (the seed's numbers) or embedded"),
    Parameter("lang", "str", "en", "text language to embed: en or ja"),
    Parameter(
        "model",
        "str",
        "",
        "embedding model name or folder; empty: multilingual-e5-small (07_drift: all-MiniLM-L6-v2)",
    ),
    Parameter(
        "embed_url",
        "str",
        "",
        "embedding server URL (OpenAI-compatible), tried first; empty: the local model only",
    ),
    Parameter(
        "embed_model",
        "str",
        "",
        "model asked of the server; empty: the local model's name (which it must serve)",
    ),
    Parameter("dataset", "str", "seed16", "packaged dataset name or dataset folder"),
    Parameter("bonus", "float", 0.05, "recency bonus at age 0 (cosine units)"),
    Parameter("tau_days", "float", 14.0, "recency decay constant (days)"),
    Parameter("decay", "str", "exp", "recency decay family: exp, gauss or lin (weight 1/e at tau_days)"),
    Parameter(
        "combine", "str", "add", "how the bonus enters: add (raw + bonus*w) or mult (raw * (1 + bonus*w))"
    ),
    Parameter("threshold", "float", 0.45, "post-bonus score a memory needs to be injected"),
    Parameter("candidates", "int", 8, "raw nearest neighbours fetched before the re-sort"),
    Parameter("inject", "int", 3, "most memories injected into the prompt"),
    Parameter("bonus_range", "str", "0:0.1:0.001", "sweep: bonus values, start:stop:step or a comma list"),
    Parameter("tau_range", "str", "1:60:1", "sweep: tau_days values"),
    Parameter("threshold_range", "str", "0.40:0.50:0.005", "sweep: threshold values"),
    Parameter(
        "select", "str", "max-margin", "sweep: selection rule (smallest-bonus, max-headroom, max-margin)"
    ),
    Parameter("n_range", "str", "16,100,1000,10000,100000,1000000", "scale: memory counts N to measure"),
    Parameter("pool", "int", 5000, "scale: real embedded distractors (cached after the first run)"),
    Parameter("boot", "int", 200, "robustness and drift: bootstrap resamples (of each kind)"),
    Parameter("seed", "int", 0, "scale, robustness and drift: random seed"),
    Parameter(
        "hybrid_datasets",
        "str",
        "seed16-time,daily-lunch",
        "hybrid: datasets to compare the retrievers on (comma list)",
    ),
    Parameter("retrievers", "str", "", "hybrid: retrievers to compare (comma list); empty for all"),
    Parameter("alpha_range", "str", "0:1:0.1", "hybrid: weight of the vector route in weighted fusion"),
    Parameter("rrf_k_range", "str", "1,2,10,60", "hybrid: RRF k values, score 1/(k + rank)"),
    Parameter("hybrid_bonus_range", "str", "0:0.3:0.01", "hybrid: recency bonus values of decay retrievers"),
    Parameter("hybrid_tau_range", "str", "1,3,7,14,30,60", "hybrid: tau_days values of decay retrievers"),
    Parameter("streams", "int", 400, "drift: held-out streams, the first N seeds of seed_range"),
    Parameter("seed_range", "str", "1000:1400", "drift: held-out seeds A:B (B excluded)"),
    Parameter("tune_range", "str", "0:200", "drift: tuning seeds C:D, disjoint from seed_range"),
    Parameter("budgets", "str", "16,32,64,128,256,512", "drift: token budgets, a comma list"),
    Parameter(
        "benchmark_file",
        "str",
        "",
        "benchmark: LoCoMo or LongMemEval JSON you downloaded; empty: 08 does nothing",
    ),
    Parameter(
        "benchmark_granularity",
        "str",
        "",
        "benchmark: observation|turn (LoCoMo) or session|turn; empty: default",
    ),
    Parameter("out_dir", "str", "results/notebook", "folder for this notebook's tables and figures"),
    Parameter(
        "fig_formats", "list", ["html", "png"], "figure formats: html always; png and svg need Chromium"
    ),
)


SPEC = ("bonus", "tau_days", "threshold", "candidates", "inject")
FAMILY = ("decay", "combine")  # the decay family, an axis of the sweep
SERVER = ("embed_url", "embed_model")
SCORES = ("source", "lang", "model", *SERVER, "dataset")
OUTPUT = ("out_dir", "fig_formats")
# the parameters each notebook takes, in NOTEBOOK_PARAMETERS order; its cell declares these only
NOTEBOOK_USES: dict[str, tuple[str, ...]] = {
    "01_reproduce": (*SCORES, *SPEC, *FAMILY, *OUTPUT),
    "02_sweep": (*SCORES, *SPEC, *FAMILY, "bonus_range", "tau_range", "threshold_range", "select", *OUTPUT),
    "03_tune": (*SCORES, *SPEC, *FAMILY, "bonus_range", "tau_range", "threshold_range", *OUTPUT),
    "04_scale": (*SCORES, *SPEC, "n_range", "pool", "seed", *OUTPUT),
    "05_robustness": (*SCORES, *SPEC, "boot", "seed", *OUTPUT),
    "06_hybrid_time": (
        *SCORES,
        "candidates",
        "inject",
        "hybrid_datasets",
        "retrievers",
        "alpha_range",
        "rrf_k_range",
        "hybrid_bonus_range",
        "hybrid_tau_range",
        *OUTPUT,
    ),
    "07_drift": ("model", *SERVER, "boot", "seed", "streams", "seed_range", "tune_range", "budgets", *OUTPUT),
    "08_benchmark": (
        "model",
        *SERVER,
        *SPEC,
        "bonus_range",
        "tau_range",
        "threshold_range",
        "select",
        "n_range",
        "pool",
        "seed",
        "benchmark_file",
        "benchmark_granularity",
        *OUTPUT,
    ),
}


def notebook_parameters(notebook: str) -> tuple[Parameter, ...]:
    """The parameters one notebook takes (every one, for a notebook memlab does not know)."""
    uses = NOTEBOOK_USES.get(notebook)
    return NOTEBOOK_PARAMETERS if uses is None else tuple(p for p in NOTEBOOK_PARAMETERS if p.name in uses)


def takers(name: str) -> list[str]:
    """The notebooks that take a parameter."""
    return [nb for nb, uses in NOTEBOOK_USES.items() if name in uses]


def literal(value: Any) -> str:
    """A default as the cell writes it (ruff's style: double-quoted strings)."""
    return json.dumps(value) if isinstance(value, str | list) else repr(value)


def parameters_cell(notebook: str | None = None) -> str:
    """The source of a notebook's ``parameters`` cell (every parameter when none is named)."""
    params = NOTEBOOK_PARAMETERS if notebook is None else notebook_parameters(notebook)
    return "\n".join(f"{p.name}: {p.type} = {literal(p.default)}  # {p.help}" for p in params)


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
