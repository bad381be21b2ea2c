"""Learned order of dialogue (``learned_order`` setting): a linear model over what the
lanes and adjustments said about each candidate re-orders the episodes of the pool.

Trigger: after fusion and the adjustments, before the one-per-memory and
current-version rules, the re-ranker and diversity. Why: the lanes' numbers say more than
their weighted mean — how much of the query a turn's own words cover unweighted, whether
only one lane found it, its dialogue window and session — and a model fitted on two
suites weighs them better than hand-set weights (docs/retrieval.md, "Learned order").
Outcome: the episodes take the episode places of the pool in the model's order, each
taking the score of the place it lands on (scores stay sorted, a ``learned`` factor
explains the change); memories saved on purpose (facts, decisions, summaries, notes)
keep their places and scores, since the model was fitted on dialogue only.

The coefficients are constants fitted by ``python -m hivemem.evaluation.fusion_fit``
(its docstring gives the command and the data); no weights are downloaded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..types import Kind
from .hitset import Ranked

# Listwise softmax fit (numpy, Adam, L2 1e-3) on LoCoMo conversations 1, 3, 5, 7, 9 and
# the first 40 LongMemEval dev questions (weighted x10); checked on the other five
# conversations, LoCoMo mixed and the other 70 LongMemEval questions.
FEATURES = (
    "score_rel",  # the pipeline's score / the pool's best
    "base_rel",  # fused score / the pool's best
    "kw_cov",  # keyword lane: IDF-weighted coverage
    "window",  # keyword lane: coverage the turns beside add
    "vec_rel",  # vector lane: cosine / the pool's best cosine
    "ctx",  # dialogue context: score as a strong hit's neighbour
    "session",  # session prior factor (1 outside sessions)
    "matched_frac",  # share of the query's terms the chunk holds (unweighted)
    "kw_only",  # found by the keyword lane only
    "vec_only",  # found by the vector lane only
)
COEFFICIENTS = np.array(
    [0.351, 1.943, 2.054, 2.518, 1.756, 1.829, 2.593, 2.898, 0.738, 1.248], dtype=np.float64
)


def features(pool: Sequence[Ranked], query_terms: int) -> np.ndarray:
    """One row of ``FEATURES`` per candidate (relative values are within this pool)."""
    best_score = max((r.score for r in pool), default=0.0) or 1.0
    best_base = max((r.base for r in pool), default=0.0) or 1.0
    cosines = [r.candidate.lanes.get("vector", {}).get("cosine", 0.0) for r in pool]
    best_cosine = max(cosines, default=0.0) or 1.0
    rows = np.zeros((len(pool), len(FEATURES)), dtype=np.float64)
    for i, r in enumerate(pool):
        lanes = r.candidate.lanes
        keyword, vector = lanes.get("keyword"), lanes.get("vector")
        rows[i] = (
            r.score / best_score,
            r.base / best_base,
            keyword["coverage"] if keyword else 0.0,
            keyword.get("window", 0.0) if keyword else 0.0,
            cosines[i] / best_cosine if vector else 0.0,
            lanes.get("context", {}).get("score", 0.0),
            r.factors.get("session", 1.0),
            len(set(r.candidate.matched)) / max(1, query_terms),
            float(bool(keyword) and not vector),
            float(bool(vector) and not keyword),
        )
    return rows


def reorder(pool: list[Ranked], query_terms: int) -> list[Ranked]:
    """``pool`` (best first) with its episodes in the model's order (module docstring)."""
    places = [i for i, r in enumerate(pool) if r.memory.kind is Kind.EPISODE]
    if len(places) < 2:
        return pool
    episodes = [pool[i] for i in places]
    learned = features(pool, query_terms)[places]
    order = np.argsort(-(learned @ COEFFICIENTS), kind="stable")
    slot_scores = [r.score for r in episodes]
    out = list(pool)
    for place, index, score in zip(places, order, slot_scores, strict=True):
        item = episodes[index]
        if item.score > 0 and score != item.score:
            item.factors = {**item.factors, "learned": score / item.score}
        item.score = score
        out[place] = item
    return out
