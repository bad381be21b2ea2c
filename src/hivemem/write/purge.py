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
scope's, or a led scope's (``hivemem.write.rights``). ``purge_all(mem)`` erases the own
scope. ``dry_run=True`` reports what would go and changes nothing (``hivemem purge``
without ``--yes``).

Promoted copies (``copies``, default True): ``promote`` copies a memory into a shared
scope, so its text lives on there. Both purges follow those copies (and copies of
copies) with the chain and the derived memories of each copy, into every scope the
caller may change (its own, or one it leads: ``rights.leads``), in the same transaction.
A copy in a scope the caller may not change is kept and named in the report
(``copies_kept``): rights are never widened by a purge; a lead of that scope erases it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from ..types import ListFilter, Status
from . import rights, rules
from .retry import attempts, retried

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle, StoreHandle


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
    copies: dict[str, tuple[str, ...]] = field(default_factory=dict)  # other scope -> ids
    copies_kept: tuple[str, ...] = ()  # "scope/id" of copies the caller may not erase

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "target": self.target,
            "memory_ids": list(self.memory_ids),
            "counts": dict(self.counts),
            "dry_run": self.dry_run,
            "vacuumed": self.vacuumed,
            "checkpointed": self.checkpointed,
            "copies": {scope: list(ids) for scope, ids in self.copies.items()},
            "copies_kept": list(self.copies_kept),
        }


def purge(
    mem: ScopedHandle,
    id_or_key: str,
    *,
    dry_run: bool = False,
    vacuum: bool = True,
    derived: bool = True,
    copies: bool = True,
    purged_by: str | None = None,
) -> PurgeReport:
    """Erase the chain holding ``id_or_key`` (own scope, or a scope ``mem`` leads), and
    (``derived``) the memories of that scope drawn from it — consolidated facts, summaries,
    reflections whose ``source_ids`` lead back to it — with their chains; and
    (``copies``) its promoted copies where ``mem`` may (module docstring)."""
    report = _erase_chain(mem, id_or_key, dry_run, derived, copies, purged_by)
    return _compacted(mem.store, report, vacuum)


@retried  # what it reaches and the erase, one unit: a deadlock runs both again
def _erase_chain(
    mem: ScopedHandle,
    id_or_key: str,
    dry_run: bool,
    derived: bool,
    copies: bool,
    purged_by: str | None,
) -> PurgeReport:
    led = rights.owner(mem, id_or_key, "purge")
    handle, ref = led if led is not None else (mem, id_or_key)
    ids = _chain(handle, ref) if _exists(handle, ref) else []
    if not ids:
        raise rights.missing(mem, id_or_key)
    if derived:  # what was drawn from it may quote it: those chains go too
        _add_derived(handle, ids)
    others, kept = _copies(mem, handle.name, ids, derived) if copies else ({}, [])
    by = purged_by or mem.actor
    return _run(handle.store, handle.name, ids, "memory", dry_run, by, others, kept)


def _chain(handle: ScopedHandle, ref: str) -> list[str]:
    return [m.id for m in handle.history(ref) if m.scope == handle.name]


def _add_derived(handle: ScopedHandle, ids: list[str]) -> None:
    for other in handle.store.purges.derived(handle.name, ids):
        ids += [i for i in _chain(handle, other) if i not in ids]


def _copies(
    mem: ScopedHandle, scope: str, ids: list[str], derived: bool
) -> tuple[dict[str, list[str]], list[str]]:
    """The promoted copies of ``ids`` (transitively: a copy promoted on), each with its
    chain and (``derived``) what was drawn from it, by scope, where ``mem`` may change
    that scope; and "scope/id" of the copies it may not."""
    purges = mem.store.purges
    taken: dict[str, list[str]] = {scope: ids}
    kept: list[str] = []
    frontier = list(ids)
    while frontier:
        found: list[str] = []
        for where, copy_id in purges.copies(frontier):
            if copy_id in taken.get(where, ()) or f"{where}/{copy_id}" in kept:
                continue
            if not rights.leads(mem, where):
                kept.append(f"{where}/{copy_id}")
                continue
            handle = rights.handle_on(mem, where)
            group = taken.setdefault(where, [])
            chain = [i for i in _chain(handle, copy_id) if i not in group]
            group += chain
            if derived:
                before = len(group)
                _add_derived(handle, group)
                chain += group[before:]
            found += chain
        frontier = found
    taken.pop(scope)
    return taken, kept


