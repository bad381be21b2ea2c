"""Deep mode: ``search(..., mode="deep")``, a slower search for when recall matters more
than latency (issue 15; the fast/deep search of the corvid seed). Fast, the default, is
``hivemem.retrieval.pipeline`` as is; deep runs it more than once, wider, and can ask an LLM:

1. **A wider vector pool.** The vector lane's KNN pool is ``DEEP_WIDEN`` × the fast
   one (more exact cosines computed), and a re-ranker sees ``DEEP_WIDEN`` ×
   ``rerank_depth`` candidates. The lanes' own candidate lists are NOT widened: measured
   on LoCoMo (368 questions), twice the candidates per lane took hit@5 from .698 to .682
   and deep mode as first built (lanes and pipeline limit × 2) to .677 / hit@10 .780
   against .791 — more weak candidates move the per-query min-max scaling and the
   session prior's mass, so the top ranks get worse, not better.
2. **Query expansion from entities.** The entities the query names are resolved through
   their aliases (``mem.alias("Melanie", "Mel")``); the names the memories use that the
   query did not write are added to a second query, run the same way. A memory only that
   query found enters at ``EXPANSION_FACTOR`` × its score, so the expansion adds recall
   below the question's own matches, never above them.
3. **An LLM, when one is configured** (the ``llm`` setting; ``Store(llm=...)``): it
   rewrites the question into up to ``LLM_REWRITES`` search queries (run as in 2), then
   re-scores the best ``LLM_RERANK_DEPTH`` candidates 0-10 for how well each answers the
   question, blended like any re-ranker's score (``rerank.blend``, ``rerank_weight``).
   Any LLM failure or timeout keeps the result of steps 1-2, and every hit's explanation
   notes what failed: an LLM can make deep mode better or slower, never break it.

Never on the write path. The merge keeps each memory once, with the explanation of the
query that scored it best (its notes name that query when it was not the user's).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from .. import text as textmod
from ..errors import InvalidInput
from ..providers import entities as entitymod
from ..settings import Settings
from ..store.protocols import Backend
from ..types import Hit, Query
from . import pipeline
from . import rerank as rerankmod
from .rerank import Reranker

MODES = ("fast", "deep")
DEEP_WIDEN = 2  # KNN pool and re-rank depth, × the fast search's
EXPANSION_FACTOR = 0.8  # a hit only an expanded query found: × its score
LLM_REWRITES = 2
LLM_RERANK_DEPTH = 20
_RERANK_CHARS = 600  # of each candidate shown to the LLM
log = logging.getLogger("hivemem.retrieval.deep")


def check_mode(mode: object) -> str:
    """``fast`` or ``deep``, or ``InvalidInput`` naming the field."""
    if not isinstance(mode, str) or mode.strip().lower() not in MODES:
        raise InvalidInput("mode", f"expected one of {list(MODES)}, got {mode!r}")
    return mode.strip().lower()


def wide_settings(settings: Settings) -> Settings:
    """The fast pipeline's settings, widened for deep mode (not the lanes' candidates:
    see the module docstring)."""
    return settings.replace(
        vector_pool=settings.vector_pool * DEEP_WIDEN,
        rerank_depth=settings.rerank_depth * DEEP_WIDEN,
    )


def search_in_mode(
    deep: bool,
    backend: Backend,
    indexer: pipeline.QueryEmbedder,
    scopes: Sequence[str],
    query: Query,
    settings: Settings,
    now: datetime,
    reranker: Reranker | None,
    llm: object | None,
) -> list[Hit]:
    """The facade's one call: the fast pipeline, or deep mode."""
    if deep:
        return search(backend, indexer, scopes, query, settings, now, reranker, llm)
    return pipeline.search(backend, indexer, scopes, query, settings, now, reranker)


def search(
    backend: Backend,
    indexer: pipeline.QueryEmbedder,
    scopes: Sequence[str],
    query: Query,
    settings: Settings,
    now: datetime,
    reranker: Reranker | None = None,
    llm: object | None = None,
) -> list[Hit]:
    """Deep-mode hits for ``query`` (see the module docstring)."""
    wide = wide_settings(settings)
    # Seats (``fusion.seated``) are the question's own page's: an expanded query's hits
    # enter below the question's. An LLM re-ranks after them: they only widen what it reads.
    unseated = wide.replace(vector_seats=0)

    def run(q: Query, seated: bool = False) -> list[Hit]:
        # The floor applies to the merged list; an LLM re-ranks LLM_RERANK_DEPTH of them.
        # The seats hold it already: one under it would displace a hit that passes it.
        limit = max(q.limit, LLM_RERANK_DEPTH) if llm is not None else q.limit
        unfloored = replace(q, min_score=0.0, limit=limit)
        given = wide if seated else unseated
        return pipeline.search(
            backend, indexer, scopes, unfloored, given, now, reranker, q.min_score
        )

    hits = run(query, seated=True)
    if query.fts_syntax:  # FTS5 syntax is the caller's exact query: nothing to expand
        return _final(hits, query)
    notes: list[str] = []
    merged = {h.memory.id: h for h in hits}
    expansions = entity_expansion(backend, scopes, query.text)
    if llm is not None:
        try:
            expansions += llm_rewrites(llm, query.text)
        except Exception as exc:  # any LLM failure: the deep result without it
            log.warning("deep search: query rewriting failed: %s", exc)
            notes.append(f"deep mode: LLM query rewriting failed, not used ({exc})")
    for text in expansions:
        for hit in run(replace(query, text=text)):
            score = hit.score * EXPANSION_FACTOR
            if hit.memory.id not in merged or merged[hit.memory.id].score < score:
                merged[hit.memory.id] = _noted(
                    replace(hit, score=round(score, 6)), f"found by the expanded query {text!r}"
                )
    ranked = sorted(merged.values(), key=lambda h: -h.score)
    if llm is not None and len(ranked) > 1:
        try:
            ranked = llm_rerank(llm, textmod.query_focus(query.text), ranked, settings)
        except Exception as exc:  # any LLM failure: the deep result without it
            log.warning("deep search: LLM re-rank failed: %s", exc)
            notes.append(f"deep mode: LLM re-rank failed, order kept ({exc})")
    return _final([_noted(h, *notes) for h in ranked], query)


