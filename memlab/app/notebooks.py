"""The notebooks, registered once: name, what each shows, the parameters it takes and what each of
its figures shows. ``memlab run`` (the default notebook list, batch checks), the parameters cells
(``make notebooks``), the results page's notes under each figure, the docs and the tests read it.

Adding a notebook: its ``notebooks/NN_name.py`` (jupytext, paired with the ``.ipynb`` by ``make
notebooks``) and one ``Notebook`` entry here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

from memlab.core.registry import lookup

SERVER = ("embed_url", "embed_model")
SCORES = ("source", "lang", "model", *SERVER, "dataset")
SPEC = ("bonus", "tau_days", "threshold", "candidates", "inject")
TUNED = ("spec_file",)  # a tuned spec (memlab sweep --save): the notebooks that apply one spec take it
FAMILY = ("decay", "combine")  # the decay family: every notebook that applies the spec takes it
SWEEP = ("bonus_range", "tau_range", "threshold_range")
OUTPUT = ("out_dir", "fig_formats")
CHAT = (
    "chat_url",
    "chat_model",
    "temperature",
    "max_tokens",
    "repeats",
    "questions",
    "concurrency",
    "conditions",
    "judge_url",
    "judge_model",
    "judge_format",
    "llm_judge",
    "store",
)


@dataclass(frozen=True)
class Notebook:
    name: str
    about: str
    parameters: tuple[str, ...]
    # what each figure shows; the first is the one the results page shows for the notebook
    figures: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))


def _nb(name: str, about: str, parameters: tuple[str, ...], **figures: str) -> Notebook:
    return Notebook(name, about, parameters, MappingProxyType(figures))


NOTEBOOKS: dict[str, Notebook] = {
    nb.name: nb
    for nb in (
        _nb(
            "01_reproduce",
            "the seed's tables, the reruns, the no-hit questions and the bonus curve",
            (*SCORES, *SPEC, *FAMILY, *TUNED, *OUTPUT),
            question_bars="Per question, its current memory (else the best candidate) before and after "
            "the bonus; the dashed line is the threshold a memory must reach to be injected.",
            bonus_curve="How much the recency bonus adds to a memory's cosine score as the memory ages.",
        ),
        _nb(
            "02_sweep",
            "feasibility and headroom over the grid (with an MMR stage or without), the exact feasible band "
            "and the chosen point",
            (*SCORES, *SPEC, "mmr_pool", "diversity", *FAMILY, *SWEEP, "select", "nohit_weight", *OUTPUT),
            feasibility="Where every criterion holds over bonus and tau (green), with the exact feasible "
            "band drawn and the chosen configuration starred.",
            headroom="How far the best unrelated memory stays under the threshold, over bonus and tau.",
            threshold_bonus="The threshold and the bonus together at the chosen tau: the feasible "
            "region in that plane.",
            chosen_bars="Per question at the chosen configuration: what reaches the threshold.",
        ),
        _nb(
            "03_tune",
            "the live tuning panel (sliders, bars, criteria, the injected prompt)",
            (*SCORES, *SPEC, *FAMILY, *SWEEP, *TUNED, *OUTPUT),
            margins="Per question at the panel's starting values: how far it stays from the threshold on "
            "the side it needs (its current memory above, a no-hit question's best candidate below), "
            "orange where it does not get what it should and why; the shortest bar flips first.",
        ),
        _nb(
            "04_scale",
            "the best unrelated score as the store grows, measured and predicted",
            (*SCORES, *SPEC, *FAMILY, *TUNED, "n_range", "pool", "seed", *OUTPUT),
            scale="The best unrelated score as the store grows, measured and predicted (an "
            "extreme-value law), against the threshold.",
        ),
        _nb(
            "05_robustness",
            "leave-one-question-out and bootstrap resamples of the tuned spec",
            (*SCORES, *SPEC, *FAMILY, *TUNED, "boot", "seed", *OUTPUT),
            robustness="Where the feasible bonus interval begins and ends when questions or memories "
            "are resampled.",
        ),
        _nb(
            "06_hybrid_time",
            "the retrievers (vector, BM25, fusion, the time gate) compared at their best",
            (
                *SCORES,
                "candidates",
                "inject",
                *FAMILY,
                "hybrid_datasets",
                "retrievers",
                "alpha_range",
                "rrf_k_range",
                "hybrid_bonus_range",
                "hybrid_tau_range",
                *OUTPUT,
            ),
            hit_at_inject="Per retriever and question kind: the share of current memories injected.",
            false_injections="Per retriever: memories injected on no-hit questions.",
            stale_injections="Per retriever: stale memories injected.",
            headroom="Per retriever: how far the best unrelated memory stays under its threshold, in "
            "its own score units.",
        ),
        _nb(
            "07_drift",
            "drifting facts: memory systems tuned on some streams, measured on held-out ones",
            (
                "model",
                *SERVER,
                *FAMILY,
                "boot",
                "seed",
                "streams",
                "seed_range",
                "tune_range",
                "budgets",
                *OUTPUT,
            ),
            recall="Share of held-out questions whose context holds the current fact, per token budget.",
            staleness="Share of held-out questions whose context holds a superseded fact, per token budget.",
        ),
        _nb(
            "08_benchmark",
            "sweep, criteria, the standard retrieval metrics, scale and the held-out stages side by side "
            "on a LoCoMo or LongMemEval file you downloaded",
            (
                "model",
                *SERVER,
                *SPEC,
                *FAMILY,
                *SWEEP,
                "select",
                "n_range",
                "pool",
                "seed",
                "boot",
                "benchmark_file",
                "benchmark_granularity",
                "rerank_url",
                "reranker",
                "rerank_subset",
                *OUTPUT,
            ),
        ),
        _nb(
            "09_answers",
            "the chat model's replies under each condition, judged per question kind, and the time of a turn",
            (
                *SCORES,
                *SPEC,
                *FAMILY,
                *SWEEP,
                "select",
                *CHAT,
                "boot",
                "seed",
                *OUTPUT,
            ),
            replies="Each question, shown by its words, and its reply under each condition side by side, "
            "tinted by the verdict (green yes, orange no).",
            rates_judge="The LLM judge's YES rate per condition and question kind, with 95% bootstrap "
            "intervals over questions.",
            rates_phrases="The checkable judge's pass rate (expected phrases held, avoided ones absent) per "
            "condition and question kind.",
            turn_time="The median time of each step of a turn per condition, whisker to the 95th "
            "percentile, seconds on a log axis.",
        ),
        _nb(
            "10_explain",
            "a query log replayed on the store: injections, empty results, what a new spec changes, the "
            "fragile decisions",
            (*SCORES, *SPEC, *FAMILY, *TUNED, "log", "against", *OUTPUT),
            explain_fragile_query="The most fragile query's candidates: raw cosine with the recency bonus "
            "stacked, coloured by the step that decided each (injected, past the inject limit, below the "
            "threshold), stale memories hatched, the threshold dashed.",
        ),
    )
}
NOTEBOOK_NAMES: tuple[str, ...] = tuple(NOTEBOOKS)


def notebook(name: str) -> Notebook:
    return lookup(NOTEBOOKS, name, "notebook")


def takers(parameter: str) -> list[str]:
    """The notebooks that take a parameter."""
    return [nb.name for nb in NOTEBOOKS.values() if parameter in nb.parameters]


def figure_notes() -> dict[str, dict[str, str]]:
    """Per notebook, what each figure shows (the results page prints it under the figure)."""
    return {nb.name: dict(nb.figures) for nb in NOTEBOOKS.values()}


# ---------------------------------------------------------------------------------------------
# the tracked notebooks stay clean when used

# What `make install` registers (`ipykernel install --name memlab --display-name "memlab (.venv)"`)
# and what the stored notebooks name: JupyterLab then has no reason to rewrite it.
STORED_KERNELSPEC = {"display_name": "memlab (.venv)", "language": "python", "name": "memlab"}
STORED_METADATA = ("jupytext", "kernelspec")  # what a stored notebook keeps of its metadata
STORED_CELL_METADATA = ("tags",)


def clean_notebook(nb: dict) -> dict:
    """A notebook as the repository stores it: no outputs, no execution counts, the kernelspec
    ``make install`` registers, and no metadata a session adds (language_info, widget state, cell
    timings, collapsed outputs). The tracked notebooks are fixed points of it."""
    nb["metadata"] = {k: v for k, v in nb.get("metadata", {}).items() if k in STORED_METADATA}
    nb["metadata"]["kernelspec"] = dict(STORED_KERNELSPEC)
    for cell in nb.get("cells", []):
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k in STORED_CELL_METADATA}
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def keep_clean(model: dict, path: str, contents_manager=None, **kwargs) -> None:
    """A Jupyter server pre-save hook (``jupyter_server_config.py``, used by ``make lab``): saving
    one of memlab's notebooks (a registered name with its jupytext pair beside it) writes both
    files clean, so using it in JupyterLab leaves the repository unchanged. Executed copies (under
    a results folder, no pair) and other files are saved as they are."""
    from pathlib import Path, PurePosixPath

    api = PurePosixPath(path.strip("/"))
    pair = {".ipynb": ".py", ".py": ".ipynb"}.get(api.suffix)
    if pair is None or api.stem not in NOTEBOOKS or not model.get("content"):
        return
    root = getattr(contents_manager, "root_dir", None)
    if root is not None and not (Path(root) / api.with_suffix(pair)).is_file():
        return
    if api.suffix == ".ipynb" and model.get("type") == "notebook":
        clean_notebook(model["content"])
    elif api.suffix == ".py" and model.get("type") == "file" and model.get("format") == "text":
        import jupytext

        nb = jupytext.reads(model["content"], fmt="py:percent")
        model["content"] = jupytext.writes(clean_notebook(nb), fmt="py:percent")
