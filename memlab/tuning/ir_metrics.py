"""The standard retrieval metrics of a spec's ranked lists: recall_any@k, recall_all@k, nDCG@k,
LongMemEval's ndcg_any@k and MRR, per question kind and benchmark category, and the no-hit
questions' false-injection rate.

Each question gives two ranked lists, both in the spec's re-sort order (``memlab.core.ranking``):
``injected`` (the memories injected into the prompt) and ``candidates`` (the top ``candidates``
by raw score, re-sorted). Its relevance judgements (qrels) are its ``relevant`` and ``current``
memories, each of relevance 1. Per question, with ``R`` the relevant memories and ``L[:k]`` the
first k of the list (all of it when shorter):

- ``recall_any@k`` = 1 if some memory of R is in L[:k], else 0 (trec_eval's ``success``);
- ``recall_all@k`` = 1 if every memory of R is in L[:k], else 0 (trec_eval's ``recall`` at k
  equal to 1);
- ``ndcg@k`` = DCG@k / IDCG@k with DCG = sum over ranks r <= k of rel_r / log2(r + 1), IDCG the
  DCG of min(k, |R|) relevant memories (trec_eval's ``ndcg_cut``);
- ``ndcg_any@k``: LongMemEval's own (``src/retrieval/eval_utils.py``: ``dcg``), the same with
  the discount of Järvelin and Kekäläinen's first form: rel_1 + sum over 2 <= r <= k of
  rel_r / log2(r), so ranks 1 and 2 weigh alike; no library computes it, ``lme_ndcg`` does;
- ``mrr`` = 1 / the rank of the first relevant memory in the list (0 if none; trec_eval's
  ``recip_rank``), averaged.

recall_any, recall_all, ndcg and mrr are trec_eval's, through ir_measures (its pytrec_eval
provider); ``lme_*`` restate LongMemEval's own functions, for the names its paper reports. Means
are over the questions with relevant memories (a no-hit question has none; LongMemEval's scripts
skip its abstention questions alike). A no-hit question is reported as the **false-injection
rate**: the share of no-hit questions into which the spec injects any memory.

A LongMemEval dataset imported at turn granularity also gets the session-level figures of the
same turn lists, as LongMemEval's ``evaluate_retrieval_turn2session`` computes them (``lme_turn2session``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number

if TYPE_CHECKING:
    import pandas as pd

    from memlab.scores.problem import RetrievalProblem
    from memlab.tuning.evaluate import Evaluation

LISTS = ("injected", "candidates")
DEFAULT_KS = (5, 10)
# the measures per cutoff k, then the one without
MEASURES_AT_K = ("recall_any", "recall_all", "ndcg", "ndcg_any")
GROUPINGS = ("kind", "category", "haystack")
ALL = "all"


def parse_ks(text: str | Sequence[int]) -> tuple[int, ...]:
    """``"5,10"`` -> (5, 10): cutoffs >= 1, each once, in the order given."""
    items = [t.strip() for t in text.split(",")] if isinstance(text, str) else list(text)
    out: list[int] = []
    for item in items:
        try:
            k = int(item)
        except (TypeError, ValueError):
            raise InputError(f"--k: {item!r} is not a whole number (give cutoffs like 5,10)") from None
        check_number(k, "--k", integer=True, minimum=1)
        if k in out:
            raise InputError(f"--k: {k} is given twice")
        out.append(k)
    if not out:
        raise InputError("--k: give at least one cutoff, e.g. 5,10")
    return tuple(out)


def list_cutoffs(ks: Sequence[int], length: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the cutoffs a list of at most ``length`` memories can reach, the ones past it): the
    cutoffs within it in the order given, with ``length`` itself in place of the first one past
    it. A cutoff past the list reads all of it, so recall_any@10 of a list of 3 is recall_any@3,
    and printed as @10 it would pass for ten retrieved memories. ((5, 10), 3) -> ((3,), (5, 10));
    ((5, 10), 8) -> ((5, 8), (10,)); ((1, 3), 3) -> ((1, 3), ())."""
    within = [k for k in ks if k <= length]
    past = tuple(k for k in ks if k > length)
    if past and length not in within:
        first = list(ks).index(past[0])
        within.insert(sum(1 for k in ks[:first] if k <= length), length)
    return tuple(within), past


def measure_names(ks: Sequence[int]) -> tuple[str, ...]:
    """Column names, in table order: each measure at each k, then ``mrr``."""
    return (*(f"{m}@{k}" for k in ks for m in MEASURES_AT_K), "mrr")


# ---------------------------------------------------------------------------------------------
# LongMemEval's own definitions (xiaowu0162/LongMemEval, src/retrieval/eval_utils.py)


def lme_dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's ``dcg``: rel_1 + sum_{r=2..k} rel_r / log2(r)."""
    rel = np.asarray(relevances, dtype=np.float64)[:k]
    if rel.size == 0:
        return 0.0
    return float(rel[0] + np.sum(rel[1:] / np.log2(np.arange(2, rel.size + 1))))


