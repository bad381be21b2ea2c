"""The session lifecycle: a session's end, a task's result, and the switch to a new
session (the assistant seed's consolidation trigger, Agent Swarm's summaries and task
results).

- ``end_session(mem, session_id)``: consolidate the session now — its episodes become
  facts, and what was learned becomes its ``session_summary`` memory (TTL 3 days; by the
  LLM when one is configured, from the facts otherwise; see
  ``hivemem.lifecycle.maintenance.session_summary``). Returns that summary, or None.
- ``add_task_result(mem, output, status=…, task_id=…)``: a finished or failed task's
  output as a memory with source ``task_completion`` (TTL 7 days), tagged ``task`` and
  its status; a failed task keeps what went wrong (``error``) in its content, so a later
  search for the same work finds the mistake. A task id is the key ``task:<id>``: a
  re-run supersedes the earlier result.
- ``SessionWorker``: when a scope's new session starts (its first episode), the write
  returns at once and this worker, a daemon thread of the store, consolidates the
  scope's earlier open sessions in the background (setting
  ``consolidate_on_session_switch``). A failure is logged in the run log; the nightly
  job picks the sessions up again.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..types import Kind, Memory, MemoryType
from ..write import rules
from .maintenance import run_job
from .maintenance.session_summary import key_of

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle, StoreHandle

log = logging.getLogger("hivemem.lifecycle.sessions")

TASK_SOURCE = "task_completion"
TASK_STATUSES = {
    "completed": "completed",
    "complete": "completed",
    "done": "completed",
    "succeeded": "completed",
    "success": "completed",
    "failed": "failed",
    "failure": "failed",
    "error": "failed",
}


def end_session(mem: ScopedHandle, session_id: str) -> Memory | None:
    """Consolidate ``session_id`` now and return its summary (None when nothing was
    learned). An LLM failure on the facts is raised; a rerun resumes."""
    session = rules.name(session_id, "session_id", 200)
    assert session is not None
    run_job(mem.store, "consolidate", mem.name, raise_errors=True, session_id=session)
    try:
        return mem.get(key_of(session))
    except Exception:  # NotFound: nothing was worth a summary
        return None


def add_task_result(
    mem: ScopedHandle,
    output: str,
    *,
    status: str = "completed",
    task_id: str | None = None,
    error: str | None = None,
    session_id: str | None = None,
    tags: Sequence[str] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Memory:
    """Index a finished or failed task's output (see the module docstring)."""
    if not isinstance(status, str) or status.strip().lower() not in TASK_STATUSES:
        raise InvalidInput("status", "expected completed or failed")
    state = TASK_STATUSES[status.strip().lower()]
    task = rules.name(task_id, "task_id", 200, optional=True)
    problem = None
    if error is not None:
        if not isinstance(error, str):
            raise InvalidInput("error", f"expected text, got {type(error).__name__}")
        problem = error.strip() or None
    if not isinstance(output, str) or not output.strip():
        raise InvalidInput("output", "expected the task's output as text")
    label = f"Task {task}" if task else "Task"
    content = f"{label} {state}: {output.strip()}"
    if problem:
        content += f"\nWhat went wrong: {problem}"
    extra = dict(attributes or {})
    extra.update({"task_status": state, **({"task_id": task} if task else {})})
    if problem:
        extra["error"] = problem
    key = f"task:{task}" if task else None
    return mem.save(
        content,
        key=key,
        kind=Kind.FACT,
        type=MemoryType.LESSON if state == "failed" else MemoryType.REFERENCE,
        source=TASK_SOURCE,
        tags=["task", state, *(tags or [])],
        attributes=extra,
        session_id=session_id,
        supersede_reason=f"task {task} ran again ({state})" if key else None,
    )


class SessionWorker:
    """Consolidates earlier sessions in a daemon thread when a new one starts."""

    def __init__(self, store: StoreHandle) -> None:
        self._store = store
        self._queue: queue.Queue[tuple[str, frozenset[str]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.last_error: str | None = None

    def session_started(self, scope: str, session_ids: Sequence[str]) -> None:
        """Called after a write committed the first episode of ``session_ids``: queue
        the consolidation of the scope's other open sessions. Returns at once."""
        if not self._store.settings.consolidate_on_session_switch or not session_ids:
            return
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="hivemem-sessions", daemon=True
                )
                self._thread.start()
        self._queue.put((scope, frozenset(session_ids)))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                scope, started = item
                maint = self._store.job_state
                if not maint.open_sessions(scope, sorted(started)):
                    continue  # nothing earlier is open (say, the scope's first session)
                [result] = run_job(
                    self._store,
                    "consolidate",
                    scope,
                    trigger="session_switch",
                    before_sessions=sorted(started),
                )
                if not result.ok:
                    self.last_error = result.reason
            except Exception as exc:  # never let the thread die; the nightly job retries
                self.last_error = str(exc)
                log.warning("consolidation on session switch failed: %s", exc)
            finally:
                self._queue.task_done()

    def wait(self) -> None:
        """Block until every queued consolidation has run (tests, short CLI calls)."""
        self._queue.join()

    def close(self) -> None:
        """Stop the thread: queued consolidations are dropped (the nightly job, or the
        next session switch, takes those sessions), the one running finishes (its work
        commits per batch)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self._queue.task_done()
        if thread is not None:
            self._queue.put(None)
            thread.join()
