"""Memory policies from the seed systems, as registries of small functions over arrays.

Write side (``WRITE_POLICIES``): which facts enter the store, and which stored ones a new fact
retires. A write policy sees what a real system sees: each fact's embedding, its extractor key
(filed topic, type) and its position in time, never the generator's ground-truth value.

- ``store-everything``: every fact is stored.
- ``dedup``: a fact whose cosine to a stored one is at or above ``duplicate_cosine`` is skipped
  (seed 004's novelty gate: it cannot tell a correction from a repeat).
- ``contradiction-aware``: a fact filed under the same key as an active memory is a repeat if it
  is that close to one of them (skipped), else a contradiction: it is stored and retires them,
  even though it is not novel (seed 004's fix). Other facts go through the ``dedup`` test. A
  retired memory is forgotten: no read system sees it again.

Read side (``READ_SYSTEMS``): each system turns a scene (queries, the visible store, its
timestamps) into one score per (configuration, budget, query, memory); ``-inf`` means "never
packed". Then ``pack`` fills the token budget greedily in score order.

- ``no-memory``: an empty context.
- ``full-history``: newest first until the budget is full.
- ``top-k``: the ``k`` highest raw cosines.
- ``recency-spec``: the retrieval spec (``memlab.core.spec``, ranked by ``memlab.core.ranking``):
  top ``candidates`` by cosine, plus ``bonus * decay(age, tau)`` in its decay family, kept at or
  above ``threshold``, the first ``inject``.
- ``multi-factor``: seed 001's ``alpha*cosine + beta*recency + gamma*salience + delta*prior``,
  with per-type half-lives, pinned types and reinforce-on-recall.
- ``supersession``: the tuned multi-factor score, with memories superseded by a newer one of the
  same key, or of the same type at cosine >= ``supersede_cosine`` (paraphrases filed under another
  topic), pushed down by ``retired_penalty`` (``inf``: excluded).
- ``content-supersession``: the same, but a newer memory retires an older one only when its
  content says it is about the same attribute with another value
  (``memlab.drift.content_supersession``: content keys, a low-surprise gate, a value-span
  exemption); retired memories pushed down by ``retired_penalty``.
- ``learned-supersession``: content supersession corrected by what the extractor's own labels
  say over the tuning streams (``memlab.drift.extractor_prior``): memories refiled under the
  learned key centroids, and a memory typed like a fact that reads like an event (its score on the
  learned event direction at or above ``event_threshold``; ``inf``: never) retires nothing.
- ``oracle``: not a memory system but a ceiling. It reads the generator's truth: a memory is
  excluded when a newer visible one has its true topic and another true value; the rest ranked
  by cosine. What any system could reach if it knew the topic and the value.
- ``oracle-topic``, ``oracle-distractors`` and ``oracle-filing``: not memory systems either, but
  content supersession told a part of the truth and re-tuned, to show what each kind of noise
  costs: each memory's true topic (both of the others), which memories are distractors (they
  then retire nothing and stand for no topic), or each fact's true topic (misfiled facts filed
  right; distractors stay where the extractor put them). None is told the value.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from memlab.core.ranking import candidate_mask, candidate_order, injected_mask, rank_of
from memlab.core.registry import lookup
from memlab.core.spec import RetrievalSpec, recency_weight, rescore
from memlab.drift.content_supersession import content_retired
from memlab.drift.extractor_prior import EVENT_TYPE

# Per-type half-lives of salience (days) and the type prior. Preferences are pinned: a user's
# stated taste does not fade because it was not mentioned for a while (seed 001).
TYPE_HALF_LIFE_DAYS = {"profile": 180.0, "preference": np.inf, "routine": 60.0, "event": 14.0}
PINNED_TYPES = tuple(t for t, h in TYPE_HALF_LIFE_DAYS.items() if np.isinf(h))
TYPE_PRIOR = {"profile": 1.0, "preference": 1.0, "routine": 0.8, "event": 0.2}
TYPE_ORDER = tuple(TYPE_HALF_LIFE_DAYS)


# ---------------------------------------------------------------------------------------------
# formulas


def half_life_decay(age_days: np.ndarray | float, half_life_days: np.ndarray | float) -> np.ndarray:
    """``0.5 ** (age / half_life)``: 1 at age 0, 0.5 at one half-life; 1 forever when pinned (inf)."""
    return np.power(0.5, np.asarray(age_days, dtype=np.float64) / half_life_days)


def effective_salience(
    salience: np.ndarray | float, days_since_access: np.ndarray | float, half_life_days: np.ndarray | float
) -> np.ndarray:
    """Salience faded since the memory was last written or recalled (seed 001's graded decay)."""
    return salience * half_life_decay(days_since_access, half_life_days)


def reinforce(last_access: np.ndarray, recalled: np.ndarray, when: float) -> np.ndarray:
    """Reinforce-on-recall: a recalled memory's last access becomes ``when`` (never moves back)."""
    return np.where(recalled, np.maximum(last_access, when), last_access)


def multi_factor_score(cosine, recency, salience, prior, alpha, beta, gamma, delta) -> np.ndarray:
    """``alpha*cosine + beta*recency + gamma*salience + delta*prior`` (seed 001)."""
    return alpha * cosine + beta * recency + gamma * salience + delta * prior


def superseded(
    visible: np.ndarray,
    newer_same_key: np.ndarray,
    newer_same_type: np.ndarray,
    cosine: np.ndarray,
    threshold: np.ndarray | float,
) -> np.ndarray:
    """Which memories a newer visible one supersedes: same (topic, type) key, or same type at
    cosine >= ``threshold`` (the pass for paraphrases filed under another topic).

    ``newer_*[i, j]``: memory j is newer than i and shares i's key / type; ``cosine`` is (M, M).
    ``threshold`` may be an array of shape (C,): the result is then (C, M).
    """
    thr = np.asarray(threshold, dtype=np.float64)[..., None, None]
    by = newer_same_key | (newer_same_type & (cosine >= thr))
    return (by & visible).any(axis=-1)


def pack(scores: np.ndarray, tokens: np.ndarray, budget: np.ndarray | float) -> np.ndarray:
    """Greedy packing: memories in score order (ties: earlier memory first) while the running token
    count stays within ``budget``; packing stops at the first memory that does not fit.

    ``scores`` is (..., M) with ``-inf`` for memories that may not be packed; ``budget`` broadcasts
    against ``scores.shape[:-1]``. Returns a boolean mask of packed memories, shaped like
    ``scores`` broadcast with the budget.
    """
    order = candidate_order(scores)  # score order, ties: the earlier memory first
    packable = np.isfinite(np.take_along_axis(scores, order, axis=-1))
    used = np.cumsum(np.where(packable, tokens[order], 0), axis=-1)
    # the running count only grows, so what fits is a prefix of the order: count it per budget,
    # then compare each memory's rank (computed once, without the budget axis) with that count
    fits = np.sum(packable & (used <= np.asarray(budget)[..., None]), axis=-1)
    return np.isfinite(scores) & (rank_of(order) < fits[..., None])


# ---------------------------------------------------------------------------------------------
# write policies


class WriteResult(NamedTuple):
    admitted: np.ndarray  # (M,) bool: the fact was stored
    forgotten_by: np.ndarray  # (M,) int: the fact whose write retired it; M: never


def _store_everything(cosine: np.ndarray, key: np.ndarray) -> WriteResult:
    m = len(key)
    return WriteResult(np.ones(m, dtype=bool), np.full(m, m))


def _dedup(cosine: np.ndarray, key: np.ndarray, duplicate_cosine: float) -> WriteResult:
    m = len(key)
    admitted = np.zeros(m, dtype=bool)
    for i in range(m):
        admitted[i] = not (cosine[i, :i][admitted[:i]] >= duplicate_cosine).any()
    return WriteResult(admitted, np.full(m, m))


def _contradiction_aware(cosine: np.ndarray, key: np.ndarray, duplicate_cosine: float) -> WriteResult:
    m = len(key)
    admitted = np.zeros(m, dtype=bool)
    forgotten_by = np.full(m, m)
    for i in range(m):
        active = admitted[:i] & (forgotten_by[:i] == m)
        same = active & (key[:i] == key[i])
        if same.any():
            if (cosine[i, :i][same] >= duplicate_cosine).any():
                continue  # a repeat of what the store holds under this key
            admitted[i] = True  # a contradiction: stored even though the topic is familiar
            forgotten_by[:i][same] = i
        elif not (cosine[i, :i][active] >= duplicate_cosine).any():
            admitted[i] = True
    return WriteResult(admitted, forgotten_by)


@dataclass(frozen=True)
class WritePolicy:
    name: str
    write: Callable[..., WriteResult]  # (cosine (M, M), key (M,), **params)
    grid: dict[str, tuple]
    description: str


WRITE_POLICIES: dict[str, WritePolicy] = {
    p.name: p
    for p in (
        WritePolicy("store-everything", _store_everything, {}, "every fact is stored"),
        WritePolicy(
            "dedup",
            _dedup,
            {"duplicate_cosine": (0.75, 0.8, 0.85, 0.9, 0.95)},
            "skip a fact at cosine >= duplicate_cosine to a stored one",
        ),
        WritePolicy(
            "contradiction-aware",
            _contradiction_aware,
            {"duplicate_cosine": (0.75, 0.8, 0.85, 0.9, 0.95)},
            "same key and not a near-repeat: stored, and retires the old memory",
        ),
    )
}


def write_policy(name: str) -> WritePolicy:
    return lookup(WRITE_POLICIES, name, "write policy")


# ---------------------------------------------------------------------------------------------
# read systems


@dataclass(frozen=True)
class Scene:
    """What a read system sees when queries are asked on day ``now``.

    ``cosine`` is (Q, M) and already ``-inf`` for memories not visible (not yet said, not stored,
    or forgotten). ``last_access`` is (C, B or 1, M): the day each memory was last written or
    recalled, per configuration and budget.
    """

    cosine: np.ndarray
    visible: np.ndarray  # (M,) bool
    now: float  # day number
    created: np.ndarray  # (M,) day each memory was written
    position: np.ndarray  # (M,) order in which memories were written
    half_life: np.ndarray  # (M,) salience half-life of each memory's type (inf: pinned)
    prior: np.ndarray  # (M,) type prior
    newer_same_key: np.ndarray  # (M, M)
    newer_same_type: np.ndarray  # (M, M)
    memory_cosine: np.ndarray  # (M, M)
    last_access: np.ndarray  # (C, B or 1, M)
    key: np.ndarray | None = None  # (M,) key id of (filed topic, type)
    key_type: np.ndarray | None = None  # (K,) type id of each key
    memory_type: np.ndarray | None = None  # (M,) type id
    shares_term: np.ndarray | None = None  # (M, M) the two texts share a keyword (BM25) term
    # (M, M) [i, j]: j is newer than i, same true topic, another true value. The generator's
    # truth: read by the ``oracle`` line only, never by a memory system.
    oracle_supersedes: np.ndarray | None = None
    oracle_topic: np.ndarray | None = None  # (M,) true topic id, -1 for a distractor: oracle lines only
    oracle_key: np.ndarray | None = None  # (M,) key id with misfiling undone: oracle lines only
    oracle_key_type: np.ndarray | None = None  # (K'',) type id of each of those keys
    # the extractor prior's (memlab.drift.extractor_prior): keys refiled by the centroids learned
    # on the tuning streams, and how much each memory reads like an event
    learned_key: np.ndarray | None = None  # (M,)
    learned_key_type: np.ndarray | None = None  # (K',)
    event_score: np.ndarray | None = None  # (M,)


def _column(params: dict[str, np.ndarray], name: str) -> np.ndarray:
    """A parameter as (C, 1, 1, 1), to broadcast over (config, budget, query, memory)."""
    return np.asarray(params[name], dtype=np.float64).reshape(-1, 1, 1, 1)


def _no_memory(scene: Scene, params) -> np.ndarray:
    return np.full((1, 1, *scene.cosine.shape), -np.inf)


def _full_history(scene: Scene, params) -> np.ndarray:
    newest_first = np.where(scene.visible, scene.position.astype(np.float64), -np.inf)
    return np.broadcast_to(newest_first, (1, 1, *scene.cosine.shape))


def _top_k(scene: Scene, params) -> np.ndarray:
    return np.where(candidate_mask(scene.cosine, _column(params, "k")), scene.cosine, -np.inf)


def _recency_spec(scene: Scene, params) -> np.ndarray:
    """The whole retrieval spec, decay family included, through ``memlab.core.ranking``: the
    candidate rule, the re-sort and the threshold-and-inject rule of the reference."""
    raw = scene.cosine
    age = scene.now - scene.created
    tau, bonus = _column(params, "tau_days"), _column(params, "bonus")
    n = len(tau)
    decays = np.broadcast_to(np.asarray(params.get("decay", RetrievalSpec.decay), dtype=object), (n,))
    combines = np.broadcast_to(np.asarray(params.get("combine", RetrievalSpec.combine), dtype=object), (n,))
    final = np.empty(np.broadcast_shapes(tau.shape, raw.shape))
    for decay, combine in dict.fromkeys(zip(decays, combines, strict=True)):
        rows = (decays == decay) & (combines == combine)
        final[rows] = rescore(raw, recency_weight(age, tau[rows], decay), bonus[rows], combine)
    candidate = candidate_mask(raw, _column(params, "candidates"))
    chosen = injected_mask(raw, final, candidate, _column(params, "threshold"), _column(params, "inject"))
    return np.where(chosen, final, -np.inf)


def _multi_factor(scene: Scene, params) -> np.ndarray:
    recency = half_life_decay(scene.now - scene.created, _column(params, "recency_half_life_days"))
    since = (scene.now - scene.last_access)[:, :, None, :]  # (C, B, 1, M)
    salience = effective_salience(1.0, since, scene.half_life * _column(params, "half_life_scale"))
    score = multi_factor_score(
        scene.cosine,
        recency,
        salience,
        scene.prior,
        _column(params, "alpha"),
        _column(params, "beta"),
        _column(params, "gamma"),
        _column(params, "delta"),
    )
    return np.where(np.isfinite(scene.cosine), score, -np.inf)


def _supersession(scene: Scene, params) -> np.ndarray:
    score = _multi_factor(scene, params)
    retired = superseded(
        scene.visible,
        scene.newer_same_key,
        scene.newer_same_type,
        scene.memory_cosine,
        np.asarray(params["supersede_cosine"], dtype=np.float64),
    )  # (C, M)
    penalty = _column(params, "retired_penalty")
    return np.where(retired[:, None, None, :], score - penalty, score)


def _retired_by_content(scene: Scene, params) -> np.ndarray:
    """(C, Q, M): ``memlab.drift.content_supersession.content_retired`` on the scene."""
    return content_retired(
        cosine=scene.memory_cosine,
        query_cosine=scene.cosine,
        key=scene.key,
        key_type=scene.key_type,
        memory_type=scene.memory_type,
        visible=scene.visible,
        shares_term=scene.shares_term,
        params={k: np.asarray(v, dtype=np.float64) for k, v in params.items()},
    )


def _content_supersession(scene: Scene, params) -> np.ndarray:
    score = _multi_factor(scene, params)
    retired = _retired_by_content(scene, params)  # (C, Q, M)
    penalty = _column(params, "retired_penalty")
    return np.where(retired[:, None, :, :], score - penalty, score)


def _as_events(scene: Scene, event: np.ndarray) -> Scene:
    """The scene with every ``event`` memory in a key and a type of its own (each its own, so the
    same-type cosine pass cannot pair two of them either): it retires nothing, is retired by
    nothing, and shapes no topic's centroid."""
    flagged = np.flatnonzero(event)
    own_types = max(int(scene.memory_type.max()), int(scene.key_type.max())) + 1 + np.arange(len(flagged))
    key = scene.key.copy()
    key[flagged] = len(scene.key_type) + np.arange(len(flagged))
    memory_type = scene.memory_type.copy()
    memory_type[flagged] = own_types
    key_type = np.concatenate([scene.key_type, own_types])
    return dataclasses.replace(scene, key=key, key_type=key_type, memory_type=memory_type)


def _told_distractors(scene: Scene) -> Scene:
    return _as_events(scene, scene.oracle_topic < 0)


def _told_filing(scene: Scene) -> Scene:
    """The scene with each fact filed under (its true topic, its type); distractors keep the
    extractor's key, in the same namespace (a typed distractor still shares its topic's key)."""
    return dataclasses.replace(scene, key=scene.oracle_key, key_type=scene.oracle_key_type)


def _learned_supersession(scene: Scene, params) -> np.ndarray:
    """Content supersession on the learned keys, memories typed like facts that read like events
    (``event_score >= event_threshold``) treated as events."""
    learned = dataclasses.replace(scene, key=scene.learned_key, key_type=scene.learned_key_type)
    thresholds = np.asarray(params["event_threshold"], dtype=np.float64)
    score = _multi_factor(scene, params)
    retired = np.zeros((len(thresholds), *scene.cosine.shape), dtype=bool)
    typed = scene.memory_type != TYPE_ORDER.index(EVENT_TYPE)  # typed like a fact
    for value in np.unique(thresholds):  # the scene depends on the threshold alone
        rows = np.flatnonzero(thresholds == value)
        s = _as_events(learned, typed & (scene.event_score >= value))
        subset = {k: np.asarray(v, dtype=np.float64)[rows] for k, v in params.items()}
        retired[rows] = _retired_by_content(s, subset)
    penalty = _column(params, "retired_penalty")
    return np.where(retired[:, None, :, :], score - penalty, score)


def _oracle_distractors(scene: Scene, params) -> np.ndarray:
    return _content_supersession(_told_distractors(scene), params)


def _oracle_filing(scene: Scene, params) -> np.ndarray:
    return _content_supersession(_told_filing(scene), params)


def _oracle_topic(scene: Scene, params) -> np.ndarray:
    return _content_supersession(_told_distractors(_told_filing(scene)), params)


def _oracle(scene: Scene, params) -> np.ndarray:
    retired = (scene.oracle_supersedes & scene.visible[None, :]).any(axis=-1)
    return np.broadcast_to(np.where(retired, -np.inf, scene.cosine), (1, 1, *scene.cosine.shape))


@dataclass(frozen=True)
class ReadSystem:
    name: str
    score: Callable[[Scene, dict[str, np.ndarray]], np.ndarray]
    grid: dict[str, tuple]
    description: str
    base: str | None = None  # a system whose tuned parameters this one starts from
    reinforces: bool = False  # reads last_access: recalls during the stream are simulated
    oracle: bool = False  # reads the generator's truth: a ceiling to report, not a memory system


MULTI_FACTOR_GRID: dict[str, tuple] = {
    "alpha": (1.0,),  # only ratios matter: packing reads the order of the scores, not their scale
    "beta": (0.0, 0.1, 0.3, 1.0),
    "gamma": (0.0, 0.1, 0.3),
    "delta": (0.0, 0.1, 0.3),
    "recency_half_life_days": (14.0, 60.0, 180.0),
    "half_life_scale": (1.0,),
    "reinforce": (0, 1),
}

CONTENT_SUPERSESSION_GRID: dict[str, tuple] = {
    "key_trust": (0.1, 0.2),  # bonus for the extractor's key when refiling by content
    "supersede_cosine": (0.6, 1.01),  # same-type cosine pass (1.01: off)
    "retire_gate": (-np.inf, 0.3, 0.4, 0.5),  # cosine(query, newer) + affinity; -inf: no gate
    "exempt_affinity": (0.0, 0.45),  # value-span exemption below this affinity; 0: off
    "retired_penalty": (0.1, 0.3, 1.0, np.inf),
}

READ_SYSTEMS: dict[str, ReadSystem] = {
    s.name: s
    for s in (
        ReadSystem("no-memory", _no_memory, {}, "an empty context"),
        ReadSystem("full-history", _full_history, {}, "newest first until the budget is full"),
        ReadSystem("top-k", _top_k, {"k": (1, 2, 3, 5, 8, 1000)}, "the k nearest by cosine"),
        ReadSystem(
            "recency-spec",
            _recency_spec,
            {
                "candidates": (8, 20),
                "bonus": (0.0, 0.05, 0.1, 0.2, 0.4),
                "tau_days": (1.0, 14.0, 60.0),
                "threshold": (0.1, 0.2, 0.3, 0.45),
                "inject": (1, 3, 8),
                "decay": (RetrievalSpec.decay,),  # memlab drift --decay / --combine widen these
                "combine": (RetrievalSpec.combine,),
            },
            "the retrieval spec: cosine + bonus * decay(age, tau) (its decay family), threshold, inject",
        ),
        ReadSystem(
            "multi-factor",
            _multi_factor,
            MULTI_FACTOR_GRID,
            "alpha*cosine + beta*recency + gamma*salience + delta*type prior",
            reinforces=True,
        ),
        ReadSystem(
            "supersession",
            _supersession,
            {
                # 1.01: no cosine pass, the (topic, type) key alone
                "supersede_cosine": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01),
                "retired_penalty": (0.1, 0.3, 1.0, np.inf),
            },
            "the tuned multi-factor score; superseded memories down-weighted or excluded",
            base="multi-factor",
            reinforces=True,
        ),
        ReadSystem(
            "content-supersession",
            _content_supersession,
            CONTENT_SUPERSESSION_GRID,
            "the tuned multi-factor score; memories retired by content (content key, low-surprise "
            "gate, value span) down-weighted or excluded",
            base="multi-factor",
            reinforces=True,
        ),
        ReadSystem(
            "learned-supersession",
            _learned_supersession,
            {**CONTENT_SUPERSESSION_GRID, "event_threshold": (0.6, 0.8, np.inf)},
            "content-supersession on keys refiled by centroids learned from the extractor's labels on "
            "the tuning streams, memories that read like events (event_threshold) retiring nothing",
            base="multi-factor",
            reinforces=True,
        ),
        ReadSystem(
            "oracle",
            _oracle,
            {},
            "ceiling: knows the true topic and value, excludes superseded memories, ranks by cosine",
            oracle=True,
        ),
        ReadSystem(
            "oracle-topic",
            _oracle_topic,
            CONTENT_SUPERSESSION_GRID,
            "content-supersession told each memory's true topic (distractors: none), re-tuned",
            base="multi-factor",
            reinforces=True,
            oracle=True,
        ),
        ReadSystem(
            "oracle-distractors",
            _oracle_distractors,
            CONTENT_SUPERSESSION_GRID,
            "content-supersession told which memories are distractors (the truth), re-tuned",
            base="multi-factor",
            reinforces=True,
            oracle=True,
        ),
        ReadSystem(
            "oracle-filing",
            _oracle_filing,
            CONTENT_SUPERSESSION_GRID,
            "content-supersession told each fact's true topic (misfiling undone), re-tuned",
            base="multi-factor",
            reinforces=True,
            oracle=True,
        ),
    )
}


def read_system(name: str) -> ReadSystem:
    return lookup(READ_SYSTEMS, name, "read system")


def expand_grid(grid: dict[str, tuple]) -> list[dict[str, float]]:
    """Every combination, in a deterministic order: keys sorted, values in the order given
    (so a tie goes to the combination listed first, as in scikit-learn's ParameterGrid)."""
    keys = sorted(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))]


def grid_columns(configs: list[dict[str, float]]) -> dict[str, np.ndarray]:
    """A list of configurations as one array per parameter (length C)."""
    if not configs or not configs[0]:
        return {}
    out = {}
    for k in configs[0]:
        values = [c[k] for c in configs]
        named = any(isinstance(v, str) for v in values)  # a decay family, not a number
        out[k] = np.array(values, dtype=object if named else np.float64)
    return out