def purge_all(
    mem: ScopedHandle,
    *,
    dry_run: bool = False,
    vacuum: bool = True,
    copies: bool = True,
    purged_by: str | None = None,
) -> PurgeReport:
    """Erase everything the own scope of ``mem`` holds, and (``copies``) the promoted
    copies of its memories where ``mem`` may (module docstring)."""
    report = _erase_scope(mem, dry_run, copies, purged_by)
    return _compacted(mem.store, report, vacuum)


@retried
def _erase_scope(
    mem: ScopedHandle, dry_run: bool, copies: bool, purged_by: str | None
) -> PurgeReport:
    store = mem.store
    ids = store.purges.scope_ids(mem.name)
    others, kept = _copies(mem, mem.name, ids, True) if copies else ({}, [])
    by = purged_by or mem.actor
    return _run(store, mem.name, ids, "scope", dry_run, by, others, kept)


def _compacted(store: StoreHandle, report: PurgeReport, vacuum: bool) -> PurgeReport:
    """After the erase committed (outside the retried unit: run again, it would find
    nothing left to purge): compaction; a whole scope's secrets leave the scrubber."""
    if report.dry_run:
        return report
    done = store.purges.compact(vacuum)
    if report.target == "scope":
        store.scrubber.reload()  # the scope's vault secrets are gone from memory too
    vacuumed, checkpointed = done.get("vacuumed", False), done.get("checkpointed", False)
    return replace(report, vacuumed=vacuumed, checkpointed=checkpointed)


def delete_all(mem: ScopedHandle, updated_by: str | None) -> int:
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
        for attempt in attempts():  # one batch, one unit of work
            with attempt, store.atomic():
                now = mem.store.clock()
                for memory in batch:
                    store.memories.set_status(mem.name, memory.id, Status.DELETED, now, now, by)
        count += len(batch)


def audit(store: StoreHandle, scope: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The purge records, newest first: scope, target, ids, counts, by whom, when.
    ``scope`` is checked as every scope name is (a bad one is ``InvalidInput``)."""
    if scope is not None:
        scope = store.scope(scope).name
    return store.purges.audit(scope, limit)


def _exists(handle: ScopedHandle, ref: str) -> bool:
    memories = handle.store.memories
    return bool(memories.get([handle.name], ref) or memories.versions_of_key([handle.name], ref))


def _run(
    store: StoreHandle,
    scope: str,
    ids: list[str],
    target: str,
    dry_run: bool,
    by: str | None,
    others: dict[str, list[str]],
    kept: list[str],
) -> PurgeReport:
    sql = store.purges
    whole = target == "scope"
    copies = {where: tuple(found) for where, found in others.items() if found}
    copies_kept = tuple(kept)
    if dry_run:
        counts = sql.plan(scope, ids, whole)
        for where, found in copies.items():
            _add_counts(counts, sql.plan(where, found, False))
        return PurgeReport(
            scope, target, tuple(ids), counts, True, copies=copies, copies_kept=copies_kept
        )
    if not ids and not whole:
        raise NotFound(f"nothing to purge in scope {scope!r}")
    with sql.secure(), store.atomic():
        counts = sql.erase(scope, ids, whole_scope=whole, target=target, by=by, now=store.clock())
        for where, found in copies.items():  # each audited in its own scope
            now = store.clock()
            done = sql.erase(where, found, whole_scope=False, target="memory", by=by, now=now)
            _add_counts(counts, done)
    return PurgeReport(scope, target, tuple(ids), counts, copies=copies, copies_kept=copies_kept)


def _add_counts(into: dict[str, int], more: dict[str, int]) -> None:
    for name, value in more.items():
        into[name] = into.get(name, 0) + value
