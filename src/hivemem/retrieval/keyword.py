"""Retrieval: the keyword lane and the scoring that makes its numbers mean something.

Score normalisation. Raw BM25 grows with the number and rarity of query terms, so a raw
threshold means different things for different queries (LESSONS 11), and FTS5 floors the
IDF of any term found in over half the chunks to ~0, so small stores score ~0 everywhere.
A hit's score is therefore its IDF-weighted *coverage* of the query: the IDF mass of the
query terms the memory's best chunk contains, over the IDF mass of all query terms, with
the always-positive IDF ``log(1 + (N - n + 0.5) / (n + 0.5))``. It reads as "the share of
the query's information this memory matches", lies in [0, 1] and means the same across
queries, so ``min_score`` is a real threshold. Hits are ordered by score, ties broken by
BM25 rank (which accounts for term frequency and chunk length).

Ranking functions are pure and take plain values; ``keyword_lane`` wires them to a
backend, and ``hivemem.retrieval.pipeline`` fuses this lane with the others.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from .. import text as textmod
from ..settings import Settings
from ..store.keyword_query import KeywordQuery, parse
from ..store.protocols import Backend, ChunkMatch, TermStats
from ..types import Query


def idf(total: int, doc_freq: int) -> float:
    """Probabilistic IDF kept positive (Lucene's BM25 form): a term in every chunk still
    weighs a little, a term in none weighs most. ``total`` and ``doc_freq`` count chunks."""
    total = max(total, doc_freq)
    return math.log(1.0 + (total - doc_freq + 0.5) / (doc_freq + 0.5))


def coverage(weights: Mapping[str, float], matched: Iterable[str]) -> float:
    """The share of the query's IDF mass that ``matched`` terms carry, in [0, 1]. Summed
    in the query's order, never a set's: a set of strings iterates in an order Python's
    string hashing picks per process, the sum's last bit moved with it, and two memories
    tied at the cut of a search's pool swapped from one process to the next."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    held = set(matched)
    return min(1.0, sum(w for t, w in weights.items() if t in held) / total)


def best_chunk_per_memory(matches: Sequence[ChunkMatch]) -> list[ChunkMatch]:
    """One match per memory (its best chunk), best first. ``matches`` is best first."""
    seen: set[str] = set()
    out = []
    for match in matches:
        if match.memory_id not in seen:
            seen.add(match.memory_id)
            out.append(match)
    return out


def selective_terms(terms: Sequence[str], doc_freq: Mapping[str, int], budget: int) -> list[str]:
    """The rarest terms whose postings add up to at most ``budget`` (at least one term),
    in query order.

    Ranking costs about a microsecond per chunk the MATCH finds, and a common term can
    match a tenth of a large store; the rare terms carry most of the coverage anyway.
    """
    order = sorted(range(len(terms)), key=lambda i: (doc_freq.get(terms[i], 0), i))
    chosen: set[int] = set()
    postings = 0
    for i in order:
        frequency = doc_freq.get(terms[i], 0)
        if chosen and postings + frequency > budget:
            break
        chosen.add(i)
        postings += frequency
    return [t for i, t in enumerate(terms) if i in chosen]


def window_coverage(
    own: Mapping[str, Iterable[str]],
    windows: Mapping[str, Iterable[str]],
    weights: Mapping[str, float],
    share: float,
) -> dict[str, float]:
    """Each memory's coverage of the query, plus ``share`` of what the memories in its
    window (``windows[memory]``: the turns beside it) add to it.

    A question is often answered across two turns ("Where did you go?" / "Paris, with
    Anna"): neither holds every query term, the pair does. ``share`` 1 scores the pair's
    union; 0 scores the turn alone.
    """
    total = sum(weights.values())
    if total <= 0:
        return dict.fromkeys(own, 0.0)

    masses: dict[frozenset[str], float] = {}  # most memories hold the same few terms

    def mass(terms: frozenset[str]) -> float:
        known = masses.get(terms)
        if known is None:
            known = masses[terms] = coverage(weights, terms)
        return known

    out = {}
    for memory_id, terms in own.items():
        alone = frozenset(terms)
        together = set(alone)
        for other in windows.get(memory_id, ()):
            together.update(own.get(other, ()))
        base = mass(alone)
        if together == alone:
            out[memory_id] = base
        else:
            out[memory_id] = base + share * (mass(frozenset(together)) - base)
    return out


@dataclass(frozen=True, slots=True)
class KeywordCandidate:
    """A memory found by the keyword lane: its best chunk, that chunk's BM25 rank, its
    coverage of the query, and the query terms it holds. ``window`` is the part of the
    coverage that its dialogue neighbours added (``window_coverage``)."""

    match: ChunkMatch
    rank: int
    coverage: float
    matched: tuple[str, ...]
    window: float = 0.0


def keyword_lane(
    backend: Backend,
    scopes: Sequence[str],
    query: Query,
    settings: Settings,
    now: datetime,
    fetch: int,
) -> tuple[list[str], list[KeywordCandidate]]:
    """The query's terms and up to ``fetch`` candidate memories, best coverage first
    (ties: BM25 rank).

    Candidates are found by the selective terms only (``selective_terms``); the common
    terms past the postings budget still count in every candidate's coverage, and find
    candidates themselves only when the selective terms found fewer than
    ``query.limit``. So a memory holding only common terms of the query can be missed
    in a large store. Measured on LoCoMo this changes no hit@k (0.702 at hit@10 either
    way), and it keeps keyword search under 10 ms p95 at 100k memories.
    """
    terms = textmod.query_terms(textmod.query_focus(query.text), settings.max_query_terms)
    if not terms and not query.fts_syntax:
        return terms, []
    # A small scope's reads in one statement where the backend has that (SQLite's
    # ``keyword_scope``: the same answers); otherwise one read per question below.
    view = _scope_view(backend, scopes, terms, query, now, settings.keyword_match_budget)
    # Weights from the visible scopes' own statistics; plans from the whole index's.
    stats = view.stats if view is not None else backend.term_stats(terms, scopes)
    weights = {t: idf(stats.total_chunks, stats.doc_freq.get(t, 0)) for t in terms}
    postings = stats.postings or stats.doc_freq
    masses = _Masses(terms, weights)

    def run(
        match: KeywordQuery, used: Sequence[str] = (), time_limit_s: float | None = None
    ) -> list[_Found]:
        # Terms so common that scoring every match would cost more than the budget are
        # searched newest first (the index then scores only the rows it returns).
        walked = sum(postings.get(t, 0) for t in used)
        if walked > settings.keyword_match_budget:
            match = replace(match, newest_first=True)
        found = view.search(match, fetch) if view is not None else None
        if found is None:
            found = backend.keyword_search(
                scopes, query, match, fetch, now, time_limit_s=time_limit_s
            )
        matches = best_chunk_per_memory(found)
        texts = {m.chunk_id: m.text for m in matches}
        if view is not None:  # its masks are over these very terms: ``_Masses``' bits
            masks = view.masks(list(texts), texts)
        else:
            matched = backend.matched_terms(list(texts), terms, texts)
            masks = {cid: masses.mask(held) for cid, held in matched.items()}
        out = [(best, rank, masks.get(best.chunk_id, 0)) for rank, best in enumerate(matches, 1)]
        out.sort(key=lambda c: (-masses.coverage(c[2]), c[1]))
        return out

    if query.fts_syntax:  # the caller's own FTS5 syntax: its cost is bounded by time
        found = run(parse(query.text), time_limit_s=settings.fts_time_limit_ms / 1000)
        return terms, [masses.candidate(*c) for c in found]
    chosen = selective_terms(terms, postings, settings.keyword_match_budget)
    candidates = run(KeywordQuery.any_of(chosen), chosen)
    excluded = [t for t in terms if t not in chosen]
    if excluded and len(candidates) < query.limit:
        # Trigger: the selective terms found too few memories. Why: the common terms may
        # still find something. Outcome: merge their matches, ranked by coverage.
        extra = run(KeywordQuery.any_of(excluded), excluded)
        best = {c[0].memory_id: c for c in extra}
        best.update({c[0].memory_id: c for c in candidates})
        candidates = sorted(best.values(), key=lambda c: (-masses.coverage(c[2]), c[1]))
    if settings.window_weight > 0 and candidates:
        windowed = _windowed(backend, scopes, query, now, masses, candidates, settings, view)
        if windowed is not None:
            return terms, windowed
    return terms, [masses.candidate(*c) for c in candidates]


class Window(Protocol):
    """A view's window reads: each candidate's passing session neighbours (as
    ``Backend.session_neighbours``), and for the neighbours that were no candidate the
    query terms their chunks hold (a bit mask over the view's terms, which are the
    lane's: ``_Masses``' bits) and their first chunk (as ``memory_chunks``)."""

    pairs: dict[str, list[tuple[str, bool]]]
    held: dict[str, int]
    first: dict[str, ChunkMatch]


class ScopeView(Protocol):
    """What a backend's ``keyword_scope`` returns: the lane's reads answered in fewer
    statements (``store/sqlite/keyword_scope.py``), the same answers. ``search`` is None
    for a query it cannot answer (then ``keyword_search`` is asked)."""

    stats: TermStats

    def search(self, keywords: KeywordQuery, limit: int) -> list[ChunkMatch] | None: ...

    def masks(self, chunk_ids: Sequence[int], texts: Mapping[int, str]) -> dict[int, int]:
        """Which of the lane's terms each chunk holds (``Backend.matched_terms``), as bit
        masks over them (bit i for ``terms[i]``)."""
        ...

    def window(self, memory_ids: Sequence[str]) -> Window: ...


def _scope_view(
    backend: Backend,
    scopes: Sequence[str],
    terms: list[str],
    query: Query,
    now: datetime,
    budget: int = 0,
) -> ScopeView | None:
    """The backend's ``keyword_scope`` for these terms, where it has one and it applies
    (not for a caller's FTS5 syntax). It is told which terms will find candidates given
    the whole index's counts (``selective_terms`` within ``budget``), to leave out what
    only those need (it asks later if the counts it reads choose otherwise)."""
    reads = getattr(backend, "keyword_scope", None)
    if reads is None or query.fts_syntax or not terms:
        return None

    def choose(postings: Mapping[str, int]) -> list[str]:
        return selective_terms(terms, postings, budget)

    view: ScopeView | None = reads(scopes, terms, query, now, choose if budget > 0 else None)
    return view


class _Masses:
    """The query's terms as bits, and the coverage of each set of them, worked out once
    per set: a search's ~100–200 candidates hold a few distinct sets. ``coverage(mask)``
    is exactly ``coverage(weights, held(mask))``; ``held`` is in query order."""

    __slots__ = ("_bit", "_coverage", "_held", "_mask_of", "_weights", "terms")

    def __init__(self, terms: Sequence[str], weights: Mapping[str, float]) -> None:
        self.terms = tuple(terms)
        self._weights = weights
        self._bit = {t: 1 << i for i, t in enumerate(self.terms)}
        self._coverage: dict[int, float] = {}
        self._held: dict[int, tuple[str, ...]] = {}
        self._mask_of: dict[tuple[str, ...], int] = {}

    def mask(self, held: Iterable[str]) -> int:
        bit, out = self._bit, 0
        for term in held:
            out |= bit.get(term, 0)
        return out

    def mask_of(self, held: tuple[str, ...]) -> int:
        """The mask of a tuple that ``held`` returned (or any tuple of query terms)."""
        known = self._mask_of.get(held)
        return self.mask(held) if known is None else known

    def held(self, mask: int) -> tuple[str, ...]:
        known = self._held.get(mask)
        if known is None:
            known = tuple(t for i, t in enumerate(self.terms) if mask >> i & 1)
            self._held[mask] = known
            self._mask_of[known] = mask
        return known

    def coverage(self, mask: int) -> float:
        known = self._coverage.get(mask)
        if known is None:
            known = self._coverage[mask] = coverage(self._weights, self.held(mask))
        return known

    def candidate(self, match: ChunkMatch, rank: int, mask: int) -> KeywordCandidate:
        """The candidate of a ``_Found`` with no window."""
        return KeywordCandidate(match, rank, self.coverage(mask), self.held(mask))


# A memory the lane found, before its window: (its best chunk, that chunk's BM25 rank,
# the query terms it holds as ``_Masses``' bits). Tuples: a ``KeywordCandidate`` is
# built once per memory, after the window.
_Found = tuple[ChunkMatch, int, int]


def _windowed(
    backend: Backend,
    scopes: Sequence[str],
    query: Query,
    now: datetime,
    masses: _Masses,
    candidates: list[_Found],
    settings: Settings,
    view: ScopeView | None = None,
) -> list[KeywordCandidate] | None:
    """``candidates`` re-scored by ``window_coverage`` over their dialogue neighbours;
    a neighbour that was not a candidate joins when its window covers the query. (The
    arithmetic of ``window_coverage``, over ``_Masses``' bit sets.) None where no
    candidate has a neighbour (they stand as they are)."""
    found = {c[0].memory_id: c for c in candidates}
    seen = view.window(list(found)) if view is not None else None
    if seen is not None:
        neighbours = seen.pairs
    else:
        neighbours = backend.session_neighbours(scopes, list(found), query, now)
    # Each memory's window, both ways (a memory may appear twice: OR-ed, no matter).
    windows: dict[str, list[str]] = {}
    for anchor, sides in neighbours.items():
        near = windows.get(anchor)
        if near is None:
            near = windows[anchor] = []
        for other, _after in sides:
            near.append(other)
            back = windows.get(other)
            if back is None:
                windows[other] = [anchor]
            else:
                back.append(anchor)
    if not windows:
        return None
    own: dict[str, int] = {m: c[2] for m, c in found.items()}
    joining = [m for m in windows if m not in found]
    chunks: dict[str, ChunkMatch] = {}
    if seen is not None:  # the joiners' terms and chunks came with the pairs
        held_by = seen.held
        for memory_id in joining:
            own[memory_id] = held_by.get(memory_id, 0)
        chunks = seen.first
    elif joining:
        new_chunks = backend.memory_chunks(joining)
        texts = {c.chunk_id: c.text for c in new_chunks}
        held = backend.matched_terms(list(texts), masses.terms, texts)
        joined: dict[str, int] = {}
        for chunk in new_chunks:
            joined[chunk.memory_id] = joined.get(chunk.memory_id, 0) | masses.mask(
                held.get(chunk.chunk_id, ())
            )
            chunks.setdefault(chunk.memory_id, chunk)
        for memory_id in joining:
            own[memory_id] = joined.get(memory_id, 0)
    share = settings.window_weight
    coverage = masses.coverage
    scores: dict[str, float] = {}
    for memory_id, mask in own.items():
        together = mask
        near = windows.get(memory_id)
        if near is not None:
            for other in near:
                together |= own.get(other, 0)
        base = coverage(mask)
        if together == mask:
            scores[memory_id] = base
        else:
            scores[memory_id] = base + share * (coverage(together) - base)
    # Built once per candidate, here (a frozen dataclass costs ~1 µs to build).
    held_terms = masses.held
    out = []
    for memory_id, (match, rank, mask) in found.items():
        score = scores[memory_id]
        out.append(KeywordCandidate(match, rank, score, held_terms(mask), score - coverage(mask)))
    last = len(candidates)
    for memory_id in joining:
        score = scores[memory_id]
        if memory_id in chunks and score > 0:
            last += 1
            mask = own[memory_id]
            out.append(
                KeywordCandidate(
                    chunks[memory_id], last, score, held_terms(mask), score - coverage(mask)
                )
            )
    out.sort(key=lambda c: (-c.coverage, c.rank))
    return out