def _final(hits: list[Hit], query: Query) -> list[Hit]:
    return [h for h in hits if h.score >= query.min_score][: query.limit]


def _noted(hit: Hit, *notes: str) -> Hit:
    if not notes:
        return hit
    return replace(hit, explain=replace(hit.explain, notes=(*hit.explain.notes, *notes)))


def entity_expansion(backend: Backend, scopes: Sequence[str], text: str) -> list[str]:
    """The query plus the names (canonical and aliases) of the entities it names that it
    did not write itself; no expansion when there is nothing to add."""
    focus = textmod.query_focus(text)
    found = backend.entities.lookup(scopes, entitymod.query_names(focus), aliases=True)
    written = set(textmod.query_terms(focus, max_terms=64))
    extra: list[str] = []
    for entity in found:
        for name in (entity.name, *entity.aliases):
            words = textmod.query_terms(name)
            if words and not set(words) <= written and name not in extra:
                extra.append(name)
    return [f"{focus} {' '.join(extra)}"] if extra else []


_REWRITE_SCHEMA = {
    "type": "object",
    "properties": {"queries": {"type": "array", "items": {"type": "string"}}},
    "required": ["queries"],
}
_RERANK_SCHEMA = {
    "type": "object",
    "properties": {"scores": {"type": "array", "items": {"type": "number"}}},
    "required": ["scores"],
}


def llm_rewrites(llm: object, text: str) -> list[str]:
    """Up to ``LLM_REWRITES`` search queries for the question, from the LLM."""
    question = textmod.query_focus(text)
    reply = llm.complete(  # type: ignore[attr-defined]
        [
            {
                "role": "system",
                "content": "You turn a question about a person's memories and past "
                "conversations into short keyword search queries: the words, names and "
                "synonyms that the remembered text would contain.",
            },
            {"role": "user", "content": f"Question: {question}\nGive {LLM_REWRITES} queries."},
        ],
        schema=_REWRITE_SCHEMA,
    )
    out = []
    for q in reply["queries"]:
        q = " ".join(str(q).split())[:300]
        if q and q.lower() != question.lower() and q not in out:
            out.append(q)
    return out[:LLM_REWRITES]


def llm_rerank(llm: object, question: str, hits: list[Hit], settings: Settings) -> list[Hit]:
    """The best ``LLM_RERANK_DEPTH`` hits re-scored by the LLM (0-10: how well the text
    answers the question), blended with their scores (``rerank.blend``); the rest stay
    below them."""
    head, tail = hits[:LLM_RERANK_DEPTH], hits[LLM_RERANK_DEPTH:]
    listing = "\n".join(
        f"[{i}] {' '.join(h.memory.content.split())[:_RERANK_CHARS]}" for i, h in enumerate(head)
    )
    reply = llm.complete(  # type: ignore[attr-defined]
        [
            {
                "role": "system",
                "content": "You judge search results. For each numbered text, score 0-10 "
                "how well it helps answer the question (10: it holds the answer). Reply "
                "with one score per text, in the order given.",
            },
            {"role": "user", "content": f"Question: {question}\n\nTexts:\n{listing}"},
        ],
        schema=_RERANK_SCHEMA,
    )
    raw = [float(x) for x in reply["scores"]]
    if len(raw) != len(head):
        raise ValueError(f"{len(raw)} scores for {len(head)} texts")
    blended = rerankmod.blend([h.score for h in head], raw, settings.rerank_weight)
    order = sorted(range(len(head)), key=lambda i: -blended[i])
    out = []
    for rank, i in enumerate(order, start=1):
        hit = head[i]
        lanes = {**hit.explain.lanes, "llm_rerank": {"rank": rank, "score": raw[i]}}
        out.append(
            replace(
                hit,
                score=round(min(1.0, blended[i]), 6),
                explain=replace(hit.explain, lanes=lanes),
            )
        )
    floor = out[-1].score if out else 0.0
    return out + [replace(h, score=min(h.score, floor)) for h in tail]