def lme_ndcg(ranked: Sequence[str], relevant: Sequence[str], k: int, n_relevant: int | None = None) -> float:
    """LongMemEval's ``ndcg``: the DCG of the first k against the ideal of the ``n_relevant``
    relevant memories of the corpus (default: ``len(relevant)``), 0 when there is none."""
    want = set(relevant)
    actual = lme_dcg([1.0 if d in want else 0.0 for d in ranked[:k]], k)
    ideal = lme_dcg([1.0] * min(k, len(want) if n_relevant is None else n_relevant), k)
    return 0.0 if ideal == 0 else actual / ideal


def lme_recall(ranked: Sequence[str], relevant: Sequence[str], k: int) -> tuple[float, float]:
    """LongMemEval's ``recall_any`` and ``recall_all`` of the first k."""
    seen = set(ranked[:k])
    return float(any(d in seen for d in relevant)), float(all(d in seen for d in relevant))


def session_of(turn_id: str) -> str:
    """LongMemEval's ``strip_turn_id``: ``<session id>_<turn>`` -> ``<session id>``."""
    return "_".join(turn_id.split("_")[:-1])


def lme_turn2session(
    ranked: Sequence[str], relevant: Sequence[str], corpus: Sequence[str], k: int
) -> tuple[float, float, float]:
    """LongMemEval's ``evaluate_retrieval_turn2session``: a turn list read as sessions.

    As its ``process_item_flat_index`` names them, a turn of an evidence session that is not
    itself evidence is a session of its own (``noans_...``), and every other turn is its
    session. The cutoff grows until the first ``k'`` turns span k sessions (or the corpus ends);
    then recall_any and recall_all of the evidence sessions, and ``ndcg`` where each turn whose
    session is evidence counts 1 and the ideal is those turns of the corpus."""
    rel = set(relevant)
    sessions = {session_of(t) for t in rel}

    def key(turn: str) -> str:
        s = session_of(turn)
        return s if turn in rel or s not in sessions else f"noans:{s}"

    ranked_s = [key(t) for t in ranked]
    corpus_s = [key(t) for t in corpus]
    eff = k
    while eff <= len(corpus_s) and len(set(ranked_s[:eff])) < k:
        eff += 1
    any_, all_ = lme_recall(ranked_s, sorted(sessions), eff)
    n_rel = sum(1 for s in corpus_s if s in sessions)
    return any_, all_, lme_ndcg(ranked_s, sorted(sessions), eff, n_rel)


# ---------------------------------------------------------------------------------------------
# per question


@dataclass(frozen=True)
class RankedQuestion:
    """One question's ranked lists and judgements."""

    id: str
    kind: str
    category: str
    haystack: str  # its haystack as one label ("conv-26"); "" for a question without one
    qrels: tuple[str, ...]  # relevant and current memories
    injected: tuple[str, ...]
    candidates: tuple[str, ...]
    corpus: tuple[str, ...] = ()  # the memories it can retrieve (for the session-level ideal)


def ranked_questions(problem: RetrievalProblem, evaluation: Evaluation | None = None) -> list[RankedQuestion]:
    """Every question's lists under the problem's spec, from the one-config reference
    (``memlab.tuning.evaluate``)."""
    from memlab.tuning.evaluate import evaluate

    ev = evaluate(problem) if evaluation is None else evaluation
    dataset = problem.dataset
    visible = (
        dataset.visible() if dataset.benchmark and dataset.benchmark.get("name") == "longmemeval" else None
    )
    out = []
    for i, (q, r) in enumerate(zip(dataset.questions, ev.results, strict=True)):
        qrels = tuple(dict.fromkeys((*((q.current,) if q.current else ()), *q.relevant)))
        corpus = (
            tuple(np.asarray(dataset.memory_ids, dtype=object)[visible[i]]) if visible is not None else ()
        )
        out.append(
            RankedQuestion(
                q.id,
                q.kind,
                q.category,
                "+".join(q.haystack) if q.haystack else "",
                qrels,
                tuple(c.memory_id for c in r.injected),
                tuple(c.memory_id for c in r.candidates),
                corpus,
            )
        )
    return out


