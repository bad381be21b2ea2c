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

Ranking functions are pure and take plain values; ``keyword_search`` wires them to a
backend.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from . import text as textmod
from .settings import Settings
from .store.base import Backend, ChunkMatch
from .types import Explanation, Hit, Memory, Query, Status


def idf(total: int, doc_freq: int) -> float:
    """Probabilistic IDF kept positive (Lucene's BM25 form): a term in every chunk still
    weighs a little, a term in none weighs most. ``total`` and ``doc_freq`` count chunks."""
    total = max(total, doc_freq)
    return math.log(1.0 + (total - doc_freq + 0.5) / (doc_freq + 0.5))


def coverage(weights: Mapping[str, float], matched: Iterable[str]) -> float:
    """The share of the query's IDF mass that ``matched`` terms carry, in [0, 1]."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return min(1.0, sum(weights.get(t, 0.0) for t in set(matched)) / total)


def best_chunk_per_memory(matches: Sequence[ChunkMatch]) -> list[ChunkMatch]:
    """One match per memory (its best chunk), best first. ``matches`` is best first."""
    seen: set[str] = set()
    out = []
    for match in matches:
        if match.memory_id not in seen:
            seen.add(match.memory_id)
            out.append(match)
    return out


@dataclass(frozen=True, slots=True)
class _Scored:
    memory: Memory
    match: ChunkMatch
    rank: int
    base: float
    factors: dict[str, float]

    @property
    def score(self) -> float:
        value = self.base
        for factor in self.factors.values():
            value *= factor
        return value


def keyword_search(
    backend: Backend,
    scopes: Sequence[str],
    query: Query,
    settings: Settings,
    now: datetime,
) -> list[Hit]:
    """The keyword lane alone, as hits: BM25 over chunks, best chunk per memory, scored by
    coverage, superseded memories down-weighted, ``min_score`` applied."""
    terms = textmod.query_terms(query.text, settings.max_query_terms)
    if not terms and not query.fts_syntax:
        return []
    fetch = query.limit * settings.candidate_multiplier
    matches = best_chunk_per_memory(backend.keyword_search(scopes, query, terms, fetch, now))
    if not matches:
        return []
    stats = backend.term_stats(terms)
    weights = {t: idf(stats.total_chunks, stats.doc_freq.get(t, 0)) for t in terms}
    matched = backend.matched_terms([m.chunk_id for m in matches], terms)
    memories = {m.id: m for m in backend.get_many(scopes, [m.memory_id for m in matches])}
    scored: list[_Scored] = []
    for rank, match in enumerate(matches, start=1):
        memory = memories.get(match.memory_id)
        if memory is None:  # deleted between the two reads
            continue
        factors = {}
        if memory.status is Status.SUPERSEDED:
            factors["superseded"] = settings.superseded_factor
        base = coverage(weights, matched.get(match.chunk_id, ()))
        scored.append(_Scored(memory, match, rank, base, factors))
    scored.sort(key=lambda s: (-s.score, s.rank))
    kept = [s for s in scored if s.score >= query.min_score][: query.limit]
    hits = []
    for s in kept:
        notes = ("superseded: a newer version exists",) if s.factors.get("superseded") else ()
        explain = Explanation(
            lanes={
                "keyword": {
                    "rank": s.rank,
                    "bm25": round(s.match.bm25, 6),
                    "coverage": round(s.base, 6),
                }
            },
            fused=round(s.base, 6),
            factors=dict(s.factors),
            matched_terms=tuple(t for t in terms if t in matched.get(s.match.chunk_id, ())),
            chunk_seq=s.match.seq,
            notes=notes,
        )
        hits.append(
            Hit(
                memory=s.memory,
                score=round(s.score, 6),
                explain=explain,
                snippet=textmod.snippet(s.match.text, terms),
            )
        )
    return hits
