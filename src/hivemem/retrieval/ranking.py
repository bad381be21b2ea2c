"""Pure ranking functions of the retrieval pipeline (DESIGN §3).

Every stage takes plain values and returns plain values, so each is tested on its own:
fusion of lanes, normalisation of fused scores, temporal decay, access boost, and MMR
diversification. ``hivemem.retrieval.keyword`` wires them to the lanes.

Fusion never lets a weaker lane drag a stronger one down below what the stronger lane
alone would score: the fused score of a memory is a weighted mean of its per-lane scores
*over the lanes that ran*, and each lane's score is already in [0, 1] and comparable
across queries (keyword: IDF-weighted coverage; vector: calibrated cosine; entity: share
of the query's entities). RRF is available as an option, normalised so that a memory
ranked first by every lane scores 1.0.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from datetime import datetime
from enum import StrEnum

import numpy as np

# ----------------------------------------------------------------------------- fusion


class Fusion(StrEnum):
    WEIGHTED = "weighted"  # weighted mean of per-lane scores in [0, 1]
    RRF = "rrf"  # reciprocal rank fusion, normalised to [0, 1]


def rrf(
    rankings: Mapping[str, Sequence[str]],
    k: float = 60.0,
    weights: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Reciprocal rank fusion: ``Σ w_lane / (k + rank)``, divided by its maximum
    (``Σ w_lane / (k + 1)``) so that rank 1 in every lane is 1.0.

    Raw RRF compresses every score to about 1/60 (LESSONS 11); normalised, a threshold
    reads as "how close to the top of every lane".
    """
    weights = weights or {}
    best = sum(weights.get(lane, 1.0) / (k + 1) for lane in rankings) or 1.0
    scores: dict[str, float] = {}
    for lane, ranked in rankings.items():
        weight = weights.get(lane, 1.0)
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return {item: value / best for item, value in scores.items()}


def weighted(
    lane_scores: Mapping[str, Mapping[str, float]],
    weights: Mapping[str, float],
) -> dict[str, float]:
    """Weighted mean of per-lane scores, over the lanes that ran.

    A memory a lane did not return scores 0 in that lane. Lanes absent from
    ``lane_scores`` (not run: no embedder, no entity in the query) take no weight, so a
    missing lane never lowers the others.
    """
    total = sum(weights.get(lane, 0.0) for lane in lane_scores)
    if total <= 0:
        return {}
    fused: dict[str, float] = {}
    for lane, scores in lane_scores.items():
        weight = weights.get(lane, 0.0) / total
        if weight <= 0:
            continue
        for item, score in scores.items():
            fused[item] = fused.get(item, 0.0) + weight * max(0.0, min(1.0, score))
    return fused


def lane_confidence(scores: Mapping[str, float], decisive: int, page: int = 0) -> float:
    """How much a lane's ranking says about which memory is right, in (0, 1]: 1 when at
    most ``decisive`` memories share its best score, ``decisive / n`` when ``n`` do.

    A keyword query of one common word ("Where do I live now?" → ``live``) gives every
    memory holding the word the same full coverage: the lane cannot tell the answer
    from forty others, and with its full weight those forty outrank a memory the vector
    lane found by meaning. Scaling the lane's weight by this factor leaves a lane that
    picks out a few memories (most questions of LoCoMo and LongMemEval) as it was.

    ``page`` (> 0) caps ``n``: ties are counted on a fixed page, not on however many
    candidates a backend's plan happened to return (SQLite and PostgreSQL fetch pages of
    different sizes, and a window brings in neighbours), so both backends give one
    factor, and one order, whenever at least ``page`` memories tie."""
    found = [v for v in scores.values() if v > 0]
    if not found or decisive <= 0:
        return 1.0
    best = max(found)
    tied = sum(1 for v in found if v >= best * (1.0 - 1e-6))
    if page > 0:
        tied = min(tied, page)
    return min(1.0, decisive / tied)


def calibrate_cosine(similarity: float, floor: float, ceiling: float = 1.0) -> float:
    """Map a cosine similarity to [0, 1]: ``floor`` (what unrelated texts score with this
    model) → 0, ``ceiling`` → 1, linear between, clipped."""
    if ceiling <= floor:
        return 1.0 if similarity >= ceiling else 0.0
    return max(0.0, min(1.0, (similarity - floor) / (ceiling - floor)))


# ----------------------------------------------------------------------------- adjustments


class DecayProfile(StrEnum):
    EXPONENTIAL = "exponential"  # 0.5 ** (age / half_life)
    STEP = "step"  # <7 d 1.0, 7-30 d 0.8, 30-90 d 0.6, older 0.4
    RECENCY = "recency"  # 2 ** (-age / recency half-life, 14), paired with the access boost
    NONE = "none"


_STEPS = ((7.0, 1.0), (30.0, 0.8), (90.0, 0.6))


