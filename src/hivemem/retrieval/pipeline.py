"""The retrieval pipeline (DESIGN §3): lanes → fusion → adjustments → diversity → hits.

Each stage is a function of plain values (``hivemem.retrieval.ranking``); this module runs them in
order and records what each did in the hit's explanation:

1. Lanes, each returning up to ``limit × candidate_multiplier`` memories scored in
   [0, 1]: keyword (IDF-weighted coverage, ``hivemem.retrieval.keyword``), vector (cosine of the
   best chunk, calibrated: ``vector_floor`` → 0, 1 → 1), entity (share of the query's
   named entities a memory is linked to).
2. Fusion over the lanes that ran (``fusion`` setting): a weighted mean of lane scores
   (default), or normalised RRF. A lane that did not run — no embedder, a store embedded by
   another model, no entity named in the query — takes no weight, so it never drags the
   others down; the explanation says why it did not run.
3. Adjustments: session prior (``ranking.group_prior``: a hit in a session where much
   matched beats a lone match elsewhere), superseded factor, temporal decay (identity
   and lesson exempt), access boost, confidence. Scores stay in [0, 1].
4. MMR on chunk vectors (``mmr_lambda``; 1 keeps the order).
5. Optional re-rank of the best ``rerank_depth`` (``hivemem.retrieval.rerank``); a failure keeps
   the fused order. Then ``min_score`` and the limit.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import Protocol, TypeVar

import numpy as np

from .. import text as textmod
from ..providers import calibration
from ..providers import entities as entitymod
from ..settings import Settings
from ..store.pool_reads import RankRow
from ..store.protocols import Backend, VectorMatch
from ..types import Explanation, Hit, Kind, Memory, MemoryType, Query, Status
from . import costs, fusion, hitset, learned, question_forms, ranking, silence
from . import rerank as rerankmod
from .candidates import Candidate, Candidates
from .hitset import Ranked
from .keyword import KeywordCandidate, idf, keyword_lane
from .rerank import Reranker

_DECAY_EXEMPT = (MemoryType.IDENTITY, MemoryType.LESSON)
R = TypeVar("R")
_POOL_FLOOR = 60  # candidates read, adjusted and diversified (see search())
_DIVERSITY_CHARS = 2_000  # text compared by word sets where a candidate has no vector
log = logging.getLogger("hivemem.retrieval.pipeline")


class QueryEmbedder(Protocol):
    """What the vector lane needs of the embedding side: the facade passes its
    ``Indexer`` (``hivemem.lifecycle.indexer``, a layer above, so named here by shape)."""

    disabled: str | None  # why the vector lane is off (a model change, no embedder)

    @property
    def enabled(self) -> bool: ...

    @property
    def identity(self) -> str | None:
        """The embedder's model identity, which the stored vectors are keyed by."""
        ...

    def embed_query(self, text: str) -> np.ndarray | None: ...

    def embed_pending(self, scopes: Sequence[str], limit: int, budget_s: float) -> int:
        """Embed the scopes' queued chunks, bounded; return how many are still queued."""
        ...

    def queued_in(self, scopes: Sequence[str], limit: int) -> bool:
        """Whether ``embed_pending`` would find chunks of the scopes to embed."""
        ...


