"""``hivemem bench --ui``: how fast the web inspector's pages render on a large store.

For each size, a store is filled with the bench's generated episodes (the same corpus
as ``hivemem bench``, hash vectors at the default model's dimension), then each page is
requested ``requests`` times through the whole ASGI app in process (token check,
library read, template, scrubber; no network): the list page (first page, a page 20
pages deep by its keyset cursor, filtered by session and by time), the search page
(the bench's questions, hybrid; beside it the library's search alone, so the page's own
cost shows), one memory, entities, sessions, and the overview (cold; cached; with the
doctor's checks, which read the whole file). Latency per page: p50/p95/max in ms.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..settings import Settings
from .bench import (
    DEFAULT_SEED,
    CorpusGenerator,
    _add_corpus,
    _open_with_vectors,
    _quiet,
)
from .bench_report import LatencyStats

SCOPE = "bench"  # the scope the bench's corpus is loaded into
TARGET_MS = 200.0


@dataclass(frozen=True)
class PageTiming:
    page: str
    latency: LatencyStats
    bytes: int  # size of the last response


@dataclass(frozen=True)
class UiBenchResult:
    size: int
    memories: int
    load_seconds: float
    pages: tuple[PageTiming, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "memories": self.memories,
            "load_seconds": self.load_seconds,
            "pages": [{"page": p.page, "bytes": p.bytes, **p.latency.__dict__} for p in self.pages],
        }


def run_ui_bench(
    create_app: Callable[[Any, Settings], Any],
    sizes: Sequence[int],
    requests: int = 50,
    path: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    *,
    settings: Settings | None = None,
    seed: int = DEFAULT_SEED,
) -> list[UiBenchResult]:
    """Time the inspector's pages on a store of each size (see the module docstring).
    ``create_app(store, settings)`` is the HTTP app to time (``hivemem.frontends.http``:
    the front end passes it in, the layer below never imports it). ``path`` keeps the
    stores (``bench-ui-<size>.db``) and reuses one already there."""
    if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
        raise ValueError(f"requests must be a whole number >= 1, got {requests!r}")
    settings = settings or Settings()
    notify = progress or _quiet
    generator = CorpusGenerator(seed)
    out = []
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-ui-") as scratch:
        folder = Path(scratch) if path is None else Path(path).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        for size in sizes:
            out.append(
                _one(
                    create_app,
                    folder / f"bench-ui-{size}.db",
                    size,
                    generator,
                    requests,
                    settings,
                    notify,
                )
            )
    return out


def _one(
    create_app: Callable[[Any, Settings], Any],
    db: Path,
    size: int,
    generator: CorpusGenerator,
    requests: int,
    settings: Settings,
    notify: Callable[[str, int, int], None],
) -> UiBenchResult:
    store = _open_with_vectors(db, settings)
    try:
        load_s = 0.0
        have = store.scope(SCOPE).stats()["total"]
        if 0 < have < size:
            raise ValueError(f"{db} holds {have:,} memories, fewer than {size:,}: remove it")
        if have == 0:
            started = time.perf_counter()
            _add_corpus(store, size, generator, f"load {size:,}", notify)
            store.flush()
            load_s = time.perf_counter() - started
        memories = store.scope(SCOPE).stats()["total"]
        secret = store.tokens.create("bench-ui", {SCOPE: "read"}, store.clock())[1]
        app = create_app(store, settings)
        try:
            pages = asyncio.run(_measure(app, store, secret, generator, requests, notify))
        finally:
            app.state.api.close()
        return UiBenchResult(size, memories, round(load_s, 1), tuple(pages))
    finally:
        store.close()


async def _measure(
    app: Any,
    store: Any,
    secret: str,
    generator: CorpusGenerator,
    requests: int,
    notify: Callable[[str, int, int], None],
) -> list[PageTiming]:
    import httpx

    base = f"/ui/scopes/{SCOPE}"
    newest = store.scope(SCOPE).list(limit=1)[0]
    session = newest.session_id or ""
    since = newest.created_at.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    questions = generator.questions(requests)
    headers = {"Authorization": f"Bearer {secret}"}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

        async def get(url: str) -> httpx.Response:
            response = await client.get(url, headers=headers)
            if response.status_code != 200:
                raise RuntimeError(f"{url}: {response.status_code} {response.text[:300]}")
            return response

        # a cursor 20 pages deep, followed the way a person pages
        url = f"{base}/memories"
        for _ in range(20):
            found = re.search(r'href="(\?[^"]+)" rel="next"', (await get(url)).text)
            if not found:
                break
            url = f"{base}/memories" + found.group(1).replace("&amp;", "&")
        deep = url
        plans: list[tuple[str, Callable[[int], str]]] = [
            ("overview (cold: counts)", lambda i: f"{base}"),
            ("overview + the doctor (?doctor=run)", lambda i: f"{base}?doctor=run"),
            ("overview (cached)", lambda i: f"{base}"),
            ("memories: first page", lambda i: f"{base}/memories"),
            ("memories: 20 pages deep", lambda i: deep),
            (
                "memories: kind + session filter",
                lambda i: f"{base}/memories?kind=episode&session={session}",
            ),
            ("memories: since filter", lambda i: f"{base}/memories?since={since}"),
            (
                "memories: all statuses, by tag",
                lambda i: f"{base}/memories?status=superseded&tag=none",
            ),
            ("search (hybrid)", lambda i: f"{base}/search?{httpx.QueryParams(q=questions[i])}"),
            ("one memory", lambda i: f"{base}/memories/{newest.id}"),
            ("entities", lambda i: f"{base}/entities"),
            ("sessions", lambda i: f"{base}/sessions"),
        ]
        out = []
        # the library call alone, for comparison with the search page
        mem = store.scope(SCOPE)
        mem.settings = mem.settings.replace(track_access=False)
        mem.search(questions[0], 10)
        timings = []
        for i in range(requests):
            t0 = time.perf_counter_ns()
            mem.search(questions[i], 10)
            timings.append(time.perf_counter_ns() - t0)
        out.append(PageTiming("(library search alone, no page)", LatencyStats.of(timings), 0))
        for name, make in plans:
            once = "cold" in name or "doctor" in name
            count = 1 if once else requests
            if "cold" in name:
                app.state.ui._overviews.clear()
                app.state.ui._doctor = None
            elif not once:
                await get(make(0))  # warm up
            timings, last = [], b""
            for i in range(count):
                t0 = time.perf_counter_ns()
                response = await get(make(i))
                timings.append(time.perf_counter_ns() - t0)
                last = response.content
            notify(f"page {name}", count, count)
            out.append(PageTiming(name, LatencyStats.of(timings), len(last)))
        return out


def format_ui_table(results: Sequence[UiBenchResult]) -> str:
    lines = []
    for result in results:
        lines.append(
            f"{result.memories:,} memories (loaded in {result.load_seconds} s; "
            f"target < {TARGET_MS:.0f} ms per page)"
        )
        lines.append(f"  {'page':<36} {'n':>4} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'kB':>6}")
        for p in result.pages:
            lat = p.latency
            lines.append(
                f"  {p.page:<36} {lat.count:>4} {lat.p50_ms:>8.1f} {lat.p95_ms:>8.1f} "
                f"{lat.max_ms:>8.1f} {p.bytes / 1024:>6.1f}"
            )
    return "\n".join(lines)