def trec_scores(
    lists: Mapping[str, Sequence[str]], qrels: Mapping[str, Sequence[str]], ks: Sequence[int]
) -> dict[str, dict[str, float]]:
    """Per question of ``qrels`` (each with at least one relevant memory): recall_any, recall_all,
    ndcg at each k and mrr of its list, by trec_eval (ir_measures' pytrec_eval provider). The run
    scores each list's memories n, n-1, ..., 1, so trec_eval reads them in the list's order; an
    empty list scores 0 everywhere."""
    import ir_measures
    from ir_measures import RR, R, Success, nDCG

    measures = [m @ k for k in ks for m in (Success, R, nDCG)] + [RR]
    names = {str(Success @ k): f"recall_any@{k}" for k in ks}
    names |= {str(R @ k): f"recall_all@{k}" for k in ks}
    names |= {str(nDCG @ k): f"ndcg@{k}" for k in ks}
    names[str(RR)] = "mrr"
    out = {q: {name: 0.0 for name in names.values()} for q in qrels}
    judged = [ir_measures.Qrel(q, d, 1) for q, docs in qrels.items() for d in docs]
    run = [
        ir_measures.ScoredDoc(q, d, float(len(ranked) - r))
        for q, ranked in lists.items()
        if q in qrels
        for r, d in enumerate(ranked)
    ]
    if run:
        for m in ir_measures.pytrec_eval.iter_calc(measures, judged, run):
            name = names[str(m.measure)]
            # recall_all: trec_eval's recall at k is |R in L[:k]| / |R|; all of them is exactly 1
            out[m.query_id][name] = float(m.value == 1.0) if name.startswith("recall_all") else float(m.value)
    return out


def question_scores(
    questions: Sequence[RankedQuestion], ks: Sequence[int], lme_sessions: bool = False
) -> pd.DataFrame:
    """One row per question and list: its kind, category, haystack, whether it has relevant
    memories (``judged``), the measures at each k (trec_eval's, and LongMemEval's ndcg_any), mrr,
    and ``injects`` (any memory injected). ``lme_sessions``: also the session-level
    ``session_recall_any@k``, ``session_recall_all@k``, ``session_ndcg_any@k`` of LongMemEval's
    ``evaluate_retrieval_turn2session``."""
    import pandas as pd

    judged = {q.id: q.qrels for q in questions if q.qrels and q.kind != "nohit"}
    rows = []
    for name in LISTS:
        lists = {q.id: getattr(q, name) for q in questions}
        trec = trec_scores(lists, judged, ks)
        for q in questions:
            row: dict[str, Any] = {
                "list": name,
                "question": q.id,
                "kind": q.kind,
                "category": q.category,
                "haystack": q.haystack,
                "judged": q.id in judged,
                "injects": bool(q.injected),
            }
            for k in ks:
                for m in MEASURES_AT_K:
                    row[f"{m}@{k}"] = np.nan
            row["mrr"] = np.nan
            if q.id in judged:
                row.update(trec[q.id])
                for k in ks:
                    row[f"ndcg_any@{k}"] = lme_ndcg(lists[q.id], q.qrels, k)
                    if lme_sessions:
                        s_any, s_all, s_ndcg = lme_turn2session(lists[q.id], q.qrels, q.corpus, k)
                        row[f"session_recall_any@{k}"] = s_any
                        row[f"session_recall_all@{k}"] = s_all
                        row[f"session_ndcg_any@{k}"] = s_ndcg
            rows.append(row)
    return pd.DataFrame(rows)


def summarise(
    scores: pd.DataFrame, ks: Sequence[int], by: Sequence[str] = ("kind", "category")
) -> pd.DataFrame:
    """Per list and group (``all``, then each value of each grouping in ``by``, in first-seen
    order): ``questions`` (judged), the mean of every measure over them, ``nohit`` (no-hit
    questions) and ``false_injection_rate`` (the share of them with a memory injected)."""
    import pandas as pd

    for g in by:
        if g not in GROUPINGS:
            raise InputError(f"--by: {g!r} is not one of {', '.join(GROUPINGS)}")
    cols = [c for c in scores.columns if "@" in c or c == "mrr"]
    rows = []
    for name in LISTS:
        frame = scores[scores["list"] == name]
        groups: list[tuple[str, str, pd.DataFrame]] = [(ALL, ALL, frame)]
        for g in by:
            for value in dict.fromkeys(frame[g]):
                if value != "":
                    groups.append((g, str(value), frame[frame[g] == value]))
        for grouping, value, rows_of in groups:
            judged = rows_of[rows_of["judged"]]
            nohit = rows_of[rows_of["kind"] == "nohit"]
            row: dict[str, Any] = {"list": name, "by": grouping, "group": value, "questions": len(judged)}
            row.update({c: float(judged[c].mean()) if len(judged) else np.nan for c in cols})
            row["nohit"] = len(nohit)
            # the injected list only: every no-hit question has candidates
            injected_list = name == "injected" and len(nohit)
            row["false_injection_rate"] = float(nohit["injects"].mean()) if injected_list else np.nan
            rows.append(row)
    return pd.DataFrame(rows)


def metrics_table(
    problem: RetrievalProblem, ks: Sequence[int] = DEFAULT_KS, by: Sequence[str] = ("kind", "category")
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the per-question scores, their summary) of the problem's spec: ``question_scores`` and
    ``summarise``. A LongMemEval dataset at turn granularity gets the session-level columns."""
    bench = problem.dataset.benchmark or {}
    sessions = bench.get("name") == "longmemeval" and bench.get("granularity") == "turn"
    scores = question_scores(ranked_questions(problem), ks, lme_sessions=sessions)
    return scores, summarise(scores, ks, by)
