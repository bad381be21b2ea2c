"""Which memory ``ScopedMemory.promote`` may copy into a shared scope.

Only a current, live memory may be promoted: the copy becomes an active memory of the
shared scope and reaches every worker's context, so an obsolete text must never get there.
Found on main: a memory superseded and then deleted was promoted, and its old text sat
beside the current one in the swarm's scope.

The rule, one line each (trigger / outcome):
- active and not expired: promoted.
- superseded: refused with ``Conflict`` naming the current version of its chain (its
  ``current``), so the caller can promote that one; nothing is promoted implicitly, since
  the caller asked for a text they had read.
- deleted, archived, or a superseded chain whose every later version is deleted or
  archived: refused with ``Conflict`` (nothing current to promote).
- expired: refused with ``Conflict`` (it no longer reaches any context).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import arguments
from ..errors import Conflict, InvalidInput, NotFound
from ..store.protocols import Memories
from ..types import Memory, Source, Status

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle


def promote(
    mem: ScopedHandle,
    memory_id: str,
    to: str,
    supersede_reason: str | None,
    updated_by: str | None,
) -> Memory:
    """``ScopedMemory.promote``: copy a current, live memory into the shared scope ``to``
    with provenance, written by ``updated_by`` (default: the handle's actor)."""
    memory_id = arguments.ref(memory_id, "id", what="a memory id")
    to = target_scope(to, mem.shared)
    store = mem.store
    original = promotable(store.memories, mem.visible, memory_id, store.clock(), store.scrubbed)
    return store.scope(to).save(
        original.content,
        key=original.key,
        type=original.type,
        kind=original.kind,
        source=Source.PROMOTION,
        supersede_reason=supersede_reason,
        tags=original.tags,
        attributes={
            **original.attributes,
            "promoted_from": {"scope": original.scope, "id": original.id},
        },
        event_time=original.event_time,
        source_ids=(original.id,),
        category=original.category,
        updated_by=updated_by or mem.actor,
    )


def target_scope(to: object, shared: Sequence[str]) -> str:
    """``to`` if it is one of the handle's shared scopes, else ``InvalidInput``."""
    if not isinstance(to, str) or to not in shared:
        raise InvalidInput(
            "to", f"{to!r} is not a shared scope of this handle (shared: {list(shared)})"
        )
    return to


def promotable(
    memories: Memories,
    scopes: Sequence[str],
    memory_id: str,
    now: datetime,
    shown: Callable[[Any], Any],
) -> Memory:
    """The memory ``memory_id`` if it may be promoted; else ``NotFound`` or ``Conflict``
    (see the module docstring). ``shown`` redacts what the error carries."""
    memory = memories.get(scopes, memory_id)
    if memory is None:
        raise NotFound(f"no memory {memory_id!r} visible from scope {scopes[0]!r}")
    if memory.status is Status.SUPERSEDED:
        head = current_version(memories, scopes, memory)
        if head is None:
            raise Conflict(
                f"memory {memory.id} was superseded and no later version of it is current "
                "(deleted); only current, live memories can be promoted"
            )
        raise Conflict(
            f"memory {memory.id} is an old version, superseded by {head.id}; only the "
            f"current version can be promoted: promote {head.id}",
            current=shown(head),
        )
    if memory.status is not Status.ACTIVE:
        raise Conflict(
            f"memory {memory.id} is {memory.status.value}; only current, live memories "
            "can be promoted"
        )
    if memory.is_expired(now):
        raise Conflict(
            f"memory {memory.id} expired at {memory.expires_at:%Y-%m-%d %H:%M:%S}; only "
            "current, live memories can be promoted",
            current=shown(memory),
        )
    return memory


def current_version(memories: Memories, scopes: Sequence[str], memory: Memory) -> Memory | None:
    """The active memory at the head of ``memory``'s supersede chain, if there is one."""
    seen = {memory.id}
    todo = [memory]
    while todo:
        for later in memories.successors(scopes, todo.pop().id):
            if later.status is Status.ACTIVE:
                return later
            if later.id not in seen:
                seen.add(later.id)
                todo.append(later)
    return None