def age_days(when: datetime, now: datetime) -> float:
    return max(0.0, (now - when).total_seconds() / 86_400)


def temporal_decay(
    age: float,
    profile: DecayProfile,
    half_life_days: float = 30.0,
    recency_half_life_days: float = 14.0,
) -> float:
    """The multiplier for a memory ``age`` days old."""
    if profile is DecayProfile.NONE:
        return 1.0
    if profile is DecayProfile.EXPONENTIAL:
        return 0.5 ** (age / half_life_days) if half_life_days > 0 else 1.0
    if profile is DecayProfile.RECENCY:
        return 2.0 ** (-age / recency_half_life_days) if recency_half_life_days > 0 else 1.0
    for limit, factor in _STEPS:
        if age < limit:
            return factor
    return 0.4


def access_boost(
    access_count: int,
    max_boost: float = 1.5,
    saturation: float = 10.0,
    *,
    hours_since_access: float | None = None,
    full_hours: float = 48.0,
    fade_days: float = 14.0,
    curve: str = "smooth",
) -> float:
    """``1 + (max_boost - 1) * (1 - exp(-count / saturation)) * recency``: 1.0 for a
    memory never returned, approaching ``max_boost`` for one used often — in full when
    it was last used within ``full_hours`` (Agent Swarm: 48 h), then fading by half every
    ``fade_days`` (a memory used often long ago is no longer "in use"). Without a last
    access time the boost is not faded. ``curve="linear"`` is Agent Swarm's count term,
    ``min(count / saturation, max_boost - 1)``."""
    if access_count <= 0 or max_boost <= 1.0:
        return 1.0
    recency = 1.0
    if hours_since_access is not None and hours_since_access > full_hours:
        late = (hours_since_access - full_hours) / 24.0
        recency = 0.5 ** (late / fade_days) if fade_days > 0 else 0.0
    if curve == "linear":
        return 1.0 + min(access_count / saturation, max_boost - 1.0) * recency
    return 1.0 + (max_boost - 1.0) * (1.0 - math.exp(-access_count / saturation)) * recency


def group_prior(
    scores: Mapping[str, float], groups: Mapping[str, Hashable], weight: float
) -> dict[str, float]:
    """A factor per memory from the score mass of its group (a dialogue session):
    ``1 − weight + weight × mass(group) / mass(best group)``, where a group's mass is the
    sum of its members' scores. Memories missing from ``groups`` keep 1.0: the prior is
    about dialogue, and a memory saved on purpose (a fact, a decision, a summary) is
    neither helped nor hurt by which session matched most.

    Why: a session in which many turns match the query is about the query's topic, so
    its turns are likelier answers than a lone match in an unrelated session — the
    passage-in-document prior of passage retrieval.
    """
    if weight <= 0 or not scores:
        return {key: 1.0 for key in scores}
    mass: dict[Hashable, float] = {}
    for key, score in scores.items():
        if key in groups:
            mass[groups[key]] = mass.get(groups[key], 0.0) + max(0.0, score)
    best = max(mass.values(), default=0.0)
    if best <= 0:
        return {key: 1.0 for key in scores}
    return {
        key: 1.0 - weight + weight * mass[groups[key]] / best if key in groups else 1.0
        for key in scores
    }


