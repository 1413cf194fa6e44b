"""The judge protocol, one rule per question kind, and the LLM judge that applies it.

The rules (``PROTOCOL``):

- hit: the reply answers from the question's relevant memory (stating what it says, or asking
  back while naming it), inventing nothing the memory does not say;
- contradiction: the reply uses the current memory and does not assert the stale one as what is
  true now (naming it as the past is fine);
- nohit: the reply brings up none of the user's memories (the judge is shown the ones nearest the
  question, which are not about it);
- time: the reply uses the memory of the time the question names, not one from another time.

The LLM judge is any OpenAI-compatible chat endpoint, asked once per reply at temperature 0 to
answer YES or NO and say why; its model id is recorded with every verdict, and a reply it does
not answer YES or NO to is left unjudged (counted, never guessed). Its requests go through the
reply cache like the replies. How it answers (``JUDGE_FORMATS``, ``--judge-format``):

- ``text``: free text, YES or NO on the first line (any server);
- ``json-object``: ``{"verdict": "YES"|"NO", "reason": ...}`` constrained by the server to the
  schema, as ``response_format`` ``{"type": "json_object", "schema": ...}`` (llama.cpp's servers:
  small models answer the schema where they would not answer free text);
- ``json-schema``: the same schema as OpenAI's ``{"type": "json_schema", ...}`` (OpenAI, vLLM,
  Ollama, llama.cpp's C++ server).

Where both the LLM judge and the checkable judge (``memlab.answers.phrases``) judge replies,
their agreement says whether the LLM judge's rates can be read as results
(``judge_agreement``): below ``KAPPA_FLOOR`` they are printed as unreliable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.answers.cache import ReplyCache
from memlab.answers.inflight import complete_all
from memlab.core.registry import lookup

if TYPE_CHECKING:
    import pandas as pd

    from memlab.answers.chat import ChatClient
    from memlab.datasets.schema import Dataset, Question


@dataclass(frozen=True)
class Rule:
    """What a good reply does for one question kind: the rule in words (the docs' table) and the
    question the judge answers YES or NO to."""

    kind: str
    rule: str
    ask: str


PROTOCOL: dict[str, Rule] = {
    r.kind: r
    for r in (
        Rule(
            "hit",
            "answered from its relevant memory (stating it, or asking back while naming it), "
            "inventing nothing",
            "Does the reply answer from the memory above (stating what it says, or asking back "
            "while naming it), without inventing facts the memory does not say?",
        ),
        Rule(
            "contradiction",
            "uses the current memory and does not assert the stale one as current",
            "Does the reply use the current memory, without presenting the older memory as what is "
            "true now? Mentioning the older one as the past is fine.",
        ),
        Rule(
            "nohit",
            "brings up no memory",
            "Does the reply leave every one of these memories out, bringing none of them up?",
        ),
        Rule(
            "time",
            "uses the memory of the time the question names",
            "Does the reply use the memory from the time the question names, not one from another time?",
        ),
    )
}

SYSTEM = (
    "You grade one reply of a chat assistant to its user. The assistant may have been shown some "
    "of the user's stored memories. {answer}"
)
ANSWER = {
    "text": "Answer the grading question with YES or NO on the first line, then give the reason in "
    "one short sentence.",
    "json": 'Answer the grading question as JSON: {"verdict": "YES" or "NO", "reason": one short sentence}.',
}
JUDGE_MAX_TOKENS = 128
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["YES", "NO"]}, "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
}
JUDGE_FORMATS: dict[str, dict[str, Any] | None] = {
    "text": None,
    "json-object": {"type": "json_object", "schema": VERDICT_SCHEMA},
    "json-schema": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA}},
}
_VERDICT = re.compile(r"^\W*(yes|no)\b[\s.:,!-]*", re.IGNORECASE)


def judge_messages(
    question: Question,
    reply: str,
    dataset: Dataset,
    lang: str,
    nearest: Sequence[str] = (),
    judge_format: str = "text",
) -> list[dict[str, str]]:
    """The judge's messages for one reply: the question, the memories its kind's rule names, the
    reply and the rule's question. ``nearest``: for a no-hit question, the memory ids nearest it."""
    rule = lookup(PROTOCOL, question.kind, "question kind")
    lookup(JUDGE_FORMATS, judge_format, "judge format")
    system = SYSTEM.format(answer=ANSWER["text" if judge_format == "text" else "json"])

    def text(mid: str) -> str:
        return dataset.memory(mid).text(lang)

    lines = [f"The user asked: {question.text(lang)}"]
    others = [m for m in question.relevant if m != question.current and m not in question.stale]
    if question.kind == "nohit":
        shown = list(nearest) or list(dataset.memory_ids[:3])
        lines.append("The user's stored memories nearest this question (none is about it):")
        lines += [f"- {text(m)}" for m in shown]
    elif question.kind == "contradiction":
        lines.append(f"The current memory: {text(question.current)}")
        lines += [f"An older memory it replaces: {text(m)}" for m in question.stale]
    elif question.kind == "time":
        lines.append(f"The memory from the time the question names: {text(question.current)}")
        lines += [f"A memory from another time: {text(m)}" for m in others]
    else:
        lines.append(f"The memory that answers it: {text(question.current or question.relevant[0])}")
        lines += [f"Another memory that may also answer it: {text(m)}" for m in others]
    lines += [f'The assistant replied: """{reply}"""', f"Grading question: {rule.ask}"]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def parse_verdict(text: str) -> tuple[bool | None, str]:
    """(YES -> True, NO -> False, else None; the reason): a JSON verdict object, else the first
    word of the reply, else the one of a standalone upper-case YES or NO that appears alone."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):  # not JSON; a 5000-digit integer; nested too deep
            obj = None
        if isinstance(obj, dict) and obj.get("verdict") in ("YES", "NO"):
            return obj["verdict"] == "YES", " ".join(str(obj.get("reason", "")).split())[:300]
    m = _VERDICT.match(stripped)
    if m:
        return m.group(1).lower() == "yes", " ".join(stripped[m.end() :].split())[:300]
    found = {w for w in re.findall(r"\b(YES|NO)\b", stripped)}
    if len(found) == 1:
        return found.pop() == "YES", " ".join(stripped.split())[:300]
    return None, " ".join(stripped.split())[:300]


def judge_replies(
    replies: pd.DataFrame,
    dataset: Dataset,
    lang: str,
    client: ChatClient,
    cache: ReplyCache | None = None,
    nearest: dict[str, tuple[str, ...]] | None = None,
    progress: bool = False,
    concurrency: int = 1,
) -> pd.DataFrame:
    """``replies`` with ``judge`` (True, False or None), ``judge_reason`` and ``judge_model_id``;
    ``concurrency`` requests in flight (``memlab.answers.inflight``: the same verdicts, in order)."""
    import sys

    from tqdm.auto import tqdm

    verdicts, reasons, models = [], [], []
    fmt = next((k for k, v in JUDGE_FORMATS.items() if v == client.config.response_format), "json-object")
    asks = []
    for row in replies.itertuples(index=False):
        q = dataset.question(row.question_id)
        asks.append((judge_messages(q, row.reply, dataset, lang, (nearest or {}).get(q.id, ()), fmt), 0))
    with tqdm(total=len(replies), desc="judge", disable=not progress, file=sys.stderr) as bar:
        answers = complete_all(client, cache, "judge", asks, concurrency, bar)
    for answer in answers:
        verdict, reason = parse_verdict(answer.text)
        verdicts.append(verdict)
        reasons.append(reason)
        models.append(answer.model_id)
    return replies.assign(judge=verdicts, judge_reason=reasons, judge_model_id=models)


def check_replies(replies: pd.DataFrame, dataset: Dataset, lang: str) -> pd.DataFrame:
    """``replies`` with the checkable judge (``phrases``, ``phrases_reason``: None where the
    question gives no phrase in ``lang``) and LoCoMo's token F1 (``f1``: NaN without a reference
    answer)."""
    import numpy as np

    from memlab.answers.f1 import locomo_f1
    from memlab.answers.phrases import phrase_verdict

    verdicts, reasons, f1s = [], [], []
    for row in replies.itertuples(index=False):
        q = dataset.question(row.question_id)
        expect, avoid = q.replies.phrases(lang)
        verdict, reason = phrase_verdict(row.reply, expect, avoid)
        verdicts.append(verdict)
        reasons.append(reason)
        score = locomo_f1(row.reply, q.replies.answer.get(lang), getattr(q, "category", ""))
        f1s.append(np.nan if score is None else score)
    return replies.assign(phrases=verdicts, phrases_reason=reasons, f1=f1s)


# Cohen's kappa of the LLM judge with the checkable judge below which the LLM judge's rates are
# printed as unreliable: 0.6 is where Landis and Koch's "substantial" agreement begins (0.61);
# below it a judge agrees with a rule anyone can check little better than its own bias would
KAPPA_FLOOR = 0.6


@dataclass(frozen=True)
class Agreement:
    """How far the LLM judge agrees with the checkable judge on the replies both judged."""

    replies: int  # replies judged by both
    questions: int  # the questions they answer (the bootstrap's unit)
    agreed: int  # replies on which the two verdicts are the same
    kappa: float  # Cohen's kappa; NaN when undefined (both judges gave one same verdict throughout)
    lo: float  # its percentile interval over questions resampled with replacement (NaN: none)
    hi: float
    floor: float = KAPPA_FLOOR

    @property
    def share(self) -> float:
        return self.agreed / self.replies

    @property
    def reliable(self) -> bool:
        """Kappa at or above the floor; an undefined kappa (one verdict throughout) is not: it
        does not show that the LLM judge tells a good reply from a bad one."""
        return bool(self.kappa >= self.floor)

    def text(self) -> str:
        """One line: the share, kappa with its interval, and the verdict against the floor."""
        interval = "" if self.lo != self.lo else f" [{self.lo:.2f}, {self.hi:.2f}]"
        kappa = (
            "undefined (both judges gave one verdict to every reply)"
            if self.kappa != self.kappa
            else f"{self.kappa:.2f}{interval}"
        )
        verdict = (
            f"at or above the floor {self.floor:.2f}"
            if self.reliable
            else f"below the floor {self.floor:.2f}: UNRELIABLE, its rates are not results"
        )
        return (
            f"LLM judge against the checkable judge: same verdict on {self.agreed} of {self.replies} "
            f"replies both judged ({self.share:.2f}, {self.questions} questions), Cohen's kappa "
            f"{kappa}; {verdict}"
        )


def cohen_kappa(a: Sequence[bool], b: Sequence[bool], weights: Sequence[float] | None = None) -> float:
    """Cohen's kappa of two judges' yes/no verdicts, (p_o - p_e) / (1 - p_e) with p_o the share
    of agreement and p_e the agreement their own yes rates give by chance, by scikit-learn
    (``cohen_kappa_score``, each reply weighted by ``weights``); NaN when p_e = 1."""
    import warnings

    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():  # undefined (one verdict throughout): NaN, said in words
        warnings.simplefilter("ignore")
        return float(
            cohen_kappa_score(
                np.asarray(a, dtype=bool),
                np.asarray(b, dtype=bool),
                labels=[False, True],
                sample_weight=weights,
                replace_undefined_by=np.nan,
            )
        )


def kappa_of_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of many 2x2 tables at once: (..., 4) counts of (both YES, the first judge
    only, the second only, both NO) -> (...). With n the total, p_o = (both YES + both NO) / n,
    y1 and y2 the judges' YES shares and p_e = y1 y2 + (1 - y1)(1 - y2): (p_o - p_e) / (1 - p_e),
    NaN where p_e = 1 (one same verdict throughout) or n = 0. ``cohen_kappa`` of the same
    verdicts (scikit-learn's); this is its formula over the bootstrap's resamples, one array
    operation instead of one call per resample (a test holds them equal)."""
    t = np.asarray(tables, dtype=np.float64)
    n = t.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        po = (t[..., 0] + t[..., 3]) / n
        y1, y2 = (t[..., 0] + t[..., 1]) / n, (t[..., 0] + t[..., 2]) / n
        pe = y1 * y2 + (1 - y1) * (1 - y2)
        return np.where((n > 0) & (1 - pe > 1e-12), (po - pe) / (1 - pe), np.nan)


