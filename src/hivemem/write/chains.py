"""The links between memories: the time a new version takes (``successor_time``),
walks of the supersede chain of a memory (``history``) and the related memories the
``crossrefs`` job found (``related``). The facade (``ScopedMemory.save`` / ``history`` /
``related``) and the consolidation job use them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .. import arguments
from ..errors import InvalidInput, NotFound
from ..types import Memory, Related
from . import rules

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle


# The resolution of stored times (ISO 8601 text with microseconds).
TICK = timedelta(microseconds=1)


def successor_time(now: datetime, parent: Memory | None) -> datetime:
    """The time a new version of ``parent`` starts at: ``now``, or one tick after the
    parent's own start when ``now`` is not later. Called with the key's lock held, so
    the parent is the committed active version. Nodes' clocks differ (and a clock may
    step back): without the floor a node whose clock is behind would start a successor
    before its parent, and ``get(key, as_of=t)`` would answer the wrong version. With
    it a chain is strictly ordered in time whatever the clocks say."""
    if parent is None:
        return now
    floor = parent.valid_from + TICK
    return now if now >= floor else floor


def history(mem: ScopedHandle, id_or_key: str) -> list[Memory]:
    """The whole supersede chain that holds ``id_or_key`` among the scopes ``mem``
    sees, oldest first: every version under that key, or every ancestor and descendant
    of that id. Raises ``NotFound``."""
    if not isinstance(id_or_key, str) or not id_or_key:
        raise InvalidInput("id", "expected a memory id or key")
    rules.utf8(id_or_key, "id")
    memories, visible = mem.store.memories, mem.visible
    start = memories.get(visible, id_or_key)
    seeds = [start] if start else memories.versions_of_key(visible, id_or_key)
    if not seeds:
        raise NotFound(f"no memory or key {id_or_key!r} visible from scope {mem.name!r}")
    chain: dict[str, Memory] = {}
    todo = list(seeds)
    while todo:
        memory = todo.pop()
        if memory.id in chain:
            continue
        chain[memory.id] = memory
        if memory.supersedes_id and memory.supersedes_id not in chain:
            parent = memories.get(visible, memory.supersedes_id)
            if parent is not None:
                todo.append(parent)
        todo.extend(memories.successors(visible, memory.id))
    return sorted(chain.values(), key=lambda m: (m.created_at, m.id))  # the facade scrubs


def related(mem: ScopedHandle, memory_id: str, limit: int = 10) -> list[Related]:
    """``ScopedMemory.related``: the crossrefs job's links of ``memory_id``, best first."""
    memory_id = arguments.ref(memory_id, "id", what="a memory id")
    limit = rules.limit(limit, maximum=100)
    store = mem.store
    if store.memories.get(mem.visible, memory_id) is None:
        raise NotFound(f"no memory {memory_id!r} visible from scope {mem.name!r}")
    pairs = store.job_state.related(mem.visible, memory_id, limit)
    return [Related(memory, score) for memory, score in pairs]  # the facade scrubs
