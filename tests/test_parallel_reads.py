"""Reads in parallel on SQLite (store/sqlite/pool.py) and access counts in batches
(store/sqlite/access.py): the pool's correctness claims, on real files."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import pytest
import sqlean as sqlite3  # the SQLite library the store uses (tests/test_project_rules.py)

import hivemem
from hivemem.settings import Settings
from hivemem.types import ListFilter


def _open(path, **changes):
    return hivemem.open(path, settings=Settings(**changes), embedder="hash")


def test_a_read_does_not_wait_for_a_write_in_progress(tmp_path):
    """While the writer holds an open transaction, a search and a get on another thread
    answer (from the last committed state) instead of queueing behind it."""
    with _open(tmp_path / "m.db") as store:
        mem = store.scope("a")
        kept = mem.save("The heron fishes at dawn")
        backend = store._backend
        inside, release = threading.Event(), threading.Event()

        def long_write():
            with backend.atomic():
                mem.save("The egret wades at noon")
                inside.set()
                release.wait(10)

        writer = threading.Thread(target=long_write)
        writer.start()
        try:
            assert inside.wait(10)
            started = time.monotonic()
            hits = mem.search("heron")
            got = mem.get(kept.id)
            assert time.monotonic() - started < 5
            assert [h.memory.id for h in hits] == [kept.id]
            assert got.content == kept.content
            found = [h.memory.content for h in mem.search("egret")]
            assert "The egret wades at noon" not in found  # not committed yet: not visible
        finally:
            release.set()
            writer.join()
        assert mem.search("egret")[0].memory.content == "The egret wades at noon"


def test_with_the_pool_off_a_read_waits_for_the_write(tmp_path):
    """read_connections=0 is the single connection: the same read waits (the contrast
    that shows the test above measures the pool)."""
    with _open(tmp_path / "m.db", read_connections=0) as store:
        mem = store.scope("a")
        kept = mem.save("The heron fishes at dawn")
        inside, done = threading.Event(), threading.Event()

        def long_write():
            with store._backend.atomic():
                inside.set()
                time.sleep(0.5)

        writer = threading.Thread(target=long_write)
        writer.start()
        assert inside.wait(10)
        started = time.monotonic()
        assert mem.get(kept.id).id == kept.id
        assert time.monotonic() - started >= 0.3
        writer.join()
        done.set()


def test_every_acknowledged_write_is_read_at_once_from_other_threads(tmp_path):
    """Read your writes: a write committed on one thread is seen by the next read on any
    other thread, through any connection of the pool."""
    with _open(tmp_path / "m.db", read_connections=2) as store:
        mem = store.scope("a")
        misses: list[str] = []

        def reader(ids: queue.Queue[str | None]) -> None:
            # Blocks until an id is handed over (a reader that spun on an empty list held
            # the GIL from the writer: 155 s for 60 saves once a save ran a search too).
            while (memory_id := ids.get(timeout=60)) is not None:
                try:
                    mem.get(memory_id)
                except hivemem.NotFound:
                    misses.append(memory_id)

        queues: list[queue.Queue[str | None]] = [queue.Queue() for _ in range(4)]
        readers = [threading.Thread(target=reader, args=(q,)) for q in queues]
        for thread in readers:
            thread.start()
        for n in range(60):
            saved = mem.save(f"fact number {n}")  # acknowledged: then handed to a reader
            queues[n % 4].put(saved.id)
        for q in queues:
            q.put(None)
        for thread in readers:
            thread.join()
        assert misses == []


def test_one_search_reads_one_snapshot(tmp_path):
    """Reads inside ``snapshot()`` all see the state at its first read, while a write
    commits in between on another thread; the next snapshot sees the write."""
    with _open(tmp_path / "m.db") as store:
        mem = store.scope("a")
        first = mem.save("alpha one")
        backend = store._backend
        with backend.snapshot():
            assert backend.get(["a"], first.id) is not None
            other = threading.Thread(target=lambda: mem.save("alpha two"))
            other.start()
            other.join()
            assert len(backend.list(["a"], ListFilter(), 10, 0, store.clock())) == 1
        assert len(backend.list(["a"], ListFilter(), 10, 0, store.clock())) == 2


def test_nested_snapshots_on_one_connection(tmp_path):
    """With the pool off, a search (a snapshot) inside which the vector lane opens its own
    snapshot must not start a transaction within a transaction (found by the load test:
    every search failed with 503)."""
    for path in (tmp_path / "m.db", ":memory:"):
        with _open(path, read_connections=0) as store:
            mem = store.scope("a")
            mem.save("The kingfisher dives")
            store.flush()
            with store._backend.snapshot(), store._backend.snapshot():
                pass
            assert [h.memory.content for h in mem.search("kingfisher dives")] == [
                "The kingfisher dives"
            ]


def test_pool_connections_are_read_only(tmp_path):
    with _open(tmp_path / "m.db") as store:
        mem = store.scope("a")
        mem.save("x marks the spot")
        backend = store._backend
        with backend.snapshot(), pytest.raises(hivemem.StoreError, match="readonly"):
            backend._read("DELETE FROM memories")
        assert len(mem.list()) == 1
        assert backend.health()["fts_ok"] is True  # FTS5's check command runs on the writer


def test_a_closed_store_refuses_reads_from_every_path(tmp_path):
    store = _open(tmp_path / "m.db")
    mem = store.scope("a")
    saved = mem.save("closing time")
    mem.search("closing")
    store.close()
    for read in (lambda: mem.search("closing"), lambda: mem.get(saved.id), mem.list):
        with pytest.raises(hivemem.StoreError, match="closed"):
            read()


def test_a_damaged_file_is_a_clean_store_error_on_the_read_path(tmp_path):
    path = tmp_path / "m.db"
    with _open(path) as store:
        mem = store.scope("a")
        for n in range(200):
            mem.save(f"memory {n} " + "filler " * 50)
    store = _open(path)
    try:
        mem = store.scope("a")
        with open(path, "r+b") as handle:  # damage every page after the first few
            handle.seek(4096 * 4)
            handle.write(b"\xff" * (path.stat().st_size - 4096 * 4))
        with pytest.raises(hivemem.StoreError):
            for _ in range(3):
                mem.search("memory filler")
                mem.list(limit=500)
    finally:
        store.close()


def test_access_counts_are_batched_visible_at_once_and_written_on_close(tmp_path):
    path = tmp_path / "m.db"
    with _open(path, access_counts="search") as store:
        mem = store.scope("a")
        saved = mem.save("The owl hunts at night")
        for _ in range(3):
            assert mem.search("owl")
        # visible in this process at once (queued counts overlay the rows read) …
        assert store._backend.get(["a"], saved.id).access_count == 3
        # … while the file has not been written on the read path
        raw = sqlite3.connect(path)
        assert raw.execute("SELECT access_count FROM memories").fetchone()[0] == 0
        raw.close()
    raw = sqlite3.connect(path)  # written by close()
    assert raw.execute("SELECT access_count FROM memories").fetchone()[0] == 3
    raw.close()


def test_access_counts_are_flushed_by_the_timer(tmp_path):
    path = tmp_path / "m.db"
    with _open(path, access_counts="search") as store:
        mem = store.scope("a")
        mem.save("The lark sings at dawn")
        mem.search("lark")
        deadline = time.monotonic() + 10
        raw = sqlite3.connect(path)
        try:
            while raw.execute("SELECT access_count FROM memories").fetchone()[0] != 1:
                assert time.monotonic() < deadline, "the access counts were never written"
                time.sleep(0.1)
        finally:
            raw.close()
        assert mem.list()[0].access_count == 1  # no double count once written


def test_access_counts_stay_in_their_scope(tmp_path):
    with _open(tmp_path / "m.db", access_counts="search") as store:
        a, b = store.scope("a"), store.scope("b")
        in_a = a.save("shared words here")
        in_b = b.save("shared words here")
        a.search("shared words")
        store._backend.flush_access()
        assert a.get(in_a.id).access_count == 1
        assert store._backend.get(["b"], in_b.id).access_count == 0


def test_the_wal_stays_bounded_under_overlapping_searches(tmp_path, monkeypatch):
    """Searches that always overlap keep SQLite from restarting the WAL; the writer
    restarts it once it passes WAL_RESTART_BYTES (here 256 kB). Without that the WAL
    grows with every write (70 MB in the 30 s load bench; here 30 MB after the 150 saves
    with the restart off, 0.7 MB with it)."""
    from hivemem.store.sqlite import pool

    monkeypatch.setattr(pool, "WAL_RESTART_BYTES", 256 * 1024)
    monkeypatch.setattr(pool, "WAL_CHECK_EVERY", 8)
    path = tmp_path / "m.db"
    with _open(path, read_connections=2) as store:
        largest = _largest_wal_while_reading(store, store, 150)
        assert largest < 2 * 1024 * 1024, largest
        assert len(store.scope("a").list(limit=1000)) == 150


def test_the_wal_stays_bounded_when_another_process_reads(tmp_path, monkeypatch):
    """``serve-http --workers N``: the readers that keep the WAL from restarting are
    another process's, which the writer cannot hold back. Its checkpoint waits for their
    snapshots (up to WAL_DRAIN_S) instead of giving up at once. Here the other process
    is a second handle on the file: to SQLite, connections are connections. (100 saves:
    the WAL reached 19 MB with the restart off, 0.6 MB with it.)"""
    from hivemem.store.sqlite import pool

    monkeypatch.setattr(pool, "WAL_RESTART_BYTES", 256 * 1024)
    monkeypatch.setattr(pool, "WAL_CHECK_EVERY", 8)
    path = tmp_path / "m.db"
    with _open(path, read_connections=2) as store, _open(path, read_connections=2) as other:
        largest = _largest_wal_while_reading(store, other, 100)
        assert largest < 2 * 1024 * 1024, largest
        assert len(other.scope("a").list(limit=1000)) == 100


class _CountingEmbedder:
    """The hash embedder, slowed down, counting every text it embeds."""

    def __init__(self, counts: list[str], lock: threading.Lock) -> None:
        from hivemem.providers.embed import HashEmbedder

        self._inner = HashEmbedder(dimension=64)
        self.identity, self.dimension = self._inner.identity, self._inner.dimension
        self._counts, self._lock = counts, lock

    def embed_batch(self, texts):
        time.sleep(0.05)  # long enough for the other handle to take the same batch
        with self._lock:
            self._counts.extend(texts)
        return self._inner.embed_batch(texts)


def test_two_processes_embed_each_queued_chunk_once(tmp_path):
    """serve-http --workers: every worker's embedding thread takes the oldest queued
    chunks; without one turn per file each chunk was embedded by both (twice the model's
    CPU). Two handles on one file stand for two processes (each its own flock)."""
    path = tmp_path / "m.db"
    with hivemem.open(path, embedder="none") as store:
        store.scope("a").add_episodes(
            [
                {"content": f"turn {n} about the harbour", "session_id": "s", "role": "user"}
                for n in range(300)
            ]
        )
    embedded: list[str] = []
    lock = threading.Lock()
    settings = Settings(embed_batch_size=50)  # each opens, catches up and flushes at once
    stores = [
        hivemem.open(path, embedder=_CountingEmbedder(embedded, lock), settings=settings)
        for _ in range(2)
    ]
    try:
        threads = [threading.Thread(target=s.flush) for s in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert stores[0].indexer.pending() == 0
    finally:
        for s in stores:
            s.close()
    assert len(embedded) == len(set(embedded)) == 300


def _largest_wal_while_reading(writer, reading, saves: int) -> int:
    """``saves`` saves through ``writer`` while two threads of ``reading`` (the same
    handle, or another one on the file) each hold a snapshot most of the time; the
    largest size the WAL reached."""
    backend = reading._backend
    wal = Path(f"{writer.location}-wal")
    stop = threading.Event()

    def reader(offset):
        time.sleep(offset)
        while not stop.is_set():
            with backend.snapshot():
                backend.scopes()
                time.sleep(0.02)

    readers = [threading.Thread(target=reader, args=(o,)) for o in (0, 0.01)]
    for thread in readers:
        thread.start()
    largest = 0
    try:
        mem = writer.scope("a")
        for n in range(saves):
            mem.save(f"note {n} " + "padding words " * 40)
            largest = max(largest, wal.stat().st_size)
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    return largest


def test_the_writer_checkpoints_less_often_yet_under_the_wal_bound(tmp_path):
    """The writer's automatic checkpoint runs every WAL_AUTOCHECKPOINT_PAGES pages
    (SQLite's 1,000 copied a write's hot pages back three times as often: issue 24),
    and that many pages stay under WAL_RESTART_BYTES, so the bound holds reads back only
    when readers keep SQLite from restarting the WAL, not after every checkpoint."""
    from hivemem.store.sqlite import pool

    with _open(tmp_path / "m.db", read_connections=2) as store:
        conn = store._backend._conn
        pages = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    assert pages == pool.WAL_AUTOCHECKPOINT_PAGES > 1_000
    assert pages * (page_size + 24) + 32 < pool.WAL_RESTART_BYTES


def test_the_wal_is_checked_once_every_wal_check_every_commits(tmp_path, monkeypatch):
    """The writer looks at the WAL's size once every WAL_CHECK_EVERY of its commits, not
    twice as often: the commit counter moves once per commit (it had moved in both
    ``_commit`` and ``_bound_wal``)."""
    from hivemem.store.sqlite import pool

    monkeypatch.setattr(pool, "WAL_CHECK_EVERY", 4)
    checks: list[str] = []
    size = pool.os.path.getsize

    def counted(path):
        checks.append(str(path))
        return size(path)

    with _open(tmp_path / "m.db", read_connections=2, embed_in_background=False) as store:
        mem = store.scope("a")
        backend = store._backend
        commit = backend._commit
        commits = 0

        def counted_commit():
            nonlocal commits
            commits += 1
            commit()

        monkeypatch.setattr(backend, "_commit", counted_commit)
        monkeypatch.setattr(pool.os.path, "getsize", counted)
        start = backend._commits
        for i in range(16):
            mem.save(f"note {i} about the lighthouse")
        monkeypatch.setattr(pool.os.path, "getsize", size)
        assert backend._commits - start == commits
    wal_checks = [p for p in checks if p.endswith("-wal")]
    assert commits >= 16
    assert len(wal_checks) in (commits // 4, commits // 4 + 1), (commits, len(wal_checks))
