"""Races on one PostgreSQL (issue #13): the embedding worker beside a purge, nodes sharing
the embedding queue, a server restart mid-run. Each race is put in a fixed order with a
third connection that holds a lock until the test lets it go, so the outcome does not
depend on timing."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import hivemem
from hivemem import Settings, TryAgain
from hivemem.store.rows import to_blob
from hivemem.write import retry

psycopg = pytest.importorskip("psycopg")

QUIET = Settings(embed_in_background=False)  # the test moves the worker's steps itself


class _Run(threading.Thread):
    """``fn()`` on a thread of its own: its result or its error, and when it ended."""

    def __init__(self, fn: Any) -> None:
        super().__init__(daemon=True)
        self.fn, self.result, self.error, self.ended = fn, None, None, None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc
        self.ended = time.monotonic()

    def outcome(self, timeout: float = 30) -> Any:
        self.join(timeout)
        assert not self.is_alive(), "still waiting"
        if self.error is not None:
            raise self.error
        return self.result


def _waiting(url: str, statement: str, timeout: float = 20) -> None:
    """Until a session of the database waits on a lock in a statement that starts with
    ``statement``."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            if conn.execute(
                "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND query LIKE %s",
                [statement + "%"],
            ).fetchone():
                return
            time.sleep(0.02)
    raise AssertionError(f"no session came to wait in {statement!r}")


def _queued(store: Any, mem: Any, text: str) -> tuple[Any, list[Any]]:
    """A saved memory and its queued chunks with their vectors, ready for ``upsert``."""
    memory = mem.save(text)
    chunks = store.vectors.pending(100)
    embedder = store.indexer.embedder
    vectors = embedder.embed_batch([c.text for c in chunks])
    return memory, [(c, to_blob(v)) for c, v in zip(chunks, vectors, strict=True)]


def test_a_purge_beside_the_worker_storing_its_vectors_does_not_deadlock(pg_url, monkeypatch):
    """The race seen in CI, in a fixed order: the worker is storing the vectors of a
    chunk (held up at the embedding cache by a third connection) when a purge deletes
    that chunk. Before the fix the worker had deleted the chunk's queue row (which the
    purge's cascade then waited for) and next needed the chunk row for the vector's
    foreign key (which the purge held): PostgreSQL aborted the purge as the deadlock
    victim. Now the worker holds the chunk row first, the purge waits for it, and both
    complete on their first run."""
    monkeypatch.setattr(retry, "ATTEMPTS", 1)  # no retry may hide a deadlock here
    store = hivemem.open(pg_url, embedder="hash", settings=QUIET)
    try:
        mem = store.scope("a")
        memory, items = _queued(store, mem, "Vexquarium pump notes for the night shift")
        model = store.indexer.identity
        blocker = psycopg.connect(pg_url)  # a transaction holding the cache row's slot
        blocker.execute(
            "INSERT INTO embedding_cache (text_hash, model, vector) VALUES (%s, %s, %s)",
            [items[0][0].text_hash, model, b"\x00"],
        )
        worker = _Run(lambda: store.vectors.upsert(model, items))
        worker.start()
        _waiting(pg_url, "INSERT INTO embedding_cache")
        purge = _Run(lambda: mem.purge(memory.id))
        purge.start()
        _waiting(pg_url, "DELETE FROM chunks")  # the purge waits for the worker
        blocker.rollback()  # the worker goes on: its vector, then the purge
        blocker.close()
        assert worker.outcome() == len(items)
        report = purge.outcome()
        assert report.memory_ids == (memory.id,)
        assert worker.ended <= purge.ended  # the purge waited for the worker, not the reverse
        with psycopg.connect(pg_url) as conn:
            for table in ("chunks", "vector_queue", "chunk_vectors", "memories"):
                assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table
    finally:
        store.close()


def test_the_worker_never_waits_on_rows_a_purge_holds(pg_url):
    """The other order: a purge has deleted a chunk (its queue row and vector go by the
    cascade) and is held up before it commits. The worker neither claims that chunk nor
    waits for the purge when storing a vector it embedded before: the chunk is skipped
    at once (its vector would be deleted with it)."""
    store = hivemem.open(pg_url, embedder="hash", settings=QUIET)
    try:
        mem = store.scope("a")
        memory, items = _queued(store, mem, "Heron sightings along the canal at dawn")
        model = store.indexer.identity
        blocker = psycopg.connect(pg_url)  # holds the memory row: the purge stops there
        blocker.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", [memory.id])
        purge = _Run(lambda: mem.purge(memory.id))
        purge.start()
        _waiting(pg_url, "DELETE FROM memories")  # its chunks are deleted, not committed
        started = time.monotonic()
        assert store.vectors.claim(100, 60) == []  # the queue row is the purge's: skipped
        storing = _Run(lambda: store.vectors.upsert(model, items))
        storing.start()
        assert storing.outcome(timeout=10) == 0
        assert time.monotonic() - started < 5  # answered at once, not after the purge
        assert purge.is_alive()  # the purge was still holding its rows meanwhile
        blocker.rollback()
        blocker.close()
        assert purge.outcome().memory_ids == (memory.id,)
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0] == 0
    finally:
        store.close()


def test_a_deadlock_is_a_try_again_and_the_unit_of_work_runs_again(pg_url, monkeypatch):
    """A transaction PostgreSQL aborts as a deadlock victim is ``TryAgain`` (a
    ``StoreError``); ``hivemem.write.retry`` runs the whole unit again, and once the
    runs are spent the caller gets the error itself."""
    store = hivemem.open(pg_url, embedder="none")
    try:
        mem = store.scope("a")
        first, second = mem.save("one", key="k1"), mem.save("two", key="k2")
        runs: list[int] = []

        def crossing(mine: str, theirs: str, ready: threading.Barrier) -> Any:
            @retry.retried
            def unit() -> None:
                runs.append(1)
                with store.atomic():
                    store.memories.update("a", mine, store.clock(), confidence=0.5)
                    if len(runs) <= 2:  # the first run of each: lock in opposite orders
                        ready.wait(timeout=10)
                    store.memories.update("a", theirs, store.clock(), confidence=0.5)

            return unit

        ready = threading.Barrier(2)
        one = _Run(crossing(first.id, second.id, ready))
        two = _Run(crossing(second.id, first.id, ready))
        for run in (one, two):
            run.start()
        for run in (one, two):
            run.outcome()  # both completed: the victim ran again
        assert len(runs) == 3

        monkeypatch.setattr(retry, "ATTEMPTS", 1)
        runs.clear()
        ready = threading.Barrier(2)
        one = _Run(crossing(first.id, second.id, ready))
        two = _Run(crossing(second.id, first.id, ready))
        for run in (one, two):
            run.start()
        for run in (one, two):
            run.join(30)
        errors = [run.error for run in (one, two) if run.error is not None]
        assert len(errors) == 1 and isinstance(errors[0], TryAgain)
        assert errors[0].reason == "deadlock" and isinstance(errors[0], hivemem.StoreError)
    finally:
        store.close()
