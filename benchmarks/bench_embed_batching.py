"""What batch-independent embedding costs: sentence-transformers' own batches against memlab's
fixed-shape batches (one token length, exactly ``size`` rows), with all-MiniLM-L6-v2 on 512
texts of 10 to 60 tokens.

Also checks what makes the bytes batch-independent: a text embedded next to a long one, or in
a batch of another size, gets other bytes under stock batching; under fixed-shape batches the
same text always gets the same bytes.

The last line is one JSON object. Usage: python benchmarks/bench_embed_batching.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from memlab.scoring.backends import token_lengths
from memlab.scoring.cache import fixed_shape_batches
from memlab.scoring.embeddings import Embedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    model = Embedder("all-MiniLM-L6-v2")._load_model()._model  # the sentence-transformers model itself
    texts = [
        f"2026-08-{i % 28 + 1:02d}: " + " ".join(["memory"] * (5 + i % 40)) + f" number {i}"
        for i in range(512)
    ]
    lengths = token_lengths(model, texts, "document")
    kw = {"convert_to_numpy": True, "normalize_embeddings": False, "show_progress_bar": False}

    def stock() -> np.ndarray:
        return model.encode(texts, batch_size=32, **kw)

    def fixed(size: int) -> np.ndarray:
        dim = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)()
        out = np.empty((len(texts), dim), dtype=np.float32)
        for batch in fixed_shape_batches(lengths, size):
            real = batch[: len(set(batch))]
            out[real] = model.encode([texts[i] for i in batch], batch_size=len(batch), **kw)[: len(real)]
        return out

    sizes = (1, 4, 8, 16)
    runs = {"stock_32": stock, **{f"fixed_{m}": (lambda m=m: fixed(m)) for m in sizes}}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeat):  # interleaved, so a busy machine slows every variant alike
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            seconds[name].append(time.perf_counter() - t0)
    median = {name: round(float(np.median(s)), 2) for name, s in seconds.items()}
    fillers = {m: sum(len(b) - len(set(b)) for b in fixed_shape_batches(lengths, m)) for m in sizes}

    a = texts[0]
    alone = model.encode([a], **kw)[0]
    long = "2026-09-09: " + " ".join(["The user wrote a very long memory about many unrelated things."] * 20)
    beside_long = model.encode([a, long], **kw)[0]
    same = [t for t, n in zip(texts, lengths, strict=True) if n == lengths[0]]
    fixed_a = [model.encode([a, *same[k : k + 3]], batch_size=4, **kw)[0] for k in (1, 4)]
    checks = {
        "stock: alone == beside a long text": alone.tobytes() == beside_long.tobytes(),
        "fixed 4: same bytes with other companions": fixed_a[0].tobytes() == fixed_a[1].tobytes(),
    }
    for name, s in median.items():
        extra = f", {fillers[int(name.split('_')[1])]} filler rows" if name.startswith("fixed") else ""
        print(f"{name:>9}: {s:6.2f} s for {len(texts)} texts (median of {args.repeat}{extra})")
    for name, ok in checks.items():
        print(f"{name}: {ok}")
    print(json.dumps({"bench": "embed_batching", "seconds": median, "fillers": fillers, "checks": checks}))


if __name__ == "__main__":
    main()
