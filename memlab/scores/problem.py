"""One retrieval problem: the dataset, its score table (with the identity of the model that made
it), and the whole spec. Built once by ``build_problem`` and handed to every command, study,
notebook and export, so none of them can disagree with another on which model embeds a new text,
which threshold applies or which decay family scores.

Anything that embeds a new text for the problem (the exported query vector, calibration probes,
scale distractors, the panel) embeds through ``RetrievalProblem.embedder``: the model that made
the scores. A dataset whose stored vectors record another model than the one asked for is refused
(``memlab.scores.sources.dataset_model``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.labels import Labels
from memlab.core.registry import lookup
from memlab.core.shards import Pool, narrow
from memlab.core.spec import SPEC_FIELDS, RetrievalSpec
from memlab.datasets.schema import Dataset, load_dataset
from memlab.qdrant.sharding import Scope
from memlab.scores.sources import (
    EMBEDDING_SOURCES,
    SOURCES,
    ScoreDefaults,
    ScoreOptions,
    ScoreTable,
    dataset_embedder,
    dataset_model,
    model_defaults,
    score_defaults,
)

if TYPE_CHECKING:
    from memlab.embedding.embedder import Embedder, ModelIdentity


@dataclass(frozen=True, eq=False)
class RetrievalProblem:
    """A dataset, its scores and the spec that reads them.

    The scores are computed on first use (``scores``): exporting a spec whose threshold is known
    (given, or the model card's) embeds nothing; everything else reads the same table."""

    dataset: Dataset
    spec: RetrievalSpec  # the whole spec, with the dataset's reference date
    options: ScoreOptions = field(default_factory=ScoreOptions)
    # whether the threshold was given, or is the default that follows the scores
    threshold_given: bool = True
    # the tenant filter and the shards the collection runs the query on (one shard, no filter)
    scope: Scope = field(default_factory=Scope)
    # what is computed once, on first use, and shared with the same problem under another spec:
    # the embedder (its model settled by memlab.scores.sources.dataset_model) and the scores
    _computed: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(
        cls,
        dataset: Dataset,
        scores: ScoreTable,
        spec: RetrievalSpec,
        options: ScoreOptions | None = None,
        scope: Scope | None = None,
    ) -> RetrievalProblem:
        """A problem over scores computed elsewhere (tests, a custom source)."""
        spec = spec.with_reference(dataset.reference_date)
        problem = cls(dataset, spec, options or ScoreOptions(), True, scope or Scope())
        problem._computed["scores"] = scores
        return problem

    @property
    def scores(self) -> ScoreTable:
        """The score table (computed once, on first use, by the options' source)."""
        if "scores" not in self._computed:
            from memlab.core.registry import lookup
            from memlab.scores.sources import SOURCES

            source = lookup(SOURCES, self.options.source, "score source")
            embedder = self.embedder if self.options.source in EMBEDDING_SOURCES else None
            self._computed["scores"] = source(self.dataset, self.options, embedder)
        return self._computed["scores"]

    @property
    def lang(self) -> str:
        return self.options.lang

    @property
    def source(self) -> str:
        return self.options.source

    @property
    def defaults(self) -> ScoreDefaults:
        """The threshold and sweep ranges that follow these scores (the model's, or the seed's)."""
        known = known_defaults(self.dataset, self.options)
        return known if known is not None else score_defaults(self.scores, self.dataset)

    @property
    def raw(self) -> np.ndarray:
        """Raw scores, NaN where a memory did not exist yet when the question was asked or the
        tenant filter leaves it out."""
        return narrow(self.scores.retrievable(self.dataset), self.pool)

    @property
    def pool(self) -> Pool:
        """The candidate pool of the scope: the filter's memories, split into the shards."""
        if "pool" not in self._computed:
            self._computed["pool"] = self.scope.pool(self.dataset.memories)
        return self._computed["pool"]

    def ages(self) -> np.ndarray:
        return self.dataset.ages()

    def labels(self) -> Labels:
        return Labels.from_dataset(self.dataset)

    @property
    def embedder(self) -> Embedder:
        """The embedder of the model that made the scores: new texts go through it."""
        if "embedder" not in self._computed:
            if self.options.source not in EMBEDDING_SOURCES:
                raise InputError(
                    f"the {self.options.source} scores of {self.dataset.name!r} come from a model memlab "
                    "cannot run here: nothing new can be embedded alike (use --source embedded)"
                )
            self._computed["embedder"] = dataset_embedder(self.dataset, self.options)
        return self._computed["embedder"]

    @property
    def model(self) -> ModelIdentity | None:
        """The identity of the model the scores come from (``problem.scores.model``), read from the
        embedder when one makes them, so knowing it embeds nothing."""
        if "scores" in self._computed or self.options.source not in EMBEDDING_SOURCES:
            return self.scores.model
        return self.embedder.model

    @property
    def model_id(self) -> str:
        if self.options.source in EMBEDDING_SOURCES:
            return self.embedder.model_id
        return self.scores.model.model_id if self.scores.model else str(self.scores.model_label or "")

    def memory_vectors(self) -> np.ndarray:
        """The memories' unit vectors (embedded, or stored beside an imported dataset)."""
        if self.scores.vectors is None:
            raise InputError(f"the {self.scores.source} scores of {self.dataset.name!r} carry no vectors")
        return self.scores.vectors.memories

    def question_vectors(self) -> np.ndarray:
        if self.scores.vectors is None:
            raise InputError(f"the {self.scores.source} scores of {self.dataset.name!r} carry no vectors")
        return self.scores.vectors.questions

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode_queries(texts)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode_documents(texts)

    def with_spec(self, spec: RetrievalSpec | None = None, **fields: Any) -> RetrievalProblem:
        """The same dataset and scores under another spec (or these fields changed)."""
        spec = replace(spec or self.spec, **fields) if fields else (spec or self.spec)
        given = self.threshold_given or "threshold" in fields
        out = RetrievalProblem(
            self.dataset,
            spec.with_reference(self.dataset.reference_date),
            self.options,
            given,
            self.scope,
        )
        out._computed.update(self._computed)  # the same embedder, scores and pool
        return out

    def with_scope(self, scope: Scope) -> RetrievalProblem:
        """The same dataset, scores and spec on another filter or shard count."""
        out = RetrievalProblem(self.dataset, self.spec, self.options, self.threshold_given, scope)
        out._computed.update({k: v for k, v in self._computed.items() if k != "pool"})
        return out


def known_defaults(dataset: Dataset, options: ScoreOptions) -> ScoreDefaults | None:
    """The defaults settled before any score is computed (``model_defaults``): the seed's for
    published scores, the model card's for the model the dataset is embedded with; None for a
    model without a card, or a server's model of its own."""
    if options.source not in EMBEDDING_SOURCES:
        return model_defaults(options.source, None, options.lang)
    from memlab.embedding.embedder import declared_same

    model = dataset_model(dataset, options)
    if options.server is not None and not declared_same(options.server, model):
        return None
    return model_defaults(options.source, model, options.lang)


def build_problem(
    dataset: Dataset | str,
    options: ScoreOptions | None = None,
    spec: RetrievalSpec | None = None,
    scope: Scope | None = None,
    **fields: Any,
) -> RetrievalProblem:
    """Load the dataset (a name or folder) and settle the model and the whole spec, once.

    ``options`` says where scores come from and which model embeds (``ScoreOptions``); ``spec``
    is a whole spec, or ``fields`` are spec fields (``bonus=0.04, tau_days=30, decay="gauss"``),
    None meaning the default; ``scope`` the tenant filter and the shards
    (``memlab.qdrant.sharding.Scope``; None: every memory, one shard).
    A threshold not given follows the scores: the seed's 0.45 for published scores, the model
    card's for the language, else the scores' own distribution (the one case that scores the
    dataset here rather than on first use).
    """
    options = options or ScoreOptions()
    if isinstance(dataset, str):
        dataset = load_dataset(dataset)
    unknown = sorted(set(fields) - set(SPEC_FIELDS))
    if unknown:
        raise InputError(f"not a spec field: {', '.join(unknown)}; the spec has {', '.join(SPEC_FIELDS)}")
    lookup(SOURCES, options.source, "score source")
    given = {k: v for k, v in fields.items() if v is not None}
    threshold_given = "threshold" in given or spec is not None
    scope = scope or Scope()
    # the tenant's own questions: another tenant's ask about memories it cannot see; a store without
    # questions (a collection calibrate and explain read) is filtered on its memories alone
    if scope.filters and dataset.questions:
        from memlab.datasets.payload import asked_by, filter_text

        kept = asked_by(dataset.questions, scope.filters)
        if not kept:
            raise InputError(
                f"--filter {filter_text(scope.filters)}: no question of {dataset.name} is asked by it"
            )
        if len(kept) < len(dataset.questions):
            ids = {q.id for q in kept}
            declared = dataset.criteria  # those about another tenant's question go with it
            criteria = None if declared is None else tuple(c for c in declared if c.question in (None, *ids))
            left_out = frozenset(q.id for q in dataset.questions) - ids
            dataset = replace(dataset, questions=kept, criteria=criteria, questions_left_out=left_out)
    problem = RetrievalProblem(dataset, spec or RetrievalSpec(), options, threshold_given, scope)
    _ = problem.pool  # a filter naming no field fails here, before anything is scored
    if not threshold_given:
        known = known_defaults(dataset, options)
        given["threshold"] = (known or score_defaults(problem.scores, dataset)).threshold
    return problem.with_spec(replace(problem.spec, **given))
