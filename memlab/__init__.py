"""memlab: measure and tune how an LLM agent's long-term memory is recalled."""

from memlab.core.criteria import SEED_CRITERIA, Criterion
from memlab.core.spec import RetrievalSpec, final_score, recency_bonus, recency_weight, retrieve
from memlab.datasets.schema import Dataset, DatasetError, Memory, Question, load_dataset
from memlab.integrations.retriever import AsyncRetriever, RetrievedMemory, Retriever
from memlab.scores.problem import RetrievalProblem, build_problem
from memlab.scores.sources import SOURCES, ScoreOptions, ScoreTable, load_scores
from memlab.tuning.evaluate import SEED_CANDIDATES, Evaluation, candidate_table, evaluate
from memlab.tuning.tuned import TunedSpec, load_tuned, tuned_problem

__version__ = "0.1.0"

__all__ = [
    "SEED_CANDIDATES",
    "SEED_CRITERIA",
    "SOURCES",
    "AsyncRetriever",
    "Criterion",
    "Dataset",
    "DatasetError",
    "Evaluation",
    "Memory",
    "Question",
    "RetrievalProblem",
    "RetrievalSpec",
    "RetrievedMemory",
    "Retriever",
    "ScoreOptions",
    "ScoreTable",
    "TunedSpec",
    "build_problem",
    "candidate_table",
    "evaluate",
    "final_score",
    "load_dataset",
    "load_scores",
    "load_tuned",
    "recency_bonus",
    "recency_weight",
    "retrieve",
    "tuned_problem",
]
