"""What batch-independent embedding costs: sentence-transformers' own batches against memlab's
fixed-shape batches (one token length, exactly ``size`` rows), with all-MiniLM-L6-v2 on 512
texts of 10 to 60 tokens.

Also checks what makes the bytes batch-independent: a text embedded next to a long one, or in
a batch of another size, gets other bytes under stock batching; under fixed-shape batches the
same text always gets the same bytes.

The last line is one JSON object; ``--format markdown`` prints the table and the checks alone,
as docs/reliability.md records them.

Usage: python bench/bench_embed_batching.py [--repeat 3] [--format text|markdown]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memlab.embedding.cache import fixed_shape_batches
from memlab.embedding.embedder import Embedder
from memlab.embedding.engines import token_lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--format", choices=["text", "markdown"], default="text")
    args = parser.parse_args()
    model = Embedder("all-MiniLM-L6-v2")._load_model()._model  # the sentence-transformers model itself
    texts = [
        f"2026-08-{i % 28 + 1:02d}: " + " ".join(["memory"] * (5 + i % 40)) + f" number {i}"
        for i in range(512)
    ]
    lengths = token_lengths(model, texts, "document")
    dim = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)()
    kw = {"convert_to_numpy": True, "normalize_embeddings": False, "show_progress_bar": False}

    def stock() -> np.ndarray:
        return model.encode(texts, batch_size=32, **kw)

    def fixed(size: int, which: list[int] | None = None) -> np.ndarray:
        which = list(range(len(texts))) if which is None else which
        out = np.empty((len(which), dim), dtype=np.float32)
        for batch in fixed_shape_batches([lengths[i] for i in which], size):
            real = batch[: len(set(batch))]
            rows = model.encode([texts[which[i]] for i in batch], batch_size=len(batch), **kw)
            out[real] = rows[: len(real)]
        return out

    sizes = (1, 4, 8, 16)
    runs = {"stock_32": stock, **{f"fixed_{m}": (lambda m=m: fixed(m)) for m in sizes}}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    last: dict[str, np.ndarray] = {}
    for _ in range(args.repeat):  # interleaved, so a busy machine slows every variant alike
        for name, fn in runs.items():
            t0 = time.perf_counter()
            last[name] = fn()
            seconds[name].append(time.perf_counter() - t0)
    median = {name: round(float(np.median(s)), 2) for name, s in seconds.items()}
    fillers = {m: sum(len(b) - len(set(b)) for b in fixed_shape_batches(lengths, m)) for m in sizes}

    def differing(x: np.ndarray, y: np.ndarray) -> int:
        return int(sum(u.tobytes() != v.tobytes() for u, v in zip(x, y, strict=True)))

    half = list(range(0, len(texts), 2))  # other companions: every other text only
    checks = {
        "stock batches: texts whose bytes differ from the text alone": differing(
            last["stock_32"], last["fixed_1"]
        ),
        "fixed 8: texts whose bytes change with other companions": differing(
            last["fixed_8"][half], fixed(8, half)
        ),
    }
    if args.format == "markdown":
        print(f"| batching ({len(texts)} texts) | seconds (median of {args.repeat}) | filler rows |")
        print("|---|---|---|")
        for name, sec in median.items():
            size = int(name.split("_")[1])
            if name.startswith("stock"):
                print(f"| stock batches of {size} | {sec:.2f} | - |")
            else:
                what = "one text at a time" if size == 1 else f"fixed batches of {size}"
                print(f"| {what} | {sec:.2f} | {fillers[size]} |")
        print()
        for name, n in checks.items():
            print(f"- {name}: {n} of {len(texts) if name.startswith('stock') else len(half)}")
        return
    for name, s in median.items():
        extra = f", {fillers[int(name.split('_')[1])]} filler rows" if name.startswith("fixed") else ""
        print(f"{name:>9}: {s:6.2f} s for {len(texts)} texts (median of {args.repeat}{extra})")
    for name, n in checks.items():
        print(f"{name}: {n} of {len(texts) if name.startswith('stock') else len(half)}")
    print(json.dumps({"bench": "embed_batching", "seconds": median, "fillers": fillers, "checks": checks}))


if __name__ == "__main__":
    main()