def search(
    backend: Backend,
    indexer: QueryEmbedder,
    scopes: Sequence[str],
    query: Query,
    settings: Settings,
    now: datetime,
    reranker: Reranker | None = None,
    seat_floor: float | None = None,
) -> list[Hit]:
    """Hits for ``query`` in ``scopes``, best first (see the module docstring).
    ``seat_floor``: the floor the caller applies itself (deep mode, which runs unfloored);
    seats hold it as they hold ``min_score``."""
    costs.lap("setup")  # the facade's part: arguments, fresh chunks, the read view
    # -1: the model's value, measured with its vector lane (none runs: HiveMem's defaults)
    measured = indexer.identity if indexer.enabled and not query.fts_syntax else None
    settings = calibration.resolved(settings, measured)
    fetch = lane_fetch(query.limit, settings.candidate_multiplier)
    if settings.first_person_queries and not query.fts_syntax:
        # A question about "the user" is read in the first person, as the user's own
        # turns are written: "user" is who asks, not what is sought (text.as_first_person).
        query = replace(query, text=textmod.as_first_person(query.text))
    notes: list[str] = []
    candidates = Candidates()

    focus = textmod.query_focus(query.text)
    vector_run = not query.fts_syntax and indexer.enabled
    entity_run = not query.fts_syntax and settings.entity_weight > 0
    # The vector and entity lanes' reads do not depend on the keyword lane's: a backend
    # whose reads are round trips runs them on other threads meanwhile (same results,
    # applied in the same order below); elsewhere each runs when its result is asked.
    parallel = backend.reads_in_parallel()

    def vector_read(statement: float) -> tuple[list[VectorMatch] | None, list[str]]:
        return _vector_reads(
            backend, indexer, scopes, query, now, fetch, settings, focus, statement
        )

    vector_lane = _later(parallel and vector_run, lambda: vector_read(0.0))
    entity_reads = _later(
        parallel and entity_run,
        lambda: _entity_reads(backend, scopes, query, now, fetch, focus),
    )

    terms, keyword = keyword_lane(backend, scopes, query, settings, now, fetch)
    _add_keyword(candidates, keyword)
    if settings.statement_weight > 0 and vector_run:  # off by default: no work then
        scores = {candidates.ids[at]: e[1] for at, e in candidates.keyword.items()}
        statement = question_forms.share(settings, scores, tie_page(query.limit, fetch))
        if statement > 0:  # a parallel read of the question alone is dropped
            vector_lane = functools.partial(vector_read, statement)
    lanes_run = ["keyword"] if terms or query.fts_syntax else []
    costs.lap("keyword")

    if query.fts_syntax:
        pass  # FTS5 syntax is not language: the vector lane has nothing to embed
    elif not indexer.enabled:
        notes.append(f"vector lane off: {indexer.disabled}")
    else:
        matches, vector_notes = vector_lane()
        notes += vector_notes
        if matches is not None:
            for rank, match in enumerate(matches, start=1):
                score = ranking.calibrate_cosine(match.similarity, settings.vector_floor)
                if score <= 0:  # no closer than unrelated texts: not a candidate
                    break
                at = candidates.add(match.memory_id)
                candidates.vector_lane[at] = (rank, score, match.similarity)
                if candidates.chunk_id[at] is None:
                    candidates.chunk_id[at] = match.chunk_id
                    candidates.chunk_seq[at], candidates.chunk_text[at] = match.seq, match.text
                if candidates.chunk_id[at] == match.chunk_id:
                    candidates.vector[at] = match.vector
            lanes_run.append("vector")
    costs.lap("vector")
    if entity_run and _entity_lane(entity_reads(), candidates):
        lanes_run.append("entity")
    costs.lap("entity")
    page = tie_page(query.limit, fetch)
    lanes = candidates.arrays(lanes_run)
    doc_freq = functools.partial(silence.scope_doc_freq, backend, scopes, terms, query, now)
    if not len(candidates) or _nothing_matches(
        candidates, lanes, lanes_run, settings, page, terms, doc_freq, query.text
    ):
        return []

    # Fused scores by position; ``seq``: the positions in fusion's order (ties keep it).
    fused, seq = _fuse(candidates, lanes, lanes_run, settings, page)
    # Only the best ``pool`` go on: the adjustments move scores by a bounded factor, and
    # reading, re-scoring and diversifying every candidate the windows and neighbours
    # brought in cost more than the lanes themselves at 100k memories. The pool is
    # 2 × fetch up to 60 (limit 10: as measured on LoCoMo), then twice the limit, so its
    # cost grows with the limit, not with limit × multiplier.
    pool = min(2 * fetch, max(_POOL_FLOOR, 2 * query.limit, settings.rerank_depth))
    # Dialogue context (``_add_context``) and the pool's rows are one read: the best
    # ``pool`` before context, the best hits' neighbours, and the neighbours' rows. Context
    # only raises scores, so the pool after it is among those (a candidate outside the
    # first ``pool`` that is no neighbour still has ``pool`` better, or tied and earlier).
    best_first = _ranked(fused, seq)
    anchors = [candidates.ids[at] for at in best_first[: query.limit]]
    if settings.neighbour_weight <= 0:
        anchors = []
    head = seq if len(seq) <= pool else best_first[:pool]
    order = head  # the pool, in the order the adjustments take it
    costs.lap("fusion")
    # For diversity, each one's chunk vector (the chunk a lane matched, else the
    # memory's first), where MMR will compare vectors.
    model = indexer.identity if settings.mmr_lambda < 1.0 and indexer.enabled else None

    def keep(sides: Mapping[str, Sequence[tuple[str, bool]]]) -> Collection[str]:
        # Given the read's neighbours: context, then the pool, whose rows are built.
        nonlocal order
        costs.lap("rows")
        _add_context(sides, anchors, settings, fused, seq, candidates)
        order = _ranked(fused, seq)[:pool] if len(seq) > pool else seq
        costs.lap("fusion")
        return {candidates.ids[at] for at in order}

    ids, chunk_ids, vectors = candidates.ids, candidates.chunk_id, candidates.vector
    read = backend.pool_rows(
        scopes,
        {ids[at]: chunk_ids[at] or None for at in head},
        model,
        anchors,
        lambda k: chunk_ids[candidates.at[k]] or None if k in candidates.at else None,
        keep,
        query,
        now,
        [ids[at] for at in head if vectors[at] is not None] if model else (),
    )
    candidates.found = len(candidates)  # the lanes' and context's, before current versions
    memories = {m.id: m for m, _, _ in read}
    known: dict[tuple[str, int | None], np.ndarray | None] = {}
    for m, vector, chunk in read if model else ():
        at = candidates.at[m.id]
        if vectors[at] is not None:  # read by the vector lane: not read again
            known[(m.id, chunk_ids[at])] = vectors[at]
        elif not chunk_ids[at] or chunk_ids[at] == chunk:  # the chunk asked for (none: first)
            known[(m.id, chunk_ids[at] or None)] = vector
    costs.lap("rows")
    # The session prior is about dialogue: only episodes belong to a session's mass, and
    # a memory saved on purpose (fact, decision, summary, note) keeps its score.
    sessions = {
        m.id: (m.scope, m.session_id)
        for m in memories.values()
        if m.session_id is not None and m.kind is Kind.EPISODE
    }
    pooled = {ids[at]: fused[at] for at in order}
    prior = ranking.group_prior(pooled, sessions, settings.session_weight)
    lengths = ranking.length_prior(
        {m.id: len(m.content) for m in memories.values()},
        {m.id for m in memories.values() if m.kind is not Kind.EPISODE},
        settings.length_weight,
    )
    scored: list[Ranked] = []
    profile = ranking.DecayProfile(settings.decay_profile)
    for at in order:
        memory_id, base = ids[at], fused[at]
        memory = memories.get(memory_id)
        if memory is None or base <= 0:  # deleted between the reads; or no lane scored it
            continue
        factors = adjustments(memory, settings, now, profile)
        if prior[memory_id] < 1.0:
            factors["session"] = prior[memory_id]
        if lengths.get(memory_id, 1.0) < 1.0:
            factors["length"] = lengths[memory_id]
        score = base
        for value in factors.values():
            score *= value
        scored.append(Ranked(min(1.0, score), base, Candidate(candidates, at), memory, factors))
    scored.sort(key=Ranked.sort_key)
    if settings.learned_order:
        scored = learned.reorder(scored, len(set(terms)))
    scored = hitset.one_per_memory(scored, scopes[0], lambda r: r.memory)
    scored = hitset.current_above_superseded(
        backend,
        scopes,
        query,
        now,
        scored,
        settings.superseded_factor,
        functools.partial(_current_candidate, candidates),
    )
    pooled_ranked, reranked = scored, False  # the pool, for the seats below the page
    if reranker is not None and len(scored) > 1:
        # The re-ranker sees ``rerank_depth`` candidates before diversity cuts to the
        # limit, and has the last word over the exact-match rule below.
        failed = len(notes)
        scored = _rerank(reranker, focus, scored, settings, notes)
        reranked = len(notes) == failed  # a re-ranker's order is final: no seats
        exact: list[Ranked] = []
    else:
        exact, scored = _split_exact(
            scored, [] if query.fts_syntax else terms, settings.keyword_ties
        )
    room = query.limit - len(exact)
    if settings.mmr_lambda < 1.0:  # each group diversified within itself
        if len(exact) > 1:
            exact = _diversify(backend, indexer, exact, query.limit, settings.mmr_lambda, known)
        if len(scored) > 1 and room > 0:
            scored = _diversify(backend, indexer, scored, room, settings.mmr_lambda, known)
    scored = _lifted(exact, scored) + scored
    scored = [s for s in scored if fusion.clears(s.score, query.min_score)]
    shown = query.seat_page if 0 < query.seat_page < query.limit else query.limit
    seats = fusion.seat_count(shown, settings.vector_seats) if vector_run else 0
    seated: list[Ranked] = []
    if seats and fusion.seats_allowed(lanes, settings.keyword_ties, page, settings.seat_lead):
        scored, seated = fusion.seated(
            scored,
            pooled_ranked,
            0 if reranked else seats,
            lambda r: (candidates.vector_lane.get(r.candidate.at) or (0, 0.0, None))[2],
            query.limit,
            query.min_score if seat_floor is None else seat_floor,
            lambda r: known.get((r.memory.id, r.candidate.chunk_id or None)),
            settings.mmr_lambda,
            settings.seat_depth,
            settings.seat_lead,
            lambda r: Status.ACTIVE not in query.statuses or r.memory.status != "superseded",
            shown,
        )
    hits = []
    for item in scored[: query.limit]:
        score, base, c = item.score, item.base, item.candidate
        memory, factors = item.memory, item.factors
        hit_notes = list(notes)
        if memory.status is Status.SUPERSEDED:
            hit_notes.insert(0, "superseded: a newer version exists")
        if any(item is s for s in seated):
            hit_notes.insert(0, fusion.SEAT_NOTE)
        explain = Explanation(
            lanes=c.lanes,
            fused=round(base, 6),
            factors={k: round(v, 6) for k, v in factors.items()},
            matched_terms=c.matched,
            chunk_seq=c.chunk_seq,
            notes=tuple(hit_notes),
            candidates=candidates.found,
        )
        snippet = textmod.snippet(c.chunk_text or memory.content, terms)
        if isinstance(memory, RankRow):  # the pool's row: a ``Memory`` for the hits only
            memory = memory.memory()
        hits.append(
            Hit(
                memory=memory,
                score=round(score, fusion.SCORE_PLACES),
                explain=explain,
                snippet=snippet,
            )
        )
    costs.lap("order")  # adjustments, one per memory, current versions, diversity, hits
    return hits


