"""How well the label-free content signals see the two kinds of noise in the drifting-facts streams.

Content supersession (``memlab.drift.content_supersession``) reads no truth; its misses come
from two kinds of newer memory it cannot tell apart from a correction: a distractor the extractor
typed like a fact, and a fact filed under another topic's key. This measures, against the
generator's truth, how well the signals it does read separate them:

- ``distractor_auc``: for each signal, the probability that a random fact of the query's topic
  scores above a random typed distractor filed under that topic (the ROC AUC, 0.5 = chance,
  1 = perfect), over every held-out (query, memory) pair. Signals: the memory's affinity to its
  content key, its cosine to the query, their sum (the retire gate), and minus its score on the
  event direction the extractor prior learned on the tuning streams.
- refiling: of the misfiled facts, the share content keys (one stream's centroids) and the
  learned keys (the tuning streams' centroids) put back under their true topic's key; of the
  facts filed right, the share they move away.
- ``event_transfer``: the event direction's AUC on the memories filed under one topic when the
  model is fit without every memory filed under that topic: does it read "an event about
  someone else" or remember the templates it was fit on?

The ``oracle-*`` lines of the drift study say what each kind of noise costs in recall and staleness;
this says why the signals do not remove it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import mannwhitneyu

from memlab.drift.arrays import StreamArrays
from memlab.drift.content_supersession import content_keys
from memlab.drift.extractor_prior import EVENT_TYPE, event_score, fit_extractor_prior
from memlab.drift.streams import TOPICS, Stream


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(a positive scores above a negative), ties counted half: Mann-Whitney U / (n+ n-)."""
    if len(positive) == 0 or len(negative) == 0:
        return float("nan")
    u = mannwhitneyu(positive, negative, alternative="two-sided").statistic
    return float(u) / (len(positive) * len(negative))


def signal_separation(streams: Sequence[Stream], arrays: Sequence[StreamArrays], key_trust: float) -> dict:
    """The separations above, over every stream, with content keys at ``key_trust``."""
    signals: dict[str, tuple[list, list]] = {
        name: ([], []) for name in ("affinity", "query cosine", "gate", "learned event score")
    }
    misfiled = refiled = right = moved = learned_refiled = learned_moved = 0
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
                ("learned event score", -a.event_score),
            ):
                signals[name][0].append(value[fact])
                signals[name][1].append(value[typed])
        for f, k, lk in zip(facts, ck, a.learned_key, strict=True):
            if not f.topic:
                continue
            true_key = key_of.get((f.topic, f.type))
            learned_right = a.learned_key_names[lk] == (f.topic, f.type)
            if f.key != (f.topic, f.type):
                misfiled += 1
                refiled += int(true_key is not None and k == true_key)
                learned_refiled += int(learned_right)
            else:
                right += 1
                moved += int(k != true_key)
                learned_moved += int(not learned_right)
    return {
        "distractor_auc": {
            name: auc(np.concatenate(pos), np.concatenate(neg)) for name, (pos, neg) in signals.items()
        },
        "misfiled": misfiled,
        "refiled_share": refiled / misfiled if misfiled else float("nan"),
        "filed_right": right,
        "moved_share": moved / right if right else float("nan"),
        "learned_refiled_share": learned_refiled / misfiled if misfiled else float("nan"),
        "learned_moved_share": learned_moved / right if right else float("nan"),
    }


def event_transfer(
    fit_streams: Sequence[Stream], test_streams: Sequence[Stream], vectors: dict[str, np.ndarray]
) -> dict[str, float]:
    """Per topic key: the event direction fit without any memory filed under it, judged on the
    test streams' memories filed under it and typed like facts (facts against typed distractors,
    ROC AUC). ``vectors`` maps each text to its unit embedding."""
    out = {}
    for topic in TOPICS:
        fit = [f for s in fit_streams for f in s.facts if f.key[0] != topic]
        model = fit_extractor_prior(np.stack([vectors[f.text] for f in fit]), [f.key for f in fit])
        test = [f for s in test_streams for f in s.facts if f.key[0] == topic and f.type != EVENT_TYPE]
        if not test:
            continue
        score = event_score(model, np.stack([vectors[f.text] for f in test]))
        distractor = np.array([f.kind == "distractor" for f in test])
        out[topic] = auc(-score[~distractor], -score[distractor])
    return out
