"""Silence when nothing matches (``hivemem eval silence``): the match floors, measured.

A search whose best vector match is under the model's match floor and whose keyword
lane found nothing returns no hit, and so does one whose question names words its scope
has never seen and whose best vector match is under the model's unknown floor
(``retrieval.pipeline._nothing_matches``, ``retrieval.silence``). This command
measures it the way the floor was calibrated: one scope of ``size`` (10,000) real
dialogue turns — LoCoMo's turns and LongMemEval's user turns, in file order — and the
100 bundled questions on subjects none of them is about (``data/unrelated_queries.json``:
mineral hardness, enzyme names, treaty dates). It prints how many of the 100 get any hit
with the floor in use, and, with the floor off, each question's best vector cosine and
keyword evidence: the floor that silences every question without keyword evidence is
the largest such cosine (``suggested``), which is what ``providers.embed.MODELS`` stores
per model. It prints the second rule's signal too: how many of each question's words
no memory of the scope holds, how many of those are rare words, and the best cosine of
the questions that name the unknown (the unknown floor that silences them all is the
largest). And the third rule's (2026-11-28): how many questions are about no one the
scope knows (no personal word, no entity of the scope), how many of those name a thing
(a capitalised name) the scope has never seen or strange words (two it almost never
holds, one rare and unseen: ``silence.strange_words``), and their best cosines (the
stranger floor that silences them all is the largest). And the fourth's (scattered
words, 2026-11-28, evening): how many questions without a personal word have words that
never meet (``silence.scattered``, read from the floors-off search's 60 hits, at any
rank), and their best cosines. The questions answered are
counted at even and odd positions too: rules are chosen on one half, checked on the
other. What the floors cost in recall is what
``hivemem eval all`` reports with
``HIVEMEM_MATCH_FLOOR=0`` / ``HIVEMEM_UNKNOWN_FLOOR=0`` beside the default
(docs/retrieval.md).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from .. import text as textmod
from ..facade.database import open as open_store
from ..providers import calibration
from ..providers.entities import query_names
from ..retrieval import ranking, silence
from ..retrieval.pipeline import MATCH_KEYWORD_FLOOR, lane_fetch, tie_page
from ..settings import Settings
from ..types import Query
from .locomo import load_locomo

SCOPE = "silence"
QUERIES_FILE = "unrelated_queries.json"
Progress = Callable[[str, int, int], None]


def unrelated_queries() -> list[str]:
    raw = resources.files(__package__).joinpath("data", QUERIES_FILE).read_bytes()
    return [str(q) for q in json.loads(raw)]


def corpus(locomo: str | Path, longmemeval: str | Path, size: int) -> list[str]:
    """``size`` real turns: LoCoMo's (``speaker: text``), then LongMemEval's user turns,
    each text once, in file order."""
    texts: dict[str, None] = {}
    for conversation in load_locomo(locomo):
        for turn in conversation.turns:
            texts.setdefault(f"{turn.speaker}: {turn.text}", None)
    if len(texts) < size:
        opener = gzip.open if str(longmemeval).endswith(".gz") else open
        with opener(longmemeval, "rt", encoding="utf-8") as handle:
            raw = json.load(handle)
        for question in raw:
            for session in question["haystack_sessions"]:
                for turn in session:
                    content = str(turn.get("content", "")).strip()
                    if turn.get("role") == "user" and content:
                        texts.setdefault(content, None)
                    if len(texts) >= size:
                        break
    return list(texts)[:size]


@dataclass(frozen=True)
class SilenceReport:
    identity: str | None
    floor: float | None
    memories: int
    queries: int
    answered: int  # queries that got at least one hit with the floor in use
    suggested: float | None  # the floor that silences every query with weak keywords
    strong_keyword: int  # queries whose keyword evidence alone counts as a match
    best_cosines: list[float]
    unknown_floor: float | None = None
    unseen: list[int] = field(default_factory=list)  # per query: terms in no chunk
    rare: list[int] = field(default_factory=list)  # per query: rare ones among them
    unknown_cosines: list[float] = field(default_factory=list)  # those naming the unknown
    stranger_floor: float | None = None
    about_no_one: int = 0  # questions with no personal word and no entity of the scope
    unknown_names: list[int] = field(default_factory=list)  # per query: names never seen
    strange_words: int = 0  # queries with strange words (``silence.strange_words``)
    answered_at: list[int] = field(default_factory=list)  # positions of those answered
    stranger_cosines: list[float] = field(default_factory=list)  # strangers' best cosines
    scattered_cosines: list[float] = field(default_factory=list)  # words that never meet

    def to_dict(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "floor": self.floor,
            "memories": self.memories,
            "queries": self.queries,
            "answered": self.answered,
            "suggested_floor": self.suggested,
            "strong_keyword": self.strong_keyword,
            "best_cosine_max": max(self.best_cosines, default=None),
            "unknown_floor": self.unknown_floor,
            "unseen_words": self.unseen,
            "rare_unseen_words": self.rare,
            "naming_the_unknown": len(self.unknown_cosines),
            "naming_the_unknown_cosine_max": max(self.unknown_cosines, default=None),
            "stranger_floor": self.stranger_floor,
            "about_no_one": self.about_no_one,
            "unknown_names": self.unknown_names,
            "strange_words": self.strange_words,
            "answered_at": self.answered_at,
            "strangers": len(self.stranger_cosines),
            "strangers_cosine_max": max(self.stranger_cosines, default=None),
            "scattered": len(self.scattered_cosines),
            "scattered_cosine_max": max(self.scattered_cosines, default=None),
        }


def run_silence(
    locomo: str | Path,
    longmemeval: str | Path,
    settings: Settings | None = None,
    *,
    size: int = 10_000,
    keep: Path | None = None,
    progress: Progress | None = None,
) -> SilenceReport:
    settings = (settings or Settings()).replace(track_access=False)
    notify = progress or (lambda stage, done, total: None)
    texts = corpus(locomo, longmemeval, size)
    queries = unrelated_queries()
    digest = hashlib.sha256(repr((texts, settings.embedder)).encode()).hexdigest()[:12]
    with contextlib.nullcontext(str(keep)) if keep else tempfile.TemporaryDirectory() as folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        db = Path(folder) / f"silence-{digest}.db"
        fresh = not db.exists()
        with open_store(db, settings=settings) as store:
            mem = store.scope(SCOPE)
            if fresh:
                for start in range(0, len(texts), settings.max_batch):
                    batch = texts[start : start + settings.max_batch]
                    mem.add_episodes(
                        {"content": t, "role": "user", "session_id": f"s{start}"} for t in batch
                    )
                    notify("silence: storing", start + len(batch), len(texts))
                store.flush()
            identity = store.indexer.identity if store.indexer.enabled else None
        answered: list[bool] = []
        with open_store(db, settings=settings) as store:
            for done, query in enumerate(queries, start=1):
                answered.append(bool(store.scope(SCOPE).search(query, limit=10)))
                notify("silence: floor in use", done, len(queries))
        best: list[float] = []
        strong = 0
        unseen: list[int] = []
        rare: list[int] = []
        unknown_cosines: list[float] = []
        no_one = 0
        names: list[int] = []
        strange: list[bool] = []
        strangers: list[float] = []
        scattered: list[float] = []
        ties = calibration.resolved(settings, identity).keyword_ties
        page = tie_page(60, lane_fetch(60, settings.candidate_multiplier))  # the fetch for 60
        off = settings.replace(match_floor=0.0, unknown_floor=0.0, stranger_floor=0.0)
        with open_store(db, settings=off) as store:
            for done, query in enumerate(queries, start=1):
                hits = store.scope(SCOPE).search(query, limit=60)
                cosines = [
                    h.explain.lanes["vector"]["cosine"] for h in hits if "vector" in h.explain.lanes
                ]
                terms = _terms(query, settings)
                stats = store.keyword.term_stats(terms, [SCOPE])
                seen = silence.Seen(stats.doc_freq, stats.total_chunks)
                words = silence.unknown(terms, seen.doc_freq)
                unseen.append(len(words.unseen))
                rare.append(len(words.rare))
                if words.names_the_unknown:
                    unknown_cosines.append(max(cosines, default=0.0))
                text = _searched(query, settings)
                names.append(len(silence.unknown_names(text, seen.doc_freq)))
                strange.append(silence.strange_words(terms, seen))
                if not _knows_an_entity(store, text) and not silence.personal(text):
                    no_one += 1
                    if silence.a_stranger(text, terms, seen):
                        strangers.append(max(cosines, default=0.0))
                if not silence.personal(text) and _never_meet(terms, seen, hits):
                    scattered.append(max(cosines, default=0.0))
                keyword = {
                    h.memory.id: h.explain.lanes["keyword"]["coverage"]
                    for h in hits
                    if "keyword" in h.explain.lanes
                }
                evidence = max(keyword.values(), default=0.0) * ranking.lane_confidence(
                    keyword, ties or len(keyword), page
                )
                if evidence > MATCH_KEYWORD_FLOOR:
                    strong += 1
                else:
                    best.append(max(cosines, default=0.0))
                notify("silence: floor off", done, len(queries))
    model = calibration.resolved(settings, identity)  # the -1s: the model's values
    floor = model.match_floor
    unknown, stranger = model.unknown_floor, model.stranger_floor
    return SilenceReport(
        identity=identity,
        floor=floor,
        memories=len(texts),
        queries=len(queries),
        answered=sum(answered),
        answered_at=[at for at, yes in enumerate(answered) if yes],
        suggested=round(max(best) + 0.005, 3) if best else None,
        strong_keyword=strong,
        best_cosines=sorted(best),
        unknown_floor=unknown,
        unseen=unseen,
        rare=rare,
        unknown_cosines=sorted(unknown_cosines),
        stranger_floor=stranger,
        about_no_one=no_one,
        unknown_names=names,
        strange_words=sum(strange),
        stranger_cosines=sorted(strangers),
        scattered_cosines=sorted(scattered),
    )


def _searched(query: str, settings: Settings) -> str:
    """The question as the search reads it (``retrieval.pipeline``)."""
    return textmod.as_first_person(query) if settings.first_person_queries else query


def _terms(query: str, settings: Settings) -> list[str]:
    """The question's terms as the keyword lane reads them (``retrieval.pipeline``)."""
    query = _searched(query, settings)
    return textmod.query_terms(textmod.query_focus(query), settings.max_query_terms)