def length_prior(
    lengths: Mapping[str, int], subject: Collection[str], weight: float
) -> dict[str, float]:
    """``(2 × median / length) ** weight`` for the memories in ``subject`` more than
    twice as long as the median of ``lengths`` (every candidate of the query); the rest
    keep 1.0 (facts of ordinary length are never judged by it).

    Why: a long text (a session summary) holds many of a query's words, and is close to
    many queries, by chance; among texts saved on purpose, the one that says the thing
    in few words is the better answer (BM25's length normalisation, as a prior)."""
    if weight <= 0 or not lengths or not subject:
        return {}
    ordered = sorted(lengths.values())
    long = 2 * max(1, ordered[len(ordered) // 2])
    return {
        key: (long / lengths[key]) ** weight
        for key in subject
        if key in lengths and lengths[key] > long
    }


# ----------------------------------------------------------------------------- diversity


def mmr(
    candidates: Sequence[tuple[str, float]],
    similarity: Callable[[str, str], float],
    limit: int,
    lambda_: float = 0.7,
) -> list[str]:
    """Maximal marginal relevance: repeatedly take the candidate maximising
    ``λ·score − (1−λ)·max similarity to those already taken``.

    ``candidates`` are (id, relevance in [0, 1]) best first; ``similarity`` returns a value
    in [0, 1] for two ids. λ = 1 keeps the relevance order.
    """
    remaining = list(candidates)
    chosen: list[str] = []
    while remaining and len(chosen) < limit:
        best_index, best_value = 0, -math.inf
        for index, (item, score) in enumerate(remaining):
            redundancy = max((similarity(item, other) for other in chosen), default=0.0)
            value = lambda_ * score - (1.0 - lambda_) * redundancy
            if value > best_value:
                best_index, best_value = index, value
        chosen.append(remaining.pop(best_index)[0])
    return chosen


def diversity_factors(
    candidates: Sequence[tuple[str, float]],
    similarity: Callable[[str, str], float],
    limit: int,
    lambda_: float = 0.7,
) -> list[tuple[str, float]]:
    """MMR in multiplicative form: repeatedly take the candidate maximising
    ``score × (1 − (1−λ)·max similarity to those already taken)``; return (id, factor)
    in the order taken, where ``score × factor`` is that value.

    Unlike the additive form, the values come out non-increasing (a candidate's value
    only falls as more are taken), so hits stay sorted by their reported score and the
    penalty shows in the explanation as one factor.
    """
    remaining = list(candidates)
    redundancy = [0.0] * len(remaining)  # max similarity to those taken, kept up to date
    chosen: list[tuple[str, float]] = []
    while remaining and len(chosen) < limit:
        best_index, best_value, best_factor = 0, -math.inf, 1.0
        for index, (_, score) in enumerate(remaining):
            factor = 1.0 - (1.0 - lambda_) * max(0.0, min(1.0, redundancy[index]))
            if score * factor > best_value:
                best_index, best_value, best_factor = index, score * factor, factor
        taken = remaining.pop(best_index)[0]
        redundancy.pop(best_index)
        chosen.append((taken, best_factor))
        for index, (item, _) in enumerate(remaining):
            redundancy[index] = max(redundancy[index], similarity(item, taken))
    return chosen


def diversity_order(
    scores: Sequence[float],
    similarity: np.ndarray | Callable[[int], np.ndarray],
    limit: int,
    lambda_: float = 0.7,
) -> list[tuple[int, float]]:
    """``diversity_factors`` vectorised: (index, factor) in the order taken. ``scores``
    are best first; ``similarity`` is a matrix, or a function giving the column of one
    candidate (its similarity in [0, 1] to every candidate).

    Each step is one numpy pass over the candidates (argmax of ``score × factor``, then
    the similarity column of the one taken), so the cost is ``limit`` columns, not the
    ``n²`` matrix, and no Python call per pair.
    """
    n = len(scores)
    if n == 0 or limit <= 0:
        return []
    column = similarity if callable(similarity) else (lambda j: similarity[:, j])
    values = np.asarray(scores, dtype=np.float64)
    redundancy = np.zeros(n)
    closed = np.zeros(n, dtype=bool)
    penalty = 1.0 - lambda_
    factor = np.empty(n)
    value = np.empty(n)
    out: list[tuple[int, float]] = []
    # The same operations as ``1 - penalty × redundancy``, ``where(open, values × factor,
    # -inf)`` and ``clip``, into kept arrays and by the ufuncs themselves: each step
    # was ~10 numpy calls' overhead over ~100 candidates (limit 50: 50 steps).
    for _ in range(min(limit, n)):
        np.multiply(redundancy, penalty, out=factor)
        np.subtract(1.0, factor, out=factor)
        np.multiply(values, factor, out=value)
        value[closed] = -np.inf
        taken = int(value.argmax())  # first of equals: the better-ranked candidate
        out.append((taken, float(factor[taken])))
        closed[taken] = True
        if penalty > 0:
            np.maximum(redundancy, np.minimum(np.maximum(column(taken), 0.0), 1.0), out=redundancy)
    return out


_TOKEN = re.compile(r"\w+")


_FEATURES = 1024  # hashed word features: Jaccard within about a percent, cost fixed


def word_features(texts: Sequence[str]) -> np.ndarray:
    """Each text's lowercased word set, hashed into ``_FEATURES`` buckets (0/1 rows):
    the cost is fixed however long the texts are; a collision can only raise a
    similarity, slightly."""
    matrix = np.zeros((len(texts), _FEATURES), dtype=np.float32)
    for i, text in enumerate(texts):
        words = set(_TOKEN.findall(text.lower()))
        if words:
            matrix[i, [zlib.crc32(w.encode()) % _FEATURES for w in words]] = 1.0
    return matrix


def jaccard_column(features: np.ndarray, j: int) -> np.ndarray:
    """Jaccard similarity of every row of ``word_features`` to row ``j``."""
    shared = features @ features[j]
    union = features.sum(axis=1) + features[j].sum() - shared
    return np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)


def token_similarity(texts: Sequence[str]) -> np.ndarray:
    """Jaccard similarity of the texts' word sets (``word_features``), as a matrix."""
    features = word_features(texts)
    return np.stack([jaccard_column(features, j) for j in range(len(texts))], axis=1)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
