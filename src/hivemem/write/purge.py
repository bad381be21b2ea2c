"""Erasure: the hard purge of one memory's whole chain, or of everything a scope holds.

Deletes are soft everywhere else (the audit chain survives them). A purge is the
exception the law asks for and openhive's ``shutdown_team`` performs: the text leaves
the database file — memories, chunks, keyword index entries, vectors and cached
embeddings, entity links and the entities only it mentioned, and, for a whole scope,
its sessions, vault, run log and the tokens bound to it alone. What is left is an audit
row without content (table ``purges``). The SQL and the byte-level guarantees are in
``hivemem.store.sqlite.purge``.

``purge(mem, id_or_key)`` erases the chain that holds the memory (every version under
its key, every ancestor and descendant) and what was drawn from it (facts consolidated
from an episode, summaries, reflections: their ``source_ids`` lead back to it): the own
scope's, or a led scope's (``hivemem.write.rights``). Copies promoted into another scope are
that scope's to purge. ``purge_all(mem)`` erases the own scope. ``dry_run=True`` reports
what would go and changes nothing (``hivemem purge`` without ``--yes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from ..types import ListFilter, Status
from . import rights, rules

if TYPE_CHECKING:  # pragma: no cover
    from ..facade.database import Store
    from ..facade.memory import ScopedMemory


@dataclass(frozen=True, slots=True)
class PurgeReport:
    """What a purge erased (or, with ``dry_run``, would erase)."""

    scope: str
    target: str  # "memory" (one chain) or "scope"
    memory_ids: tuple[str, ...]
    counts: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    vacuumed: bool = False
    checkpointed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "target": self.target,
            "memory_ids": list(self.memory_ids),
            "counts": dict(self.counts),
            "dry_run": self.dry_run,
            "vacuumed": self.vacuumed,
            "checkpointed": self.checkpointed,
        }


def purge(
    mem: ScopedMemory,
    id_or_key: str,
    *,
    dry_run: bool = False,
    vacuum: bool = True,
    derived: bool = True,
    purged_by: str | None = None,
) -> PurgeReport:
    """Erase the chain holding ``id_or_key`` (own scope, or a scope ``mem`` leads), and
    (``derived``) the memories of that scope drawn from it — consolidated facts, summaries,
    reflections whose ``source_ids`` lead back to it — with their chains."""
    led = rights.owner(mem, id_or_key, "purge")
    handle, ref = led if led is not None else (mem, id_or_key)
    ids = _chain(handle, ref) if _exists(handle, ref) else []
    if not ids:
        raise rights.missing(mem, id_or_key)
    if derived:  # what was drawn from it may quote it: those chains go too
        for other in handle.store.purges.derived(handle.name, ids):
            ids += [i for i in _chain(handle, other) if i not in ids]
    return _run(handle.store, handle.name, ids, "memory", dry_run, vacuum, purged_by or mem.actor)


def _chain(handle: ScopedMemory, ref: str) -> list[str]:
    return [m.id for m in handle.history(ref) if m.scope == handle.name]


def purge_all(
    mem: ScopedMemory,
    *,
    dry_run: bool = False,
    vacuum: bool = True,
    purged_by: str | None = None,
) -> PurgeReport:
    """Erase everything the own scope of ``mem`` holds."""
    store = mem.store
    ids = store.purges.scope_ids(mem.name)
    return _run(store, mem.name, ids, "scope", dry_run, vacuum, purged_by or mem.actor)


def delete_all(mem: ScopedMemory, updated_by: str | None) -> int:
    """``ScopedMemory.delete_all``, the soft one: every active memory of the own scope
    becomes ``deleted`` (still readable by id; nothing erased). Returns how many."""
    by = rules.name(updated_by, "updated_by", 200, optional=True)
    store, count = mem.store, 0
    while True:
        batch = store.memories.list(
            [mem.name], ListFilter(statuses=(Status.ACTIVE,)), 500, 0, mem.store.clock()
        )
        if not batch:
            return count
        with store.atomic():
            now = mem.store.clock()
            for memory in batch:
                store.memories.set_status(mem.name, memory.id, Status.DELETED, now, now, by)
        count += len(batch)


def audit(store: Store, scope: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The purge records, newest first: scope, target, ids, counts, by whom, when."""
    return store.purges.audit(scope, limit)


def _exists(handle: ScopedMemory, ref: str) -> bool:
    memories = handle.store.memories
    return bool(memories.get([handle.name], ref) or memories.versions_of_key([handle.name], ref))


def _run(
    store: Store,
    scope: str,
    ids: list[str],
    target: str,
    dry_run: bool,
    vacuum: bool,
    by: str | None,
) -> PurgeReport:
    sql = store.purges
    whole = target == "scope"
    if dry_run:
        return PurgeReport(scope, target, tuple(ids), sql.plan(scope, ids, whole), dry_run=True)
    if not ids and not whole:
        raise NotFound(f"nothing to purge in scope {scope!r}")
    with sql.secure(), store.atomic():
        counts = sql.erase(scope, ids, whole_scope=whole, target=target, by=by, now=store.clock())
    done = sql.compact(vacuum)
    if whole:
        store.scrubber.reload()  # the scope's vault secrets are gone from memory too
    return PurgeReport(scope, target, tuple(ids), counts, **done)