def judge_agreement(
    replies: pd.DataFrame, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> Agreement | None:
    """The LLM judge (``judge``) against the checkable judge (``phrases``) on the replies both
    judged; None when there is none (no LLM judge, or no phrase for the questions it judged).
    The interval resamples questions with replacement, all the replies of a question together
    (``memlab.drift.intervals.resample_counts``, as the rates do): repeats of a question are no
    independent evidence. Resamples where kappa is undefined are left out of it."""
    from memlab.drift.intervals import resample_counts

    if "judge" not in replies.columns or "phrases" not in replies.columns:
        return None
    both = replies[replies["judge"].notna() & replies["phrases"].notna()]
    if both.empty:
        return None
    llm = both["judge"].astype(bool).to_numpy()
    check = both["phrases"].astype(bool).to_numpy()
    ids = list(dict.fromkeys(both["question_id"]))
    index = both["question_id"].map({q: i for i, q in enumerate(ids)}).to_numpy()
    kappa = cohen_kappa(llm, check)
    lo = hi = float("nan")
    if n_boot:
        cell = np.select([llm & check, llm & ~check, ~llm & check], [0, 1, 2], 3)
        per_question = np.zeros((len(ids), 4))
        np.add.at(per_question, (index, cell), 1)
        # (n_boot, questions) draws times each question's table: every resample's table
        boot = kappa_of_tables(resample_counts(len(ids), n_boot, seed) @ per_question)
        boot = boot[~np.isnan(boot)]
        if boot.size:
            tail = (1 - level) / 2 * 100
            lo, hi = (float(x) for x in np.percentile(boot, [tail, 100 - tail]))
    return Agreement(len(both), len(ids), int((llm == check).sum()), kappa, lo, hi)
