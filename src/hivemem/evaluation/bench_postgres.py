"""``hivemem bench --db postgresql://…``: the bench's searches on a PostgreSQL server.

The same generated corpus, questions, embedder (hash, at the default model's
dimension) and timing as ``hivemem.evaluation.bench``; per size a database of its own,
``hivemem_bench_<size>``, is created on the server (the URL's user needs CREATEDB),
loaded, measured, and dropped. The figures: load and vector-indexing time, single
writes, and p50/p95/p99 of keyword-only, hybrid and vector-lane searches.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..facade.database import open as open_store
from ..providers.embed import HashEmbedder
from ..settings import Settings
from ..store.factory import postgres_admin as admin
from ..store.factory import redact_url as redact
from .bench import (
    _SCOPE,
    _WARMUP,
    VECTOR_DIMENSION,
    CorpusGenerator,
    Progress,
    _add_corpus,
    _quiet,
    _time_calls,
    _time_vector_lane,
    _time_writes,
)
from .bench_report import LatencyStats


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def run_pg_bench(
    url: str,
    sizes: Sequence[int] = (10_000, 100_000),
    queries: int = 200,
    writes: int = 200,
    batch: int = 100,
    progress: Progress | None = None,
    *,
    settings: Settings | None = None,
    keep: bool = False,
) -> dict[str, Any]:
    settings = settings or Settings()
    notify = progress or _quiet
    generator = CorpusGenerator()
    questions = generator.questions(queries + _WARMUP)
    measured, warmup = questions[:-_WARMUP], questions[-_WARMUP:]
    results = []
    for size in sizes:
        name = f"hivemem_bench_{size}"
        admin(url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin(url, f"CREATE DATABASE {name}")
        location = _with_database(url, name)
        try:
            store = open_store(location, settings=settings, embedder=HashEmbedder(VECTOR_DIMENSION))
            try:
                load_ns = _add_corpus(store, size, generator, f"load {size:,}", notify)
                started = time.perf_counter_ns()
                store.flush()
                flush_ns = time.perf_counter_ns() - started
                store.analyze()
                mem = store.scope(_SCOPE)
                single, _batched = _time_writes(mem, generator, size, writes, batch, "", notify)
                store.flush()
                keyword_store = open_store(location, settings=settings, embedder="none")
                try:
                    keyword_mem = keyword_store.scope(_SCOPE)
                    keyword = _time_calls(
                        "search keyword only",
                        lambda q, m=keyword_mem: len(m.search(q, limit=10)),
                        measured,
                        warmup,
                        notify,
                    )
                finally:
                    keyword_store.close()
                hybrid = _time_calls(
                    "search hybrid",
                    lambda q, m=mem: len(m.search(q, limit=10)),
                    measured,
                    warmup,
                    notify,
                )
                lane = _time_vector_lane(store, settings, measured, warmup, notify)
                vectors = store.vectors.count()
            finally:
                store.close()
        finally:
            if not keep:
                admin(url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        results.append(
            {
                "size": size,
                "load_seconds": round(load_ns / 1e9, 1),
                "vector_flush_seconds": round(flush_ns / 1e9, 1),
                "vectors": vectors,
                "add_episode": asdict(LatencyStats.of(single)),
                "search_keyword_only": _stats(keyword),
                "search_hybrid": _stats(hybrid),
                "vector_lane": _stats(lane),
            }
        )
    return {"backend": "postgresql", "location": redact(url), "results": results}


def _stats(stats: Any) -> dict[str, Any]:
    out = asdict(stats)
    return {k: v for k, v in out.items() if not isinstance(v, list | tuple)}


def format_pg_table(report: dict[str, Any]) -> str:
    rows = [f"PostgreSQL bench at {report['location']}"]
    for r in report["results"]:
        rows.append(
            f"{r['size']:>9,} memories: load {r['load_seconds']} s, vectors "
            f"{r['vector_flush_seconds']} s; add_episode p50 {r['add_episode']['p50_ms']:.2f} ms"
        )
        for label in ("search_keyword_only", "search_hybrid", "vector_lane"):
            s = r[label]
            latency = s.get("latency", s)
            rows.append(
                f"    {label:<20} p50 {latency['p50_ms']:.2f} ms  p95 {latency['p95_ms']:.2f} ms"
                f"  p99 {latency['p99_ms']:.2f} ms"
            )
    return "\n".join(rows)
