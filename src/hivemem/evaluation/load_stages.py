"""Server CPU per request by stage, for ``hivemem bench --load``: the bench's half.

A server started with ``HIVEMEM_STAGE_CPU=FOLDER`` in its environment (the load bench
sets it; nobody else should) times the stages of each request with the CPU clock of the
thread that runs them (``hivemem.frontends.stages``), writes ``ready-PID`` into FOLDER
once it can report, and on ``SIGUSR1`` writes ``stages-PID.json``: the requests it
answered, the CPU nanoseconds of each stage and of each of its threads (by name). The
bench asks when the clients start and when they stop, and takes the difference. With
``serve-http --workers N`` every worker reports for itself; the bench adds them up.

The stages: ``parse`` (the body read as JSON, the tool's arguments from the path, the
query and the body), ``auth`` (the bearer token checked, the scope bound), ``library``
(the tool run by the library: validation, the search or the write, the scrubber over the
result; and the CPU of the library's own threads, a search's lanes and the embedding
worker, from ``/proc``), ``serialise`` (the result as JSON bytes, the response built).
``framework`` is what is left of the server's CPU over the run: the HTTP parser, routing
and middleware, the event loop, the hand-offs to threads, any other thread — the
server's CPU per request (``/proc``) less the four stages. The MCP server has no token:
its ``auth`` is 0, and the SDK's own JSON-RPC parsing and validation is in ``framework``.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STAGE_CPU_ENV = "HIVEMEM_STAGE_CPU"
STAGES = ("parse", "auth", "library", "serialise")
WAIT_S = 5.0
# Threads of the library's own, whose CPU is all library work (by thread name).
LIBRARY_THREADS = ("hivemem-lane", "hivemem-embed", "hivemem-sessions")


@dataclass(frozen=True)
class StageCpu:
    """CPU per request by stage (ms), summed over the server's processes."""

    requests: int
    ms: dict[str, float]  # each of STAGES, then "framework" (None where unknown)

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, **{k: round(v, 3) for k, v in self.ms.items()}}


def collect(folder: Path, pids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Ask every process of ``pids`` that said it can report (``ready-PID``) for its
    figures (``SIGUSR1``) and read them, by pid; waits up to ``WAIT_S`` for the files."""
    asked = []
    for pid in pids:
        if (folder / f"ready-{pid}").exists():
            (folder / f"stages-{pid}.json").unlink(missing_ok=True)  # an earlier report
            try:
                os.kill(pid, signal.SIGUSR1)
            except ProcessLookupError:
                continue
            asked.append(pid)
    found: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + WAIT_S
    while len(found) < len(asked) and time.monotonic() < deadline:
        for pid in asked:
            path = folder / f"stages-{pid}.json"
            if pid not in found and path.exists():
                try:
                    found[pid] = json.loads(path.read_text())
                except ValueError:  # written as we read: the next turn reads it whole
                    continue
        time.sleep(0.05)
    return found


def _added(reports: Iterable[dict[str, Any]], key: str, name: str) -> int:
    return sum(int(r.get(key, {}).get(name, 0)) for r in reports)


def per_request(
    before: dict[int, dict[str, Any]],
    after: dict[int, dict[str, Any]],
    server_cpu_ms: float | None,
) -> StageCpu | None:
    """What a server's processes reported ``before`` and ``after`` the run (by pid) as CPU
    ms per request by stage, with ``framework`` the rest of ``server_cpu_ms`` (the
    server's CPU over the run, all its processes). The library's own threads
    (``LIBRARY_THREADS``: a search's lanes, the embedding worker) count as ``library``."""
    ran = [(before.get(pid, {}), report) for pid, report in after.items()]
    requests = sum(int(a.get("requests", 0)) - int(b.get("requests", 0)) for b, a in ran)
    if requests <= 0:
        return None

    def spent(key: str, name: str) -> float:
        used = sum(_added([a], key, name) - _added([b], key, name) for b, a in ran)
        return used / 1e6 / requests

    ms = {stage: spent("stages_ns", stage) for stage in STAGES}
    ms["library"] += sum(spent("threads_ns", name) for name in LIBRARY_THREADS)
    if server_cpu_ms is not None:
        ms["framework"] = max(0.0, server_cpu_ms / requests - sum(ms.values()))
    return StageCpu(requests, ms)


def format_stages(label: str, stages: StageCpu) -> str:
    parts = ", ".join(f"{k} {v:.2f}" for k, v in stages.ms.items())
    return f"  {label}: server CPU ms per request by stage: {parts} ({stages.requests} requests)"