def _matches(hits: Any) -> list[silence.Match]:
    """The keyword matches among ``hits`` as ``silence.scattered`` reads them."""
    return [
        (h.explain.lanes["keyword"]["rank"], h.explain.matched_terms, "entity" in h.explain.lanes)
        for h in hits
        if "keyword" in h.explain.lanes
    ]


def _never_meet(terms: Sequence[str], seen: silence.Seen, hits: Any) -> bool:
    """The fourth rule's signal over the floors-off search's hits: no keyword match among
    them, at any rank, holds two of the question's words (the rule itself reads every
    memory of the scope: ``silence.scattered_memories``; a rank cut here would count a
    question whose words meet in the 11th match, as the line did for the first question
    of a run until 2026-11-28)."""
    return silence.scattered(terms, seen, _matches(hits), 0)


def _knows_an_entity(store: Any, text: str) -> bool:
    """The entity lane's test: the question names an entity the scope holds."""
    names = query_names(textmod.query_focus(text))
    found, _ = store.entities.lane([SCOPE], names, Query(text=text), datetime.now(UTC), 1)
    return bool(found)


def format_silence(report: SilenceReport) -> str:
    floor = "none" if not report.floor else f"{report.floor:.3f}"
    suggested = "n/a" if report.suggested is None else f"{report.suggested:.3f}"
    cosines = report.best_cosines
    spread = (
        f"best cosine of each: min {cosines[0]:.3f}, median {cosines[len(cosines) // 2]:.3f}, "
        f"max {cosines[-1]:.3f}"
        if cosines
        else "no query with weak keyword evidence"
    )
    unknown = "none" if not report.unknown_floor else f"{report.unknown_floor:.3f}"
    return "\n".join(
        [
            f"Silence: {report.queries} unrelated questions over {report.memories:,} memories "
            f"in one scope; model {report.identity or 'none'}, match floor {floor}, "
            f"unknown floor {unknown}",
            f"answered with any hit: {report.answered} of {report.queries} "
            f"(target: 0{_halves(report)}); keyword evidence alone a match: "
            f"{report.strong_keyword}",
            f"with the floors off, {spread}; floor that silences them all: {suggested}",
            _unknown_line(report),
            _stranger_line(report),
            _scattered_line(report),
        ]
    )


