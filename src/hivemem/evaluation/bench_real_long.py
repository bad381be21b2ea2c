"""Search latency on real long memories, beside plain FTS5 (``hivemem bench --long-scopes N
--longmemeval PATH``).

The generated long-memory corpus (``bench_long``) has the shape of long turns but not
their words; real turns cost more (issue 24 item 4: a LongMemEval scope of ~500 real
turns searched at limit 50 took 2.9× plain FTS5). Here each of the first ``scopes``
questions of a LongMemEval file (``longmemeval_s_*.json[.gz]``) gives one scope: its
haystack's turns, stored by ``add_episodes`` with their sessions and roles (hash vectors
at the default model's dimension, as every bench store: the model's query embedding is
reported by the main bench and adds to these figures). The same texts go into a bare
stack (``store.baseline.BareStore``: one FTS5 table, one ``MATCH`` of the question's
words ORed, BM25 order, filtered to the scope) in a file of its own.

Both are closed and reopened once per limit; then per scope the first search (the
scope's own question: nothing of that scope read yet) and ``queries`` warm ones (the
next questions' texts), the same questions on both. Wall time and the calling thread's
CPU time are recorded; the ratio of HiveMem's p95 to plain FTS5's is the figure of the
target (≤ 1.5×). Access tracking is off so every run sees the same store. Nothing here
asserts a number.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..facade.database import open as open_store
from ..providers.embed import HashEmbedder
from ..retrieval import costs
from ..settings import Settings
from ..store.baseline import BareStore
from .bench import VECTOR_DIMENSION
from .bench_report import LatencyStats
from .longmemeval import load_longmemeval

LIMITS = (10, 50)
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Timings:
    first: LatencyStats
    warm: LatencyStats
    first_cpu: LatencyStats
    warm_cpu: LatencyStats
    # Mean CPU ms per search by pipeline stage (``retrieval.costs``): HiveMem's only.
    first_stages: dict[str, float] = field(default_factory=dict)
    warm_stages: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RealLongResult:
    limit: int
    hivemem: Timings
    plain: Timings
    mean_results: float
    mean_plain_results: float


@dataclass(frozen=True)
class RealLongReport:
    path: str
    scopes: int
    turns: int
    mean_turn_chars: float
    results: tuple[RealLongResult, ...]

    def to_dict(self) -> dict[str, Any]:
        def timings(t: Timings) -> dict[str, Any]:
            out: dict[str, Any] = {
                k: getattr(t, k).__dict__ for k in ("first", "warm", "first_cpu", "warm_cpu")
            }
            if t.first_stages or t.warm_stages:
                out["cpu_ms_by_stage"] = {"first": t.first_stages, "warm": t.warm_stages}
            return out

        return {
            "longmemeval": self.path,
            "scopes": self.scopes,
            "turns": self.turns,
            "mean_turn_chars": round(self.mean_turn_chars, 1),
            "results": [
                {
                    "limit": r.limit,
                    "hivemem": timings(r.hivemem),
                    "plain_fts5": timings(r.plain),
                    "mean_results": round(r.mean_results, 2),
                    "mean_plain_results": round(r.mean_plain_results, 2),
                }
                for r in self.results
            ],
        }


def run_real_long_bench(
    path: str | Path,
    scopes: int = 10,
    queries: int = 10,
    *,
    settings: Settings | None = None,
    progress: Progress | None = None,
) -> RealLongReport:
    """Load the first ``scopes`` LongMemEval haystacks into HiveMem and a bare FTS5 file,
    and time searches at each of ``LIMITS`` (see the module docstring)."""
    settings = (settings or Settings()).replace(
        track_access=False, consolidate_on_session_switch=False
    )
    notify = progress or (lambda stage, done, total: None)
    dataset = load_longmemeval(path, limit_questions=scopes)
    units = [q for q in dataset.questions if q.turns]
    texts = [q.text for q in units]
    turns = sum(len(q.turns) for q in units)
    chars = sum(len(t.content) for q in units for t in q.turns)
    results = []
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-real-long-") as folder:
        db, bare_db = Path(folder) / "long.db", Path(folder) / "bare.db"
        with open_store(db, settings=settings, embedder=HashEmbedder(VECTOR_DIMENSION)) as store:
            bare = BareStore(bare_db)
            for n, question in enumerate(units):
                items = [
                    {"content": t.content, "session_id": t.session_id, "role": t.role}
                    for t in question.turns
                    if t.content.strip()
                ]
                mem = store.scope(_scope(n))
                for start in range(0, len(items), settings.max_batch):
                    mem.add_episodes(items[start : start + settings.max_batch])
                bare.add_many(_scope(n), [i["content"] for i in items])
                notify("real long memories: load", n + 1, len(units))
            store.flush()
        for limit in LIMITS:
            results.append(_one_limit(db, bare_db, limit, texts, queries, settings))
            notify("real long memories: search", limit, LIMITS[-1])
    return RealLongReport(str(path), len(units), turns, chars / max(1, turns), tuple(results))


def _one_limit(
    db: Path, bare_db: Path, limit: int, texts: Sequence[str], queries: int, settings: Settings
) -> RealLongResult:
    """Both stores reopened, then every scope searched at ``limit`` (``_timed``)."""
    with open_store(db, settings=settings, embedder=HashEmbedder(VECTOR_DIMENSION)) as store:
        handles = [store.scope(_scope(n)) for n in range(len(texts))]
        mine = _timed(lambda n, q: len(handles[n].search(q, limit=limit)), texts, queries)
    plain = BareStore(bare_db)  # a new connection: nothing read yet
    theirs = _timed(lambda n, q: len(plain.search(_scope(n), q, limit)), texts, queries)
    return RealLongResult(limit, mine[0], theirs[0], mine[1], theirs[1])


def _scope(n: int) -> str:
    return f"lme-{n:03d}"


def _timed(
    search: Callable[[int, str], int], texts: Sequence[str], queries: int
) -> tuple[Timings, float]:
    """Per scope its own question first, then ``queries`` of the next ones. HiveMem's
    pipeline notes its stages' CPU time (``retrieval.costs``; plain FTS5 has none): the
    means per search of the first and the warm ones are kept, to say where a long
    scope's search spends (issue 24 item 4)."""
    first: list[int] = []
    warm: list[int] = []
    first_cpu: list[int] = []
    warm_cpu: list[int] = []
    stages: tuple[costs.Laps, costs.Laps] = (costs.Laps(), costs.Laps())
    counts: list[int] = []
    for n in range(len(texts)):
        asked = [texts[(n + i) % len(texts)] for i in range(queries + 1)]
        for i, question in enumerate(asked):
            laps = costs.Laps()
            with costs.recording(laps):
                t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
                counts.append(search(n, question))
                (first if i == 0 else warm).append(time.perf_counter_ns() - t0)
                (first_cpu if i == 0 else warm_cpu).append(time.thread_time_ns() - c0)
            kept = stages[0 if i == 0 else 1].ns
            for stage, ns in laps.ns.items():
                kept[stage] = kept.get(stage, 0) + ns
    timings = Timings(
        LatencyStats.of(first),
        LatencyStats.of(warm),
        LatencyStats.of(first_cpu),
        LatencyStats.of(warm_cpu),
        _means(stages[0], len(first)),
        _means(stages[1], len(warm)),
    )
    return timings, sum(counts) / max(1, len(counts))


