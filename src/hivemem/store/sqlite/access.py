"""Access counts off the read path: a search or a get records which memories it returned
(``access_count`` + 1, ``last_accessed``) in memory; the writer writes them in batches.

Why: a search that bumps counts in its own write transaction takes the write lock, so
every read would queue behind every write (and behind the other reads' bumps). Counts are
a ranking hint (DESIGN §3), not data the user wrote, so they may be written late.

Contract:

- ``record`` is cheap (a dict update under a small lock) and never touches the file.
- Within this process the counts show at once: rows the backend reads carry the counts
  still queued or being written (``overlay``), so a search followed by a get sees the
  bump (a read racing the end of a flush may count a batch twice, for that one read).
- The queue is written in one transaction per batch by ``flush``: ``flush_after_s``
  after the first queued access (a timer thread), on ``store.close()``, and whenever
  the queue reaches ``max_pending`` memories.
- **Lossy by design, only for counts**: a kill -9, a failed flush (a full disk, a busy
  file past busy_timeout) or a queue over ``limit`` memories drops those counts; no
  memory, no write a client was told about, ever waits on this queue. Other processes
  see the counts once flushed (about a second later).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from ...types import Memory

log = logging.getLogger("hivemem.store.access")

FLUSH_AFTER_S = 1.0
MAX_PENDING = 2_000  # memories queued before a flush is due at once
LIMIT = 200_000  # memories queued at most: past it, new counts are dropped


class AccessLog:
    """Queued access counts of one store. ``write(batch)`` stores a batch in one write
    transaction; a batch is ``{(scopes, memory_id): (count, last_accessed)}``."""

    def __init__(
        self,
        write: Callable[[dict[tuple[tuple[str, ...], str], tuple[int, datetime]]], None],
        *,
        flush_after_s: float = FLUSH_AFTER_S,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._write = write
        self._flush_after_s = flush_after_s
        self._max_pending = max_pending
        self._pending: dict[tuple[tuple[str, ...], str], tuple[int, datetime]] = {}
        self._inflight: dict[tuple[tuple[str, ...], str], tuple[int, datetime]] = {}
        self._pending_scopes: set[tuple[str, ...]] = set()  # the scope lists keyed in each
        self._inflight_scopes: set[tuple[str, ...]] = set()
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one batch at a time
        self._timer: threading.Timer | None = None
        self._closed = False

    def record(
        self, scopes: Sequence[str], memory_ids: Sequence[str], now: datetime, count: int = 1
    ) -> None:
        """Queue ``count`` (1, or 0: only ``last_accessed``) for each memory."""
        if not memory_ids:
            return
        key_scopes = tuple(scopes)
        with self._lock:
            if self._closed:
                return
            self._pending_scopes.add(key_scopes)
            for memory_id in dict.fromkeys(memory_ids):
                key = (key_scopes, memory_id)
                if key not in self._pending and len(self._pending) >= LIMIT:
                    continue  # lossy by design: the queue stays bounded
                queued, _ = self._pending.get(key, (0, now))
                self._pending[key] = (queued + count, now)
            due = len(self._pending) >= self._max_pending
            if self._timer is None and not due:
                self._timer = threading.Timer(self._flush_after_s, self._on_timer)
                self._timer.daemon = True
                self._timer.name = "hivemem-access-flush"
                self._timer.start()
        if due:
            self.flush()

    def overlay(self, memories: list[Memory]) -> list[Memory]:
        """``memories`` with the counts still queued for them added (``queued``)."""
        queued = self.queued([memory.id for memory in memories])
        if not queued:
            return memories
        out = []
        for memory in memories:
            extra = queued.get(memory.id)
            if extra is not None:
                memory = replace(
                    memory, access_count=memory.access_count + extra[0], last_accessed=extra[1]
                )
            out.append(memory)
        return out

    def queued(self, memory_ids: Sequence[str]) -> dict[str, tuple[int, datetime]]:
        """The counts still queued or being written for ``memory_ids`` (those with any),
        with the latest access time. Looks up each memory under each scope list queued
        (a few), never walks the whole queue: a search reads ~60 rows, and the queue
        holds up to ``max_pending`` memories."""
        queued: dict[str, tuple[int, datetime]] = {}
        if not self._pending and not self._inflight:
            return queued
        with self._lock:
            for source, scope_lists in (
                (self._inflight, self._inflight_scopes),
                (self._pending, self._pending_scopes),
            ):
                if not source:
                    continue
                for memory_id in memory_ids:
                    for scopes in scope_lists:
                        found = source.get((scopes, memory_id))
                        if found is not None:
                            seen = queued.get(memory_id)
                            count = found[0] + (seen[0] if seen else 0)
                            queued[memory_id] = (
                                count,
                                max(found[1], seen[1]) if seen else found[1],
                            )
        return queued

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.flush()
        except Exception:  # a timer thread has no caller to tell: counts are lossy
            log.warning("access counts could not be written; dropped", exc_info=True)

    def flush(self) -> int:
        """Write what is queued in one transaction; returns how many memories. A failed
        write drops the batch (lossy by design) and raises."""
        with self._flushing:
            with self._lock:
                batch = self._inflight = self._pending
                self._inflight_scopes = self._pending_scopes
                self._pending, self._pending_scopes = {}, set()
            try:
                if batch:
                    self._write(batch)
            finally:  # written or dropped: either way no longer queued
                with self._lock:
                    self._inflight, self._inflight_scopes = {}, set()
            return len(batch)

    def close(self) -> None:
        """Flush what is queued (best effort: a closed or full store drops it) and stop."""
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        try:
            self.flush()
        except Exception:
            log.warning("access counts could not be written at close; dropped", exc_info=True)
        with self._lock:
            self._closed = True
