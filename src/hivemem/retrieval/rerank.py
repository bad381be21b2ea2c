"""Re-rankers: the optional last stage of retrieval (DESIGN §3).

A re-ranker reads the query and each candidate's text together (a cross-encoder, or an
LLM) and says how well the text answers the query — more accurate than lanes that
score each side alone, and too slow to run over more than the top few dozen. It needs
one method, ``score(query, texts) -> list[float]`` (higher is better, any scale).

The pipeline (``hivemem.retrieval.pipeline``) re-scores the best ``rerank_depth`` hits: each
keeps ``(1 − rerank_weight)`` of its fused score and takes ``rerank_weight`` of its
re-ranker score min-max scaled within the query, so the reported score stays in
[0, 1]. Any failure of the re-ranker keeps the fused order and says so in every hit's
explanation: a re-ranker can only make a search better or slower, never break it.

Re-rankers register like embedders, as entry points of the group ``hivemem.rerankers``.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidInput

ENTRY_POINT_GROUP = "hivemem.rerankers"


@runtime_checkable
class Reranker(Protocol):
    """What the pipeline needs from a re-ranker."""

    @property
    def name(self) -> str: ...

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance score per text, in order (higher is better)."""
        ...


def get_reranker(name: str, **options: Any) -> Reranker:
    """The re-ranker registered under ``name`` (entry point group ``hivemem.rerankers``)."""
    found = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    if name not in found:
        raise InvalidInput("reranker", f"unknown re-ranker {name!r}; installed: {sorted(found)}")
    return found[name].load()(**options)


def resolve_reranker(reranker: Reranker | str | None) -> Reranker | None:
    """A re-ranker from a name (``"none"`` and None mean none) or an instance."""
    if reranker is None or reranker == "none":
        return None
    if isinstance(reranker, str):
        return get_reranker(reranker)
    if not isinstance(reranker, Reranker) or not callable(getattr(reranker, "score", None)):
        raise InvalidInput(
            "reranker",
            "expected a Reranker (a name and a callable score(query, texts)) or the name of "
            "a registered one",
        )
    return reranker


def blend(fused: Sequence[float], scores: Sequence[float], weight: float) -> list[float]:
    """``(1 − weight) × fused + weight × (re-ranker score min-max scaled)``, in [0, 1]
    when ``fused`` is."""
    if not scores:
        return list(fused)
    low, high = min(scores), max(scores)
    span = high - low
    scaled = [(s - low) / span if span > 0 else 1.0 for s in scores]
    top = max(fused) if fused else 0.0
    # The scaled score is relative to this query; tie it to the best fused score so a
    # query whose best hit is weak keeps low scores (thresholds keep their meaning).
    return [(1.0 - weight) * f + weight * s * top for f, s in zip(fused, scaled, strict=True)]