_EXTRA_FLOOR = 10  # the limit up to which every lane fetches limit × multiplier


def lane_fetch(limit: int, multiplier: int) -> int:
    """Candidates each lane returns: ``limit × multiplier`` up to limit 10 (as measured
    on LoCoMo), then the limit plus the same headroom (``(multiplier − 1) × 10``): a hit
    beyond the first candidates is there for the ranks past 10, where any match of the
    lanes will do. So a search's cost grows with the limit, not limit × multiplier."""
    return limit + (multiplier - 1) * min(limit, _EXTRA_FLOOR)


def _current_candidate(
    candidates: Candidates, current: Memory, superseded: Memory | RankRow
) -> Candidate:
    """The lane record of a current version brought in by its superseded match."""
    c = Candidate(candidates, candidates.fresh(current.id))
    c.set_lane("current", {"of": superseded.id})
    return c


def _later(parallel: bool, read: Callable[[], R]) -> Callable[[], R]:
    """``read``'s result when asked: started now on a lane thread (``parallel``), else
    run at the call."""
    if not parallel:
        return read
    return _lane_threads().submit(read).result


@functools.cache
def _lane_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="hivemem-lane")


def _vector_reads(
    backend: Backend,
    indexer: QueryEmbedder,
    scopes: Sequence[str],
    query: Query,
    now: datetime,
    fetch: int,
    settings: Settings,
    focus: str,
    statement: float = 0.0,
) -> tuple[list[VectorMatch] | None, list[str]]:
    """The vector lane's matches (None: the lane did not run) and notes.

    The facade embedded the scopes' newest queued chunks before this search's read view
    opened (``hivemem.retrieval.fresh``); the note says when chunks of these scopes are
    still queued (never another scope's: no answer depends on data the caller cannot
    read)."""
    waiting = indexer.embed_pending(scopes, 0, 0.0)  # counts only: 0 or 1
    try:
        vector = question_forms.query_vector(indexer.embed_query, focus, statement)
    except Exception as exc:  # reads fail open: an embedder down leaves keyword search
        log.warning("query embedding failed, vector lane skipped: %s", exc)
        return None, [f"vector lane skipped: the query could not be embedded ({exc})"]
    if vector is None:  # nothing to embed (no words): the lane does not run
        return None, []
    assert indexer.identity is not None
    matches = backend.vectors.search(
        scopes, vector, query, fetch, now, indexer.identity, settings.vector_pool
    )
    notes = []
    if waiting:
        notes.append(
            "some memories are still being embedded: found by keyword only until "
            "then (run `hivemem reindex`, or store.flush(), to finish now)"
        )
    return matches, notes


