"""Each embedding model on the seed16 fixture, in English and Japanese: the README's model table.

Per model and language: the raw cosines that decide C1 and H2 (their current memories), the
best raw cosine on a no-hit question, the window of thresholds where the seed's (bonus 0.05,
tau 14) satisfies a, b and c, whether a, b and c can hold together anywhere (any bonus >= 0,
tau 1-60 days, threshold from the median raw cosine to the largest plus 0.1 in steps of
0.0025; the exact closed-form bonus intervals of ``memlab.core.feasible``), the share of that
(tau, threshold) plane with a non-empty bonus interval and the widest bonus interval in it, and
the encode time per text (the fixture's 26 texts in a fresh cache, model load excluded, median
of ``--repeat`` runs).

Qwen3-Embedding-0.6B, the seed's model, is measured too when its weights are in the Hugging Face
cache; otherwise its row says so. The last line is JSON.

``--format markdown`` prints the table alone, as docs/scores-and-models.md records it (no JSON
line): ``--repeat 0`` leaves out the encode time (the deterministic columns, byte-compared by
``python -m memlab.app.record --check``), ``--encode-only`` prints the encode time alone (a
timing block).

Usage: python bench/bench_models.py [--models multilingual-e5-small,all-MiniLM-L6-v2] [--repeat 3]
       [--format text|markdown] [--encode-only]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np

from memlab.core.criteria import dataset_criteria
from memlab.core.errors import EmbeddingError
from memlab.core.feasible import feasible_bonus
from memlab.core.labels import Labels
from memlab.core.spec import RetrievalSpec
from memlab.datasets.schema import load_dataset
from memlab.embedding.embedder import make_embedder
from memlab.scores.sources import load_scores
from memlab.tuning.evaluate import evaluate

TAUS = np.arange(1.0, 61.0)
STEP = 0.0025  # threshold step of the (tau, threshold) plane


def encode_ms(model: str, texts: list[str], repeat: int) -> float:
    """Median milliseconds per text to embed ``texts`` (documents) into a fresh cache, model loaded."""
    times = []
    with tempfile.TemporaryDirectory() as warm:
        make_embedder(model, cache_dir=warm).encode_documents(["warm-up"])
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            emb = make_embedder(model, cache_dir=cache)
            emb.encode_documents(["load the model first"])
            t0 = time.perf_counter()
            emb.encode_documents(texts)
            times.append((time.perf_counter() - t0) * 1000 / len(texts))
    return statistics.median(times)


def measure(model: str, lang: str, repeat: int, plane: bool = True) -> dict:
    dataset = load_dataset("seed16")
    texts = [m.text(lang) for m in dataset.memories] + [q.text(lang) for q in dataset.questions]
    encode = {"encode_ms_per_text": round(encode_ms(model, texts, repeat), 2)} if repeat > 0 else {}
    if not plane:
        return {"model": model, "lang": lang, **encode}
    with tempfile.TemporaryDirectory() as cache:
        scores = load_scores("embedded", dataset, lang=lang, model=model, cache_dir=cache)
    raw = scores.retrievable(dataset)
    nohit = [i for i, q in enumerate(dataset.questions) if q.kind == "nohit"]
    current = {
        qid: raw[dataset.question_ids.index(qid), dataset.memory_ids.index(dataset.question(qid).current)]
        for qid in ("C1", "H2")
    }
    seed_spec = RetrievalSpec(bonus=0.05, tau_days=14.0, threshold=0.5)
    values = {c.name: c.value for c in evaluate(dataset, scores, seed_spec, lang=lang).criteria}
    lo, hi = values["a"], min((values[k] for k in ("b", "c") if values[k] is not None), default=None)
    window = None if hi is None or values["c"] is None or values["b"] is None or lo >= hi else (lo, hi)
    finite = raw[np.isfinite(raw)]
    thresholds = np.arange(np.floor(np.median(finite) / STEP) * STEP, finite.max() + 0.1, STEP)
    labels, ages, criteria = Labels.from_dataset(dataset), dataset.ages(), dataset_criteria(dataset)
    feasible_cells, widest = 0, (0.0, None)
    for tau in TAUS:
        for thr in thresholds:
            region = feasible_bonus(
                raw, ages, labels, criteria, spec=RetrievalSpec(tau_days=float(tau), threshold=float(thr))
            )
            if not region.empty:
                feasible_cells += 1
                width = sum(min(float(a.upper), 1.0) - float(a.lower) for a in region)
                if width > widest[0]:
                    widest = (width, (float(tau), round(float(thr), 4), round(float(region.lower), 4)))
    return {
        "model": model,
        "lang": lang,
        "model_id": scores.model_label,
        "c1_current": round(float(current["C1"]), 4),
        "h2_current": round(float(current["H2"]), 4),
        "best_nohit": round(float(np.nanmax(raw[nohit])), 4),
        "cosine_std": round(float(finite.std()), 4),
        "seed_spec_window": None if window is None else [round(window[0], 4), round(window[1], 4)],
        "feasible": feasible_cells > 0,
        "plane_share": round(feasible_cells / (len(TAUS) * len(thresholds)), 4),
        "threshold_plane": [round(float(thresholds[0]), 4), round(float(thresholds[-1]), 4)],
        "widest_bonus_interval": round(widest[0], 4),
        "widest_at": widest[1],
        **encode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", default="multilingual-e5-small,all-MiniLM-L6-v2,Qwen/Qwen3-Embedding-0.6B"
    )
    parser.add_argument("--repeat", type=int, default=3, help="encode runs per model (0: no encode time)")
    parser.add_argument("--format", choices=["text", "markdown"], default="text")
    parser.add_argument("--encode-only", action="store_true", help="the encode time alone")
    args = parser.parse_args()
    rows = []
    markdown = args.format == "markdown"
    timed = args.repeat > 0
    if markdown and args.encode_only:
        print("| model | lang | encode ms/text |\n|---|---|---|")
    elif markdown:
        head = ["model", "lang", "C1 current", "H2 current", "best no-hit"]
        head += ["thresholds where (0.05, 14) holds"]
        head += ["a, b, c feasible", "plane", "widest bonus interval"] + (["encode ms/text"] if timed else [])
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    else:
        print(
            f"{'model':<26} {'lang':<4} {'C1':>6} {'H2':>6} {'no-hit':>6} {'(0.05, 14) thresholds':>22} "
            f"{'a,b,c':>5} {'plane':>6} {'widest':>7} {'ms/text':>7}"
        )
    for model in args.models.split(","):
        for lang in ("en", "ja"):
            try:
                r = measure(model, lang, args.repeat, plane=not args.encode_only)
            except EmbeddingError as e:
                if markdown:
                    print(f"| {model} | {lang} | not available here |")
                else:
                    print(f"{model:<26} {lang:<4} not available here: {str(e).splitlines()[0][:80]}")
                rows.append({"model": model, "lang": lang, "unavailable": str(e)})
                continue
            rows.append(r)
            if markdown and args.encode_only:
                print(f"| {model} | {lang} | {r['encode_ms_per_text']:.1f} |")
                continue
            w = r["seed_spec_window"]
            window = "none" if w is None else f"({w[0]:.3f}, {w[1]:.3f}]"
            ms = f"{r['encode_ms_per_text']:.1f}" if timed else "-"
            cells = [f"{r['c1_current']:.3f}", f"{r['h2_current']:.3f}", f"{r['best_nohit']:.3f}", window]
            cells += ["yes" if r["feasible"] else "no", f"{r['plane_share']:.1%}"]
            cells += [f"{r['widest_bonus_interval']:.3f}"]
            if markdown:
                print(f"| {model} | {lang} | " + " | ".join(cells + ([ms] if timed else [])) + " |")
            else:
                print(
                    f"{model:<26} {lang:<4} {cells[0]:>6} {cells[1]:>6} {cells[2]:>6} {window:>22} "
                    f"{cells[4]:>5} {cells[5]:>6} {cells[6]:>7} {ms:>7}"
                )
    if not markdown:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
