"""How well the label-free content signals see the two kinds of noise in the drifting-facts streams.

Content supersession (``memlab.studies.content_supersession``) reads no truth; its misses come
from two kinds of newer memory it cannot tell apart from a correction: a distractor the extractor
typed like a fact, and a fact filed under another topic's key. This measures, against the
generator's truth, how well the signals it does read separate them:

- ``distractor_auc``: for each signal, the probability that a random fact of the query's topic
  scores above a random typed distractor filed under that topic (the ROC AUC, 0.5 = chance,
  1 = perfect), over every held-out (query, memory) pair. Signals: the memory's affinity to its
  content key, its cosine to the query, and their sum (the retire gate).
- refiling: of the misfiled facts, the share content keys put back under their true topic's key;
  of the facts filed right, the share they move away.

The ``oracle-*`` lines of the benchmark say what each kind of noise costs in recall and staleness;
this says why the signals do not remove it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import mannwhitneyu

from memlab.studies.content_supersession import content_keys
from memlab.studies.drift_benchmark import StreamArrays
from memlab.studies.drift_streams import Stream

EVENT_TYPE = "event"


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(a positive scores above a negative), ties counted half: Mann-Whitney U / (n+ n-)."""
    if len(positive) == 0 or len(negative) == 0:
        return float("nan")
    u = mannwhitneyu(positive, negative, alternative="two-sided").statistic
    return float(u) / (len(positive) * len(negative))


def signal_separation(streams: Sequence[Stream], arrays: Sequence[StreamArrays], key_trust: float) -> dict:
    """The separations above, over every stream, with content keys at ``key_trust``."""
    signals: dict[str, tuple[list, list]] = {"affinity": ([], []), "query cosine": ([], []), "gate": ([], [])}
    misfiled = refiled = right = moved = 0
    for stream, a in zip(streams, arrays, strict=True):
        facts = stream.facts
        visible = np.ones(len(facts), dtype=bool)
        ck, aff = content_keys(a.memory_cosine, a.key, a.key_type, a.memory_type, visible, key_trust)
        aff = np.where(np.isnan(aff), 1.0, aff)  # as content_retired reads it
        key_of = {f.key: int(k) for f, k in zip(facts, a.key, strict=True)}
        for q, query in enumerate(stream.queries):
            fact = np.array([f.topic == query.topic for f in facts])
            typed = np.array(
                [
                    f.kind == "distractor" and f.filed_topic == query.topic and f.type != EVENT_TYPE
                    for f in facts
                ]
            )
            for name, value in (
                ("affinity", aff),
                ("query cosine", a.query_cosine[q]),
                ("gate", a.query_cosine[q] + aff),
            ):
                signals[name][0].append(value[fact])
                signals[name][1].append(value[typed])
        for f, k in zip(facts, ck, strict=True):
            if not f.topic:
                continue
            true_key = key_of.get((f.topic, f.type))
            if f.key != (f.topic, f.type):
                misfiled += 1
                refiled += int(true_key is not None and k == true_key)
            else:
                right += 1
                moved += int(k != true_key)
    return {
        "distractor_auc": {
            name: auc(np.concatenate(pos), np.concatenate(neg)) for name, (pos, neg) in signals.items()
        },
        "misfiled": misfiled,
        "refiled_share": refiled / misfiled if misfiled else float("nan"),
        "filed_right": right,
        "moved_share": moved / right if right else float("nan"),
    }
