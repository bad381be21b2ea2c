"""Walks of the links between memories: the supersede chain of a memory (``history``)
and the related memories the ``crossrefs`` job found (``related``). The facade
(``ScopedMemory.history`` / ``related``) delegates here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import arguments
from ..errors import InvalidInput, NotFound
from ..types import Memory, Related
from . import rules

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle


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
