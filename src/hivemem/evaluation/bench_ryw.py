"""The read-your-writes row of ``hivemem bench`` (issue 21, item 2).

A scope holding ``preload`` corpus turns (embedded), then ``writes`` rounds of one
``add_episode`` followed at once by one search: the search is timed, and the write counts
as *found by meaning* when the vector lane returned it (``"vector"`` in its explanation's
lanes) — the query is the turn's own text, so its cosine is ~1 once it has a vector.
The real bundled model, the embedding worker running beside the writes, as an agent's
store runs. Measured twice in one run: with the search embedding its scopes' queued
chunks (the default, ``hivemem.retrieval.fresh``) and without (``search_embed_max=0``,
the behaviour before), so the figures stand beside their baseline.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from ..facade.database import open as open_store
from ..settings import Settings
from .bench_report import LatencyStats, ReadYourWritesResult

Progress = Any

_SCOPE = "ryw"
_WARMUP = 5


def bench_read_your_writes(
    generator: Any,
    settings: Settings,
    notify: Progress,
    *,
    writes: int = 50,
    preload: int = 500,
) -> ReadYourWritesResult:
    """The row (see the module docstring); ``generator`` is the bench's corpus."""
    turns = [item for item in generator.episodes(preload + 2 * (writes + _WARMUP), 10**7)]
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-ryw-") as folder:
        on = _rounds(Path(folder) / "on.db", settings, turns, preload, writes, notify, "")
        off = _rounds(
            Path(folder) / "off.db",
            settings.replace(search_embed_max=0),
            turns,
            preload,
            writes,
            notify,
            " (worker only)",
        )
    return ReadYourWritesResult(
        model=on[2],
        preload=preload,
        writes=writes,
        found=on[0],
        first_search=LatencyStats.of(on[1]),
        found_without=off[0],
        first_search_without=LatencyStats.of(off[1]),
    )


def _rounds(
    db: Path,
    settings: Settings,
    turns: list[dict[str, Any]],
    preload: int,
    writes: int,
    notify: Progress,
    label: str,
) -> tuple[int, list[int], str]:
    store = open_store(db, settings=settings, embedder="local")
    try:
        mem = store.scope(_SCOPE)
        mem.add_episodes(turns[:preload], wait=True)
        found, timings = 0, []
        fresh = turns[preload:]
        for n, item in enumerate(fresh[: writes + _WARMUP]):
            written = mem.add_episode(item["content"], item["session_id"], item["role"])
            t0 = time.perf_counter_ns()
            hits = mem.search(item["content"], limit=10)
            elapsed = time.perf_counter_ns() - t0
            if n < _WARMUP:
                continue
            timings.append(elapsed)
            found += any(h.memory.id == written.id and "vector" in h.explain.lanes for h in hits)
            notify(f"read your writes{label}", n + 1 - _WARMUP, writes)
        assert store.indexer.identity is not None
        return found, timings, store.indexer.identity
    finally:
        store.close()
