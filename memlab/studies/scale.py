"""Headroom at scale: how the best post-bonus score on no-hit questions grows with N memories.

What the figures rest on:
- distractors are synthetic dated memories from templates over everyday topics (seeded,
  deterministic), dated uniformly over the year before each question's own date (its ``date``,
  else the reference date): N counts memories a question can see, so a question asked at an
  early session of a long conversation faces as many distractors as the last one (their texts
  carry dates counted back from the reference date; the age the bonus reads is from the question);
- a pool of them (thousands to tens of thousands) is embedded for real, once, through the cache;
- beyond the pool, vectors come from a multivariate Gaussian fitted to the pool's unit vectors
  (mean and full covariance), each sample L2-normalised: ``GaussianVectors``. At sizes where
  both exist the curve is measured on real and on model vectors side by side.
- top-k is exact: chunked matrix products (numpy BLAS) merged by ``memlab.core.ranking`` (the
  candidate rule's ties), never a loop over memories, so memory stays bounded by the chunk size.
- the prediction is an extreme-value model: the pool is cut into blocks, each block's spec
  outcome (the best post-bonus score among its top ``candidates`` by raw score) is fitted with a
  generalised extreme-value law (scipy) and carried to any N by max-stability (``MaxLaw``).
  The no-hit maximum over several questions is the product of their laws; ``n_zero_headroom``
  is the N where its median reaches the threshold.
- the crossings (``median_crossing``, in closed form for one law): the N at which the median of
  the best distractor's score reaches a level. With m = N / block, the law at N has the median
  loc + (scale / c) (1 - (ln 2 / m)^c) (c > 0) or loc + scale ln(m / ln 2) (c = 0, Gumbel), so
  N = block ln 2 / (1 - c (level - loc) / scale)^(1/c), or block ln 2 exp((level - loc) / scale).
  A bounded law (c > 0) rises towards loc + scale / c and never reaches a level at or above it.
  A hit question whose current memory is not injected at the dataset's own size (below the
  threshold, not a candidate, or ranked past ``inject``: ``lost_now``) has lost it now, whatever
  the distractors do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memlab.core.errors import InputError
from memlab.core.numbers import check_number, check_work
from memlab.core.ranking import merge_top_k
from memlab.core.spec import RetrievalSpec, best_final, retrieve
from memlab.studies.distractor_templates import distractor_templates

if TYPE_CHECKING:
    from memlab.scores.problem import RetrievalProblem


def distractor_texts(
    n: int, reference: np.datetime64 | datetime, seed: int = 0, span_days: int = 365, lang: str = "en"
) -> tuple[list[str], np.ndarray]:
    """``n`` dated memory texts ("YYYY-MM-DD: The user ...", in ``lang``) and their ages in days,
    seeded (``memlab.studies.distractor_templates``).

    Texts are unique while the template space lasts (about 100,000 combinations).
    """
    templates, slots = distractor_templates(lang)
    if isinstance(reference, datetime):
        reference = np.datetime64(
            reference.astimezone(UTC).replace(tzinfo=None) if reference.tzinfo else reference, "D"
        )
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    seen: set[str] = set()
    ages = rng.integers(0, span_days, size=n).astype(np.float64)
    tries = 0
    while len(texts) < n:
        template = templates[rng.integers(len(templates))]
        fill = {k: v[rng.integers(len(v))] for k, v in slots.items()}
        sentence = template.format(**fill)
        tries += 1
        if sentence in seen and tries < 20 * n:
            continue
        seen.add(sentence)
        date = (reference - np.timedelta64(int(ages[len(texts)]), "D")).astype("datetime64[D]")
        texts.append(f"{date}: {sentence}")
    return texts, ages


def sample_from_dataset(
    dataset, n: int, seed: int = 0, lang: str | None = None
) -> tuple[list[str], np.ndarray]:
    """``n`` memory texts drawn (with replacement) from a dataset, with their ages in days."""
    rng = np.random.default_rng(seed)
    lang = lang or dataset.languages[0]
    idx = rng.integers(0, len(dataset.memories), size=n)
    ages = dataset.ages()[0]
    return [dataset.memories[i].text(lang) for i in idx], ages[idx]


DEFAULT_SIZES = (100, 1_000, 10_000, 100_000, 1_000_000)  # above the dataset's own size
MIN_POOL = 100  # ten blocks of at least ten pool memories: what the extreme-value fit needs
MAX_SIZES = 10_000  # sizes of one curve (each one row of the study)
MAX_POOL = 200_000  # real distractors embedded: about 10 minutes with the default model here
SCALE_WORK = 4 * 10**12  # multiply-adds of the distractors' scoring: about 12 minutes at 5e9/s


def store_size(problem: RetrievalProblem) -> int:
    """The memories a query of the problem sees: the dataset's, or the tenant filter's."""
    kept = problem.pool.allowed
    return len(problem.dataset.memories) if kept is None else int(kept.sum())


def scale_sizes(
    dataset, n_range, pool: int | None = None, name: str = "n_range", stored: int | None = None
) -> list[int]:
    """The sizes N to measure, sorted, checked against the dataset before anything is embedded
    (a pool takes minutes): at most ``MAX_SIZES`` of them (counted before any is generated),
    every N counting the dataset's own memories (``stored``: those a tenant filter keeps,
    ``store_size``), so none below their number; ``pool`` (the real
    distractors) must hold ``MIN_POOL`` for the prediction. ``n_range``: text
    (``start:stop:step`` or a comma list), a ``memlab.core.grid.Axis`` or numbers; empty (the
    default): the dataset's own size, then each of ``DEFAULT_SIZES`` above it."""
    from memlab.core.grid import Axis, parse_axis

    n0 = len(dataset.memories) if stored is None else stored
    if isinstance(n_range, str) and not n_range.strip():
        n_range = [n0, *(n for n in DEFAULT_SIZES if n > n0)]
    axis = (
        parse_axis(n_range, name, integer=True)
        if isinstance(n_range, str)
        else Axis.of(n_range, integer=True)
    )
    axis.check(name.lstrip("-"), minimum=1)
    check_work(
        len(axis), name.lstrip("-"), MAX_SIZES, "sizes", "each size is one row of the curve, measured in turn"
    )
    sizes = sorted({int(n) for n in axis})
    if sizes and sizes[0] < n0:
        raise InputError(
            f"{name}: {sizes[0]:,} is below the {n0:,} memories of dataset {dataset.name!r} (every N "
            f"counts them): start {name} at {n0:,} or above"
        )
    if pool is not None:
        check_number(pool, "pool", integer=True, minimum=MIN_POOL)
    return sizes


