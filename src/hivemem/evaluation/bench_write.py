"""The write path against plain SQLite (``hivemem bench --write-path``, issue 24 item 3).

Three figures, each beside the baseline it is judged by, measured in the same run on the
same rows (generated dialogue turns, ``bench.CorpusGenerator``):

- **hot path**: ``add_episode``, one turn per call and so one transaction per turn,
  against a plain SQLite insert of the same turn (a table row and its FTS5 row, one
  ``BEGIN IMMEDIATE … COMMIT`` each: ``store.baseline.BareStore``). Both files are WAL
  with ``synchronous=NORMAL``, as HiveMem's is. The HiveMem store has no embedder: the
  write still queues its chunks for the embedding worker (the queue row is part of every
  write), but no model competes for the CPU, so the figure is what a write costs its
  caller.
- **batch path**: ``add_episodes`` of ``batch`` turns per call against the same turns
  inserted by the plain SQLite in one transaction per batch.
- **ingest with embeddings**: the default model's own ceiling (sentences/s, batches of
  ``embed_batch_size`` as the worker sends them, on this machine's threads) beside the
  memories stored *and* embedded per second by ``add_episodes`` plus ``flush()``.

The two sides run in alternating rounds of ``ROUND`` rows (HiveMem, then the baseline,
then HiveMem …), each into its own fresh file, so a shared machine's load drifts over
both alike; the ratio is HiveMem's time over the baseline's. Beside it, each side's
process CPU per row: on a shared machine a write's wall time also holds the waits for a
core, the CPU does not. And (SQLite) each side's pages of write-ahead log per row, a
count no load moves: after the timed rounds, ``WAL_ROWS`` more turns one per
transaction, then one batch of ``WAL_BATCH``, each after the log was emptied
(``store.baseline.wal_pages``). A commit writes every page its transaction changed.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..facade.database import open as open_store
from ..providers.embed import DEFAULT_MODEL, LocalEmbedder
from ..settings import Settings
from ..store.baseline import BareStore, wal_pages
from ..store.factory import BarePostgres, is_url
from ..store.factory import postgres_admin as admin
from .bench import DEFAULT_SEED, CorpusGenerator
from .bench_report import LatencyStats

ROUND = 250  # rows per alternating round of the hot path
WAL_ROWS = 25  # turns, one per transaction, whose log is counted (under 1,000 pages)
WAL_BATCH = 100  # turns of the one batch whose log is counted
_WARMUP = 20
_SCOPE = "bench"

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class PathResult:
    """One write path beside its plain SQLite baseline (same rows, same run)."""

    rows: int
    per_call: int  # rows per call (1: the hot path)
    hivemem_per_s: float
    baseline_per_s: float
    ratio: float  # HiveMem's time / the baseline's (1.0: as fast as plain SQLite)
    hivemem_cpu_us: float  # process CPU per row (robust to a loaded machine's waits)
    baseline_cpu_us: float
    cpu_ratio: float
    hivemem: LatencyStats  # per call
    baseline: LatencyStats  # per call
    hivemem_wal_pages: float | None = None  # pages of WAL per row (SQLite; None on PG)
    baseline_wal_pages: float | None = None


@dataclass(frozen=True)
class IngestResult:
    """Ingest with embeddings beside the model's own ceiling."""

    model: str
    threads: int
    batch_size: int
    sentences: int
    model_sentences_per_s: float  # the model alone: its ceiling on this machine
    ingest_per_s: float  # memories stored and embedded per second
    share_of_ceiling: float  # ingest / model (1.0: the store costs nothing beside it)


