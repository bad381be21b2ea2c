"""The one retry policy of HiveMem: a whole unit of work run again on ``TryAgain``.

Why here and not in the store: a transaction PostgreSQL aborted as a deadlock victim (or
for a serialization failure, a lock timeout, a connection lost before the commit) is
rolled back whole, and the store cannot re-run the caller's body. The unit that opened
the transaction can: a save, a supersede or correct chain, a purge, an import batch, a
maintenance job's batch. So each such unit is wrapped once, here, and no call site
catches the error itself.

Two forms of the same policy::

    @retried                        # a function that is one unit of work
    def purge(...): ...

    for attempt in attempts():      # a block that is one unit (a job's batch)
        with attempt, store.atomic():
            ...

The rules:

- only ``TryAgain`` is retried (``hivemem.errors``; the backends raise it), nothing else,
  and only for the reasons in ``RETRIED``: a deadlock, a serialization failure, a lock
  timeout, a connection lost before the commit (PostgreSQL). SQLite's ``busy`` (another
  writer held the file past ``busy_timeout_ms``, 10 s by default, after the backend's
  own tries) is not waited on again: it goes to the caller as ``TryAgain``;
- at most ``ATTEMPTS`` runs; between runs a jittered exponential pause (full jitter:
  uniform in 0 … ``BASE_S`` × 3^n, at most ``CAP_S``), so two nodes that deadlocked do
  not meet again in step. After a lost connection the next run waits in the pool for a
  fresh one (up to its timeout), so a server restart of a few seconds is ridden out;
- only the outermost unit of a thread retries: a unit run inside another (``correct``
  by a lead's handle, a save inside a job) lets the error through to it, which runs
  again whole. A unit inside a caller's own ``atomic()`` is not retried either: the
  backends raise ``TryAgain`` only where the outermost transaction ends;
- what survives the runs reaches the front end, which translates it once: HTTP 503
  with ``Retry-After``, the CLI's exit code 8, a tool error saying to try again.

A retried unit must be safe to run again from its start: everything it wrote was
rolled back, but what it did outside the database (a model call, a counter in Python)
is done again. Units that write in several transactions (a job's batches, an import)
are retried batch by batch, each batch idempotent on its own.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import ParamSpec, TypeVar

from ..errors import TryAgain

log = logging.getLogger("hivemem.retry")

ATTEMPTS = 4  # runs of one unit at most (the first and three more)
BASE_S = 0.05  # the first pause is uniform in 0 … BASE_S
CAP_S = 2.0  # no pause longer than this
RETRIED = frozenset({"deadlock", "serialization", "lock_timeout", "connection"})

_inside = threading.local()  # depth of the units running on this thread
_sleep = time.sleep  # the pause between runs (tests count it instead)

P = ParamSpec("P")
R = TypeVar("R")


def pause(attempt: int) -> float:
    """Seconds to wait before run ``attempt + 1`` (``attempt`` counts from 0)."""
    return random.uniform(0.0, min(CAP_S, BASE_S * 3**attempt))


class Attempt:
    """One run of a unit (``attempts()``): ``with attempt:`` keeps a ``TryAgain`` from
    the block when another run may follow, and lets everything else through."""

    def __init__(self, runs: _Runs, number: int) -> None:
        self._runs = runs
        self.number = number

    def __enter__(self) -> Attempt:
        _inside.depth = getattr(_inside, "depth", 0) + 1
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        _inside.depth -= 1
        if exc is None:
            self._runs.done = True
            return False
        if _inside.depth > 0:
            return False  # an outer unit runs this one: it runs again whole
        # Swallowed when another run may follow: the loop sleeps and runs the block again.
        return isinstance(exc, TryAgain) and self._runs.may_retry(self.number, exc)


class _Runs:
    def __init__(self) -> None:
        self.done = False
        self.retries = 0

    def may_retry(self, number: int, exc: TryAgain) -> bool:
        if number + 1 >= ATTEMPTS or exc.reason not in RETRIED:
            return False
        self.retries += 1
        wait = pause(number)
        log.info("retrying a unit of work in %.3f s (%s): %s", wait, exc.reason, exc)
        _sleep(wait)
        return True


def attempts() -> Iterator[Attempt]:
    """The runs of one unit: ``for attempt in attempts(): with attempt: …``. The loop
    ends after the first run that completes; a ``TryAgain`` of the last allowed run
    propagates out of its ``with``."""
    runs = _Runs()
    for number in range(ATTEMPTS):
        yield Attempt(runs, number)
        if runs.done:
            return


def retried(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` is one unit of work: run it again on ``TryAgain`` (the policy above)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in attempts():
            with attempt:
                return fn(*args, **kwargs)
        raise AssertionError("unreachable: the last run raises or returns")

    return run