def check_scale_work(problem: RetrievalProblem, largest: int) -> None:
    """The largest N finishes: scoring ``largest`` distractors against every question costs
    ``largest * questions * dim`` multiply-adds, at most ``SCALE_WORK`` (7 s measured for 10^6
    distractors x 100 questions x 384 dimensions: about 5e9 a second). Checked before anything is
    embedded."""
    per = max(1, len(problem.dataset.questions)) * int(problem.question_vectors().shape[1])
    check_work(
        largest,
        "n",
        SCALE_WORK // per,
        "distractors",
        f"each is scored against {len(problem.dataset.questions)} questions at "
        f"{problem.question_vectors().shape[1]} dimensions, {largest * per:.2g} multiply-adds in all; "
        "the budget "
        f"is {SCALE_WORK:.0e}, about 12 minutes at the measured 5e9 a second; the extreme-value "
        "prediction reaches any N without measuring it",
    )


def distractor_pool(problem: RetrievalProblem, size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, ages in days): ``size`` template distractors in the problem's language, dated
    before its reference date and embedded (cached) with the model its scores come from."""
    check_number(size, "pool", integer=True, minimum=1)  # real distractors
    check_work(
        size, "pool", MAX_POOL, "real distractors", "each is embedded with the problem's model, then cached"
    )
    check_number(seed, "seed", integer=True, minimum=0)
    texts, ages = distractor_texts(size, problem.dataset.reference_date, seed=seed, lang=problem.lang)
    return problem.embed_documents(texts), ages


@dataclass(frozen=True)
class GaussianVectors:
    """A multivariate Gaussian fitted to unit vectors; samples are L2-normalised."""

    mean: np.ndarray
    chol: np.ndarray  # lower Cholesky factor of the covariance

    @classmethod
    def fit(cls, vectors: np.ndarray) -> GaussianVectors:
        x = np.asarray(vectors, dtype=np.float64)
        cov = np.cov(x, rowvar=False) + 1e-8 * np.eye(x.shape[1])
        return cls(x.mean(axis=0), np.linalg.cholesky(cov))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal((n, len(self.mean)), dtype=np.float32)
        v = z @ self.chol.T.astype(np.float32) + self.mean.astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


class TopK:
    """Running exact top-k by raw score per question over a stream of memory chunks, with the
    candidate rule's ties (``memlab.core.ranking.merge_top_k``: the earlier memory first). The
    streamed memories' ages count from each question's own date (distractors are dated before
    it); the dataset's own memories (``start``) come with their ages per question."""

    def __init__(self, queries: np.ndarray, k: int):
        self.q = np.asarray(queries, dtype=np.float32)
        self.k = k
        n_q = len(self.q)
        self.raw = np.full((n_q, 0), -np.inf, dtype=np.float32)
        self.age = np.zeros((n_q, 0), dtype=np.float64)
        self.pos = np.zeros((n_q, 0), dtype=np.int64)  # each kept memory's place in the stream
        self.seen = 0

    def start(self, raw: np.ndarray, ages: np.ndarray) -> None:
        """Begin with the dataset's own memories (their raw scores and ages), counted first."""
        self.raw = np.where(np.isfinite(raw), raw, -np.inf).astype(np.float32)
        self.age = np.broadcast_to(ages, raw.shape).astype(np.float64)
        self.pos = np.broadcast_to(np.arange(raw.shape[1]), raw.shape).astype(np.int64)
        self._base = raw.shape[1]

    def add(self, vectors: np.ndarray, ages: np.ndarray) -> None:
        scores = self.q @ np.asarray(vectors, dtype=np.float32).T  # (Q, n): one BLAS call
        own_age = np.asarray(ages, dtype=np.float64)[None, :]
        first = getattr(self, "_base", 0) + self.seen
        keep, self.pos = merge_top_k(
            self.raw, self.pos, scores, np.arange(first, first + scores.shape[1]), self.k
        )
        self.raw = np.take_along_axis(np.concatenate([self.raw, scores], axis=1), keep, axis=1)
        self.age = np.take_along_axis(
            np.concatenate([self.age, np.broadcast_to(own_age, scores.shape)], axis=1), keep, axis=1
        )
        self.seen += len(vectors)

    def best_final(self, spec: RetrievalSpec) -> np.ndarray:
        """Per question: what the whole spec puts first among the memories seen so far."""
        return best_final(self.raw.astype(np.float64), self.age, spec)