@dataclass(frozen=True)
class WriteReport:
    hot: PathResult
    batch: PathResult
    ingest: IngestResult | None
    seed: int
    backend: str = "sqlite"  # or "postgresql": both sides on that server

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_write_bench(
    rows: int = 5_000,
    batch: int = 500,
    *,
    settings: Settings | None = None,
    model: bool = True,
    model_sentences: int = 1_000,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
    url: str | None = None,
) -> WriteReport:
    """Time the hot path and the batch path on ``rows`` turns each beside plain SQLite,
    and (``model``) ingest with embeddings on ``model_sentences`` turns beside the
    default model's ceiling. Files go to a temporary folder, removed at the end.

    With ``url`` (``postgresql://…``) both paths run on that server instead, in a
    database ``hivemem_bench_write`` created and dropped (the user needs CREATEDB),
    beside a plain ``INSERT`` of the same rows into a table with a ``tsvector`` column
    and its GIN index (``store.postgres.baseline``); ingest with embeddings stays on
    SQLite (the model's ceiling does not depend on the store)."""
    for name, value in (("rows", rows), ("batch", batch), ("model_sentences", model_sentences)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    settings = (settings or Settings()).replace(consolidate_on_session_switch=False)
    notify = progress or (lambda stage, done, total: None)
    generator = CorpusGenerator(seed)
    turns = list(generator.episodes(2 * rows + 2 * _WARMUP + WAL_ROWS + WAL_BATCH))
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-write-") as scratch:
        folder = Path(scratch)
        if url is not None and is_url(url):
            sides = _postgres(url, settings)
        else:
            sides = _sqlite(folder, settings)
        try:
            hot = _hot_path(sides, turns[: rows + _WARMUP], notify, turns[-WAL_ROWS:])
            batched = _batch_path(
                sides,
                turns[rows + _WARMUP : 2 * (rows + _WARMUP)],
                batch,
                notify,
                turns[-WAL_ROWS - WAL_BATCH : -WAL_ROWS],
            )
        finally:
            sides.drop()
        ingest = _ingest(folder, generator, model_sentences, settings, notify) if model else None
    return WriteReport(hot=hot, batch=batched, ingest=ingest, seed=seed, backend=sides.backend)


class _Sides:
    """Where each path's two sides go: a fresh HiveMem store and a fresh baseline."""

    backend = "sqlite"

    def __init__(self, open_pair: Callable[[str], tuple[Any, Any]]) -> None:
        self.open_pair = open_pair
        self.drops: list[Callable[[], None]] = []
        self.files: dict[str, tuple[Path, Path]] = {}  # SQLite: name -> the two files

    def drop(self) -> None:
        for drop in self.drops:
            drop()


def _sqlite(folder: Path, settings: Settings) -> _Sides:
    def open_pair(name: str) -> tuple[Any, Any]:
        sides.files[name] = (folder / f"{name}.db", folder / f"{name}-bare.db")
        store = open_store(sides.files[name][0], settings=settings, embedder="none")
        return store, BareStore(sides.files[name][1])

    sides = _Sides(open_pair)
    return sides


def _postgres(url: str, settings: Settings) -> _Sides:
    parts = urlsplit(url)
    names: list[str] = []

    def open_pair(name: str) -> tuple[Any, Any]:
        database = f"hivemem_bench_write_{name}"
        admin(url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        admin(url, f"CREATE DATABASE {database}")
        names.append(database)
        location = urlunsplit(
            (parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment)
        )
        store = open_store(location, settings=settings, embedder="none")
        return store, BarePostgres(location)

    def drop() -> None:
        for database in names:
            admin(url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")

    sides = _Sides(open_pair)
    sides.backend = "postgresql"
    sides.drops.append(drop)
    return sides


def _hot_path(
    sides: _Sides,
    turns: Sequence[dict[str, Any]],
    notify: Progress,
    logged: Sequence[dict[str, Any]] = (),
) -> PathResult:
    store, bare = sides.open_pair("hot")
    pages: tuple[float, float] | None = None
    mem = store.scope(_SCOPE)
    mine: list[int] = []
    theirs: list[int] = []
    cpu = [0, 0]  # process CPU ns: HiveMem's rounds, the baseline's
    try:
        for item in turns[:_WARMUP]:
            mem.add_episode(item["content"], item["session_id"], item["role"])
            bare.add(_SCOPE, item["content"])
        measured = turns[_WARMUP:]
        for start in range(0, len(measured), ROUND):
            part = measured[start : start + ROUND]
            c0 = time.process_time_ns()
            for item in part:
                content, session_id, role = item["content"], item["session_id"], item["role"]
                t0 = time.perf_counter_ns()
                mem.add_episode(content, session_id, role)
                mine.append(time.perf_counter_ns() - t0)
            c1 = time.process_time_ns()
            for item in part:
                content = item["content"]
                t0 = time.perf_counter_ns()
                bare.add(_SCOPE, content)
                theirs.append(time.perf_counter_ns() - t0)
            c2 = time.process_time_ns()
            cpu[0] += c1 - c0
            cpu[1] += c2 - c1
            notify("hot path", start + len(part), len(measured))

        def ours() -> None:
            for item in logged:
                mem.add_episode(item["content"], item["session_id"], item["role"])

        def plain() -> None:
            for item in logged:
                bare.add(_SCOPE, item["content"])

        pages = _logged(sides, "hot", ours, plain, len(logged))
    finally:
        store.close()
        bare.close()
    return _result(len(mine), 1, mine, theirs, cpu, pages)


def _batch_path(
    sides: _Sides,
    turns: Sequence[dict[str, Any]],
    batch: int,
    notify: Progress,
    logged: Sequence[dict[str, Any]] = (),
) -> PathResult:
    store, bare = sides.open_pair("batch")
    pages: tuple[float, float] | None = None
    mem = store.scope(_SCOPE)
    mine: list[int] = []
    theirs: list[int] = []
    cpu = [0, 0]
    try:
        warm = turns[:_WARMUP]
        mem.add_episodes(warm)
        bare.add_many(_SCOPE, [item["content"] for item in warm])
        measured = turns[_WARMUP:]
        for start in range(0, len(measured), batch):
            part = measured[start : start + batch]
            c0, t0 = time.process_time_ns(), time.perf_counter_ns()
            mem.add_episodes(part)
            mine.append(time.perf_counter_ns() - t0)
            contents = [item["content"] for item in part]
            c1, t0 = time.process_time_ns(), time.perf_counter_ns()
            bare.add_many(_SCOPE, contents)
            theirs.append(time.perf_counter_ns() - t0)
            cpu[0] += c1 - c0
            cpu[1] += time.process_time_ns() - c1
            notify("batch path", start + len(part), len(measured))
        pages = _logged(
            sides,
            "batch",
            lambda: mem.add_episodes(logged),
            lambda: bare.add_many(_SCOPE, [item["content"] for item in logged]),
            len(logged),
        )
    finally:
        store.close()
        bare.close()
    return _result(len(measured), batch, mine, theirs, cpu, pages)


def _logged(
    sides: _Sides, name: str, ours: Callable[[], None], plain: Callable[[], None], rows: int
) -> tuple[float, float] | None:
    """Pages of WAL per row that ``ours`` and ``plain`` append (SQLite files only)."""
    if name not in sides.files or rows == 0:
        return None
    mine, theirs = sides.files[name]
    return (
        round(wal_pages(mine, ours) / rows, 2),
        round(wal_pages(theirs, plain) / rows, 2),
    )


def _result(
    rows: int,
    per_call: int,
    mine: list[int],
    theirs: list[int],
    cpu: list[int],
    pages: tuple[float, float] | None = None,
) -> PathResult:
    mine_s, theirs_s = sum(mine) / 1e9, sum(theirs) / 1e9
    return PathResult(
        rows=rows,
        per_call=per_call,
        hivemem_per_s=_rate(rows, mine_s),
        baseline_per_s=_rate(rows, theirs_s),
        ratio=round(mine_s / theirs_s, 2) if theirs_s > 0 else 0.0,
        hivemem_cpu_us=round(cpu[0] / rows / 1e3, 1),
        baseline_cpu_us=round(cpu[1] / rows / 1e3, 1),
        cpu_ratio=round(cpu[0] / cpu[1], 2) if cpu[1] > 0 else 0.0,
        hivemem=LatencyStats.of(mine),
        baseline=LatencyStats.of(theirs),
        hivemem_wal_pages=pages[0] if pages else None,
        baseline_wal_pages=pages[1] if pages else None,
    )


def _ingest(
    folder: Path,
    generator: CorpusGenerator,
    sentences: int,
    settings: Settings,
    notify: Progress,
) -> IngestResult:
    """The model alone on the turns (batches of ``embed_batch_size``, after a warm-up),
    then the same turns through ``add_episodes`` (batches of 1,000) and ``flush()`` into a
    fresh store with the model, the worker embedding beside the writes."""
    embedder = LocalEmbedder(model=DEFAULT_MODEL)
    size = settings.embed_batch_size
    texts = [item["content"] for item in generator.episodes(sentences, 10 * sentences)]
    embedder.embed_batch(texts[:size])  # load and warm up
    notify("model", 0, sentences)
    t0 = time.perf_counter_ns()
    for start in range(0, len(texts), size):
        embedder.embed_batch(texts[start : start + size])
        notify("model", min(start + size, sentences), sentences)
    model_s = (time.perf_counter_ns() - t0) / 1e9
    turns = list(generator.episodes(sentences, 20 * sentences))
    notify("ingest with embeddings", 0, sentences)
    t0 = time.perf_counter_ns()
    with open_store(folder / "ingest.db", settings=settings, embedder=embedder) as store:
        mem = store.scope(_SCOPE)
        for start in range(0, len(turns), 1_000):
            mem.add_episodes(turns[start : start + 1_000])
        store.flush()
    ingest_s = (time.perf_counter_ns() - t0) / 1e9
    notify("ingest with embeddings", sentences, sentences)
    model_rate, ingest_rate = _rate(sentences, model_s), _rate(sentences, ingest_s)
    return IngestResult(
        model=embedder.identity,
        threads=embedder.threads,
        batch_size=size,
        sentences=sentences,
        model_sentences_per_s=model_rate,
        ingest_per_s=ingest_rate,
        share_of_ceiling=round(ingest_rate / model_rate, 2) if model_rate else 0.0,
    )


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def format_write(report: WriteReport) -> str:
    """The report as the table ``hivemem bench --write-path`` prints."""
    plain = (
        "plain PostgreSQL (row + tsvector, GIN)"
        if report.backend == "postgresql"
        else "plain SQLite (row + FTS5 row)"
    )
    lines = [f"write path on {report.backend} vs {plain}, same rows, same run", ""]
    head = (
        f"{'path':<22}{'HiveMem/s':>11}{'plain/s':>11}{'ratio':>8}{'p50 ms':>9}{'p95 ms':>9}"
        f"{'CPU µs/row':>16}{'CPU ratio':>10}"
    )
    lines.append(head)
    for name, path in (
        ("hot (1 per tx)", report.hot),
        (f"batch ({report.batch.per_call} per tx)", report.batch),
    ):
        lines.append(
            f"{name:<22}{path.hivemem_per_s:>11,.0f}{path.baseline_per_s:>11,.0f}"
            f"{path.ratio:>7.2f}x{path.hivemem.p50_ms:>9.3f}{path.hivemem.p95_ms:>9.3f}"
            f"{path.hivemem_cpu_us:>8,.0f} / {path.baseline_cpu_us:<5,.0f}{path.cpu_ratio:>9.2f}x"
        )
    lines.append(
        "(ratio: HiveMem's wall time over the plain insert's; p50/p95: HiveMem per call; "
        "CPU: this process's, HiveMem / plain)"
    )
    hot, batch = report.hot, report.batch
    if hot.hivemem_wal_pages is not None and batch.hivemem_wal_pages is not None:
        lines.append(
            f"WAL pages per row, HiveMem / plain: hot {hot.hivemem_wal_pages:.2f} / "
            f"{hot.baseline_wal_pages:.2f} ({WAL_ROWS} rows, 1 per tx), batch "
            f"{batch.hivemem_wal_pages:.2f} / {batch.baseline_wal_pages:.2f} "
            f"(one tx of {WAL_BATCH})"
        )
    if report.ingest is not None:
        i = report.ingest
        lines += [
            "",
            f"model {i.model} on {i.threads} threads, batches of {i.batch_size}: "
            f"{i.model_sentences_per_s:,.0f} sentences/s (its ceiling)",
            f"ingest with embeddings ({i.sentences:,} turns): {i.ingest_per_s:,.0f} "
            f"memories/s stored and embedded, {i.share_of_ceiling:.0%} of the ceiling",
        ]
    return "\n".join(lines)