def _entity_reads(
    backend: Backend,
    scopes: Sequence[str],
    query: Query,
    now: datetime,
    fetch: int,
    text: str,
) -> list[tuple[str, float]] | None:
    """The entity lane's memories and scores, best first; None when the query names no
    known entity (the lane did not run). A memory scores the IDF of the entities it
    mentions over the IDF a never-seen-before entity would have, one per entity named:
    mentioning every named entity, each rare, scores near 1; a name on every turn (a
    chat's speaker) weighs little."""
    names = entitymod.query_names(text)
    # One entity found: its memories score alike and the newest ``fetch`` are kept, so
    # its page need be no longer (``alone``); several: a memory naming more wins.
    found, links = backend.entities.lane(scopes, names, query, now, fetch * 4, alone=fetch)
    if not found:
        return None
    total = backend.entities.total_memories(scopes)
    weights = {e.id: idf(total, e.mention_count) for e in found}
    mass = idf(total, 1) * len({e.canonical for e in found})
    scores: dict[str, float] = {}
    for memory_id, entity_id in links:
        scores[memory_id] = scores.get(memory_id, 0.0) + weights[entity_id] / mass
    return sorted(scores.items(), key=lambda item: -item[1])[:fetch]


def _entity_lane(ranked: list[tuple[str, float]] | None, candidates: Candidates) -> bool:
    """Memories linked to the entities the query names (``_entity_reads``) as
    candidates. Returns whether the lane ran (the query named a known entity)."""
    if ranked is None:
        return False
    for rank, (memory_id, score) in enumerate(ranked, start=1):
        candidates.entity[candidates.add(memory_id)] = (rank, min(1.0, score), 0.0)
    return True


