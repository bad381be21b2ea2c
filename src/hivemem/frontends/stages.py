"""CPU per request by stage inside a server, for ``hivemem bench --load``
(``hivemem.evaluation.load_stages`` says what the stages are and how the bench asks).

Off unless the server's environment names a folder in ``HIVEMEM_STAGE_CPU``: then
``CLOCK`` is a ``StageClock`` and the front ends time their stages with
``CLOCK.timed(stage)`` (the CPU time of the thread that runs the stage, so a thread
waiting for the GIL or the disk costs nothing); otherwise ``CLOCK`` is ``None`` and the
front ends skip the timing with one test of it per stage.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..evaluation.load_stages import STAGE_CPU_ENV, STAGES


class StageClock:
    """CPU nanoseconds per stage and the requests answered, since the process began
    (or since ``install`` in a forked worker)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.ns = dict.fromkeys(STAGES, 0)
            self.requests = 0

    def add(self, stage: str, ns: int) -> None:
        with self._lock:
            self.ns[stage] += ns

    def request(self) -> None:
        with self._lock:
            self.requests += 1

    @contextlib.contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        started = time.thread_time_ns()
        try:
            yield
        finally:
            self.add(stage, time.thread_time_ns() - started)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"pid": os.getpid(), "requests": self.requests, "stages_ns": dict(self.ns)}

    def install(self, folder: str) -> None:
        """Report to ``folder`` on ``SIGUSR1`` (see the module docstring); called in the
        process that serves (each forked worker)."""
        where = Path(folder)
        self.reset()

        def report(_signum: int, _frame: Any) -> None:
            target = where / f"stages-{os.getpid()}.json"
            partial = target.with_suffix(".part")
            partial.write_text(json.dumps(self.snapshot()))
            partial.replace(target)

        signal.signal(signal.SIGUSR1, report)
        (where / f"ready-{os.getpid()}").touch()


def install() -> None:
    """Start reporting, where the environment asks for it (a no-op otherwise)."""
    folder = os.environ.get(STAGE_CPU_ENV)
    if CLOCK is not None and folder:
        CLOCK.install(folder)


CLOCK: StageClock | None = StageClock() if os.environ.get(STAGE_CPU_ENV) else None


def timed(stage: str) -> contextlib.AbstractContextManager[None]:
    """``CLOCK.timed(stage)``, or nothing where the clock is off."""
    return CLOCK.timed(stage) if CLOCK is not None else contextlib.nullcontext()
