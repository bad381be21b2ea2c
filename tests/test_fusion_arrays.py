"""Fusion over arrays (``hivemem.retrieval.fusion``) gives the dict-based functions'
numbers bit for bit: the pipeline's scores, and so its order, do not move."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hivemem.retrieval import fusion, ranking
from hivemem.retrieval.pipeline import _minmax


def _reference_minmax(scores: dict[str, float], page: int = 0) -> dict[str, float]:
    """The pipeline's dict-based min-max scaling before the arrays (kept here as the
    reference the array version must equal)."""
    found = [v for v in scores.values() if v > 0]
    if not found:
        return scores
    low, high = min(found), max(found)
    if page > 0:
        low = sorted(found, reverse=True)[min(page, len(found)) - 1]
    span = high - low
    out = {}
    for key, value in scores.items():
        if value <= 0:
            out[key] = 0.0
        elif span > 0:
            out[key] = 0.05 + 0.95 * (max(0.0, value - low) / span)
        else:
            out[key] = value
    return out


def _lanes(rng: random.Random, n: int) -> dict[str, dict[str, float]]:
    ties = [rng.random() for _ in range(3)]
    lanes: dict[str, dict[str, float]] = {}
    for lane in ("keyword", "vector", "entity"):
        values = {}
        for i in range(n):
            pick = rng.random()
            if pick < 0.3:
                values[f"m{i}"] = 0.0  # the lane did not return it
            elif pick < 0.5:
                values[f"m{i}"] = rng.choice(ties)  # tied scores
            else:
                values[f"m{i}"] = rng.random() * 1.2 - 0.1  # some outside [0, 1]
        lanes[lane] = values
    return lanes


@pytest.mark.parametrize("seed", range(40))
def test_array_fusion_equals_the_dict_functions_bit_for_bit(seed):
    rng = random.Random(seed)
    n = rng.choice([1, 2, 5, 30, 150])
    lanes = _lanes(rng, n)
    arrays = {lane: np.array(list(v.values())) for lane, v in lanes.items()}
    weights = {"keyword": rng.random(), "vector": rng.random(), "entity": rng.random() * 0.2}
    expected = ranking.weighted(lanes, weights)
    got = fusion.weighted(arrays, weights)
    assert got is not None and got.tolist() == list(expected.values())
    for decisive in (0, 1, 3, 10):
        for page in (0, 2, 20):
            assert fusion.lane_confidence(arrays["keyword"], decisive, page) == (
                ranking.lane_confidence(lanes["keyword"], decisive, page)
            )
    for page in (0, 1, 3, 20):
        assert _minmax(lanes["vector"], page) == _reference_minmax(lanes["vector"], page)
    assert fusion.weighted(arrays, {}) is None and ranking.weighted(lanes, {}) == {}


def test_one_score_for_all_keeps_what_it_means_and_no_match_stays_zero():
    scores = {"a": 0.4, "b": 0.4, "c": 0.0, "d": -0.1}
    assert _minmax(scores) == _reference_minmax(scores) == {"a": 0.4, "b": 0.4, "c": 0.0, "d": 0.0}
    assert _minmax({"a": 0.0}) == {"a": 0.0}
