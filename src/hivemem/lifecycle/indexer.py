"""The embedding worker: fills the vector index off the write path (DESIGN §2).

A write commits its row, chunks and keyword index, and its chunks are queued in the same
transaction; nothing on the write path touches a model. The worker, a daemon thread of the
store, wakes when a write tells it to, takes queued chunks in batches, embeds the texts
the embedding cache does not already hold, and stores the vectors in short transactions
of their own. ``flush()`` does the same in the caller's thread until the queue is empty:
``add_episodes(..., wait=True)``, ``hivemem import`` and ``hivemem reindex`` use it.
While a flush runs it owns the work: the worker stands aside (after the batch it is in),
so the flush's progress counts every chunk of the queue and reaches its total. A store
reopened after a crash finds the chunks still queued and embeds them.

The worker only runs when the store's vectors can be this embedder's: no embedder, no
sqlite-vec, or vectors of another model (``meta.embedding_identity``) leave the vector
lane off with the reason in ``disabled``, which search explanations and ``hivemem
doctor`` show; ``reindex()`` switches a store to this embedder.

Embedder failures (an endpoint down) never lose work: the chunks stay queued, the thread
logs the error and retries with a growing pause.

Exit is clean whatever the worker is doing. A script that ends without ``close()`` used to
die with SIGABRT ("terminate called without an active exception"): the interpreter shut
down while the daemon thread was inside onnxruntime. Every running worker is now stopped
and joined by an ``atexit`` hook; the worker embeds in slices of ``STOP_SLICE`` texts and
checks for a stop between them, so the wait is one slice, and what it did not store stays
queued on disk for the next open.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ..errors import HiveMemError, InvalidInput, StoreError
from ..providers.embed import Embedder
from ..store.protocols import PendingChunk, VectorIndex
from ..store.rows import to_blob

log = logging.getLogger("hivemem.lifecycle.indexer")

Progress = Callable[[int, int], None]

STOP_SLICE = 32  # texts per model call of the background worker: the longest wait at exit
SEARCH_SLICE = 8  # texts per model call of a search's own embedding (``embed_pending``)
CLAIMED_WAIT_S = 0.05  # a flush's pause while other nodes hold the queued chunks
RECHECK_S = 30.0  # the idle worker's look at a queue other nodes claim (at most)
EXIT_JOIN_S = 30.0  # how long exit waits for a worker stuck in one slice (a slow endpoint)

_running: weakref.WeakSet[Indexer] = weakref.WeakSet()


@atexit.register
def _stop_workers_at_exit() -> None:
    """Stop every worker thread before the interpreter (and onnxruntime) shuts down."""
    for indexer in list(_running):
        indexer.close(timeout=EXIT_JOIN_S)


class Indexer:
    """Embeds queued chunks for one store and one embedder."""

    def __init__(
        self,
        index: VectorIndex,
        embedder: Embedder | None,
        *,
        batch_size: int = 256,
        background: bool = True,
        claim_s: float = 120.0,
    ) -> None:
        self._index = index
        self.embedder = embedder
        self.batch_size = max(1, batch_size)
        self.background = background
        self.claim_s = claim_s  # how long a claim on a batch lasts (several nodes)
        self._embed_lock = threading.Lock()  # one batch at a time: thread or flush
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._flushing = 0  # flushes running; the worker stands aside while > 0
        self._flushing_lock = threading.Lock()
        self.disabled: str | None = self._bind()
        self.last_error: str | None = None
        self._log_disabled()

    def _log_disabled(self) -> None:
        """openhive and the assistant's seeds log why search is keyword-only: no embedder
        is a deliberate setting (openhive: "startup log info"); vectors of another model
        or no usable vector index is a warning with the fix (the assistant: "a warning is
        logged with instructions")."""
        if self.disabled is None:
            return
        if self.embedder is None:
            log.info("vector search off: %s", self.disabled)
        else:
            log.warning("vector search off: %s", self.disabled)

    def _bind(self) -> str | None:
        if self.embedder is None:
            return "no embedder configured (keyword and entity lanes only)"
        if self._index.unavailable is not None:
            return self._index.unavailable
        try:
            problem = getattr(self.embedder, "unavailable", None)  # optional: a model's files
            if problem:
                raise HiveMemError(str(problem))
            identity, dimension = self.embedder.identity, self.embedder.dimension
        except HiveMemError as exc:
            # Trigger: the model's files are missing or unreadable. Why: reads fail open
            # and writes never wait for a model. Outcome: keyword search goes on, writes
            # stay queued for the model, the reason (with its fix) is shown.
            return f"the embedder cannot be used: {exc}"
        other = self._index.bind(identity, dimension)
        if other is not None:
            return (
                f"this store's vectors were made by {other}, but it is opened with "
                f"{self.embedder.identity}; vector search is off until `hivemem reindex` "
                "re-embeds the store with the new model"
            )
        return None

    @property
    def enabled(self) -> bool:
        return self.disabled is None

    @property
    def identity(self) -> str | None:
        if self.embedder is None:
            return None
        try:
            return self.embedder.identity
        except HiveMemError:  # the model's files are missing (``disabled`` says so)
            return None

    # ------------------------------------------------------------------ the thread

    def notify(self) -> None:
        """A write queued chunks: wake the worker (starting it on first use)."""
        if not self.enabled or not self.background or self._stop.is_set():
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hivemem-embed", daemon=True)
            _running.add(self)
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        pause = 1.0
        recheck: float | None = None
        while not self._stop.is_set():
            self._wake.wait(recheck)
            self._wake.clear()
            recheck = None
            while not self._stop.is_set():
                try:
                    if self._batch(stop=self._stop) == 0:
                        pause = 1.0
                        # Trigger: nothing to take, yet chunks are queued. Why: other
                        # nodes claim them. Outcome: look again when a claim may have
                        # expired, so a dead node's chunks need no write here to wake us.
                        if self._index.has_pending():
                            recheck = min(self.claim_s, RECHECK_S)
                        break
                except Exception as exc:  # never let the thread die; the work stays queued
                    self.last_error = str(exc)
                    log.warning("embedding failed, retrying in %.0f s: %s", pause, exc)
                    self._stop.wait(pause)
                    pause = min(pause * 2, 60.0)

    def close(self, timeout: float | None = None) -> None:
        """Stop the thread after the slice it is embedding (what it has not stored stays
        queued for the next open); wait for it at most ``timeout`` seconds."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            if not thread.is_alive():
                self._thread = None
                _running.discard(self)
        if self.enabled and (thread is None or not thread.is_alive()):
            # Claims this store holds on queued chunks (a batch cut short): another
            # node, or the next open, takes them now rather than when they expire.
            with contextlib.suppress(Exception):  # a store already gone keeps them
                self._index.release()

    # ------------------------------------------------------------------ the work

    def flush(self, progress: Progress | None = None) -> int:
        """Embed everything queued, in this thread; returns how many chunks were stored.
        Embedder errors propagate (the caller asked for the work to be done)."""
        if not self.enabled:
            return 0
        with self.owning():
            with self._embed_lock:  # the worker's batch in flight ends before counting
                total = self._index.pending_count()
            done = 0
            with self._index.bulk(total):  # many into an empty table: in bulk
                while True:
                    stored = self._batch()
                    if not self.enabled or (stored == 0 and not self._index.has_pending()):
                        return done
                    if stored == 0:  # another node's claims: wait for it (or their expiry)
                        time.sleep(CLAIMED_WAIT_S)
                    done += stored
                    if progress is not None:
                        progress(min(done, total), max(total, done))

    @contextlib.contextmanager
    def owning(self) -> Iterator[None]:
        """While inside, the caller owns the queue: the worker takes no batch (``hivemem
        import`` holds it from the import to the end of its flush)."""
        with self._flushing_lock:
            self._flushing += 1
        try:
            yield
        finally:
            with self._flushing_lock:
                self._flushing -= 1
            if self._index.has_pending():  # written after the last batch: the worker's
                self.notify()

    def pending(self) -> int:
        """Chunks waiting for their vectors."""
        return self._index.pending_count()

    def _batch(self, stop: threading.Event | None = None) -> int:
        """Embed and store one batch of queued chunks; returns how many were stored (0 when
        the queue is empty, or, for the worker, when a flush owns the queue: it empties
        it). The worker passes ``stop``: texts go to the model in slices and a stop set
        between two slices ends the batch early: the slices done are stored, the rest
        stays queued."""
        assert self.embedder is not None
        with self._embed_lock, self._index.turn():  # one batch per process, and per file
            if stop is not None and self._flushing:
                return 0
            chunks = self._index.claim(self.batch_size, self.claim_s)
            if not chunks:
                return 0
            try:
                return self._embed_and_store(chunks, stop)[0]
            except BaseException:
                # Trigger: the embedder (or the store) failed mid-batch. Why: the chunks
                # are claimed by this store. Outcome: given back, so another node need
                # not wait for the claims to expire; the work stays queued.
                with contextlib.suppress(Exception):
                    self._index.release([c.chunk_id for c in chunks])
                raise

    def _embed_and_store(
        self,
        chunks: list[PendingChunk],
        stop: threading.Event | None,
        deadline: float | None = None,
    ) -> tuple[int, int]:
        """The model calls and the upsert of one claimed batch (``_batch``), or of a
        search's pending chunks (``embed_pending``: slices of ``SEARCH_SLICE`` until
        ``deadline``, a ``time.monotonic()`` value; the first slice always runs).
        Returns (chunks stored, chunks that had a vector to store): the others were not
        reached before ``stop`` or ``deadline`` and stay queued. A model call that fails
        is raised after the vectors of the slices before it are stored: work done is
        kept, only the rest waits for the next try."""
        assert self.embedder is not None
        model = self.embedder.identity
        known = self._index.cached(model, [c.text_hash for c in chunks])
        todo = {c.text_hash: c.text for c in chunks if c.text_hash not in known}
        hashes = list(todo)
        if deadline is not None:
            step = SEARCH_SLICE  # newest first, as queued: the search's own write leads
        else:
            step = STOP_SLICE if stop is not None else max(1, len(todo))
            # The batch gathers chunks of every writer and scope; sliced in length order,
            # each model call pads its texts to a near length, not the batch's longest.
            hashes.sort(key=lambda h: len(todo[h]))
        failure: Exception | None = None
        try:
            for start in range(0, len(hashes), step):
                if stop is not None and stop.is_set():
                    break  # exit or close: store the slices done, the rest stays queued
                if deadline is not None and start > 0 and time.monotonic() >= deadline:
                    break  # a search's time is up: the rest stays queued for the worker
                part = hashes[start : start + step]
                vectors = self.embedder.embed_batch([todo[h] for h in part])
                for text_hash, vector in zip(part, vectors, strict=True):
                    known[text_hash] = to_blob(vector)
        except Exception as exc:  # raised below, once the slices done are stored
            failure = exc
        else:
            if hashes:  # the model answered: an earlier failure is over
                self.last_error = None
        ready = [(c, known[c.text_hash]) for c in chunks if c.text_hash in known]
        if not ready:
            if failure is not None:
                raise failure
            return 0, 0
        stored = self._index.upsert(model, ready)
        if failure is not None:
            raise failure
        if stored == 0:
            # Trigger: nothing stored although chunks were queued. Why: another
            # process took them, or re-indexed with another model. Outcome: re-check
            # the binding so this process stops embedding for a table not its own.
            self.disabled = self._bind()
            self._log_disabled()
        return stored, len(ready)

    def embed_pending(self, scopes: Sequence[str], limit: int, budget_s: float) -> int:
        """Read your writes: embed the queued chunks of ``scopes`` before a search reads
        them, so a memory written a moment ago is found by meaning by the very next
        search (docs/architecture.md, "Read your writes"). Returns how many chunks of
        ``scopes`` are still queued after it (at most ``limit + 1`` are looked at; 0
        means every memory there has its vector), which the search's note reports.

        Bounded: the newest ``limit`` chunks (the last writes are the ones asked about
        next), embedded in slices of ``SEARCH_SLICE`` until ``budget_s`` has passed (the
        first slice always runs); the rest stays queued for the worker, and is found by
        keyword meanwhile. The write path is untouched: no model call there.

        Once per chunk. The vectors are stored by the worker's own ``upsert``, which
        takes the chunks off the queue, so the worker never embeds them again. The
        worker's batch in flight (often the very chunk just written: a write wakes it)
        is waited for, within half the budget, and the queue read again, rather than
        embedding the same texts twice; past that, the search embeds anyway, and
        ``upsert`` stores whichever vector comes first, once. Reads fail open: an
        embedder or store that fails here leaves those chunks queued, found by keyword.
        """
        if not self.enabled or self.embedder is None:
            return 0  # nothing will embed them: no note says otherwise (issue 25, item 13)
        start = time.monotonic()
        queued = self._index.pending_in(scopes, max(0, limit) + 1)
        if not queued or limit <= 0 or not self._index.writer_free(budget_s / 2):
            # Nothing to do, or a transaction of another thread holds the writer past half
            # the budget: a search never waits out a write (tests/test_parallel_reads.py);
            # the chunks are found by keyword this time, and the note says so. A worker's
            # batch (milliseconds) is waited for (test_read_your_writes: worker running).
            return len(queued)
        locked = self._embed_lock.acquire(timeout=max(0.0, budget_s / 2))
        try:
            if locked and time.monotonic() - start > 0.001:  # waited: the worker may have
                queued = self._index.pending_in(scopes, limit + 1)
            todo = queued[:limit]
            if not todo:
                return 0
            try:
                _, reached = self._embed_and_store(todo, None, deadline=start + budget_s)
            except Exception as exc:  # reads fail open: the chunks not embedded stay queued
                self.last_error = str(exc)
                log.warning("embedding at search failed, found by keyword meanwhile: %s", exc)
                with contextlib.suppress(Exception):  # the slices done were stored
                    return len(self._index.pending_in(scopes, limit + 1))
                return len(queued)
        finally:
            if locked:
                self._embed_lock.release()
        # Not reached in time, and (one more was read) beyond ``limit``: still queued.
        # Chunks ``upsert`` skipped were done elsewhere or deleted: not waiting.
        return len(todo) - reached + len(queued) - len(todo)

    def queued_in(self, scopes: Sequence[str], limit: int) -> bool:
        """Whether ``embed_pending(scopes, limit, …)`` would find chunks to embed: its
        own first read of the queue, the same statement, so inside a search's read view
        the two share one kept read (``search_view``'s ``queued``)."""
        if not self.enabled or self.embedder is None or limit <= 0:
            return False
        return bool(self._index.pending_in(scopes, limit + 1))

    def embed_query(self, text: str) -> np.ndarray | None:
        """The query's unit vector, or None when the vector lane is off."""
        if not self.enabled or self.embedder is None:
            return None
        vector = np.asarray(self.embedder.embed_batch([text])[0], dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else None

    def reindex(self, progress: Progress | None = None, *, force: bool = False) -> int:
        """Bring the store's vectors to this embedder and return how many chunks were
        embedded. Vectors of another model (or ``force``): drop them all, queue every
        chunk, embed. Vectors of this model already: embed only what is still queued
        (0 when nothing is: there is nothing to do), and build the KNN index if a bulk
        load a crash interrupted left it missing."""
        if self.embedder is None:
            raise InvalidInput("embedder", "no embedder configured: nothing to index with")
        if self._index.unavailable is not None:
            raise StoreError(f"vector search is unavailable: {self._index.unavailable}")
        problem = getattr(self.embedder, "unavailable", None)  # the model's files missing
        if problem:
            raise HiveMemError(f"cannot re-index: {problem}")
        if not force and self._index.recorded_identity() == self.embedder.identity:
            self.disabled = self._bind()
            done = self.flush(progress)
            self._index.build_index()  # missing after an interrupted bulk load: built now
            return done
        # Trigger: the vectors are about to be dropped. Why: a model that cannot embed
        # (its file missing or damaged, an endpoint down) would leave the store with none
        # until it is fixed. Outcome: its error is raised first and nothing is dropped.
        self.embedder.embed_batch(["hivemem reindex: can this text be embedded?"])
        with self.owning():
            with self._embed_lock:
                self._index.reset(self.embedder.identity, self.embedder.dimension)
                self.disabled = None
            return self.flush(progress)
