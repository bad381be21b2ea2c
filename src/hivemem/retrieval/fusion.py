"""Fusion of the lanes' scores over arrays indexed by candidate (the pipeline's step 2).

The pipeline's candidates are ~100-200 memories a search (keyword, vector, entity and
dialogue context); fusing them through per-lane dicts of every candidate cost ~1 ms of
Python a search at 20,000 memories (``hivemem bench``'s fusion stage, profiled: the
dict reads and ``min``/``max`` of ``ranking.weighted``). Here each lane is one float64
array over the candidates, in the order they were found (0 where a lane did not return
one), and every step is numpy: the same IEEE operations, in the same order, as the
dict-based ``ranking.weighted``, ``ranking.lane_confidence`` and the min-max scaling
(tests/test_fusion_arrays.py compares them bit for bit), so the scores do not move.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeVar

import numpy as np

MINMAX_FLOOR = 0.05  # the lane's weakest match still counts a little: it did match
SCORE_PLACES = 6  # a hit's score is shown rounded to this many places


def clears(score: float, floor: float) -> bool:
    """Whether a hit of ``score`` clears ``floor`` (``min_score``): the score as the hit
    shows it, so a hit shown with 0.371429 clears ``min_score=0.371429`` whatever its
    unrounded value (fast mode compared that one and dropped it; deep mode, which
    filters hits, kept it)."""
    return round(score, SCORE_PLACES) >= floor


def weighted(lanes: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray | None:
    """``ranking.weighted`` over arrays: the weighted mean of each candidate's lane
    scores (clipped to [0, 1]) over the lanes that ran; None where no lane has weight
    (``ranking.weighted``'s empty result)."""
    total = sum(weights.get(lane, 0.0) for lane in lanes)
    if total <= 0 or not lanes:
        return None
    fused = np.zeros(len(next(iter(lanes.values()))))
    for lane, scores in lanes.items():
        weight = weights.get(lane, 0.0) / total
        if weight <= 0:
            continue
        fused += weight * np.minimum(1.0, np.maximum(0.0, scores))
    return fused


def lane_confidence(scores: np.ndarray, decisive: int, page: int = 0) -> float:
    """``ranking.lane_confidence`` over an array (see there: 1 when at most
    ``decisive`` candidates share the lane's best score, ``decisive / n`` when ``n``
    do, ``n`` capped at ``page``)."""
    found = scores[scores > 0]
    if not found.size or decisive <= 0:
        return 1.0
    best = float(found.max())
    tied = int(np.count_nonzero(found >= best * (1.0 - 1e-6)))
    if page > 0:
        tied = min(tied, page)
    return min(1.0, decisive / tied)


def minmax(scores: np.ndarray, page: int = 0) -> np.ndarray:
    """Positive scores scaled to [``MINMAX_FLOOR``, 1] within this query (0 stays 0);
    with ``page`` > 0 the low end is the ``page``-th best score and weaker candidates
    take the floor (the pipeline's ``_minmax`` documents why)."""
    positive = scores > 0
    found = scores[positive]
    if not found.size:
        return scores
    low, high = float(found.min()), float(found.max())
    if page > 0:
        low = float(np.sort(found)[::-1][min(page, found.size) - 1])
    span = high - low
    if span <= 0:  # one score for all: nothing to stretch, keep what it means
        return np.where(positive, scores, 0.0)
    stretched = np.maximum(0.0, scores - low) / span
    return np.where(positive, MINMAX_FLOOR + (1.0 - MINMAX_FLOOR) * stretched, 0.0)


def fuse_minmax(
    lanes: Mapping[str, np.ndarray],
    weights: Mapping[str, float],
    keyword_page: int,
) -> np.ndarray | None:
    """Min-max fusion: the order of the weighted mean of min-max scaled lanes (only the
    keyword lane's tail paged), rescaled so the top candidate scores the best absolute
    fused score (``weighted``); None where no lane has weight."""
    absolute = weighted(lanes, weights)
    if absolute is None or not absolute.size:
        return absolute
    relative = weighted(
        {
            lane: minmax(scores, keyword_page if lane == "keyword" else 0)
            for lane, scores in lanes.items()
        },
        weights,
    )
    assert relative is not None  # the same lanes and weights as ``absolute``
    best, scale = float(relative.max()), float(absolute.max())
    if best <= 0:
        return absolute
    return relative / best * scale


# Seats for the vector lane (settings ``vector_seats``, ``seat_depth``, ``seat_lead``, the
# model's: all-MiniLM-L6-v2 2 seats from the lane's best 4 leading by .15, all-mpnet-base-v2
# 4 where keywords tie, others off; docs/retrieval.md, "Seats for the vector lane"). The
# floor and spread were variants measured with them, not adopted.
SEAT_FLOOR = 0.0  # a cosine under this takes no seat
SEAT_SPREAD = False  # seats every other place below the head instead of the last ones
SEAT_NOTE = "seated by the vector lane: among its best by meaning, below fusion's page"


class Seatable(Protocol):
    """A hit as the seats read it (the pipeline's ``Ranked``)."""

    score: float
    factors: dict[str, float]


T = TypeVar("T", bound=Seatable)


def seat_count(limit: int, per_ten: int) -> int:
    """Seats in a page of ``limit``: ``per_ten`` for every ten places, rounded down, and
    never more than half the page (the head is fusion's)."""
    return min(limit * per_ten // 10, limit // 2)


def seats_allowed(lanes: Mapping[str, np.ndarray], ties: int, page: int, lead: float) -> bool:
    """Whether this search may seat anything: with a ``lead`` (``seat_lead`` > 0) each seat
    proves itself by its cosine's lead over the lane's ``limit``-th (``seated``), so every
    search may; without one, only where the keyword lane is weak (``keyword_weak``).
    Why both: all-mpnet-base-v2's seats were measured gated by ties, all-MiniLM-L6-v2's
    ungated with a lead (its gated ones lost LoCoMo questions; docs/retrieval.md)."""
    return lead > 0 or keyword_weak(lanes, ties, page)


def keyword_weak(lanes: Mapping[str, np.ndarray], ties: int, page: int) -> bool:
    """Whether the keyword lane cannot single out its best: it found nothing, or more
    than ``ties`` memories tie at its best on the tie page (``lane_confidence``)."""
    keyword = lanes.get("keyword")
    if keyword is None or not keyword.size or float(keyword.max()) <= 0:
        return True
    return ties > 0 and lane_confidence(keyword, ties, page) < 1.0


def seated(
    page: Sequence[T],
    pool: Sequence[T],
    seats: int,
    cosine: Callable[[T], float | None],
    limit: int,
    floor: float = 0.0,
    vector: Callable[[T], np.ndarray | None] | None = None,
    mmr_lambda: float = 1.0,
    depth: int = 1,
    lead: float = 0.0,
    may_sit: Callable[[T], bool] | None = None,
    within: int = 0,
) -> tuple[list[T], list[T]]:
    """``page`` (the first ``limit`` at ``floor`` or above of the fused order) with the
    vector lane's best candidates of ``pool`` at ``floor`` or above (``min_score``, or deep
    mode's: it runs unfloored and drops what is under it after its merge) that fusion left
    out of it in its last ``seats`` places, then the hits under ``floor``; and the ones
    seated.

    Why: fusion weighs a weak keyword match (a common word in forty turns) against a
    memory found only by meaning, and the match by meaning can land below the page
    however strong its cosine (docs/retrieval.md: paraphrase hit@10 .43 fused against
    .70 for the model's own order). Seats never move the head (the first ``limit −
    seats`` places): a seated memory displaces the page's weakest ones, not its best.
    The lane's best ``seats × depth`` by cosine are looked at, the best first; one
    already on the page keeps its place and its seat; one under ``SEAT_FLOOR`` (or
    leading the lane's ``limit``-th cosine by less than ``lead``) is not seated.
    The lane, its ``limit``-th cosine (its last, where it holds fewer) and its best are
    read from the whole ``pool``, whatever ``floor``: a higher ``min_score`` never changes
    who leads nor who is among the best, so it never drops a hit that clears it (it did:
    the pool cut first, the reference fell to 0 and the best widened over the page's
    tail). A memory under ``floor``, or one ``may_sit`` refuses (a superseded version,
    where the current ones are asked for: its current version has no seat of its own),
    never takes a seat; under ``floor`` it holds no place a seat would take either: it
    would be dropped with the hit it displaced (deep mode did, with ``min_score``).
    With MMR on (``mmr_lambda`` < 1, ``vector``: a hit's chunk vector) the seats go to the
    best by cosine × MMR's factor against the page and the seats before (``diverse``):
    the seats are as many as the best would fill, but a near-duplicate of a hit already
    shown yields its seat, to the next of the lane that leads by ``lead`` (it may lie
    beyond the best ``seats × depth``: measured so, docs/retrieval.md).

    ``within`` (0 < ``within`` < ``limit``): the caller reads only the first ``within``
    places of the page (``Query.seat_page``: ``context()`` fetches headroom for the
    memories its block already shows). The seats are those of a page of ``within``,
    seated in its last places; the page's other hits follow in fused order, scores as
    fused (one after the seats may score above them)."""
    if seats <= 0:
        return list(page), []
    if 0 < within < limit:
        first, wanted = seated(
            page, pool, seats, cosine, within, floor, vector, mmr_lambda, depth, lead, may_sit
        )
        top = [item for item in first if clears(item.score, floor)]
        taken = set(map(id, top))
        rest = [item for item in page if id(item) not in taken and clears(item.score, floor)]
        return top + rest[: limit - len(top)] + first[len(top) :], wanted
    below = [item for item in page if not clears(item.score, floor)]
    page = [item for item in page if clears(item.score, floor)][:limit]
    lane = sorted(
        ((c, i) for i, item in enumerate(pool) if (c := cosine(item)) is not None),
        key=lambda ci: (-ci[0], ci[1]),
    )
    low = lane[min(limit, len(lane)) - 1][0] if lane else 0.0
    able = [pool[i] for c, i in lane if c >= SEAT_FLOOR and c - low >= lead]
    best = able[: seats * depth]  # cosines fall along the lane: a prefix of it
    shown = set(map(id, page))
    fit = [
        item
        for item in able
        if id(item) not in shown
        and clears(item.score, floor)
        and (may_sit is None or may_sit(item))
    ]
    keep = {id(item) for item in best}
    wanted = [item for item in fit if id(item) in keep][:seats]
    if wanted and vector is not None and mmr_lambda < 1.0:
        wanted = diverse(fit, page, len(wanted), cosine, vector, mmr_lambda)
    if not wanted:
        return page + below, []
    head_size = max(0, limit - (2 if SEAT_SPREAD else 1) * seats)
    head, tail = list(page[:head_size]), list(page[head_size:])
    held = [item for item in tail if id(item) in keep]  # seats already taken by fusion
    wanted = wanted[: max(0, limit - len(head) - len(held))]
    free = max(0, limit - len(head) - len(held) - len(wanted))
    staying = {id(item) for item in held + [i for i in tail if id(i) not in keep][:free]}
    fused = [item for item in tail if id(item) in staying]  # in the page's order
    out = head + fused + wanted
    if SEAT_SPREAD:
        queue, mixed = list(wanted), []
        for place in range(len(fused) + len(wanted)):
            source = queue if (place % 2 == 0 and queue) or not fused else fused
            mixed.append(source.pop(0))
        out = head + mixed
    for at in range(max(1, len(head)), len(out)):  # the head is never touched
        # Scores still fall with rank: a seated hit scoring above the one before it is
        # lowered to that score by a ``seat`` factor, so its explanation adds up.
        before, item = out[at - 1], out[at]
        if item.score > before.score > 0:
            item.factors = {**item.factors, "seat": before.score / item.score}
            item.score = before.score
    return out + below, wanted


def diverse(
    candidates: Sequence[T],
    shown: Sequence[T],
    count: int,
    cosine: Callable[[T], float | None],
    vector: Callable[[T], np.ndarray | None],
    mmr_lambda: float,
) -> list[T]:
    """The ``count`` best of ``candidates`` (in cosine order) by cosine × MMR's factor
    (``ranking.diversity_order``'s: ``1 − (1 − λ) × the largest similarity``, in [0, 1],
    to the hits ``shown`` and the ones taken before); one without a vector is like no
    other. Why: MMR cuts a near-duplicate of a hit from the page, and a seat by cosine
    alone brought it back (or seated two copies of one memory)."""
    dims = next((v.shape for v in map(vector, [*candidates, *shown]) if v is not None), None)
    if dims is None:
        return list(candidates[:count])

    def matrix(items: Sequence[T]) -> np.ndarray:
        rows = [vector(item) for item in items]
        return np.array([np.zeros(dims) if r is None else r for r in rows], dtype=np.float64)

    vectors, seen = matrix(candidates), matrix(shown)
    redundancy = np.zeros(len(candidates))
    if len(shown):
        redundancy = np.clip(vectors @ seen.T, 0.0, 1.0).max(axis=1)
    values = np.array([cosine(item) or 0.0 for item in candidates])
    closed = np.zeros(len(candidates), dtype=bool)
    out: list[T] = []
    for _ in range(min(count, len(candidates))):
        value = np.where(closed, -np.inf, values * (1.0 - (1.0 - mmr_lambda) * redundancy))
        taken = int(value.argmax())  # first of equals: the better by cosine
        out.append(candidates[taken])
        closed[taken] = True
        redundancy = np.maximum(redundancy, np.clip(vectors @ vectors[taken], 0.0, 1.0))
    return out