def _ranked(fused: Sequence[float], seq: Sequence[int]) -> list[int]:
    """The positions of ``seq`` best by ``fused`` first (ties in ``seq``'s order)."""
    return sorted(seq, key=lambda at: -fused[at])


def _add_context(
    sides: Mapping[str, Sequence[tuple[str, bool]]],
    anchors: Sequence[str],
    settings: Settings,
    fused: list[float],
    seq: list[int],
    candidates: Candidates,
) -> None:
    """Dialogue context: the turns just before and after a strong episode hit
    (``anchors``, the best ``limit``; ``sides``: their neighbours that pass, as
    ``session_neighbours`` gives them) score ``neighbour_weight`` × its score, unless
    they scored better on their own.

    Why: in a conversation the answer is often the reply to the turn that matches the
    question ("Did you go to the concert?" / "Yes, it was amazing"), and a short reply
    shares no words and little meaning with the question.
    """
    at = candidates.at
    for anchor, neighbours in sides.items():
        of = at[anchor]
        for neighbour, after in neighbours:
            weight = settings.neighbour_weight if after else settings.previous_weight
            value = weight * fused[of]
            place = at.get(neighbour)
            if value > (0.0 if place is None else fused[place]):
                if place is None:  # a new candidate, last in fusion's order
                    place = candidates.add(neighbour)
                    fused.append(value)
                    seq.append(place)
                fused[place] = value
                candidates.context[place] = (anchors.index(anchor) + 1, value)


def _split_exact(
    scored: list[Ranked], terms: Sequence[str], ties: int = 0
) -> tuple[list[Ranked], list[Ranked]]:
    """The candidates whose best chunk holds every term of the query, and the others.

    Trigger: a memory matches the query's words exactly (a unique token, an id, every
    word of a question). Why: fusion weighs the keyword lane at 0.6, and the session
    prior, MMR (which keeps only ``limit`` and drops a turn like its neighbours) and the
    access boost of often-returned memories could otherwise push it below loosely
    related vector hits, out of the results altogether (issue 11: an acknowledged memory
    not found by its own unique token). Outcome: exact matches lead; MMR diversifies
    each group within itself (near-duplicate exact matches are still penalised). A
    re-ranker, asked for explicitly, still has the last word."""
    wanted = set(terms)
    if not wanted:
        return [], scored

    def is_exact(item: Ranked) -> bool:
        # A superseded version never leads: the current version outranks it (LESSONS 13).
        return item.memory.status is not Status.SUPERSEDED and wanted <= set(item.candidate.matched)

    exact = [s for s in scored if is_exact(s)]
    if not exact or len(exact) == len(scored) or 0 < ties < len(exact):
        # More exact matches than ``keyword_ties``: the words do not single any out
        # ("live" in forty memories); fusion orders them with the others.
        return [], scored
    return exact, [s for s in scored if not is_exact(s)]


