"""Token F1 against a reference answer, computed as LoCoMo's own evaluation code does.

Ported from ``task_eval/evaluation.py`` of snap-research/LoCoMo (``normalize_answer``,
``f1_score``, ``f1`` and the per-category rules of ``eval_question_answering``):

- normalisation: commas removed, lower case, ASCII punctuation (``string.punctuation``) removed,
  the words a, an, the and and removed (``regex`` ``\\b(a|an|the|and)\\b``), whitespace collapsed;
  each token then stemmed by NLTK's ``PorterStemmer()``;
- ``f1_score``: the harmonic mean of token precision and recall over the common multiset of
  stemmed tokens, 0 when nothing is shared;
- by category (the names of ``memlab.importers.locomo.CATEGORIES``): multi-hop (1) splits the
  prediction and the answer on commas and averages, over the answer's parts, the best F1 of any
  prediction part (``f1``); open-domain (3) keeps the answer up to its first ``;``; temporal (2),
  open-domain (3), single-hop (4) and a question without a category use ``f1_score``; adversarial
  (5) scores 1 when the reply says "no information available" or "not mentioned", else 0.
"""

from __future__ import annotations

import string
from collections import Counter
from functools import cache

import regex

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = regex.compile(r"\b(a|an|the|and)\b")
ADVERSARIAL_PHRASES = ("no information available", "not mentioned")


@cache
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def normalize_answer(s: str) -> str:
    """LoCoMo's ``normalize_answer``: commas, case, punctuation, articles, whitespace."""
    s = s.replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCTUATION)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def tokens(s: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(w) for w in normalize_answer(s).split()]


def f1_score(prediction: str, ground_truth: str) -> float:
    """LoCoMo's ``f1_score``: token F1 of the stemmed, normalised texts."""
    pred, truth = tokens(prediction), tokens(ground_truth)
    same = sum((Counter(pred) & Counter(truth)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, ground_truth: str) -> float:
    """LoCoMo's ``f1``: both split on commas; per answer part the best prediction part, averaged."""
    predictions = [p.strip() for p in prediction.split(",")]
    truths = [g.strip() for g in ground_truth.split(",")]
    return sum(max(f1_score(p, g) for p in predictions) for g in truths) / len(truths)


def locomo_f1(prediction: str, answer: str | None, category: str = "") -> float | None:
    """The score LoCoMo's ``eval_question_answering`` gives the reply; None when there is nothing
    to score it against (no answer, and not an adversarial question)."""
    if category == "adversarial":
        low = prediction.lower()
        return 1.0 if any(p in low for p in ADVERSARIAL_PHRASES) else 0.0
    if answer is None:
        return None
    if category == "open-domain":
        answer = answer.split(";")[0].strip()
    if category == "multi-hop":
        return multi_answer_f1(prediction, answer)
    return f1_score(prediction, answer)