def _means(laps: costs.Laps, searches: int) -> dict[str, float]:
    return {k: round(ns / 1e6 / max(1, searches), 3) for k, ns in laps.ns.items()}


def format_real_long(report: RealLongReport) -> str:
    lines = [
        f"Real long memories: {report.scopes} LongMemEval scopes, {report.turns:,} turns of "
        f"~{report.mean_turn_chars:.0f} chars (hash vectors, {VECTOR_DIMENSION} dims), beside "
        "plain FTS5 (one MATCH, BM25 order) on the same texts. Search ms, query embedding "
        "not included:"
    ]
    for r in report.results:
        for name, mine, theirs, counted in (
            ("first query", r.hivemem.first, r.plain.first, True),
            ("warm", r.hivemem.warm, r.plain.warm, True),
            ("first CPU", r.hivemem.first_cpu, r.plain.first_cpu, False),
            ("warm CPU", r.hivemem.warm_cpu, r.plain.warm_cpu, False),
        ):
            ratio = mine.p95_ms / theirs.p95_ms if theirs.p95_ms > 0 else float("inf")
            lines.append(
                f"  limit {r.limit:>2} {name:<11} HiveMem p50 {mine.p50_ms:6.1f} p95 "
                f"{mine.p95_ms:6.1f} | plain FTS5 p50 {theirs.p50_ms:6.1f} p95 "
                f"{theirs.p95_ms:6.1f} | p95 ratio {ratio:4.2f}x"
                + (f" (n={mine.count})" if counted else "")
            )
        if r.hivemem.first_stages or r.hivemem.warm_stages:
            names = list(dict.fromkeys([*r.hivemem.first_stages, *r.hivemem.warm_stages]))
            lines.append(
                f"  limit {r.limit:>2} HiveMem CPU by stage, first / warm (ms): "
                + ", ".join(
                    f"{name} {r.hivemem.first_stages.get(name, 0.0):.2f} / "
                    f"{r.hivemem.warm_stages.get(name, 0.0):.2f}"
                    for name in names
                )
            )
        lines.append(
            f"  limit {r.limit:>2} mean hits: HiveMem {r.mean_results:.1f}, "
            f"plain FTS5 {r.mean_plain_results:.1f}"
        )
    return "\n".join(lines)
