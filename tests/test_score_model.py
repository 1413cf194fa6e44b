"""One model identity on a score table: ``ScoreTable.model`` is the one record of who made the
scores; ``details`` no longer repeat it, commands read it through ``model_label`` and
``card_name``, and result files keep the ``model`` and ``model_name`` they always had."""

from __future__ import annotations

import json

import numpy as np

from memlab.core.spec import RetrievalSpec
from memlab.datasets.schema import load_dataset
from memlab.embedding.embedder import ModelIdentity
from memlab.embedding.models import model_card
from memlab.scores.sources import ScoreTable, published_scores, score_defaults
from memlab.tuning.evaluate import evaluate


def test_published_scores_name_their_model_once():
    dataset = load_dataset("seed16")
    scores = published_scores(dataset)
    stated = json.loads((dataset.path / "published.json").read_text())["model"]
    assert scores.model is not None and scores.model.name == stated
    assert scores.model_label == stated  # by its name, not "... (published scores)"
    assert "model" not in scores.details and "model_name" not in scores.details
    assert scores.card_name is None
    assert scores.model_record() == {"model": stated}
    # the evaluation's file keeps its form: source = name, lang, model, pairs, dates
    source = evaluate(dataset, scores, RetrievalSpec()).to_dict()["source"]
    assert list(source)[:5] == ["name", "lang", "model", "pairs", "dates"]
    assert source["model"] == stated and source["pairs"] == scores.details["pairs"]


def embedded(identity: ModelIdentity | None) -> ScoreTable:
    raw = np.array([[0.9, 0.1], [0.2, 0.8]])
    return ScoreTable(("q1", "q2"), ("m1", "m2"), raw, "embedded", {"dim": 4, "lang": "en"}, model=identity)


LOCAL = ModelIdentity(
    "multilingual-e5-small", "multilingual-e5-small@st==5", {"engine": "sentence-transformers"}
)
SERVED = ModelIdentity(
    "tiny", "tiny@http://h/v1/embeddings", {"engine": "openai-compatible", "model": "tiny"}
)


def test_an_embedded_table_reads_its_model_from_the_record():
    local, served, none = embedded(LOCAL), embedded(SERVED), embedded(None)
    assert (local.model_label, local.card_name) == ("multilingual-e5-small@st==5", "multilingual-e5-small")
    assert (served.model_label, served.card_name) == ("tiny@http://h/v1/embeddings", None)
    assert (none.model_label, none.card_name, none.model_record()) == (None, None, {})
    assert local.model_record() == {
        "model": "multilingual-e5-small@st==5",
        "model_name": "multilingual-e5-small",
    }
    assert served.model_record() == {"model": "tiny@http://h/v1/embeddings", "model_name": None}


def test_the_defaults_follow_the_card_of_the_recorded_model():
    card = model_card("multilingual-e5-small")
    assert card is not None and "en" in card.thresholds
    assert score_defaults(embedded(LOCAL)).threshold == card.thresholds["en"]
    # a server's model of its own has no card: the table's own distribution says
    assert score_defaults(embedded(SERVED)) == score_defaults(embedded(None))
