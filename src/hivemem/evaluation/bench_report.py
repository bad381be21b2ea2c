"""What ``hivemem bench`` reports: the result values (frozen dataclasses, JSON-ready via
``BenchReport.to_dict()``) and the text table. The measuring is in ``hivemem.evaluation.bench``."""

from __future__ import annotations

import dataclasses
import math
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..store.factory import driver_info
from . import bench_search
from .bench_search import SearchCost


@dataclass(frozen=True)
class LatencyStats:
    """Latency of ``count`` timed calls, in milliseconds (nearest-rank percentiles)."""

    count: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, samples_ns: Sequence[int]) -> LatencyStats:
        if not samples_ns:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ordered = sorted(samples_ns)

        def pct(p: float) -> float:
            index = max(0, math.ceil(p / 100 * len(ordered)) - 1)
            return ordered[index] / 1e6

        return cls(
            count=len(ordered),
            mean_ms=sum(ordered) / len(ordered) / 1e6,
            p50_ms=pct(50),
            p95_ms=pct(95),
            p99_ms=pct(99),
            max_ms=ordered[-1] / 1e6,
        )


@dataclass(frozen=True)
class SearchStats:
    """One search mode over the measured questions: latency and what came back
    (memories for the searches; candidate memories, up to the lane's fetch, for the
    vector lane)."""

    latency: LatencyStats
    mean_results: float
    no_result: int  # questions that found nothing

    @classmethod
    def of(cls, samples_ns: Sequence[int], result_counts: Sequence[int]) -> SearchStats:
        return cls(
            latency=LatencyStats.of(samples_ns),
            mean_results=sum(result_counts) / len(result_counts) if result_counts else 0.0,
            no_result=sum(1 for c in result_counts if c == 0),
        )


@dataclass(frozen=True)
class SizeResult:
    """Everything measured on one store of ``size`` loaded episodes."""

    size: int
    # The load: add_episodes with the embedding worker running beside it, then flush().
    load_seconds: float  # add_episodes calls only
    load_episodes_per_s: float
    vectors_embedded_during_load: int  # by the background worker while loading
    vector_flush_seconds: float  # store.flush() after the load
    vectors_embedded_during_flush: int
    vector_indexing_per_s: float  # chunks embedded and stored per second of the flush
    load_incl_vectors_seconds: float  # load + flush: every episode searchable both ways
    load_incl_vectors_episodes_per_s: float
    vectors: int  # chunk vectors in the store after the flush
    keyword_only_load_seconds: float  # the same load into a store without an embedder
    keyword_only_load_episodes_per_s: float
    keyword_only_db_bytes: int  # that store's file after the load
    # Writes on the reopened store, the worker embedding them in the background.
    add_episode: LatencyStats  # one call, one transaction
    add_episodes_batch: LatencyStats  # one call of ``batch_size`` episodes
    batch_size: int
    add_episodes_per_episode_ms: float  # total batched time / episodes
    # The same writes on a handle without an embedder, the worker idle (plain FTS).
    add_episode_keyword_only: LatencyStats
    add_episodes_batch_keyword_only: LatencyStats
    # The same questions in each mode.
    search_keyword_only: SearchStats  # a handle with embedder="none": mem.search(q, 10)
    search_hybrid: SearchStats  # a handle with the hash embedder: mem.search(q, 10)
    vector_lane: SearchStats  # backend.vectors.search(...) with a precomputed vector
    db_bytes: int  # the database file after close (WAL checkpointed)
    bytes_per_memory: float
    # The hybrid questions once more: statements and CPU per search (bench_search.py).
    search_cost: SearchCost | None = None


@dataclass(frozen=True)
class ModelResult:
    """An embedding model on this machine, measured once per run: a bundled one, or one
    named with ``--embedder`` (``hivemem.evaluation.bench_models``)."""

    model: str  # the embedder's identity
    threads: int  # onnxruntime: texts run at once, a thread each; PyTorch: its threads; 0: unset
    first_call_seconds: float  # model load + one short text: what the first write waits
    sentences: int
    batch_size: int  # texts per embed_batch call, as the worker sends them
    sentences_seconds: float
    sentences_per_s: float
    embed_batch: LatencyStats  # one embed_batch call of ``batch_size`` texts
    query_embedding: LatencyStats  # embed_batch([question]): what hybrid search adds
    # The same turns stored by add_episodes into a fresh store with this model, then
    # flushed: memories stored and embedded per second (the write path and the worker).
    ingest_per_s: float = 0.0
    embedder: str = ""  # the --embedder name it was asked by; "" for a bundled model


@dataclass(frozen=True)
class EmbedderFailure:
    """An embedder named with ``--embedder`` that could not be timed: not installed, not
    configured, or failing. ``reason`` is one line naming the fix."""

    embedder: str
    reason: str


@dataclass(frozen=True)
class ReadYourWritesResult:
    """One write then one search, ``writes`` times, with and without read-your-writes."""

    model: str
    preload: int
    writes: int
    found: int  # writes the first search after them found by meaning (default settings)
    first_search: LatencyStats  # that search
    found_without: int  # the same with search_embed_max=0 (the worker alone)
    first_search_without: LatencyStats


