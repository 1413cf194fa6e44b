"""The drifting-facts benchmark at full size: 400 held-out streams, tuned on 200 others.

Embeddings come from the on-disk cache (a first run embeds the ~1,000 unique texts once; run it
twice to time the warm case). Prints the held-out table (with paired differences to top-k under
store-everything), the frontier per budget and the oracle line, the wall time and, last, one JSON
line with the headline figures at 64, 128, 256 and 512 tokens.

Usage: python bench/bench_drift.py [--streams 400] [--seed-range 1000:1400] [--tune-range 0:200]
"""

from __future__ import annotations

import argparse
import json
import time

from memlab.app.cli.studies import drift_table
from memlab.drift.arrays import default_encoder, default_token_counter, prepare_streams
from memlab.drift.signals import event_transfer, signal_separation
from memlab.drift.streams import generate_streams, held_out_seeds, parse_seed_range
from memlab.drift.study import drift_study, parse_budgets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=400)
    parser.add_argument("--seed-range", default="1000:1400")
    parser.add_argument("--tune-range", default="0:200")
    parser.add_argument("--budgets", default="16,32,64,128,256,512")
    parser.add_argument("--boot", type=int, default=1000)
    args = parser.parse_args()

    held = held_out_seeds(args.seed_range, args.streams)
    t0 = time.perf_counter()
    result = drift_study(
        held, parse_seed_range(args.tune_range, "--tune-range"), parse_budgets(args.budgets), n_boot=args.boot
    )
    elapsed = time.perf_counter() - t0
    print(drift_table(result))
    print(
        f"{len(held)} held-out streams, tuned on {len(result.tune_range)}; "
        f"{result.unique_texts} unique texts, "
        f"embedding model loaded {result.model_loads} time(s); "
        f"wall time {elapsed:.1f} s ({', '.join(f'{k} {v:.1f} s' for k, v in result.seconds.items())})"
    )
    t = result.table
    budgets = sorted(int(b) for b in t.budget.unique())
    shown = [b for b in (64, 128, 256, 512) if b in budgets] or budgets
    keep = (
        "top-k",
        "multi-factor",
        "supersession",
        "content-supersession",
        "learned-supersession",
        "oracle",
        "oracle-topic",
        "oracle-distractors",
        "oracle-filing",
    )

    def cell(r):
        return {
            "recall": round(r.recall, 3),
            "staleness": round(r.staleness, 3),
            "d_recall": [round(r.recall_diff, 3), round(r.recall_diff_lo, 3), round(r.recall_diff_hi, 3)],
            "d_staleness": [
                round(r.staleness_diff, 3),
                round(r.staleness_diff_lo, 3),
                round(r.staleness_diff_hi, 3),
            ],
        }

    headline = {
        f"{r.system}/{r.write_policy}@{r.budget}": cell(r)
        for r in t[t.budget.isin(shown) & t.system.isin(keep)].itertuples()
    }
    frontier = {
        int(r.budget): {
            "system": f"{r.system}/{r.write_policy}",
            "meets": bool(r.meets),
            "oracle": [round(r.oracle_recall, 3), round(r.oracle_staleness, 3)],
        }
        for r in result.frontier().itertuples()
        if r.budget in shown
    }
    # how well the signals see the two kinds of noise (held out; the extractor model fit on the
    # tuning streams, as in the benchmark), and whether the event direction carries to a topic
    # it was not fit on
    tune_streams, held_streams = generate_streams(result.tune_range), generate_streams(held)
    encode, _ = default_encoder()
    count, _ = default_token_counter()
    arrays, _ = prepare_streams([*tune_streams, *held_streams], encode, count, len(tune_streams))
    trust = result.chosen[("content-supersession", "store-everything")].read_params["key_trust"]
    signals = signal_separation(held_streams, arrays[len(tune_streams) :], trust)
    texts = sorted({f.text for s in (*tune_streams, *held_streams) for f in s.facts})
    signals["event_transfer"] = event_transfer(
        tune_streams, held_streams, dict(zip(texts, encode(texts, "document"), strict=True))
    )
    print(
        "signals (held-out): typed distractor vs a fact of the query's topic, ROC AUC: "
        + ", ".join(f"{k} {v:.3f}" for k, v in signals["distractor_auc"].items())
        + f"; misfiled facts refiled under their true topic: content keys {signals['refiled_share']:.1%}, "
        f"learned keys {signals['learned_refiled_share']:.1%} of {signals['misfiled']}; facts filed "
        f"right moved away: {signals['moved_share']:.1%}, {signals['learned_moved_share']:.1%} of "
        f"{signals['filed_right']}"
    )
    print(
        "event direction fit without the topic it judges (AUC per topic): "
        + ", ".join(f"{k} {v:.3f}" for k, v in signals["event_transfer"].items())
    )
    print(
        json.dumps(
            {
                "held_out_streams": len(held),
                "tuning_streams": len(result.tune_range),
                "budgets": budgets,
                "seconds": round(elapsed, 1),
                "model_loads": result.model_loads,
                "tokenizer": result.tokenizer,
                "paired_against": "top-k/store-everything",
                "rows": headline,
                "frontier": frontier,
                "signals": signals,
            }
        )
    )


if __name__ == "__main__":
    main()
