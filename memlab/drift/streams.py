"""Drifting facts: a seeded generator of multi-session memory streams whose facts change.

A synthetic persona tells an agent about itself over dated sessions. Its facts drift: the city
goes Ames -> Chicago -> Seattle, the drink tea -> coffee -> matcha. Each stream holds:

- ``statement``: the first value of a topic;
- ``correction``: a later value, phrased far from the old one ("these days I only drink
  matcha") because real updates rarely repeat the old wording (seed 004: 0.63 cosine);
- ``paraphrase``: the current value restated in other words;
- ``repeat``: an earlier fact said again word for word;
- ``distractor``: an event that mentions a topic word ("my cousin flew in from Chicago") without
  being a fact about the persona.

Every fact also carries the key an extractor would file it under, ``filed_topic``: usually its
topic, but sometimes another topic of the same type (seed 001: "subject assignment is the weak
joint"). A distractor is filed under the topic whose word it mentions, with type ``event``.

The stream ends with held-out queries, one per topic, asked after the last session, for the
current value; ``recalls`` are queries asked along the way (they refresh what they recall when a
policy reinforces on recall) and are never scored.

Texts come from a finite template set, so the unique texts of thousands of streams are embedded
once. Everything is drawn from ``numpy.random.default_rng(seed)``: one seed, one stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np

from memlab.core.errors import InputError

FACT_KINDS = ("statement", "paraphrase", "repeat", "correction", "distractor")


@dataclass(frozen=True, slots=True)
class Fact:
    """One memory as an extractor would write it, with its ground truth (``topic``, ``value``).

    A write policy may read ``text``, ``filed_topic``, ``type`` and ``date`` only: ``topic`` and
    ``value`` are the generator's truth, used to score, never to decide.
    """

    text: str
    topic: str  # true topic; "" for a distractor
    type: str  # memory type: profile, preference, routine or event
    value: str  # true value; "" for a distractor
    date: date
    kind: str  # one of FACT_KINDS
    filed_topic: str = ""  # the extractor's topic key ("" -> the true topic)

    @property
    def key(self) -> tuple[str, str]:
        """What an extractor files the fact under: (topic key, type)."""
        return (self.filed_topic or self.topic, self.type)


@dataclass(frozen=True, slots=True)
class Query:
    """A question about one topic; ``current`` is the right answer, ``stale_values`` superseded."""

    text: str
    topic: str
    current: str
    stale_values: tuple[str, ...]
    date: date


@dataclass(frozen=True, slots=True)
class Stream:
    seed: int
    persona: str
    facts: tuple[Fact, ...]  # in the order they were said (dates non-decreasing)
    queries: tuple[Query, ...]  # held out: asked on ``asked``, scored
    asked: date
    recalls: tuple[Query, ...] = ()  # asked during the stream, never scored


@dataclass(frozen=True, slots=True)
class Topic:
    """A drifting topic: its type, value pool and phrasings. ``{v}`` is the value, ``{old}`` the
    value it replaces (correction templates only)."""

    type: str
    values: tuple[str, ...]
    statements: tuple[str, ...]
    paraphrases: tuple[str, ...]
    corrections: tuple[str, ...]
    distractors: tuple[str, ...]
    queries: tuple[str, ...]


TOPICS: dict[str, Topic] = {
    "city": Topic(
        "profile",
        ("Ames", "Chicago", "Seattle", "Denver", "Austin", "Boston", "Portland"),
        ("I live in {v}.", "My apartment is in {v}.", "I'm based in {v}."),
        ("Home for me is {v}.", "I've been living in {v} for a while now.", "{v} is where I live."),
        (
            "I moved to {v} last month.",
            "Just finished unpacking boxes at my new place in {v}.",
            "We relocated, the new address is in {v}.",
            "I moved from {old} to {v}.",
        ),
        (
            "My cousin flew in from {v} for the weekend.",
            "I watched a documentary about {v}.",
            "A coworker just got back from a trip to {v}.",
        ),
        ("Which city do I live in now?", "Where is my home these days?"),
    ),
    "job": Topic(
        "profile",
        ("nurse", "teacher", "software engineer", "accountant", "chef", "architect", "pharmacist"),
        ("I work as a {v}.", "My job is {v}.", "I'm a {v} by profession."),
        ("I earn my living as a {v}.", "Being a {v} keeps me busy.", "At work I'm the {v}."),
        (
            "I started a new position as a {v}.",
            "Changed careers, I'm a {v} now.",
            "First week on the job as a {v} went well.",
            "I quit being a {old} and became a {v}.",
        ),
        (
            "My neighbour is a {v} and works nights.",
            "I read an article about the life of a {v}.",
            "My sister wants to become a {v} someday.",
        ),
        ("What do I do for work?", "What is my job now?"),
    ),
    "pet": Topic(
        "profile",
        ("a beagle", "a tabby cat", "a parrot", "two goldfish", "a rabbit", "a corgi"),
        ("I have {v}.", "At home I keep {v}.", "My pet is {v}."),
        ("I take care of {v} every day.", "Living with {v} is fun.", "My only pet is {v}."),
        (
            "We adopted {v} from the shelter.",
            "The newest member of the household is {v}.",
            "After a long search we brought home {v}.",
            "We rehomed {old} and got {v}.",
        ),
        (
            "My friend posted a video of {v} doing tricks.",
            "There was {v} at the park today.",
            "I saw a picture book about {v}.",
        ),
        ("What pet do I have now?", "Which animal lives with me?"),
    ),
    "drink": Topic(
        "preference",
        ("tea", "coffee", "matcha", "kombucha", "hot chocolate", "espresso"),
        ("I drink {v} every morning.", "My favourite drink is {v}.", "I always start the day with {v}."),
        ("A cup of {v} is my go-to.", "I can't get enough {v}.", "{v} is what I usually drink."),
        (
            "These days I only drink {v}.",
            "I switched to {v}.",
            "Lately it's been {v} all the way.",
            "I gave up {old} for {v}.",
        ),
        (
            "The cafe downstairs ran out of {v}.",
            "My boss spilled {v} on the report.",
            "There was a tasting event for {v} downtown.",
        ),
        ("What do I drink these days?", "What is my usual drink now?"),
    ),
    "diet": Topic(
        "preference",
        ("vegetarian", "vegan", "keto", "pescatarian", "gluten-free"),
        ("I eat a {v} diet.", "I'm {v}.", "My meals are {v}."),
        ("I stick to {v} food.", "Eating {v} works well for me.", "I keep my cooking {v}."),
        (
            "I recently went {v}.",
            "New year, new diet: {v}.",
            "My doctor suggested I try {v}, and I'm doing it.",
            "I stopped eating {old} and went {v}.",
        ),
        (
            "The restaurant had a {v} menu.",
            "My roommate is trying a {v} cookbook.",
            "I saw a debate about {v} diets online.",
        ),
        ("What diet do I follow now?", "How do I eat these days?"),
    ),
    "music": Topic(
        "preference",
        ("jazz", "punk rock", "classical", "hip hop", "country", "synthwave"),
        ("I love listening to {v}.", "My favourite music is {v}.", "I mostly play {v}."),
        ("{v} is always on my playlist.", "Nothing beats {v} for me.", "I'm a big {v} fan."),
        (
            "I've been really into {v} lately.",
            "My playlists are all {v} now.",
            "I discovered {v} and can't stop.",
            "I got tired of {old} and now it's {v}.",
        ),
        (
            "The bar next door had a {v} night.",
            "A {v} band was busking at the station.",
            "My nephew is learning {v} on guitar.",
        ),
        ("What music do I like now?", "What do I listen to these days?"),
    ),
    "hobby": Topic(
        "preference",
        ("pottery", "chess", "gardening", "birdwatching", "knitting", "rock climbing"),
        ("My hobby is {v}.", "In my free time I do {v}.", "I spend weekends on {v}."),
        ("{v} is how I relax.", "I'm hooked on {v}.", "Most evenings I do some {v}."),
        (
            "I picked up {v} this month.",
            "I joined a club for {v}.",
            "Signed up for a {v} course.",
            "I dropped {old} and took up {v}.",
        ),
        (
            "My aunt gave a talk about {v}.",
            "There's a {v} show on TV tonight.",
            "A store for {v} opened near the office.",
        ),
        ("What is my hobby now?", "What do I do for fun these days?"),
    ),
    "commute": Topic(
        "routine",
        ("by bike", "by bus", "by train", "by car", "on foot", "by scooter"),
        ("I get to work {v}.", "I commute {v}.", "Every day I go to the office {v}."),
        ("My commute is {v}.", "Going {v} is my daily routine.", "I travel to work {v}."),
        (
            "Since last week I go {v}.",
            "I changed my route and now travel {v}.",
            "The new routine: {v} every morning.",
            "I stopped going {old} and now go {v}.",
        ),
        (
            "A colleague was late because he came {v}.",
            "The news covered people commuting {v}.",
            "My brother tried going {v} once.",
        ),
        ("How do I get to work now?", "How do I commute these days?"),
    ),
    "workout": Topic(
        "routine",
        ("running", "swimming", "yoga", "weightlifting", "cycling classes", "pilates"),
        ("I exercise with {v}.", "My workout is {v}.", "I do {v} three times a week."),
        ("{v} keeps me fit.", "I never skip {v}.", "My training is mostly {v}."),
        (
            "I signed up for {v} at the gym.",
            "My trainer moved me to {v}.",
            "After the injury I do {v} instead.",
            "I replaced {old} with {v}.",
        ),
        (
            "The gym advertised {v} for beginners.",
            "A celebrity talked about {v} on a podcast.",
            "My friend is sore from {v}.",
        ),
        ("What exercise do I do now?", "What is my workout these days?"),
    ),
}
PERSONAS = ("Alex", "Bea", "Chen", "Dana", "Eli", "Farah", "Gus", "Hana", "Ivo", "Juno", "Kai", "Lena")
TYPES = ("profile", "preference", "routine", "event")


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """How a stream is drawn. The defaults are what the drift study uses."""

    topics: tuple[int, int] = (6, 8)  # topics per stream (inclusive range)
    sessions: tuple[int, int] = (8, 12)  # sessions per stream (inclusive range)
    gap_days: tuple[int, int] = (3, 30)  # days between sessions (inclusive range)
    values: tuple[int, int] = (2, 3)  # values a topic takes over the stream (inclusive range)
    p_paraphrase: float = 0.25  # per session while a value holds
    p_repeat: float = 0.15  # per session while a value holds
    p_misfile: float = 0.1  # a fact filed under another topic of the same type
    distractors: float = 1.0  # mean distractors per session (Poisson)
    p_recall: float = 0.3  # a session ends with a recall query
    p_distractor_known: float = 0.5  # a distractor mentions a value the persona holds in the stream
    # the extractor types a distractor like a fact of its topic (filed under it too), so no read
    # or write policy can drop distractors by their type alone
    p_distractor_typed: float = 0.2


DEFAULT_CONFIG = StreamConfig()


def ground_truth(facts: Sequence[Fact]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """topic -> (current value, superseded values in the order they were said).

    The current value is the value of the topic's last fact; every other value it held is stale.
    Distractors (``topic == ""``) say nothing about the persona.
    """
    said: dict[str, list[str]] = {}
    for f in facts:
        if f.topic:
            said.setdefault(f.topic, []).append(f.value)
    out = {}
    for topic, values in said.items():
        current = values[-1]
        stale = tuple(dict.fromkeys(v for v in values if v != current))
        out[topic] = (current, stale)
    return out


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _between(rng: np.random.Generator, lo_hi: tuple[int, int]) -> int:
    return int(rng.integers(lo_hi[0], lo_hi[1] + 1))


def generate_stream(seed: int, config: StreamConfig = DEFAULT_CONFIG) -> Stream:
    """One persona's stream, fully determined by ``seed``."""
    rng = np.random.default_rng(seed)
    names = list(TOPICS)
    topics = [names[i] for i in sorted(rng.choice(len(names), _between(rng, config.topics), replace=False))]
    n_sessions = _between(rng, config.sessions)
    start = date(2025, 1, 1) + timedelta(days=int(rng.integers(0, 365)))
    offsets = np.cumsum([0] + [_between(rng, config.gap_days) for _ in range(n_sessions - 1)])
    dates = [start + timedelta(days=int(d)) for d in offsets]
    sessions: list[list[Fact]] = [[] for _ in range(n_sessions)]
    held: dict[str, list[str]] = {}
    for topic in topics:
        spec = TOPICS[topic]
        n_values = _between(rng, config.values)
        values = [spec.values[i] for i in rng.choice(len(spec.values), n_values, replace=False)]
        first = int(rng.integers(0, max(1, n_sessions // 3)))
        later = sorted(rng.choice(np.arange(first + 1, n_sessions), n_values - 1, replace=False).tolist())
        starts = [first, *later]
        held[topic] = values
        same_type = [t for t in TOPICS if t != topic and TOPICS[t].type == spec.type]
        for k, (value, begin) in enumerate(zip(values, starts, strict=True)):
            end = starts[k + 1] if k + 1 < n_values else n_sessions
            said: list[str] = []
            for s in range(begin, end):
                if s == begin:
                    if k == 0:
                        kind, text = "statement", _pick(rng, spec.statements).format(v=value)
                    else:
                        template = _pick(rng, spec.corrections)
                        kind, text = "correction", template.format(v=value, old=values[k - 1])
                elif said and rng.random() < config.p_repeat:
                    kind, text = "repeat", _pick(rng, said)
                elif rng.random() < config.p_paraphrase:
                    kind, text = "paraphrase", _pick(rng, spec.paraphrases).format(v=value)
                else:
                    continue
                said.append(text)
                filed = _pick(rng, same_type) if rng.random() < config.p_misfile else topic
                sessions[s].append(Fact(text, topic, spec.type, value, dates[s], kind, filed))
    for s in range(n_sessions):
        for _ in range(int(rng.poisson(config.distractors))):
            topic = _pick(rng, topics)
            pool = held[topic] if rng.random() < config.p_distractor_known else TOPICS[topic].values
            text = _pick(rng, TOPICS[topic].distractors).format(v=_pick(rng, pool))
            typed = TOPICS[topic].type if rng.random() < config.p_distractor_typed else "event"
            sessions[s].append(Fact(text, "", typed, "", dates[s], "distractor", topic))
    facts: list[Fact] = []
    recalls: list[Query] = []
    for s, session in enumerate(sessions):
        order = rng.permutation(len(session))  # within a session, the order is drawn too
        facts.extend(session[i] for i in order)
        truth = ground_truth(facts)
        if truth and rng.random() < config.p_recall:
            topic = _pick(rng, sorted(truth))
            recalls.append(_query(rng, topic, truth[topic], dates[s]))
    asked = dates[-1] + timedelta(days=int(rng.integers(1, 15)))
    truth = ground_truth(facts)
    queries = tuple(_query(rng, t, truth[t], asked) for t in topics)
    persona = _pick(rng, PERSONAS)
    return Stream(seed, persona, tuple(facts), queries, asked, tuple(recalls))


def _query(rng: np.random.Generator, topic: str, truth: tuple[str, tuple[str, ...]], when: date) -> Query:
    current, stale = truth
    return Query(_pick(rng, TOPICS[topic].queries), topic, current, stale, when)


def generate_streams(seeds: Iterable[int], config: StreamConfig = DEFAULT_CONFIG) -> list[Stream]:
    return [generate_stream(int(s), config) for s in seeds]


# ---------------------------------------------------------------------------------------------
# seed ranges


def parse_seed_range(text: str, option: str = "--seed-range") -> range:
    """``"A:B"`` -> ``range(A, B)`` (B excluded), with a message naming the option on bad input."""
    parts = str(text).split(":")
    try:
        lo, hi = (int(p) for p in parts)
    except ValueError:
        raise InputError(f"{option}: expected A:B with 0 <= A < B, got {text!r}") from None
    if lo >= hi or lo < 0:
        raise InputError(f"{option}: expected A:B with 0 <= A < B, got {text!r}")
    return range(lo, hi)


def held_out_seeds(
    text: str, streams: int | None = None, option: str = "--seed-range", streams_option: str = "--streams"
) -> range:
    """The held-out seeds: the first ``streams`` of the range ``text`` (all of them when None)."""
    seeds = parse_seed_range(text, option)
    if streams is None:
        return seeds
    if not 1 <= streams <= len(seeds):
        raise InputError(
            f"{streams_option}: expected 1 to {len(seeds)} (the seeds in {option} {text}), got {streams}"
        )
    return range(seeds.start, seeds.start + streams)


def check_disjoint(tune: range, held_out: range) -> None:
    """Tuning and held-out seeds must not share a stream, else the held-out numbers are not."""
    lo, hi = max(tune.start, held_out.start), min(tune.stop, held_out.stop)
    if lo < hi:
        raise InputError(
            f"tuning seeds {tune.start}:{tune.stop} and held-out seeds {held_out.start}:{held_out.stop} "
            f"overlap on {lo}:{hi}; the two ranges must be disjoint"
        )