def stream(
    real: tuple[np.ndarray, np.ndarray] | None,
    model: GaussianVectors | None,
    total: int,
    seed: int = 0,
    chunk: int = 50_000,
    span_days: int = 365,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Memory chunks: the real pool first (if given), then model samples up to ``total``."""
    rng = np.random.default_rng(seed)
    done = 0
    if real is not None:
        vecs, ages = real
        for s in range(0, min(total, len(vecs)), chunk):
            e = min(s + chunk, total, len(vecs))
            yield vecs[s:e], ages[s:e]
            done = e
    while done < total:
        if model is None:
            raise InputError(f"only {done} real vectors for N = {total}, and no vector model to draw more")
        n = min(chunk, total - done)
        yield model.sample(n, rng), rng.integers(0, span_days, size=n).astype(np.float64)
        done += n


def curve(
    queries: np.ndarray,
    sizes: Sequence[int],
    chunks: Iterator[tuple[np.ndarray, np.ndarray]],
    spec: RetrievalSpec,
    base_raw: tuple[np.ndarray, np.ndarray] | None = None,
    progress: bool = False,
) -> list[np.ndarray]:
    """Best post-bonus candidate score per question at each total size in ``sizes``.

    ``base_raw`` = (raw, ages) of the dataset's own memories for these queries, counted first.
    """
    top = TopK(queries, max(spec.candidates, 1))
    n0 = 0
    if base_raw is not None:
        raw, ages = base_raw
        top.start(raw, ages)
        n0 = raw.shape[1]
    out: list[np.ndarray] = []
    pending = sorted(sizes)
    for n in pending:
        if n < n0:
            raise InputError(f"--n: {n} is smaller than the dataset's own {n0} memories")
    from tqdm.auto import tqdm

    total = max(pending, default=n0) - n0
    bar = tqdm(
        total=total, desc="distractors", unit="memory", unit_scale=True, disable=not progress or total < 10**6
    )
    buffer: tuple[np.ndarray, np.ndarray] | None = None
    for n in pending:
        need = n - n0 - top.seen
        while need > 0:
            if buffer is None:
                buffer = next(chunks)
            vecs, ages = buffer
            take = min(need, len(vecs))
            top.add(vecs[:take], ages[:take])
            bar.update(take)
            buffer = None if take == len(vecs) else (vecs[take:], ages[take:])
            need -= take
        out.append(top.best_final(spec))
    bar.close()
    return out


@dataclass(frozen=True)
class MaxLaw:
    """The law of the maximum of N post-bonus scores for one question.

    A generalised extreme-value law (scipy's ``genextreme``) fitted to block maxima of the pool's
    scores, carried to N by max-stability: if the maximum of ``block`` scores is
    GEV(loc, scale, xi), the maximum of m * block is GEV(loc + scale (m^xi - 1) / xi, scale m^xi,
    xi), the Gumbel law ``loc + scale ln m`` when xi = 0. A negative xi (a bounded tail, as
    cosines have) slows the growth.
    """

    c: float  # scipy's shape, c = -xi
    loc: float  # at N = block
    scale: float
    block: int

    @classmethod
    def fit(cls, scores: np.ndarray, block: int | None = None) -> MaxLaw:
        """Fit block maxima of plain scores (50 blocks unless ``block`` is given)."""
        block = block or max(10, len(scores) // 50)
        n_blocks = len(scores) // block
        if n_blocks < 10:
            raise InputError(
                f"need at least {10 * block} pool scores to fit block maxima of {block}, got {len(scores)}"
            )
        return cls.from_maxima(scores[: n_blocks * block].reshape(n_blocks, block).max(axis=1), block)

    @classmethod
    def from_maxima(cls, maxima: np.ndarray, block: int) -> MaxLaw:
        """Fit per-block maxima. Cosines are bounded, so the tail may be bounded or Gumbel but
        not heavy: the shape is kept to 0 <= c <= 0.5."""
        from scipy import stats

        c, loc, scale = stats.genextreme.fit(maxima)
        if not 0 <= c <= 0.5:
            c, loc, scale = stats.genextreme.fit(maxima, fc=float(np.clip(c, 0.0, 0.5)))
        return cls(float(c), float(loc), float(scale), block)

    def at(self, n: float) -> tuple[float, float]:
        """(loc, scale) of the maximum of n scores."""
        m, xi = n / self.block, -self.c
        if abs(xi) < 1e-9:
            return self.loc + self.scale * np.log(m), self.scale
        return self.loc + self.scale * (m**xi - 1) / xi, self.scale * m**xi

    @property
    def bound(self) -> float:
        """The upper end of the law's support, which no maximum passes however large N grows:
        loc + scale / c for a bounded tail (c > 0; max-stability keeps it at every N), else
        infinity."""
        return self.loc + self.scale / self.c if self.c >= 1e-9 else float("inf")

    def cdf(self, x: np.ndarray, n: float) -> np.ndarray:
        from scipy import stats

        loc, scale = self.at(n)
        with np.errstate(over="ignore"):  # far in the tails the cdf is 0 or 1: exp overflows there
            return stats.genextreme.cdf(x, self.c, loc, scale)


def max_quantile(laws: Sequence[MaxLaw], n: float, q: float, floor: float = -np.inf) -> float:
    """Quantile ``q`` of max(floor, max over questions of the maximum of n scores)."""
    from scipy.optimize import brentq

    def f(x: float) -> float:
        return float(np.prod([law.cdf(x, n) for law in laws])) - q

    params = [law.at(n) for law in laws]
    lo = min(loc for loc, _ in params) - 40 * max(s for _, s in params)
    hi = max(loc for loc, _ in params) + 40 * max(s for _, s in params)
    for _ in range(60):  # widen the bracket until it holds the quantile
        if f(hi) >= 0 and f(lo) <= 0:
            break
        width = hi - lo
        hi, lo = (hi + width, lo) if f(hi) < 0 else (hi, lo - width)
    else:
        raise InputError(f"no quantile {q} for N = {n:g}: the fitted laws are degenerate")
    return max(floor, brentq(f, lo, hi))


def median_crossing(law: MaxLaw, level: float) -> float:
    """The N (scores, a real number) at which the median of the maximum of N scores reaches
    ``level``, in closed form; infinity when it never does.

    The median of GEV(c, loc_N, scale_N) is loc_N + scale_N (1 - (ln 2)^c) / c (the cdf
    exp(-(1 - c z)^(1/c)) is 1/2 there), loc_N - scale_N ln ln 2 when c = 0. Carried to
    m = N / block by max-stability (``MaxLaw.at``), it is

    - c > 0: loc + (scale / c) (1 - (ln 2 / m)^c), rising towards ``bound`` = loc + scale / c,
      so N = block ln 2 / (1 - c (level - loc) / scale)^(1/c) for a level below the bound and
      never for one at or above it;
    - c = 0 (Gumbel): loc + scale ln(m / ln 2), so N = block ln 2 exp((level - loc) / scale).

    E.g. Gumbel, loc 0.8, scale 0.01, block 10: level 0.8 is reached at N = 10 ln 2 = 6.93, and
    each 0.01 more multiplies N by e. ``n_reaching`` solves the same numerically, for several
    laws at once.
    """
    ln2, z = np.log(2.0), (level - law.loc) / law.scale
    with np.errstate(over="ignore"):  # a level far out: N overflows to infinity, as it should
        if law.c < 1e-9:
            return float(law.block * ln2 * np.exp(z))
        base = 1.0 - law.c * z
        return float(law.block * ln2 / base ** (1.0 / law.c)) if base > 0 else float("inf")


def n_reaching(laws: Sequence[MaxLaw], level: float, q: float = 0.5, n_max: float = 1e15) -> float | None:
    """Smallest N at which quantile ``q`` of the maximum reaches ``level`` (None beyond n_max)."""
    from scipy.optimize import brentq

    def g(log_n: float) -> float:
        return max_quantile(laws, float(np.exp(log_n)), q) - level

    lo, hi = np.log(1.0), np.log(n_max)
    if g(lo) >= 0:
        return 1.0
    if g(hi) < 0:
        return None
    return float(np.exp(brentq(g, lo, hi)))


def block_outcomes(
    queries: np.ndarray,
    pool: np.ndarray,
    pool_ages: np.ndarray,
    spec: RetrievalSpec,
    block: int,
) -> np.ndarray:
    """(Q, blocks): what the spec sees in each block of ``block`` pool memories on its own, the
    best post-bonus score among the block's top ``candidates`` by raw score; the pool's ages count
    from each question's own date, so every block is whole for every question (finite)."""
    raw = (np.asarray(queries, np.float32) @ np.asarray(pool, np.float32).T).astype(np.float64)
    n_blocks = raw.shape[1] // block
    if n_blocks < 10:
        raise InputError(
            f"need at least {10 * block} pool memories for blocks of {block}, got {raw.shape[1]}"
        )
    ages = np.broadcast_to(np.asarray(pool_ages, dtype=np.float64)[None, :], raw.shape)
    raw = raw[:, : n_blocks * block].reshape(len(raw), n_blocks, block)
    ages = ages[:, : n_blocks * block].reshape(len(raw), n_blocks, block)
    return best_final(raw, ages, spec)


def own_best_final(raw: np.ndarray, ages: np.ndarray, spec: RetrievalSpec) -> float:
    """The best post-bonus score the whole spec sees among one question's own candidates (the
    reference's ``best_final``); -inf when it has none."""
    return float(best_final(raw, ages, spec))


def lost_now(raw: np.ndarray, ages: np.ndarray, memory_ids, spec: RetrievalSpec, current: int) -> str | None:
    """Why a question's current memory is not injected at the dataset's own size, before any
    distractor (the reference ``retrieve``): "below the threshold", "not a candidate" (outside
    the top ``candidates`` by raw score) or "ranked past inject"; None when it is injected."""
    mine = next((x for x in retrieve(raw, ages, memory_ids, spec) if x.index == current), None)
    if mine is None:
        return "not a candidate"
    if not mine.reaches:
        return "below the threshold"
    return None if mine.injected else "ranked past inject"


@dataclass(frozen=True)
class ScaleStudy:
    """What ``scale_study`` measured and predicted."""

    rows: tuple[dict[str, Any], ...]  # one per N: nohit_max, nohit_max_real, headroom, predicted_*
    # N at which the predicted median no-hit maximum reaches the threshold: the dataset's own size
    # when its no-hit questions reach it already (now), None when not by 1e15
    n_zero_headroom: float | None
    hits: tuple[dict[str, Any], ...]  # per hit question: N at which a distractor passes the current memory
    spec: RetrievalSpec
    basis: str  # what the numbers rest on, in words
    nohit_bound: float = float("inf")  # the no-hit laws' largest bound: the maximum never passes it
    n0: int = 0  # the dataset's own memories (every N counts them)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": list(self.rows),
            "n_zero_headroom": self.n_zero_headroom,
            "hits": list(self.hits),
            "spec": self.spec.as_dict(),
            "basis": self.basis,
            "nohit_bound": self.nohit_bound,
            "n0": self.n0,
        }


def scale_study(
    problem: RetrievalProblem,
    sizes: Sequence[int],
    pool: tuple[np.ndarray, np.ndarray],
    seed: int = 0,
    block: int | None = None,
    chunk: int = 50_000,
    progress: bool = False,
) -> ScaleStudy:
    """The no-hit maximum and each hit question's best distractor against N, measured and
    predicted, under the problem's whole spec. ``pool`` = (vectors, ages in days) of the real
    distractors (``distractor_pool``), embedded with the problem's model."""
    dataset, spec, scores_raw = problem.dataset, problem.spec, problem.scores.raw
    if spec.mmr:
        raise InputError(
            "scale: an MMR stage is not modelled: the study's curves and laws rest on the best final "
            "score among the top candidates being a running maximum over the distractors, and MMR's "
            "picks are not (a distractor close to a pick can drop another memory); drop --mmr-pool "
            "(with diversity 0 and --mmr-pool >= --candidates MMR keeps the plain candidates)"
        )
    queries = problem.question_vectors()
    pool, pool_ages = pool
    spec = spec.with_reference(dataset.reference_date)
    ages = dataset.ages()
    raw = np.where(dataset.visible(), scores_raw, np.nan)
    ids = tuple(dataset.memory_ids)
    kept = problem.pool.allowed
    if kept is not None:  # a tenant filter: the tenant's memories are the store N counts from
        raw, ages = raw[:, kept], ages[:, kept]
        ids = tuple(np.asarray(ids, dtype=object)[kept])
    column = {m: j for j, m in enumerate(ids)}
    kinds = [q.kind for q in dataset.questions]
    nohit = np.array([k == "nohit" for k in kinds])
    model = GaussianVectors.fit(pool)
    n0 = raw.shape[1]

    # measured: dataset memories + real pool (then model beyond), and dataset + model only
    base = (raw, ages)
    sizes = sorted(sizes)
    within_pool = [n for n in sizes if n - n0 <= len(pool)]
    # distractors: dated before each question's own date (their ages count from it)
    real = curve(queries, within_pool, stream((pool, pool_ages), None, len(pool), seed, chunk), spec, base)
    synth = curve(queries, sizes, stream(None, model, max(sizes) - n0, seed + 1, chunk), spec, base, progress)

    # predicted: extreme-value laws of the spec's outcome on blocks of the real pool, per question
    block = block or max(10, len(pool) // 50)
    outcomes = block_outcomes(queries, pool, pool_ages, spec, block)
    laws = [MaxLaw.from_maxima(outcomes[i], block) for i in range(len(queries))]
    own_best = np.array([own_best_final(raw[i], ages[i], spec) for i in range(len(queries))])
    nohit_laws = [laws[i] for i in np.flatnonzero(nohit)]
    floor = float(own_best[nohit].max()) if nohit.any() else -np.inf
    rows = []
    real_by_n = dict(zip(within_pool, real, strict=True))
    for n, best in zip(sizes, synth, strict=True):
        d = max(n - n0, 1)
        measured = float(np.nanmax(best[nohit])) if nohit.any() else float("nan")
        rows.append(
            {
                "n": int(n),
                "nohit_max": measured,
                "nohit_max_real": float(np.nanmax(real_by_n[n][nohit]))
                if n in real_by_n and nohit.any()
                else None,
                "headroom": spec.threshold - measured,
                "predicted_nohit_max": max_quantile(nohit_laws, d, 0.5, floor) if nohit_laws else None,
                "predicted_lo": max_quantile(nohit_laws, d, 0.05, floor) if nohit_laws else None,
                "predicted_hi": max_quantile(nohit_laws, d, 0.95, floor) if nohit_laws else None,
            }
        )
    # the headroom is gone now when a no-hit question's own memories already reach the threshold
    if floor >= spec.threshold:
        n_zero: float | None = 0.0
    else:
        n_zero = n_reaching(nohit_laws, spec.threshold) if nohit_laws else None
    # hit questions: N at which the best distractor is predicted to pass the current memory (one
    # not injected at the dataset's own size is lost now, whatever the distractors do)
    hits = []
    for i, q in enumerate(dataset.questions):
        if not q.current:
            continue
        c = column.get(q.current)
        if c is None or not np.isfinite(raw[i, c]):  # another tenant's: never a candidate here
            continue
        current_final = float(spec.final(raw[i, c], ages[i, c]))
        n_pass = max(1.0, median_crossing(laws[i], current_final))  # one distractor at least
        margin = current_final - spec.threshold
        lost = lost_now(raw[i], ages[i], ids, spec, c)
        hits.append(
            {
                "question": q.id,
                "current": q.current,
                "current_final": current_final,
                "margin": margin,
                # now: not injected at the dataset's own size; never: above the distractors' bound
                "crossing": "now" if lost else ("never" if np.isinf(n_pass) else "predicted"),
                "lost_now": lost,
                "n_distractor_passes_current": None if np.isinf(n_pass) else n_pass + n0,
                "distractor_bound": laws[i].bound,
            }
        )
    return ScaleStudy(
        rows=tuple(rows),
        n_zero_headroom=None if n_zero is None else n_zero + n0,
        hits=tuple(hits),
        spec=spec,
        basis=(
            f"{n0} dataset memories, then {len(pool):,} real embeddings of template distractors; "
            "nohit_max: dataset + vectors from a Gaussian fitted to the pool (L2-normalised); "
            f"prediction: GEV laws fitted to the spec's outcome on blocks of {block} pool memories"
        ),
        nohit_bound=max((law.bound for law in nohit_laws), default=float("inf")),
        n0=n0,
    )