def _scattered_line(report: SilenceReport) -> str:
    """The fourth rule's signal: questions whose words never meet in one keyword match."""
    cosines = report.scattered_cosines
    spread = f", best cosine max {cosines[-1]:.3f}" if cosines else ""
    return (
        f"no personal word, words that never meet (>= {silence.UNKNOWN_WORDS} scarce, one "
        f"seen or rare, no keyword match holding two outside the commonest): "
        f"{len(cosines)}{spread}"
    )


def _halves(report: SilenceReport) -> str:
    """The answered questions at even and odd positions (the halves rules are chosen
    and checked on, docs/retrieval.md)."""
    if not report.answered_at:
        return ""
    even = sum(1 for at in report.answered_at if at % 2 == 0)
    return f"; even positions {even}, odd {len(report.answered_at) - even}"


def _stranger_line(report: SilenceReport) -> str:
    """The third rule's signal: questions about no one the scope knows."""
    cosines = report.stranger_cosines
    floor = "none" if not report.stranger_floor else f"{report.stranger_floor:.3f}"
    spread = (
        f"best cosine min {cosines[0]:.3f}, median {cosines[len(cosines) // 2]:.3f}, "
        f"max {cosines[-1]:.3f}; stranger floor that silences them all "
        f"{max(cosines) + 0.005:.3f}"
        if cosines
        else "none"
    )
    named = sum(1 for n in report.unknown_names if n)
    return (
        f"about no one the scope knows (no personal word, no entity of the scope): "
        f"{report.about_no_one}; of those, naming a thing never seen or strange words: "
        f"{len(cosines)} (any question: a name {named}, strange words "
        f"{report.strange_words}), {spread}; stranger floor {floor}"
    )


def _unknown_line(report: SilenceReport) -> str:
    """The second rule's signal: words no memory of the scope holds, per question."""
    counts = [sum(1 for n in report.unseen if n == k) for k in range(3)]
    many = sum(1 for n in report.unseen if n >= 3)
    with_rare = sum(1 for n in report.rare if n)
    cosines = report.unknown_cosines
    spread = (
        f"best cosine min {cosines[0]:.3f}, median {cosines[len(cosines) // 2]:.3f}, "
        f"max {cosines[-1]:.3f}; unknown floor that silences them all "
        f"{max(cosines) + 0.005:.3f}"
        if cosines
        else "none"
    )
    return (
        f"words in no memory of the scope, per question: 0: {counts[0]}, 1: {counts[1]}, "
        f"2: {counts[2]}, 3+: {many}; with a rare word among them: {with_rare}; naming the "
        f"unknown (>= {silence.UNKNOWN_WORDS} such words, one rare): {len(cosines)}, {spread}"
    )
