"""Search latency on long memories (part of ``hivemem bench``).

LongMemEval-shaped scopes: ``scopes`` scopes of ``per_scope`` dialogue turns of about
``turn_chars`` characters each (several generated sentences, sessions of ~20 turns), the
shape where a chunk is long, the candidate pool is full and every hit carries a kilobyte
of text. The store is loaded with hash vectors at the default model's dimension (as the
main bench: the store's cost does not depend on the vectors' quality; the model's
single-question embedding latency is reported by the main bench and adds to these
figures), closed, and reopened once per limit (10 and 50); then per scope:

- **first query**: the first search in that scope after the reopen (the scope's vectors
  not yet in memory, no statement cached for it);
- **warm**: ``queries`` more searches in the same scope.

Timings are ``mem.search(question, limit=…)`` as a caller gets them, access tracking
off so every run sees the same store. Nothing here asserts a number.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..facade.database import open as open_store
from ..providers.embed import HashEmbedder
from ..settings import Settings
from .bench import DEFAULT_SEED, VECTOR_DIMENSION, CorpusGenerator
from .bench_report import LatencyStats

LIMITS = (10, 50)
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class LongLimitResult:
    limit: int
    first_query: LatencyStats
    warm: LatencyStats
    mean_results: float
    first_query_cpu: LatencyStats  # CPU time of this process: what a busy machine hides
    warm_cpu: LatencyStats


@dataclass(frozen=True)
class LongBenchReport:
    scopes: int
    per_scope: int
    mean_turn_chars: float
    load_seconds: float
    results: tuple[LongLimitResult, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scopes": self.scopes,
            "turns_per_scope": self.per_scope,
            "mean_turn_chars": round(self.mean_turn_chars, 1),
            "load_seconds": round(self.load_seconds, 3),
            "results": [
                {
                    "limit": r.limit,
                    "first_query": r.first_query.__dict__,
                    "warm": r.warm.__dict__,
                    "first_query_cpu": r.first_query_cpu.__dict__,
                    "warm_cpu": r.warm_cpu.__dict__,
                    "mean_results": round(r.mean_results, 2),
                }
                for r in self.results
            ],
        }


def long_turns(
    generator: CorpusGenerator, count: int, turn_chars: int, seed: str
) -> Iterator[dict[str, Any]]:
    """``count`` turns of about ``turn_chars`` characters: generated sentences joined,
    sessions of ~20 turns, roles alternating."""
    rng = random.Random(seed)
    session, left = 0, 0
    for n in range(count):
        if left == 0:
            session += 1
            left = rng.randint(12, 28)
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < turn_chars:
            parts.append(generator.sentence(rng))
        yield {
            "content": " ".join(parts),
            "session_id": f"s{session:05d}",
            "role": ("user", "assistant")[n % 2],
        }
        left -= 1


def run_long_bench(
    scopes: int = 20,
    per_scope: int = 500,
    queries: int = 10,
    *,
    turn_chars: int = 1000,
    seed: int = DEFAULT_SEED,
    settings: Settings | None = None,
    progress: Progress | None = None,
) -> LongBenchReport:
    """Load the long-memory corpus and time searches at each of ``LIMITS``."""
    settings = (settings or Settings()).replace(track_access=False)
    notify = progress or (lambda stage, done, total: None)
    generator = CorpusGenerator(seed)
    questions = generator.questions(scopes * (queries + 1) + 1)
    chars = 0
    results = []
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-long-") as folder:
        db = Path(folder) / "long.db"
        started = time.perf_counter()
        with open_store(db, settings=settings, embedder=HashEmbedder(VECTOR_DIMENSION)) as store:
            for n in range(scopes):
                turns = list(long_turns(generator, per_scope, turn_chars, f"{seed}:long:{n}"))
                chars += sum(len(t["content"]) for t in turns)
                mem = store.scope(f"long-{n:03d}")
                for start in range(0, len(turns), settings.max_batch):
                    mem.add_episodes(turns[start : start + settings.max_batch])
                notify("long memories: load", n + 1, scopes)
            store.flush()
        load = time.perf_counter() - started
        for limit in LIMITS:
            first: list[int] = []
            warm: list[int] = []
            counts: list[int] = []
            first_cpu: list[int] = []
            warm_cpu: list[int] = []
            with open_store(
                db, settings=settings, embedder=HashEmbedder(VECTOR_DIMENSION)
            ) as store:
                for n in range(scopes):
                    mem = store.scope(f"long-{n:03d}")
                    asked = questions[n * (queries + 1) : (n + 1) * (queries + 1)]
                    for i, question in enumerate(asked):
                        t0, c0 = time.perf_counter_ns(), time.process_time_ns()
                        counts.append(len(mem.search(question, limit=limit)))
                        (first if i == 0 else warm).append(time.perf_counter_ns() - t0)
                        (first_cpu if i == 0 else warm_cpu).append(time.process_time_ns() - c0)
                    notify(f"long memories: limit {limit}", n + 1, scopes)
            results.append(
                LongLimitResult(
                    limit,
                    LatencyStats.of(first),
                    LatencyStats.of(warm),
                    sum(counts) / max(1, len(counts)),
                    LatencyStats.of(first_cpu),
                    LatencyStats.of(warm_cpu),
                )
            )
    return LongBenchReport(
        scopes, per_scope, chars / max(1, scopes * per_scope), load, tuple(results)
    )


def format_long(report: LongBenchReport) -> str:
    lines = [
        f"Long memories: {report.scopes} scopes x {report.per_scope} turns of "
        f"~{report.mean_turn_chars:.0f} chars (hash vectors, {VECTOR_DIMENSION} dims; "
        f"loaded and embedded in {report.load_seconds:.1f} s). Search ms, query embedding "
        "not included:"
    ]
    for r in report.results:
        for name, stats, cpu in (
            ("first query of a scope", r.first_query, r.first_query_cpu),
            ("warm", r.warm, r.warm_cpu),
        ):
            lines.append(
                f"  limit {r.limit:>2} {name:<23} p50 {stats.p50_ms:6.1f}  p95 "
                f"{stats.p95_ms:6.1f}  max {stats.max_ms:6.1f}  (n={stats.count}); "
                f"CPU p50 {cpu.p50_ms:6.1f}  p95 {cpu.p95_ms:6.1f}"
            )
    return "\n".join(lines)