@dataclass(frozen=True)
class BenchReport:
    """The results per corpus size, with what is needed to compare runs."""

    results: tuple[SizeResult, ...]
    model: ModelResult | None  # None with --no-model (the default model's figures)
    read_your_writes: ReadYourWritesResult | None  # None with --no-model
    vector_embedder: str  # identity of the embedder that filled the vector index
    queries: int
    writes: int
    batch: int
    seed: int
    settings_changed: dict[str, Any]  # settings that differ from the defaults
    environment: dict[str, str]
    # One load per size: the keyword-only one, then its file's vectors by one flush
    # (``hivemem.evaluation.bench._load_bulk``); the load rows are then the same load.
    bulk_load: bool = False
    # Every bundled model, the default first (``model`` is the first).
    models: tuple[ModelResult, ...] = ()
    # The embedders named with --embedder, timed the same way, and those that could not be.
    embedders: tuple[ModelResult, ...] = ()
    embedder_failures: tuple[EmbedderFailure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (``hivemem bench --json``): dicts, lists, numbers, text."""
        data = dataclasses.asdict(self)
        data["results"] = list(data["results"])
        for key in ("models", "embedders", "embedder_failures"):
            data[key] = list(data[key])
        return data


def environment() -> dict[str, str]:
    driver = driver_info()
    return {
        "python": platform.python_version(),
        "sqlite": driver["sqlite"],
        "driver": driver["driver"],
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "cpus": str(os.cpu_count() or 0),
    }


# ----------------------------------------------------------------------------- output


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _columns(header: tuple[str, list[str]], rows: list[tuple[str, list[str]]]) -> list[str]:
    label_width = max(len(label) for label, _ in [header, *rows])
    count = len(header[1])
    widths = [max(len(values[i]) for _, values in [header, *rows]) + 2 for i in range(count)]
    return [
        label.ljust(label_width) + "".join(f"{v:>{w}}" for v, w in zip(values, widths, strict=True))
        for label, values in [header, *rows]
    ]


def _latency_rows(label: str, stats: Sequence[LatencyStats]) -> list[tuple[str, list[str]]]:
    return [
        (f"{label} p50 (ms)", [_ms(s.p50_ms) for s in stats]),
        (f"{label} p95 (ms)", [_ms(s.p95_ms) for s in stats]),
        (f"{label} p99 (ms)", [_ms(s.p99_ms) for s in stats]),
    ]


def _model_lines(report: BenchReport) -> list[str]:
    """The embedding models' figures, one column each: the bundled ones (the default
    first), then those named with ``--embedder`` (their name before their identity);
    then one line per named embedder that could not be timed."""
    bundled = report.models or ((report.model,) if report.model is not None else ())
    models = (*bundled, *report.embedders)
    lines: list[str] = []
    if models:
        first = models[0]
        threads = [m.threads for m in models]
        # One count for all (the bundled models alone): in the header, as before.
        same = len(set(threads)) == 1 and first.threads > 0
        lines.append("")
        lines.extend(
            _columns(
                (
                    f"embedding model ({first.threads} threads)" if same else "embedding model",
                    [
                        (f"{m.embedder}: " if m.embedder else "")
                        + m.model
                        + (" (default)" if bundled and m is bundled[0] else "")
                        for m in models
                    ],
                ),
                [
                    *([] if same else [("threads", [str(t) if t else "-" for t in threads])]),
                    (
                        "first call incl. model load (s)",
                        [f"{m.first_call_seconds:.2f}" for m in models],
                    ),
                    (
                        f"{first.sentences:,} sentences, embed_batch x{first.batch_size}"
                        " (sentences/s)",
                        [f"{m.sentences_per_s:,.0f}" for m in models],
                    ),
                    (
                        f"ingest with embeddings, {first.sentences:,} turns (memories/s)",
                        [f"{m.ingest_per_s:,.0f}" for m in models],
                    ),
                    (
                        f"embed_batch x{first.batch_size} p50 (ms)",
                        [_ms(m.embed_batch.p50_ms) for m in models],
                    ),
                    *[
                        (
                            f"query embedding {p} (ms)",
                            [_ms(getattr(m.query_embedding, f)) for m in models],
                        )
                        for p, f in (("p50", "p50_ms"), ("p95", "p95_ms"))
                    ],
                ],
            )
        )
    if report.embedder_failures and not models:
        lines.append("")
    for failure in report.embedder_failures:
        lines.append(f"--embedder {failure.embedder}: not timed: {failure.reason}")
    return lines


def format_table(report: BenchReport) -> str:
    """The report as a fixed-width text table, one column per corpus size, then the
    embedding model's figures (once per run) and the conditions."""
    results = report.results
    keyword = [r.search_keyword_only for r in results]
    hybrid = [r.search_hybrid for r in results]
    lane = [r.vector_lane for r in results]
    rows: list[tuple[str, list[str]]] = [
        ("memories loaded", [f"{r.size:,}" for r in results]),
        (
            "load keyword only (episodes/s)",
            [f"{r.keyword_only_load_episodes_per_s:,.0f}" for r in results],
        ),
        ("load keyword only (s)", [f"{r.keyword_only_load_seconds:.1f}" for r in results]),
        ("load throughput (episodes/s)", [f"{r.load_episodes_per_s:,.0f}" for r in results]),
        ("load time (s)", [f"{r.load_seconds:.1f}" for r in results]),
        (
            "  vectors embedded during load",
            [f"{r.vectors_embedded_during_load:,}" for r in results],
        ),
        (
            "  vectors embedded during flush",
            [f"{r.vectors_embedded_during_flush:,}" for r in results],
        ),
        ("  flush time (s)", [f"{r.vector_flush_seconds:.1f}" for r in results]),
        ("vector indexing (hash) vectors/s", [f"{r.vector_indexing_per_s:,.0f}" for r in results]),
        ("load incl. vectors (s)", [f"{r.load_incl_vectors_seconds:.1f}" for r in results]),
        (
            "load incl. vectors (episodes/s)",
            [f"{r.load_incl_vectors_episodes_per_s:,.0f}" for r in results],
        ),
        *_latency_rows("add_episode", [r.add_episode for r in results]),
        *_latency_rows(f"add_episodes x{report.batch}", [r.add_episodes_batch for r in results]),
        ("add_episodes per episode (ms)", [_ms(r.add_episodes_per_episode_ms) for r in results]),
        *_latency_rows("add_episode keyword only", [r.add_episode_keyword_only for r in results]),
        *_latency_rows(
            f"add_episodes x{report.batch} keyword only",
            [r.add_episodes_batch_keyword_only for r in results],
        ),
        *_latency_rows("search keyword only", [s.latency for s in keyword]),
        *_latency_rows("search hybrid (hash)", [s.latency for s in hybrid]),
        *_latency_rows("vector lane", [s.latency for s in lane]),
        *bench_search.format_rows([r.search_cost for r in results]),
        ("keyword only mean hits", [f"{s.mean_results:.1f}" for s in keyword]),
        ("keyword only: no hit", [str(s.no_result) for s in keyword]),
        ("hybrid mean hits", [f"{s.mean_results:.1f}" for s in hybrid]),
        ("hybrid: no hit", [str(s.no_result) for s in hybrid]),
        ("db file incl. vectors (MB)", [f"{r.db_bytes / 1e6:.1f}" for r in results]),
        ("bytes per memory", [f"{r.bytes_per_memory:,.0f}" for r in results]),
        ("db file keyword only (MB)", [f"{r.keyword_only_db_bytes / 1e6:.1f}" for r in results]),
        (
            "bytes per memory keyword only",
            [f"{r.keyword_only_db_bytes / r.size:,.0f}" for r in results],
        ),
    ]
    lines = _columns(("", [f"N={r.size:,}" for r in results]), rows)
    lines.extend(_model_lines(report))
    ryw = report.read_your_writes
    if ryw is not None:
        lines.append("")
        lines.extend(
            _columns(
                (
                    f"read your writes: {ryw.writes} x (add_episode, then search), "
                    f"{ryw.preload:,} turns, {ryw.model}",
                    ["default", "worker only"],
                ),
                [
                    (
                        "writes found by meaning by the next search",
                        [f"{ryw.found}/{ryw.writes}", f"{ryw.found_without}/{ryw.writes}"],
                    ),
                    *[
                        (
                            f"that search {p} (ms)",
                            [
                                _ms(getattr(ryw.first_search, f)),
                                _ms(getattr(ryw.first_search_without, f)),
                            ],
                        )
                        for p, f in (("p50", "p50_ms"), ("p95", "p95_ms"))
                    ],
                ],
            )
        )
    env = report.environment
    changed = ", ".join(f"{k}={v}" for k, v in report.settings_changed.items())
    lines.append(
        f"\n{report.writes} single writes, {report.writes // report.batch or 1} batches of "
        f"{report.batch}, {report.queries} searches per mode (limit 10); vectors by "
        f"{report.vector_embedder}"
        + (f"; settings changed: {changed}" if changed else "")
        + f"; seed {report.seed}; Python {env.get('python')}, SQLite {env.get('sqlite')} "
        f"({env.get('driver')}), {env.get('cpus')} CPUs, {env.get('platform')}"
    )
    if report.bulk_load:
        lines.append(
            "Bulk load: the corpus loaded once, without an embedder (load rows = keyword "
            "only), then its vectors by one flush; add_episode(s) rows: the embedding "
            "worker running beside them; 'keyword only': a handle without an embedder."
        )
    else:
        lines.append(
            "Load and add_episode(s) rows: the embedding worker running beside them; "
            "'keyword only': a store or handle without an embedder."
        )
    if report.model is not None or report.embedders:
        lines.append(
            "Hybrid search with the real model costs about hybrid (hash) + query embedding."
        )
    return "\n".join(lines)