def _lifted(exact: list[Ranked], rest: list[Ranked]) -> list[Ranked]:
    """``exact`` in their order; one scoring below the best of ``rest`` is lifted to that
    score by an ``exact`` factor, so scores still fall with rank and the explanation adds
    up."""
    ceiling = rest[0].score if rest else 0.0
    for item in exact:
        if 0 < item.score < ceiling:
            item.factors = {**item.factors, "exact": ceiling / item.score}
            item.score = ceiling
    return exact


def _add_keyword(candidates: Candidates, keyword: list[KeywordCandidate]) -> None:
    for rank, k in enumerate(keyword, start=1):
        at = candidates.add(k.match.memory_id)
        # No raw BM25 here: SQLite's is FTS5's, over every tenant's rows (issue 25).
        candidates.keyword[at] = (rank, k.coverage, k.window)
        candidates.chunk_id[at], candidates.chunk_seq[at] = k.match.chunk_id, k.match.seq
        candidates.chunk_text[at], candidates.matched[at] = k.match.text, k.matched


def _nothing_matches(
    candidates: Candidates,
    lanes: Mapping[str, np.ndarray],
    lanes_run: Sequence[str],
    settings: Settings,
    page: int = 0,
    terms: Sequence[str] = (),
    doc_freq: silence.DocFreq | None = None,
    text: str = "",
) -> bool:
    """True when no candidate is a match worth returning: the vector lane ran and its
    best cosine is under ``match_floor`` (the model's calibrated floor unless the user
    set one), and the keyword lane found nothing (its best
    coverage, times ``ranking.lane_confidence``, at most ``MATCH_KEYWORD_FLOOR``). Then
    an unrelated question gets no hit rather than the least unrelated memories
    (measured: ``hivemem eval silence``). Without a vector lane or a calibrated model,
    every candidate stays: a keyword match is a match. (A floor of 0.5 on the keyword
    evidence silenced "where does alice live?" over "I live in Berlin": one of two
    words, cosine 0.23; any shared selective word now keeps the hits.)

    Also true, whatever the keyword lane found, when the question names words its scope
    has never seen (``retrieval.silence``: two or more of ``terms`` in no chunk of the
    scope by ``doc_freq``, one of them rare) and the best cosine is under
    ``unknown_floor``: read only when the cosine is under it,
    and ``None`` where the scope is too small to say a word is unknown; and when the
    question (``text``) is about no one the scope knows and names a thing it has never
    seen, or whose words never meet in one memory of the scope, under ``stranger_floor``
    (``retrieval.silence.silent``, on the tie ``page``). ``settings`` are
    resolved: each floor is the model's where the user left it at -1."""
    if "vector" not in lanes_run:
        return False
    cosines = candidates.cosines()
    best = max(cosines, default=0.0)
    known = "entity" in lanes_run
    if silence.silent(best, text, terms, doc_freq, known, settings, candidates, page):
        return True
    floor = settings.match_floor  # resolved: the model's where it was -1
    if floor <= 0 or best >= floor:
        return False
    keyword = lanes.get("keyword")
    if keyword is None or not keyword.size:
        return True  # no keyword evidence: 0 <= MATCH_KEYWORD_FLOOR
    evidence = float(keyword.max())
    evidence *= fusion.lane_confidence(keyword, settings.keyword_ties or len(keyword), page)
    return evidence <= MATCH_KEYWORD_FLOOR


MATCH_KEYWORD_FLOOR = 0.0  # keyword evidence above this always counts as a match (see above)


def tie_page(limit: int, fetch: int) -> int:
    """The page on which the keyword-ties rule counts tied memories: twice the limit up
    to 20, and never more than the lane's ``fetch``. A backend's keyword plan returns its
    own number of candidates (chunks per memory, window neighbours), so counting every
    tie made SQLite and PostgreSQL weigh the lane, and order a top 5, differently; on a
    fixed page both count the same whenever at least that many tie
    (``ranking.lane_confidence``). Measured at limit 10 (20 ties at most, where the lane
    returned up to ~30): no hit@k of LoCoMo or the paraphrase suite changed
    (docs/retrieval.md)."""
    return min(2 * min(limit, _EXTRA_FLOOR), fetch)


