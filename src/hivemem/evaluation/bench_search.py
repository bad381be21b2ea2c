"""What one search costs the machine (part of ``hivemem bench``): SQL statements and CPU.

For each question, ``mem.search(question, limit)`` runs once more after the timed runs,
with two measuring seams switched on:

- **statements**: every SQL statement the store runs during the search, on any of its
  connections (the SQLite backend's ``tracing``, i.e. sqlite3's ``set_trace_callback``:
  the read view's ``BEGIN``/``COMMIT`` count too; the statements SQLite runs on its own
  behalf, FTS5's reads of its shadow tables and triggers, do not). Statements of the access-tracking
  thread are left out (they are a write behind the search, not part of it). A backend
  without the seam (PostgreSQL) reports none;
- **CPU**: the calling thread's CPU time (``time.thread_time``), in all and by stage of
  the pipeline (``hivemem.retrieval.costs``): ``setup`` (the facade: arguments, fresh
  chunks, the read view), ``keyword``, ``vector``, ``entity`` (the lanes), ``fusion``
  (with dialogue context), ``rows`` (reading the candidates' memories), ``order``
  (adjustments, versions, diversity, the hits); ``other`` is what is left (an early
  return, the access bump).

On SQLite every lane runs on the calling thread, so its CPU time is the search's.
Nothing here asserts a number.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..retrieval import costs

STAGES = ("setup", "keyword", "vector", "entity", "fusion", "rows", "order", "other")


@dataclass(frozen=True)
class SearchCost:
    """Per search: statements (None without the seam), CPU ms, CPU ms by stage (mean)."""

    searches: int
    statements_p50: float | None
    statements_max: int | None
    cpu_p50_ms: float
    cpu_p95_ms: float
    stage_mean_ms: dict[str, float] = field(default_factory=dict)


def _percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, int(round(share * len(ordered) + 0.5)) - 1))]


def measure(search: Callable[[str], Any], store: Any, questions: Sequence[str]) -> SearchCost:
    """Run ``search(question)`` once per question with the seams on (module docstring);
    ``store`` is the ``Store`` it searches (its ``tracing`` seam counts statements)."""
    traced = True
    counted: list[int] = []
    cpu: list[float] = []
    stages: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    for question in questions:
        caller = threading.get_ident()
        statements = [0]

        def count(sql: str, caller: int = caller, statements: list[int] = statements) -> None:
            if sql.startswith("--"):  # run by SQLite itself: FTS5's, sqlite-vec's, a trigger's
                return
            current = threading.current_thread()
            if threading.get_ident() == caller or current.name.startswith("hivemem-lane"):
                statements[0] += 1

        laps = costs.Laps()
        seam = store.tracing(count)
        traced = seam is not None
        with seam if seam is not None else contextlib.nullcontext(), costs.recording(laps):
            started = time.thread_time_ns()
            search(question)
            spent = time.thread_time_ns() - started
        counted.append(statements[0])
        cpu.append(spent / 1e6)
        for name, ns in laps.ns.items():
            stages[name] = stages.get(name, 0.0) + ns / 1e6
        stages["other"] += (spent - sum(laps.ns.values())) / 1e6
    n = max(1, len(questions))
    return SearchCost(
        searches=len(questions),
        statements_p50=_percentile(counted, 0.5) if traced else None,
        statements_max=max(counted, default=0) if traced else None,
        cpu_p50_ms=round(_percentile(cpu, 0.5), 3),
        cpu_p95_ms=round(_percentile(cpu, 0.95), 3),
        stage_mean_ms={k: round(v / n, 3) for k, v in stages.items()},
    )


def format_rows(sizes: Sequence[SearchCost | None]) -> list[tuple[str, list[str]]]:
    """Rows for the bench's table, one column per size (``-`` where not measured)."""

    def cell(cost: SearchCost | None, value: Callable[[SearchCost], str]) -> str:
        return "-" if cost is None else value(cost)

    def stage_ms(stage: str) -> Callable[[SearchCost], str]:
        return lambda c: f"{c.stage_mean_ms.get(stage, 0.0):.2f}"

    def statements(c: SearchCost, value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"

    rows = [
        (
            "hybrid SQL statements/search p50",
            [cell(c, lambda c: statements(c, c.statements_p50)) for c in sizes],
        ),
        (
            "hybrid SQL statements/search max",
            [cell(c, lambda c: statements(c, c.statements_max)) for c in sizes],
        ),
        ("hybrid CPU/search p50 (ms)", [cell(c, lambda c: f"{c.cpu_p50_ms:.2f}") for c in sizes]),
        ("hybrid CPU/search p95 (ms)", [cell(c, lambda c: f"{c.cpu_p95_ms:.2f}") for c in sizes]),
    ]
    for stage in STAGES:
        rows.append((f"  CPU {stage} mean (ms)", [cell(c, stage_ms(stage)) for c in sizes]))
    return rows
