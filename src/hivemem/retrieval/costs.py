"""CPU time of one search by stage, for ``hivemem bench`` (a measuring seam, off by default).

The pipeline calls ``lap(name)`` where a stage ends; while a ``Laps`` recorder is active on
the calling thread (``recording()``), the thread's CPU time since the previous lap (or the
recorder's start) is added to ``name``. Without a recorder, ``lap`` is one thread-local
lookup: searches pay nothing measurable. Nothing here changes a result.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_active = threading.local()


@dataclass(slots=True)
class Laps:
    """CPU nanoseconds by stage, summed over the searches recorded."""

    ns: dict[str, int] = field(default_factory=dict)
    last: int = 0

    def add(self, name: str) -> None:
        now = time.thread_time_ns()
        self.ns[name] = self.ns.get(name, 0) + now - self.last
        self.last = now


@contextmanager
def recording(laps: Laps) -> Iterator[Laps]:
    """Record this thread's ``lap`` calls into ``laps`` (restarted now)."""
    previous = getattr(_active, "laps", None)
    laps.last = time.thread_time_ns()
    _active.laps = laps
    try:
        yield laps
    finally:
        _active.laps = previous


def lap(name: str) -> None:
    """The stage ``name`` ends here (see the module docstring)."""
    laps = getattr(_active, "laps", None)
    if laps is not None:
        laps.add(name)
