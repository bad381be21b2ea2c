"""Pure ranking functions: fusion, normalisation, decay, access boost, MMR."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hivemem.retrieval.ranking import (
    DecayProfile,
    access_boost,
    age_days,
    calibrate_cosine,
    cosine,
    diversity_factors,
    diversity_order,
    group_prior,
    mmr,
    rrf,
    temporal_decay,
    token_similarity,
    weighted,
)


def test_rrf_is_normalised_so_first_everywhere_is_one():
    scores = rrf({"keyword": ["a", "b", "c"], "vector": ["a", "c"]}, k=60)
    assert scores["a"] == pytest.approx(1.0)
    assert scores["c"] == pytest.approx((1 / 63 + 1 / 62) / (2 / 61))
    assert scores["a"] > scores["c"] > scores["b"] > 0


def test_rrf_lane_weights():
    scores = rrf({"keyword": ["a", "b"], "vector": ["b", "a"]}, weights={"keyword": 3.0})
    assert scores["a"] > scores["b"]


def test_weighted_fusion_ignores_lanes_that_did_not_run():
    alone = weighted({"keyword": {"a": 0.8, "b": 0.4}}, {"keyword": 0.3, "vector": 0.7})
    assert alone == {"a": pytest.approx(0.8), "b": pytest.approx(0.4)}
    both = weighted(
        {"keyword": {"a": 0.8}, "vector": {"a": 0.5, "b": 1.0}}, {"keyword": 0.5, "vector": 0.5}
    )
    assert both == {"a": pytest.approx(0.65), "b": pytest.approx(0.5)}
    assert weighted({}, {"keyword": 1}) == {}


def test_weighted_fusion_clips_lane_scores():
    assert weighted({"k": {"a": 7.0, "b": -1.0}}, {"k": 1.0}) == {"a": 1.0, "b": 0.0}


def test_cosine_calibration():
    assert calibrate_cosine(0.2, floor=0.2) == 0.0
    assert calibrate_cosine(0.6, floor=0.2) == pytest.approx(0.5)
    assert calibrate_cosine(1.0, floor=0.2) == 1.0
    assert calibrate_cosine(-0.5, floor=0.2) == 0.0


@pytest.mark.parametrize(
    ("age", "expected"), [(0, 1.0), (6.9, 1.0), (7, 0.8), (29, 0.8), (30, 0.6), (90, 0.4)]
)
def test_step_decay(age, expected):
    assert temporal_decay(age, DecayProfile.STEP) == expected


def test_exponential_and_recency_decay():
    assert temporal_decay(30, DecayProfile.EXPONENTIAL, half_life_days=30) == pytest.approx(0.5)
    assert temporal_decay(60, DecayProfile.EXPONENTIAL, half_life_days=30) == pytest.approx(0.25)
    assert temporal_decay(14, DecayProfile.RECENCY) == pytest.approx(0.5)
    assert temporal_decay(1000, DecayProfile.NONE) == 1.0


def test_age_days_never_negative():
    now = datetime(2026, 1, 10, tzinfo=UTC)
    assert age_days(now - timedelta(days=3), now) == pytest.approx(3)
    assert age_days(now + timedelta(days=3), now) == 0.0


def test_access_boost_saturates_at_the_maximum():
    assert access_boost(0) == 1.0
    assert 1.0 < access_boost(1) < access_boost(10) < access_boost(100) <= 1.5
    assert access_boost(10_000) == pytest.approx(1.5)
    assert access_boost(5, max_boost=1.0) == 1.0


def test_mmr_trades_relevance_for_diversity():
    vectors = {"a": (1.0, 0.0), "a2": (0.99, 0.05), "b": (0.0, 1.0)}

    def similarity(x, y):
        return max(0.0, cosine(vectors[x], vectors[y]))

    candidates = [("a", 1.0), ("a2", 0.95), ("b", 0.7)]
    assert mmr(candidates, similarity, limit=2, lambda_=1.0) == ["a", "a2"]
    assert mmr(candidates, similarity, limit=2, lambda_=0.7) == ["a", "b"]
    assert mmr(candidates, similarity, limit=5) == ["a", "b", "a2"]
    assert mmr([], similarity, limit=3) == []


def _similarity_of(vectors):
    def similarity(x, y):
        return max(0.0, cosine(vectors[x], vectors[y]))

    return similarity


def test_diversity_factors_keep_values_non_increasing_and_penalise_near_duplicates():
    from hivemem.retrieval.ranking import diversity_factors

    vectors = {"a": (1.0, 0.0), "a2": (0.99, 0.05), "b": (0.0, 1.0), "c": (0.6, 0.8)}
    scores = {"a": 1.0, "a2": 0.95, "b": 0.7, "c": 0.65}
    candidates = list(scores.items())
    taken = diversity_factors(candidates, _similarity_of(vectors), limit=4, lambda_=0.7)

    assert [item for item, _ in taken][:2] == ["a", "b"]  # the near-duplicate waits
    values = [scores[item] * factor for item, factor in taken]
    assert values == sorted(values, reverse=True)
    factors = dict(taken)
    assert factors["a"] == 1.0 and factors["b"] == 1.0  # b is orthogonal to a
    redundancy = cosine(vectors["a2"], vectors["a"])
    assert factors["a2"] == pytest.approx(1 - 0.3 * redundancy)
    assert factors["a2"] < 0.71
    assert {item for item, _ in taken} == set(scores)


def test_diversity_factors_with_lambda_one_keep_the_order_and_factors_of_one():
    from hivemem.retrieval.ranking import diversity_factors

    vectors = {"a": (1.0, 0.0), "a2": (1.0, 0.0), "b": (0.0, 1.0)}
    candidates = [("a", 0.9), ("a2", 0.8), ("b", 0.3)]
    taken = diversity_factors(candidates, _similarity_of(vectors), limit=3, lambda_=1.0)
    assert taken == [("a", 1.0), ("a2", 1.0), ("b", 1.0)]


def test_diversity_factors_respect_the_limit_and_empty_input():
    from hivemem.retrieval.ranking import diversity_factors

    def same(x, y):
        return 1.0

    candidates = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    taken = diversity_factors(candidates, same, limit=2, lambda_=0.5)
    assert taken == [("a", 1.0), ("b", 0.5)]  # identical texts: half the score at λ = 0.5
    assert diversity_factors([], same, limit=5) == []
    assert diversity_factors(candidates, same, limit=0) == []


def test_group_prior_favours_the_session_where_most_matched():
    scores = {"a1": 0.5, "a2": 0.5, "b1": 0.6, "fact": 0.4}
    groups = {"a1": "A", "a2": "A", "b1": "B"}
    factors = group_prior(scores, groups, 0.5)
    # A's mass 1.0 is the best; B's 0.6; the fact (no session) is neither helped nor hurt
    assert factors == pytest.approx({"a1": 1.0, "a2": 1.0, "b1": 0.8, "fact": 1.0})


def test_group_prior_off_or_empty_changes_nothing():
    assert group_prior({"a": 0.3}, {"a": "A"}, 0.0) == {"a": 1.0}
    assert group_prior({}, {}, 0.7) == {}
    assert group_prior({"a": 0.0, "b": 0.0}, {}, 0.7) == {"a": 1.0, "b": 1.0}


def test_vectorised_diversity_takes_the_same_order_as_the_reference():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(40, 16))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = vectors @ vectors.T
    scores = sorted(rng.uniform(0.1, 1.0, size=40), reverse=True)
    ids = [str(i) for i in range(40)]
    reference = diversity_factors(
        list(zip(ids, scores, strict=True)),
        lambda a, b: float(sim[int(a), int(b)]),
        limit=12,
        lambda_=0.7,
    )
    fast = diversity_order(scores, sim, limit=12, lambda_=0.7)
    assert [str(i) for i, _ in fast] == [i for i, _ in reference]
    assert [f for _, f in fast] == pytest.approx(
        [max(0.3, f) if f < 1 else f for _, f in reference]
    )


def test_token_similarity_is_jaccard_of_word_sets():
    sim = token_similarity(["a b c", "a b d", "x", ""])
    assert sim[0, 1] == pytest.approx(2 / 4)
    assert sim[0, 2] == 0 and sim[3, 3] == 0
    assert sim[0, 0] == pytest.approx(1.0)


def test_length_prior_judges_only_long_memories_saved_on_purpose():
    from hivemem.retrieval.ranking import length_prior

    lengths = {"turn": 100, "fact": 120, "summary": 1000, "long turn": 900, "x": 80}
    factors = length_prior(lengths, {"fact", "summary"}, 0.5)
    # median 120: only what is over twice that is judged, and only saved memories
    assert factors == {"summary": pytest.approx((240 / 1000) ** 0.5)}
    assert length_prior(lengths, {"summary"}, 0.0) == {}


def _diversity_order_before(scores, column, limit, lambda_):
    """``diversity_order`` as it was before its loop reused arrays (np.where, np.clip)."""
    n = len(scores)
    values = np.asarray(scores, dtype=np.float64)
    redundancy = np.zeros(n)
    open_ = np.ones(n, dtype=bool)
    penalty = 1.0 - lambda_
    out = []
    for _ in range(min(limit, n)):
        factor = 1.0 - penalty * redundancy
        value = np.where(open_, values * factor, -np.inf)
        taken = int(np.argmax(value))
        out.append((taken, float(factor[taken])))
        open_[taken] = False
        if penalty > 0:
            np.maximum(redundancy, np.clip(column(taken), 0.0, 1.0), out=redundancy)
    return out


@pytest.mark.parametrize("lambda_", [0.7, 0.0, 1.0, 0.35])
def test_diversity_order_is_bit_for_bit_what_it_was(lambda_):
    """The loop's arrays are kept and its ufuncs called directly (the order stage at
    limit 50); the order and every factor are the same floats as before, ties, float32
    columns, negative and NaN similarities included."""
    rng = np.random.default_rng(11)
    for n in (1, 7, 60, 120):
        vectors = rng.normal(size=(n, 24)).astype(np.float32)
        vectors[n // 2 :: 5] = vectors[0]  # near duplicates: ties in score × factor
        scores = sorted(np.round(rng.uniform(0.0, 1.0, size=n), 2).tolist(), reverse=True)

        def column(j, vectors=vectors):
            cosine = vectors @ vectors[j] / 24.0
            if j % 9 == 4:
                cosine[0] = np.nan
            return cosine

        for limit in (1, 10, 50, n + 3):
            assert diversity_order(scores, column, limit, lambda_) == _diversity_order_before(
                scores, column, limit, lambda_
            )
