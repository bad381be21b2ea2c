"""The vector lane of one big scope among many on PostgreSQL (issue #25): recall@10
against an exact scan, latency, and whether another tenant's near-duplicates change the
big scope's answers; this code's plan (the scope's own HNSW index) beside main's (one
HNSW index over every scope), in the same run. Not a test (a measurement, minutes):

    python tests/bench_pg_tenants.py URL [SMALL_SCOPES SMALL_SIZE BIG_SIZE QUERIES]

URL: an empty database the user may fill (or one this script filled before: it is
reused). Defaults: 50 scopes of 2,000 memories, one of 20,000, 200 questions; the hash
embedder at 384 dimensions. Main's plan is run inside a transaction that drops the
scope's own index and is rolled back.
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import UTC, datetime

import hivemem
from hivemem.evaluation.bench import CorpusGenerator
from hivemem.providers.embed import HashEmbedder
from hivemem.settings import Settings
from hivemem.store.postgres import vectors as pgv
from hivemem.store.postgres.scope_indexes import index_name
from hivemem.text import query_focus
from hivemem.types import Query

URL = sys.argv[1]
N_SMALL, SMALL, BIG, QUERIES = (int(a) for a in (sys.argv[2:6] or (50, 2000, 20000, 200)))
DIM, INTRUDER = 384, 10_000


def load(store: hivemem.Store, scope: str, items: list[dict]) -> None:
    mem = store.scope(scope)
    for start in range(0, len(items), 1000):
        mem.add_episodes(items[start : start + 1000])


t0 = time.time()
with hivemem.open(URL, embedder="none") as plain:
    if plain.scope("big").stats()["total"] == 0:
        for i in range(N_SMALL):
            load(plain, f"small{i:02d}", list(CorpusGenerator(100 + i).episodes(SMALL)))
        load(plain, "big", list(CorpusGenerator(7).episodes(BIG)))
print(f"loaded in {time.time() - t0:.0f} s", flush=True)
settings = Settings().replace(embed_in_background=False, embed_batch_size=4096)
store = hivemem.open(URL, embedder=HashEmbedder(DIM), settings=settings)
store.flush()
index, backend = store.vectors, store._backend
t0 = time.time()
index.build_index()
index.scope_indexes.wait()
print(f"vectors {index.count()}; own indexes built in {time.time() - t0:.0f} s", flush=True)
backend._q("ANALYZE chunk_vectors")

identity, fetch, now = store.indexer.identity, 10 * settings.candidate_multiplier, datetime.now(UTC)
prepared = [
    (Query(text=q, limit=10), store.indexer.embed_query(query_focus(q)))
    for q in CorpusGenerator(7).questions(QUERIES)
]
prepared = [(q, v) for q, v in prepared if v is not None]


def run() -> tuple[list[list[str]], float, float]:
    times, results = [], []
    for q, v in prepared:
        start = time.perf_counter()
        found = index.search(["big"], v, q, fetch, now, identity, settings.vector_pool)
        times.append((time.perf_counter() - start) * 1000)
        results.append([m.memory_id for m in found][:10])
    times.sort()
    return results, statistics.median(times), times[int(0.95 * (len(times) - 1))]


def exact() -> tuple[list[list[str]], float, float]:
    saved, pgv.EXACT_MAX = pgv.EXACT_MAX, 10**12
    try:
        return run()
    finally:
        pgv.EXACT_MAX = saved


class Rollback(Exception):
    pass


def mains_plan() -> tuple[list[list[str]], float, float]:
    """Main's plan: the index over every scope, ef_search = k (the scope's own index
    dropped inside a transaction that is rolled back)."""
    saved = pgv._EF_PER_ROW, index.scope_indexes.has
    pgv._EF_PER_ROW, index.scope_indexes.has = 1, lambda scope: True  # type: ignore[method-assign]
    out = None
    try:
        with backend.atomic():
            backend._x(f"DROP INDEX {index_name('big')}")
            out = run()
            raise Rollback
    except Rollback:
        pass
    finally:
        pgv._EF_PER_ROW, index.scope_indexes.has = saved  # type: ignore[method-assign]
    assert out is not None
    return out


def recall(got: list[list[str]], truth: list[list[str]]) -> float:
    return sum(len(set(g) & set(t)) for g, t in zip(got, truth, strict=True)) / (10 * len(truth))


def changed(a: list[list[str]], b: list[list[str]]) -> int:
    return sum(x != y for x, y in zip(a, b, strict=True))


t0 = time.time()
backend._q(
    f"CREATE INDEX IF NOT EXISTS {pgv.INDEX} ON chunk_vectors "
    "USING hnsw (embedding vector_cosine_ops)"
)
print(f"main's index over every scope built in {time.time() - t0:.0f} s", flush=True)
before = {"exact": exact(), "this code": run(), "main": mains_plan()}
# Another tenant writes near-duplicates of the big scope's first turns.
copies = list(CorpusGenerator(7).episodes(INTRUDER))
for item in copies:
    item["content"] += " again"
store.close()
with hivemem.open(URL, embedder="none") as plain:
    load(plain, "intruder", copies)
store = hivemem.open(URL, embedder=HashEmbedder(DIM), settings=settings)
index, backend = store.vectors, store._backend
store.flush()
index.build_index()
backend._q("ANALYZE chunk_vectors")
after = {"exact": exact(), "this code": run(), "main": mains_plan()}
truth_before, truth_after = before["exact"][0], after["exact"][0]
for name in ("exact", "this code", "main"):
    (got, p50, p95), (got2, p50b, p95b) = before[name], after[name]
    print(
        f"{name:9}: recall@10 {recall(got, truth_before):.3f} p50 {p50:.1f} ms p95 {p95:.1f} ms"
        f" | with the intruder: recall@10 {recall(got2, truth_after):.3f} p50 {p50b:.1f} "
        f"p95 {p95b:.1f}; top 10 changed for {changed(got, got2)}/{len(got)} questions"
    )
store.close()
