"""The keyword route: BM25 over memory texts (bm25s), with a tokenizer per language.

- English: bm25s's tokenizer (lower case, words of two or more characters), its English stop
  words and the Snowball English stemmer (PyStemmer), so "drinks" and "drinking" meet.
- Japanese: janome (dictionary bundled in the PyPI wheel, nothing downloaded), keeping the base
  form of content words: nouns (not pronouns or dependent nouns), independent verbs and
  adjectives, and numbers (no punctuation, no light verbs such as する), so 飲んでいる and 飲む meet.

BM25 is bm25s's default (Lucene variant, k1=1.5, b=0.75). A question is a set of terms: a term
said twice counts once, so the score equals a sparse dot product with a 0/1 query vector (the
form Qdrant's sparse search uses, see ``memlab.qdrant.store``). A memory that shares no term with the
question scores 0 and is not a keyword candidate: the route is quiet when the words do not match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from memlab.core.registry import lookup


@cache
def _english_stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _tokenize_en(texts: Sequence[str]) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(
        list(texts),
        stopwords="en",
        stemmer=_english_stemmer().stemWords,
        return_ids=False,
        show_progress=False,
    )


@cache
def _janome():
    from janome.tokenizer import Tokenizer

    return Tokenizer()


_JA_KEEP = ("名詞", "動詞,自立", "形容詞,自立")
_JA_DROP = ("名詞,代名詞", "名詞,非自立", "名詞,接尾")
# light verbs that carry no topic ("did", "became", "is")
_JA_STOP = frozenset({"する", "なる", "いる", "ある", "やる", "てる", "できる"})


def _tokenize_ja(texts: Sequence[str]) -> list[list[str]]:
    out = []
    for text in texts:
        words = []
        for t in _janome().tokenize(text):
            pos = t.part_of_speech
            word = (t.base_form if t.base_form != "*" else t.surface).lower()
            if (
                pos.startswith(_JA_KEEP)
                and not pos.startswith(_JA_DROP)
                and word not in _JA_STOP
                and any(ch.isalnum() for ch in word)  # janome files ":" and "-" as nouns
            ):
                words.append(word)
        out.append(words)
    return out


TOKENIZERS: dict[str, Callable[[Sequence[str]], list[list[str]]]] = {
    "en": _tokenize_en,
    "ja": _tokenize_ja,
}


def tokenize(texts: Sequence[str], lang: str) -> list[list[str]]:
    return lookup(TOKENIZERS, lang, "keyword tokenizer language")(texts)


@dataclass(frozen=True)
class KeywordIndex:
    """A BM25 index of the memory texts; ``scores`` gives a (Q, M) table for questions."""

    lang: str
    retriever: object  # bm25s.BM25
    vocabulary: frozenset[str]

    @classmethod
    def build(cls, memory_texts: Sequence[str], lang: str) -> KeywordIndex:
        import bm25s

        tokens = tokenize(memory_texts, lang)
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        return cls(lang, retriever, frozenset(t for doc in tokens for t in doc))

    def terms(self, question: str) -> list[str]:
        """The question's distinct terms that occur in some memory, in first-seen order."""
        return [t for t in dict.fromkeys(tokenize([question], self.lang)[0]) if t in self.vocabulary]

    def scores(self, questions: Sequence[str]) -> np.ndarray:
        n_mem = self.retriever.scores["num_docs"]
        out = np.zeros((len(questions), n_mem))
        for i, q in enumerate(questions):
            terms = self.terms(q)
            if terms:
                out[i] = self.retriever.get_scores(terms)
        return out

    def term_ids(self, question: str) -> list[int]:
        """The question's distinct known terms as the index's term ids (a sparse 0/1 query)."""
        vocab = self.retriever.vocab_dict
        return [int(vocab[t]) for t in self.terms(question)]

    def sparse_vectors(self) -> list[dict[int, float]]:
        """Per memory, {term id: that term's BM25 contribution}: the sparse vectors a store indexes,
        so that a dot product with ``term_ids`` reproduces ``scores``."""
        s = self.retriever.scores
        data, indices, indptr = s["data"], s["indices"], s["indptr"]  # CSC: one column per term
        out: list[dict[int, float]] = [{} for _ in range(s["num_docs"])]
        for term_id in range(len(indptr) - 1):
            for k in range(indptr[term_id], indptr[term_id + 1]):
                out[int(indices[k])][term_id] = float(data[k])
        return out
