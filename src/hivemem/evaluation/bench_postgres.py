"""``hivemem bench --db postgresql://…``: the bench's searches on a PostgreSQL server,
beside SQLite's from the same run.

The same generated corpus, questions, embedder (hash, at the default model's
dimension) and timing as ``hivemem.evaluation.bench``; per size a database of its own,
``hivemem_bench_<size>``, is created on the server (the URL's user needs CREATEDB),
loaded, measured, and dropped (kept with ``keep``). With ``bulk_load`` the corpus goes in
without an embedder, then one flush embeds it: into the empty vector table, the bulk
path (binary COPY, the HNSW index built once; its build time is reported apart). The
figures: load and vector-indexing time, single writes, and p50/p95/p99 of keyword-only,
hybrid and vector-lane searches.
``format_side_by_side`` puts them beside the SQLite bench's (``run_bench``) of the same
sizes, run just before on the same machine.
"""

from __future__ import annotations

import functools
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
    EMBED_BATCH_MAX,
    VECTOR_DIMENSION,
    CorpusGenerator,
    Progress,
    _add_corpus,
    _quiet,
    _time_calls,
    _time_vector_lane,
    _time_writes,
)
from .bench_report import BenchReport, LatencyStats


def _hits(mem: Any, query: str) -> int:
    return len(mem.search(query, limit=10))


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
    bulk_load: bool = False,
) -> dict[str, Any]:
    # As the SQLite bench: no background consolidation of the loaded sessions.
    settings = (settings or Settings()).replace(consolidate_on_session_switch=False)
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
            build: dict[str, Any] | None = None
            if bulk_load:
                load_ns, flush_ns, build = _load_bulk(location, size, generator, settings, notify)
            store = open_store(location, settings=settings, embedder=HashEmbedder(VECTOR_DIMENSION))
            try:
                if not bulk_load:
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
                        functools.partial(_hits, keyword_mem),
                        measured,
                        warmup,
                        notify,
                    )
                finally:
                    keyword_store.close()
                hybrid = _time_calls(
                    "search hybrid",
                    functools.partial(_hits, mem),
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
                "index_build": build,
                "vectors": vectors,
                "add_episode": asdict(LatencyStats.of(single)),
                "search_keyword_only": _stats(keyword),
                "search_hybrid": _stats(hybrid),
                "vector_lane": _stats(lane),
            }
        )
    return {"backend": "postgresql", "location": redact(url), "results": results}


def _load_bulk(
    location: str, size: int, generator: CorpusGenerator, settings: Settings, notify: Progress
) -> tuple[int, int, dict[str, Any] | None]:
    """The corpus without an embedder, then one flush of every queued chunk with the
    hash embedder (the worker off): the load and flush times (ns) and the index build's
    figures (within the flush)."""
    store = open_store(location, settings=settings, embedder="none")
    try:
        load_ns = _add_corpus(store, size, generator, f"load {size:,} keyword only", notify)
        store.analyze()
    finally:
        store.close()
    bulk = settings.replace(embed_in_background=False, embed_batch_size=EMBED_BATCH_MAX)
    store = open_store(location, settings=bulk, embedder=HashEmbedder(VECTOR_DIMENSION))
    try:
        stage = f"vectors {size:,}"
        started = time.perf_counter_ns()
        store.flush(lambda done, total: notify(stage, done, total))
        flush_ns = time.perf_counter_ns() - started
        return load_ns, flush_ns, getattr(store.vectors, "last_build", None)
    finally:
        store.close()


def _stats(stats: Any) -> dict[str, Any]:
    out = asdict(stats)
    return {k: v for k, v in out.items() if not isinstance(v, list | tuple)}


_SIDE_BY_SIDE = (
    ("add_episode", "add_episode"),
    ("search keyword only", "search_keyword_only"),
    ("search hybrid", "search_hybrid"),
    ("vector lane", "vector_lane"),
)


def format_side_by_side(pg: dict[str, Any], sqlite: BenchReport | None) -> str:
    """PostgreSQL's figures beside SQLite's (``None``: not run, shown as -), per size:
    p50 / p95 in ms."""
    by_size = {r.size: r for r in sqlite.results} if sqlite is not None else {}
    rows = [
        f"PostgreSQL at {pg['location']} beside SQLite, same corpus and questions "
        "(p50 / p95 ms; hash embedder, query embedding included)"
    ]
    for r in pg["results"]:
        lite = by_size.get(r["size"])
        rows.append(
            f"{r['size']:>9,} memories   {'SQLite':>17}   {'PostgreSQL':>17}"
            f"   (PostgreSQL load {r['load_seconds']} s + vectors {r['vector_flush_seconds']} s"
            + (
                f", of which the HNSW build {r['index_build']['seconds']} s)"
                if r.get("index_build")
                else ")"
            )
        )
        for label, field in _SIDE_BY_SIDE:
            theirs = r[field]
            theirs = theirs.get("latency", theirs)
            mine = None if lite is None else getattr(lite, field)
            mine = getattr(mine, "latency", mine)
            left = "-" if mine is None else f"{mine.p50_ms:.2f} / {mine.p95_ms:.2f}"
            right = f"{theirs['p50_ms']:.2f} / {theirs['p95_ms']:.2f}"
            rows.append(f"    {label:<20} {left:>17}   {right:>17}")
    return "\n".join(rows)
