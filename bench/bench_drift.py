"""The drifting-facts benchmark at full size: 400 held-out streams, tuned on 200 others.

Embeddings come from the on-disk cache (a first run embeds the ~1,000 unique texts once; run it
twice to time the warm case). Prints the held-out table (with paired differences to top-k under
store-everything), the frontier per budget and the oracle line, the wall time and, last, one JSON
line with the headline figures at 64, 128, 256 and 512 tokens.

``--format markdown`` prints, instead, the tables docs/drift.md records, under store-everything:
per budget top-k, learned-supersession (with its paired differences and whether it meets the
target), content-supersession and the oracle; the frontier; the three told a part of the truth;
and the signals (no seconds and no JSON: every figure in it is seeded).

Usage: python bench/bench_drift.py [--streams 400] [--seed-range 1000:1400] [--tune-range 0:200]
       [--budgets 16,32,64,128,256,512] [--boot 1000] [--format text|markdown]
"""

from __future__ import annotations

import argparse
import json
import time

from memlab.app.cli.studies import drift_table
from memlab.drift.arrays import default_encoder, default_token_counter, prepare_streams
from memlab.drift.intervals import MAX_STALENESS, RECALL_GAP
from memlab.drift.signals import event_transfer, signal_separation
from memlab.drift.streams import generate_streams, held_out_seeds, parse_seed_range
from memlab.drift.study import drift_study, parse_budgets


def markdown_tables(result) -> str:
    """The held-out figures under store-everything as docs/drift.md shows them (seeded: no seconds)."""
    t = result.table[result.table.write_policy == "store-everything"].set_index(["system", "budget"])
    frontier = result.frontier().set_index("budget")

    def rs(system: str, budget: int) -> str:
        r = t.loc[(system, budget)]
        return f"{r.recall:.3f} / {r.staleness:.3f}"

    def d(system: str, budget: int, metric: str) -> str:
        r = t.loc[(system, budget)]
        v, lo, hi = (r[f"{metric}_diff{k}"] for k in ("", "_lo", "_hi"))
        return f"{v:+.3f} [{lo:+.3f}, {hi:+.3f}]"

    budgets = sorted(int(b) for b in result.table.budget.unique())
    learned, content = "learned-supersession", "content-supersession"
    lines = [
        f"held-out seeds {result.held_out.start}:{result.held_out.stop} ({len(result.held_out)} streams), "
        f"tuned on seeds {result.tune_range.start}:{result.tune_range.stop}; store-everything; "
        "d = paired difference to top-k [95% interval]",
        "",
        f"| budget | top-k recall / staleness | {learned} recall / staleness | d recall | d staleness "
        "| target "
        f"| {content} recall / staleness (d recall) | oracle recall / staleness |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for b in budgets:
        r = t.loc[(learned, b)]
        meets = r.staleness <= MAX_STALENESS + 1e-12 and r.recall_diff_lo >= -RECALL_GAP - 1e-12
        f = frontier.loc[b]
        lines.append(
            f"| {b} | {rs('top-k', b)} | {rs(learned, b)} | {d(learned, b, 'recall')} | "
            f"{d(learned, b, 'staleness')} | {'met' if meets else 'missed'} | {rs(content, b)} "
            f"({d(content, b, 'recall')}) | {f.oracle_recall:.3f} / {f.oracle_staleness:.3f} |"
        )
    lines += [
        "",
        "The frontier (the best recall among the systems that meet the target, else at staleness <= "
        f"{MAX_STALENESS}), per budget:",
        "",
    ]
    for b, f in frontier.iterrows():
        if not f.system:
            lines.append(f"- {b}: no memory system at staleness <= {MAX_STALENESS}")
            continue
        lines.append(
            f"- {b}: {f.system} / {f.write_policy}, {f.recall:.3f} / {f.staleness:.3f}, d recall "
            f"{f.recall_diff:+.3f} [{f.recall_diff_lo:+.3f}, {f.recall_diff_hi:+.3f}]: "
            f"{'met' if f.meets else 'missed'}"
        )
    told = [s for s in ("oracle-topic", "oracle-distractors", "oracle-filing") if (s, budgets[0]) in t.index]
    if told:
        lines += [
            "",
            "Content supersession told a part of the truth (recall / staleness, d recall [paired 95%]):",
            "",
            "| budget | " + " | ".join(told) + " |",
            "|---|" + "---|" * len(told),
        ]
        for b in budgets:
            lines.append(f"| {b} | " + " | ".join(f"{rs(s, b)}, {d(s, b, 'recall')}" for s in told) + " |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=400)
    parser.add_argument("--seed-range", default="1000:1400")
    parser.add_argument("--tune-range", default="0:200")
    parser.add_argument("--budgets", default="16,32,64,128,256,512")
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--format", choices=["text", "markdown"], default="text")
    args = parser.parse_args()
    markdown = args.format == "markdown"

    held = held_out_seeds(args.seed_range, args.streams)
    t0 = time.perf_counter()
    result = drift_study(
        held, parse_seed_range(args.tune_range, "--tune-range"), parse_budgets(args.budgets), n_boot=args.boot
    )
    elapsed = time.perf_counter() - t0
    if markdown:
        print(markdown_tables(result))
    else:
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
        ("- " if markdown else "")
        + (
            "signals (held-out): typed distractor vs a fact of the query's topic, ROC AUC: "
            + ", ".join(f"{k} {v:.3f}" for k, v in signals["distractor_auc"].items())
            + "; misfiled facts refiled under their true topic: "
            f"content keys {signals['refiled_share']:.1%}, "
            f"learned keys {signals['learned_refiled_share']:.1%} of {signals['misfiled']}; facts filed "
            f"right moved away: {signals['moved_share']:.1%}, {signals['learned_moved_share']:.1%} of "
            f"{signals['filed_right']}"
        )
    )
    print(
        ("- " if markdown else "")
        + "event direction fit without the topic it judges (AUC per topic): "
        + ", ".join(f"{k} {v:.3f}" for k, v in signals["event_transfer"].items())
    )
    if markdown:
        return
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
