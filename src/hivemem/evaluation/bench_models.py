"""An embedder's cost on this machine, as ``hivemem bench`` reports it once per run: the
bundled models, and any embedder named with ``--embedder`` (``local-mpnet``,
``sentence-transformers`` / ``onnx`` folders, ``openai`` …) in the same run with the
same figures, so a user choosing a stronger model sees what it costs beside the default.

The figures per embedder: a cold first call (model load; for ``local-mpnet`` also its
assembly and conversion when they were not done before: what the first write waits),
corpus turns in batches of ``embed_batch_size`` (as the embedding worker sends them),
single questions (what a hybrid search adds), and the same turns ingested with
embeddings (``add_episodes`` into a fresh store on a real file, then ``flush()``:
memories stored and embedded per second, the write path and the worker together).

A bundled model that fails fails the run (it ships with HiveMem: something is broken).
A named one is the user's choice of an optional install or a server: when it is not
installed, not configured, or fails, the run records one line naming the fix (the
error's own, which names the ``pip`` command or the setting) and goes on with the
others. Nothing here asserts a number.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..facade.database import open as open_store
from ..facade.database import resolve_embedder
from ..providers.embed import Embedder
from ..settings import Settings
from .bench_report import EmbedderFailure, LatencyStats, ModelResult

__all__ = ["check_names", "time_embedder", "time_named"]

Progress = Callable[[str, int, int], None]
INGEST_BATCH = 1_000  # episodes per add_episodes call, as the bench's corpus load
_SCOPE = "bench"


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    """The ``--embedder`` names, each once in the order given; ``ValueError`` for one
    that is not a name (``none`` is no embedder: nothing to time)."""
    if isinstance(names, str):
        raise ValueError(f"embedders must be a list of names, got {names!r}")
    for name in names:
        if not isinstance(name, str) or not name.strip() or name.strip() == "none":
            raise ValueError(f"embedders must be embedder names (not 'none'), got {name!r}")
    return tuple(dict.fromkeys(name.strip() for name in names))


def time_embedder(
    embedder: Embedder,
    turns: Sequence[dict[str, Any]],
    questions: Sequence[str],
    settings: Settings,
    notify: Progress,
    *,
    name: str = "",
) -> ModelResult:
    """``embedder`` timed on ``turns`` (``add_episodes`` items) and ``questions`` (see the
    module docstring); ``name`` is the ``--embedder`` name it was asked by ("" for a
    bundled model). Raises whatever the embedder raises."""
    batch_size = settings.embed_batch_size
    texts = [item["content"] for item in turns]
    sentences, queries = len(texts), len(questions)
    stage = f"model {name}".strip()
    notify(stage, 0, sentences + queries)
    t0 = time.perf_counter_ns()
    embedder.embed_batch([questions[0]])
    first_ns = time.perf_counter_ns() - t0
    embedder.embed_batch(texts[:batch_size])  # warm-up
    for question in questions[:5]:
        embedder.embed_batch([question])
    batch_timings = []
    for start in range(0, len(texts), batch_size):
        part = texts[start : start + batch_size]
        t0 = time.perf_counter_ns()
        embedder.embed_batch(part)
        batch_timings.append(time.perf_counter_ns() - t0)
        notify(stage, start + len(part), sentences + queries)
    query_timings = []
    for n, question in enumerate(questions, start=1):
        t0 = time.perf_counter_ns()
        embedder.embed_batch([question])
        query_timings.append(time.perf_counter_ns() - t0)
        if n % 20 == 0 or n == queries:
            notify(stage, sentences + n, sentences + queries)
    seconds = sum(batch_timings) / 1e9
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-model-") as scratch:
        t0 = time.perf_counter_ns()
        with open_store(Path(scratch) / "m.db", settings=settings, embedder=embedder) as store:
            mem = store.scope(_SCOPE)
            for start in range(0, len(turns), INGEST_BATCH):
                mem.add_episodes(list(turns[start : start + INGEST_BATCH]))
            store.flush()
        ingest_s = (time.perf_counter_ns() - t0) / 1e9
    return ModelResult(
        model=embedder.identity,
        threads=_threads(embedder),
        first_call_seconds=round(first_ns / 1e9, 3),
        sentences=sentences,
        batch_size=batch_size,
        sentences_seconds=round(seconds, 3),
        sentences_per_s=_rate(sentences, seconds),
        embed_batch=LatencyStats.of(batch_timings),
        query_embedding=LatencyStats.of(query_timings),
        ingest_per_s=_rate(sentences, ingest_s),
        embedder=name,
    )


def time_named(
    names: Sequence[str],
    turns: Sequence[dict[str, Any]],
    questions: Sequence[str],
    settings: Settings,
    notify: Progress,
    api_key: str | None = None,
) -> tuple[tuple[ModelResult, ...], tuple[EmbedderFailure, ...]]:
    """Each named embedder made as the ``embedder`` setting makes it (its ``embed_*``
    settings from ``settings``; ``api_key`` for ``openai``) and timed; the ones that
    could not be, each with its one line."""
    timed, failed = [], []
    for name in check_names(names):
        try:
            embedder = resolve_embedder(name, settings, api_key)
            assert embedder is not None  # check_names refused "none"
            problem = getattr(embedder, "unavailable", None)
            if problem:  # e.g. local-mpnet's wheels missing: named before any load
                failed.append(EmbedderFailure(name, _one_line(problem)))
                continue
            timed.append(time_embedder(embedder, turns, questions, settings, notify, name=name))
        # Trigger: an optional embedder is not installed, not configured, or fails (a
        # server down, a damaged file, a third-party plugin's own error). Why: it is the
        # user's extra, not the bench's. Outcome: its one line, and the others are timed.
        except Exception as exc:  # noqa: BLE001 - see above
            failed.append(EmbedderFailure(name, _reason(name, exc)))
    return tuple(timed), tuple(failed)


def _reason(name: str, exc: Exception) -> str:
    line = _one_line(str(exc)) or type(exc).__name__
    if isinstance(exc, InvalidInput) and exc.field == "model":
        line += " (set HIVEMEM_EMBED_MODEL_PATH to its folder)"
    elif not isinstance(exc, InvalidInput) and type(exc).__module__.split(".")[0] != "hivemem":
        line = f"{type(exc).__name__}: {line}"
    return line


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _threads(embedder: Embedder) -> int:
    """The threads the model runs on: onnxruntime's for an int8 graph, else the
    embedder's own (PyTorch's, onnxruntime's); 0 where none is known (a server)."""
    threads = getattr(embedder, "threads", 0)
    if getattr(embedder, "int8", False) is True:  # local-mpnet: its graph's threads
        threads = getattr(embedder, "ort_threads", threads)
    return threads if isinstance(threads, int) and not isinstance(threads, bool) else 0


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0
