"""Each seed's defaults as a profile (``Settings(profile=…)``, ``HIVEMEM_PROFILE``;
docs/seeds.md), and the seeds' own environment variable names read under it. Data only:
``settings.py`` applies them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Each seed's defaults (docs/seeds.md): a profile sets every one of them at once.
SEED_PROFILES: Mapping[str, Mapping[str, Any]] = {
    # openhive: score x 0.5 at 30 days (identity and lesson exempt), 0.7 vector + 0.3
    # keyword, memory_search returns 5, team names are slugs.
    "openhive": {
        "decay_profile": "exponential",
        "half_life_days": 30.0,
        "decay_weight": 1.0,
        "fusion": "weighted",
        "vector_weight": 0.7,
        "keyword_weight": 0.3,
        "search_limit": 5,
        "scope_names": "slug",
    },
    # Agent Swarm: similarity x 2^(-age/14) x (1 + min(count/10, 0.5) x recency), only
    # memory-get counts an access, candidates at 3x the limit.
    "swarm": {
        "decay_profile": "recency",
        "recency_half_life_days": 14.0,
        "decay_weight": 1.0,
        "max_access_boost": 1.5,
        "access_recency_hours": 48.0,
        "access_curve": "linear",
        "access_counts": "get",
        "candidate_multiplier": 3,
    },
    # corvid-agent: step decay in full (<7 d 1.0, 7-30 d 0.8, 30-90 d 0.6, older 0.4),
    # no access signal.
    "corvid": {"decay_profile": "step", "decay_weight": 1.0, "max_access_boost": 1.0},
    # The assistant extension: RRF (k 60) over its lanes; facts decay at 0.1 a day from
    # their last access.
    "assistant": {
        "fusion": "rrf",
        "rrf_k": 60.0,
        "default_decay_rate": 0.1,
        "decay_formula": "exponential",
        "decay_from": "last_access",
    },
}

# The seeds' own environment variable names, read under their profile
# (HIVEMEM_PROFILE=swarm) beside HIVEMEM_*, which wins where both are set.
SEED_ENV: Mapping[str, Mapping[str, str]] = {
    "swarm": {
        "recency_half_life_days": "MEMORY_RECENCY_HALF_LIFE_DAYS",
        "max_access_boost": "MEMORY_ACCESS_BOOST_MAX",
        "access_recency_hours": "MEMORY_ACCESS_RECENCY_HOURS",
        "candidate_multiplier": "MEMORY_CANDIDATE_MULTIPLIER",
    },
}