def _fuse(
    candidates: Candidates,
    lanes: Mapping[str, np.ndarray],
    lanes_run: Sequence[str],
    settings: Settings,
    page: int = 0,
) -> tuple[list[float], list[int]]:
    """Fused score in [0, 1] per candidate (by position; 0 where none), over the lanes
    that ran (``lanes``: ``Candidates.arrays``), and the positions fused in their order
    (ties keep it); ``page``: see ``tie_page``."""
    if settings.fusion == ranking.Fusion.RRF:
        ids = candidates.ids
        rankings = {}
        for name in lanes_run:
            lane = candidates.lane(name)
            rankings[name] = [ids[at] for at in sorted(lane, key=lambda at: lane[at][0])]
        weights = _weights(settings)
        by_id = ranking.rrf(rankings, k=settings.rrf_k, weights=weights)
        scores = [0.0] * len(ids)
        seq = [candidates.at[k] for k in by_id]
        for at, value in zip(seq, by_id.values(), strict=True):
            scores[at] = value
        return scores, seq
    weights = _weights(settings)
    if "vector" in lanes and "keyword" in lanes and settings.keyword_ties > 0:
        # A keyword lane that ties many memories at its best cannot tell them apart:
        # its weight shrinks, and a memory the vector lane found by meaning can win.
        weights["keyword"] *= fusion.lane_confidence(lanes["keyword"], settings.keyword_ties, page)
    if settings.fusion != "minmax":
        fused = fusion.weighted(lanes, weights)
    else:
        # Min-max per lane orders best (measured), but its numbers mean "relative to
        # this query's best": rescaled so the top hit scores the best absolute fused
        # score, a threshold still reads as "how well this matches", and the order stays
        # min-max's. Only the keyword lane's tail is paged: measured better on all four
        # suites than paging every lane (docs/retrieval.md).
        fused = fusion.fuse_minmax(lanes, weights, settings.minmax_page)
    if fused is None:
        return [], []
    return fused.tolist(), list(range(len(fused)))


def _minmax(scores: dict[str, float], page: int = 0) -> dict[str, float]:
    """Positive scores scaled to [0.05, 1] within this query (0 stays 0: not found);
    ``fusion.minmax`` over a dict.

    ``page`` > 0 (setting ``minmax_page``, keyword lane): the low end is the lane's
    ``page``-th best score instead of its weakest candidate, and weaker candidates take
    the floor. The weakest candidate is whatever the plan fetched last (a page size, a
    window neighbour), and a keyword lane of thirty weak matches spreads them over the
    whole range, above a memory found only by meaning (docs/retrieval.md: paraphrase
    hit@10 .410 → .486 at 20)."""
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    return dict(zip(scores, fusion.minmax(values, page).tolist(), strict=True))


def _weights(settings: Settings) -> dict[str, float]:
    return {
        "keyword": settings.keyword_weight,
        "vector": settings.vector_weight,
        "entity": settings.entity_weight,
    }


def adjustments(
    memory: Memory | RankRow,
    settings: Settings,
    now: datetime,
    profile: ranking.DecayProfile | None = None,
) -> dict[str, float]:
    """The multipliers applied after fusion, by name (only those that are not 1).
    ``profile``: ``settings.decay_profile`` as its enum, made once for a search's pool
    (~60 calls) by the caller where it can."""
    factors: dict[str, float] = {}
    if memory.status is Status.SUPERSEDED:
        factors["superseded"] = settings.superseded_factor
    if memory.type not in _DECAY_EXEMPT and settings.decay_weight > 0:
        age = ranking.age_days(memory.event_time or memory.created_at, now)
        decay = ranking.temporal_decay(
            age,
            ranking.DecayProfile(settings.decay_profile) if profile is None else profile,
            settings.half_life_days,
            settings.recency_half_life_days,
        )
        factor = 1.0 - settings.decay_weight + settings.decay_weight * decay
        if factor < 1.0:
            factors["decay"] = factor
    if memory.access_count > 0:  # (never returned: ``access_boost`` is 1)
        boost = ranking.access_boost(
            memory.access_count,
            settings.max_access_boost,
            hours_since_access=(
                (now - memory.last_accessed).total_seconds() / 3600
                if memory.last_accessed
                else None
            ),
            full_hours=settings.access_recency_hours,
            fade_days=settings.access_fade_days,
            curve=settings.access_curve,
        )
        if boost > 1.0:
            factors["access"] = boost
    if memory.confidence < 1.0:
        factors["confidence"] = memory.confidence
    return factors


