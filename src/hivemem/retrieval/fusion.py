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

from collections.abc import Mapping

import numpy as np

MINMAX_FLOOR = 0.05  # the lane's weakest match still counts a little: it did match


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
