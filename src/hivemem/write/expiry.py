"""Moving a memory's expiry: ``ScopedMemory.renew`` delegates here.

A memory saved with a time to live (``expires_at``) drops out of search once that time
passes. A caller that wants the clock to restart when a memory is used (LangGraph's
``refresh_on_read``) renews it: the expiry moves, nothing else of the row changes (no new
version: the content did not change). Only active memories of the own scope are renewed;
the others are skipped, so a renewal that races a supersede never revives an old version.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from .. import arguments
from ..errors import InvalidInput
from ..types import Status
from . import rules

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle


def renew(mem: ScopedHandle, memory_ids: Sequence[str], expires_at: datetime | str | None) -> int:
    """Set ``expires_at`` (``None`` = never) on each active memory of ``memory_ids`` in
    the own scope; returns how many were renewed."""
    if isinstance(memory_ids, str) or not isinstance(memory_ids, Sequence):
        raise InvalidInput("ids", "expected a list of memory ids")
    ids = [arguments.ref(i, "ids", what="a memory id") for i in memory_ids]
    until = rules.optional_time(expires_at, "expires_at")
    store = mem.store
    renewed = 0
    with store.atomic():
        now = store.clock()
        for memory in store.memories.get_many([mem.name], ids):
            if memory.status is Status.ACTIVE and not memory.is_expired(now):
                store.memories.update(mem.name, memory.id, now, expires_at=until)
                renewed += 1
    return renewed
