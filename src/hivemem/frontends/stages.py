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
            figures = {"requests": self.requests, "stages_ns": dict(self.ns)}
        return {"pid": os.getpid(), **figures, "threads_ns": thread_cpu()}

    def install(self, folder: str) -> None:
        """Report to ``folder`` on ``SIGUSR1`` (see the module docstring); called in the
        process that serves (each forked worker)."""
        where = Path(folder)
        self.reset()
        asked = threading.Event()

        def report() -> None:  # on a thread: a signal handler must take no lock
            while True:
                asked.wait()
                asked.clear()
                target = where / f"stages-{os.getpid()}.json"
                partial = target.with_suffix(".part")
                partial.write_text(json.dumps(self.snapshot()))
                partial.replace(target)

        threading.Thread(target=report, name="hivemem-stages", daemon=True).start()
        signal.signal(signal.SIGUSR1, lambda _signum, _frame: asked.set())
        (where / f"ready-{os.getpid()}").touch()


def thread_cpu() -> dict[str, int]:
    """CPU nanoseconds of this process's threads so far, by thread name (a pool's
    number dropped: ``hivemem-lane_3`` counts as ``hivemem-lane``), from ``/proc``
    (empty where there is none)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for task in Path("/proc/self/task").iterdir():
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # a thread that ended meanwhile
            name = names.get(int(task.name), "other")
            group = name.rsplit("_", 1)[0] if name.rsplit("_", 1)[-1].isdigit() else name
            used = (int(fields[11]) + int(fields[12])) * 1_000_000_000 // ticks
            out[group] = out.get(group, 0) + used
    return out


def install() -> None:
    """Start reporting, where the environment asks for it (a no-op otherwise)."""
    folder = os.environ.get(STAGE_CPU_ENV)
    if CLOCK is not None and folder:
        CLOCK.install(folder)


CLOCK: StageClock | None = StageClock() if os.environ.get(STAGE_CPU_ENV) else None


def timed(stage: str) -> contextlib.AbstractContextManager[None]:
    """``CLOCK.timed(stage)``, or nothing where the clock is off."""
    return CLOCK.timed(stage) if CLOCK is not None else contextlib.nullcontext()
