"""Consolidation on demand, one library call each: ``ScopedMemory.consolidate`` (the
``consolidate`` job over one scope) and ``ScopedMemory.consolidate_cycle`` (ADR 005's
``consolidate()``, which the ``memory_consolidate`` tool runs over MCP and HTTP).

ADR 005's cycle is three jobs over one scope, in this order:

1. ``consolidate``: facts from the episodes of the scope's ended sessions (or of one
   session, ended or not), with duplicate and conflict checks, and a summary of each
   session;
2. ``decay``: confidence fades with disuse; facts below the floor are soft-deleted
   (the prune);
3. ``reflect``: the weekly reflection, when one is due.

The first raises on failure (the caller asked for it: an unreachable LLM is an error;
work committed before it stays, and a rerun resumes). Decay and reflect log a failure in
the run log and in their result, as the scheduler's runs do. Every run is logged with
the caller's ``trigger``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import JobResult, run_job

if TYPE_CHECKING:  # pragma: no cover
    from ...store.handles import StoreHandle

CYCLE = ("consolidate", "decay", "reflect")


def consolidate(
    store: StoreHandle, scope: str, session_id: str | None = None, *, trigger: str = "manual"
) -> JobResult:
    """The ``consolidate`` job over ``scope`` (only ``session_id`` when given); raises
    what the job raised."""
    options: dict[str, Any] = {} if session_id is None else {"session_id": session_id}
    return run_job(store, "consolidate", scope, trigger=trigger, raise_errors=True, **options)[0]


def consolidate_cycle(
    store: StoreHandle, scope: str, session_id: str | None = None, *, trigger: str = "manual"
) -> list[JobResult]:
    """ADR 005's ``consolidate()`` over ``scope``: one result per job of ``CYCLE``, in
    order (see the module docstring)."""
    results = [consolidate(store, scope, session_id, trigger=trigger)]
    for job in CYCLE[1:]:
        results += run_job(store, job, scope, trigger=trigger)
    return results
