"""What one result list may hold: each memory once, current versions above old ones.

Two rules of the retrieval pipeline (``hivemem.retrieval.pipeline``) that are about the set of
hits rather than any one score:

- **One entry per memory.** A promoted memory (``ScopedMemory.promote``) has a copy in a
  shared scope that carries ``attributes.promoted_from``; a handle that reads both scopes
  would see the same memory twice. The copy in the caller's own scope wins; otherwise
  the best-scored copy. ``context()`` applies the same rule to its pinned section. A fact
  consolidated from one turn counts as that turn: the better-scored of the two stays.
- **The current version outranks its superseded versions**, whatever the query
  (LESSONS 13). A superseded hit lifts the current version of its chain (the end of its
  ``supersedes`` links) to at least its own score, even when the current version was
  not a candidate, and is itself held below the current version by
  ``superseded_factor``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from ..store.pool_reads import RankRow
from ..store.protocols import Backend
from ..types import Memory, Query, Status

_MAX_CHAIN = 32  # supersede links followed to find the current version


@dataclass(slots=True)
class Ranked:
    """A memory on its way through the pipeline: its score, the fused score it started
    from, what the lanes said (``candidate``) and the factors applied so far. ``memory``
    is the pool's row of it (``RankRow``; a ``Memory`` where a backend gave one), made a
    ``Memory`` for the hits returned only."""

    score: float
    base: float
    candidate: Any
    memory: Memory | RankRow
    factors: dict[str, float] = field(default_factory=dict)

    def sort_key(self) -> tuple[float, bool, float, str]:
        # Ties: a current version before a superseded one, then the better fused score.
        return (-self.score, self.memory.status is Status.SUPERSEDED, -self.base, self.memory.id)


def origin(memory: Memory | RankRow) -> str:
    """The id of the memory this one was promoted from; for a fact consolidation drew
    from one turn, that turn's id (the fact restates it: measured with
    ``consolidate_on_session_switch`` on, such a fact beside its turn took a second place
    of the top 10, LoCoMo hit@10 .815 → .775); else its own id."""
    promoted = memory.attributes.get("promoted_from")
    if isinstance(promoted, dict) and isinstance(promoted.get("id"), str):
        return promoted["id"]
    if memory.source == "consolidation" and len(memory.source_ids) == 1:
        return memory.source_ids[0]
    return memory.id


T = TypeVar("T")


def one_per_memory(
    items: Iterable[T], own_scope: str, memory_of: Callable[[T], Memory | RankRow]
) -> list[T]:
    """``items`` (best first) with promoted copies collapsed: per origin, the item whose
    memory is in ``own_scope``, else the first. Order is kept (the winner takes the place
    of the best copy)."""
    listed = list(items)
    chosen: dict[str, int] = {}
    place: dict[str, int] = {}
    for index, item in enumerate(listed):
        key = origin(memory_of(item))
        if key not in chosen:
            chosen[key] = place[key] = index
        elif memory_of(item).scope == own_scope and memory_of(listed[chosen[key]]).scope != (
            own_scope
        ):
            chosen[key] = index
    winners = sorted(place, key=lambda k: place[k])
    return [listed[chosen[k]] for k in winners]


def current_version(
    backend: Backend, scopes: Sequence[str], memory: Memory | RankRow
) -> Memory | None:
    """The active end of ``memory``'s supersede chain within ``scopes`` (None if none)."""
    seen = {memory.id}
    todo: list[Memory | RankRow] = [memory]
    for _ in range(_MAX_CHAIN):
        if not todo:
            return None
        nxt: list[Memory | RankRow] = []
        for item in todo:
            for successor in backend.successors(scopes, item.id):
                if successor.status is Status.ACTIVE:
                    return successor
                if successor.id not in seen:
                    seen.add(successor.id)
                    nxt.append(successor)
        todo = nxt
    return None


def current_above_superseded(
    backend: Backend,
    scopes: Sequence[str],
    query: Query,
    now: datetime,
    ranked: list[Ranked],
    superseded_factor: float,
    new_candidate: Callable[[Memory, Memory | RankRow], Any],
) -> list[Ranked]:
    """``ranked`` where every superseded hit sits below the current version of its
    chain (added when it was not a candidate and passes the query's filters; scored at
    least as high as the superseded hit was). ``new_candidate(current, superseded)``
    makes the lane record of an added current version."""
    superseded = [r for r in ranked if r.memory.status is Status.SUPERSEDED]
    if not superseded or Status.ACTIVE not in query.statuses:
        return ranked
    by_id = {r.memory.id: r for r in ranked}
    currents: dict[str, Memory] = {}
    for item in superseded:
        current = current_version(backend, scopes, item.memory)
        if current is not None:
            currents[item.memory.id] = current
    missing = {c.id for c in currents.values() if c.id not in by_id}
    allowed = backend.passing(scopes, list(missing), query, now) if missing else set()
    factor = min(1.0, max(0.0, superseded_factor))
    for item in superseded:
        current = currents.get(item.memory.id)
        if current is None:
            continue
        head = by_id.get(current.id)
        if head is None:
            if current.id not in allowed:
                continue
            head = Ranked(item.score, 0.0, new_candidate(current, item.memory), current, {})
            by_id[current.id] = head
            ranked.append(head)
        elif head.score < item.score:
            head.factors["current_of_superseded"] = round(item.score / max(head.score, 1e-9), 6)
            head.score = item.score
        capped = head.score * factor
        if item.score > capped:
            item.factors["below_current"] = round(capped / max(item.score, 1e-9), 6)
            item.score = capped
    ranked.sort(key=Ranked.sort_key)
    return ranked