def _rerank(
    reranker: Reranker, text: str, scored: list[Ranked], settings: Settings, notes: list[str]
) -> list[Ranked]:
    """Re-score the best ``rerank_depth``; on any failure keep the order and say why."""
    head, tail = scored[: settings.rerank_depth], scored[settings.rerank_depth :]
    try:
        raw = reranker.score(text, [s.candidate.chunk_text or s.memory.content for s in head])
        if len(raw) != len(head):
            raise ValueError(f"{len(raw)} scores for {len(head)} texts")
        blended = rerankmod.blend(
            [s.score for s in head], [float(x) for x in raw], settings.rerank_weight
        )
    except Exception as exc:  # a re-ranker may fail in any way: the fused order stands
        log.warning("re-ranker %s failed, fused order kept: %s", reranker.name, exc)
        notes.append(f"re-rank failed, fused order kept: {exc}")
        return scored
    order = sorted(range(len(head)), key=lambda i: -raw[i])
    rank = {i: r for r, i in enumerate(order, start=1)}
    for i, item in enumerate(head):
        item.candidate.set_lane("rerank", {"rank": rank[i], "score": round(float(raw[i]), 6)})
        item.score = min(1.0, blended[i])
    head.sort(key=Ranked.sort_key)
    floor = head[-1].score if head else 0.0
    for item in tail:  # not re-scored: it stays below the re-scored head
        item.score = min(item.score, floor)
    return head + tail


def _diversify(
    backend: Backend,
    indexer: QueryEmbedder,
    scored: list[Ranked],
    limit: int,
    lambda_: float,
    known: Mapping[tuple[str, int | None], np.ndarray | None],
) -> list[Ranked]:
    """The ``limit`` best after the diversity penalty (``ranking.diversity_order``).

    Similarity is the cosine of the candidates' chunk vectors where both have one, and
    the Jaccard similarity of their word sets otherwise (keyword-only search, or a
    memory not embedded yet): three near-duplicates never fill the top three.
    ``known``: the vectors the pool's read brought, by (memory id, the chunk asked for);
    only a candidate it did not cover (a current version added for its superseded match)
    is read here."""
    n = len(scored)
    has = np.zeros(n, dtype=bool)
    matrix = np.zeros((n, 1), dtype=np.float32)
    if indexer.enabled and indexer.identity is not None:
        keys = [(s.memory.id, s.candidate.chunk_id or None) for s in scored]
        by_place = {i: known[key] for i, key in enumerate(keys) if key in known}
        rest = [s if i not in by_place else None for i, s in enumerate(scored)]
        chunk_of = _chunk_ids(backend, rest)
        vectors = backend.vectors.vectors(indexer.identity, list(chunk_of.values()))
        by_place.update((i, vectors.get(c)) for i, c in chunk_of.items())
        found = [v for v in by_place.values() if v is not None]
        if found:
            matrix = np.zeros((n, len(found[0])), dtype=np.float32)
            for i in range(n):
                vector = by_place.get(i)
                if vector is not None:
                    matrix[i] = vector
                    has[i] = True
    features = None
    if not has.all():
        features = ranking.word_features(
            [(s.candidate.chunk_text or s.memory.content)[:_DIVERSITY_CHARS] for s in scored]
        )

    def column(j: int) -> np.ndarray:
        # Vectors where both have one (a product per candidate taken, not n²), word
        # sets otherwise (keyword-only search, or a memory not embedded yet).
        cosine = matrix @ matrix[j]
        if features is None:
            return cosine
        words = ranking.jaccard_column(features, j)
        return np.where(has & has[j], cosine, words)

    out = []
    for index, factor in ranking.diversity_order([s.score for s in scored], column, limit, lambda_):
        item = scored[index]
        if factor < 1.0:
            item.factors = {**item.factors, "diversity": factor}
        item.score *= factor
        out.append(item)
    return out


def _chunk_ids(backend: Backend, scored: Sequence[Ranked | None]) -> dict[int, int]:
    """Position → the chunk that stands for the candidate: the chunk a lane matched, else
    (a neighbour brought in as dialogue context) the memory's first chunk. None: a place
    whose vector is known already."""
    out = {i: s.candidate.chunk_id for i, s in enumerate(scored) if s and s.candidate.chunk_id}
    missing = {s.memory.id: i for i, s in enumerate(scored) if s and i not in out}
    if missing:
        for chunk in backend.memory_chunks(list(missing)):
            out.setdefault(missing[chunk.memory_id], chunk.chunk_id)
    return out
