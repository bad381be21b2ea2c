"""Reads the SQLite backend keeps until the file changes (SQLite-only).

Session neighbours and the small scopes' rows per term (``termcounts.Postings``) are
kept per ``_version()``: this connection's commits and every other connection's
(``PRAGMA data_version``). A write through the same store or through another process's
connection must show at once.
"""

from __future__ import annotations

import contextlib
import threading

import hivemem
from hivemem.types import Query


def _after(store: hivemem.Store, memory_id: str) -> list[str]:
    now = store.clock()
    sides = store._backend.session_neighbours(["a"], [memory_id], Query(text="x"), now)
    return [n for n, later in sides.get(memory_id, []) if later]


def test_session_neighbours_follow_a_write_of_this_store_and_of_another(tmp_path):
    path = tmp_path / "m.db"
    with hivemem.open(path, embedder="none") as store, hivemem.open(path, embedder="none") as other:
        mem = store.scope("a")
        first = mem.add_episode("we met at the harbour", "s1", "user")
        assert _after(store, first.id) == []  # kept: no turn after it yet
        second = mem.add_episode("and then walked to the lighthouse", "s1", "assistant")
        assert _after(store, first.id) == [second.id]
        assert _after(store, second.id) == []
        third = other.scope("a").add_episode("the lighthouse was closed", "s1", "user")
        assert _after(store, second.id) == [third.id]


def test_small_scope_term_rows_follow_a_write_of_another_connection(tmp_path):
    with _two_handles(tmp_path) as (store, other):
        small = _small_beside_a_big_scope(store)
        assert [h.memory.content for h in small.search("lighthouse")] == ["the lighthouse keeper"]
        assert store._backend.term_stats(["lighthouse"], ["a"]).doc_freq == {"lighthouse": 1}
        other.scope("a").save("a second lighthouse on the cape")
        assert store._backend.term_stats(["lighthouse"], ["a"]).doc_freq == {"lighthouse": 2}
        found = {h.memory.content: h.explain.matched_terms for h in small.search("lighthouse")}
        assert found == {
            "the lighthouse keeper": ("lighthouse",),
            "a second lighthouse on the cape": ("lighthouse",),
        }


def test_rows_read_in_an_older_snapshot_are_not_kept_as_current(tmp_path):
    """The cross-process window: a search's snapshot starts, another process commits, and
    the search then reads the file's change counter (which already counts that commit)
    while its rows are the older snapshot's. Kept under the newer counter, the rows hid
    the commit from every later search; they are kept under the counter noted before the
    snapshot began."""
    with _two_handles(tmp_path) as (store, other):
        small = _small_beside_a_big_scope(store)
        with store.snapshot():
            assert store._backend.term_stats(["harbour"], ["a"]).doc_freq == {"harbour": 0}
            other.scope("a").save("a second lighthouse on the cape")  # after it began
            assert store._backend.term_stats(["lighthouse"], ["a"]).doc_freq == {
                "lighthouse": 1  # the snapshot's view
            }
        assert store._backend.term_stats(["lighthouse"], ["a"]).doc_freq == {"lighthouse": 2}
        found = {h.memory.content: h.explain.matched_terms for h in small.search("lighthouse")}
        assert found["a second lighthouse on the cape"] == ("lighthouse",)


@contextlib.contextmanager
def _two_handles(tmp_path, **settings):
    """Two handles on one file (two connections, as two processes would hold)."""
    path, chosen = tmp_path / "m.db", hivemem.Settings(track_access=False, **settings)
    with (
        hivemem.open(path, embedder="none", settings=chosen) as store,
        hivemem.open(path, embedder="none", settings=chosen) as other,
    ):
        yield store, other


def _small_beside_a_big_scope(store):
    """Scope "a" with one memory beside scope "b" with twenty: a small scope's term rows
    are cached (its keys are under half the index)."""
    small, big = store.scope("a"), store.scope("b")
    small.save("the lighthouse keeper")
    for i in range(20):
        big.save(f"harbour note {i}")
    return small


def test_a_commit_just_before_a_snapshot_begins_is_not_mixed_with_kept_reads(tmp_path):
    """Another process commits just before a search's snapshot begins (the snapshot sees
    it). The change counter used to be read before that moment: the reads kept under it
    (the scopes' chunk totals) were the older file's while the snapshot's rows were the
    newer one's, one lighthouse counted in scope "a" and two found, and BM25's idf took
    the log of a negative number (CI: HTTP 500 under serve-http, two processes on one
    file). The snapshot's counter is now its own (``PooledReads._settle``)."""
    with _two_handles(tmp_path) as (store, other):
        small = _small_beside_a_big_scope(store)
        assert len(small.search("lighthouse")) == 1  # the totals are kept now
        pool, acquire, done = store._backend._pool, store._backend._pool.acquire, []

        def acquire_after_a_commit(*, snapshot=False):
            if snapshot and not done:
                done.append(other.scope("a").save("a second lighthouse on the cape"))
            return acquire(snapshot=snapshot)

        pool.acquire = acquire_after_a_commit
        with store._backend.search_view():
            stats = store._backend.term_stats(["lighthouse"], ["a"])
            found = [h.memory.content for h in small.search("lighthouse")]
        assert done
        assert (stats.total_chunks, stats.doc_freq) == (2, {"lighthouse": 2})  # one file
        assert sorted(found) == ["a second lighthouse on the cape", "the lighthouse keeper"]


def test_a_commit_while_a_snapshot_settles_keys_nothing(tmp_path):
    """The snapshot's counter is read between two snapshots of one connection; a commit
    of another process right after that read makes the second snapshot see a file the
    counter does not name: that snapshot keys nothing, its reads stay its own."""
    with _two_handles(tmp_path) as (store, other):
        small = _small_beside_a_big_scope(store)
        assert len(small.search("lighthouse")) == 1
        other.scope("a").save("a second lighthouse on the cape")  # the next view settles
        pool, watched, done = store._backend._pool, store._backend._pool.data_version, []

        def counter_then_a_commit():
            counter = watched()
            if not done:
                done.append(other.scope("a").save("a third lighthouse on the reef"))
            return counter

        pool.data_version = counter_then_a_commit
        with store.snapshot():
            assert store._backend.data_version() < 0  # keys nothing
            stats = store._backend.term_stats(["lighthouse"], ["a"])
        assert done and (stats.total_chunks, stats.doc_freq) == (3, {"lighthouse": 3})
        pool.data_version = watched
        assert len(small.search("lighthouse")) == 3
        with store.snapshot():
            assert store._backend.data_version() > 0  # settled again


def test_with_the_read_pool_off_a_commit_between_two_reads_of_a_search_is_scored(tmp_path):
    """``read_connections=0``: no snapshot, each statement reads the file as it is. A
    commit of another process between the kept chunk totals and the keyword rows counts
    two holders of a term in a scope of one chunk: scored (idf at its floor, as
    PostgreSQL's), not a log of a negative number."""
    with _two_handles(tmp_path, read_connections=0) as (store, other):
        small = _small_beside_a_big_scope(store)
        assert len(small.search("lighthouse")) == 1  # the totals are kept now
        backend, read = store._backend, store._backend._read
        done = []

        def read_after_a_commit(sql, params=(), **kw):
            if "chunks_fts_data WHERE id = 1" in sql and not done:  # the keyword rows
                done.append(other.scope("a").save("a second lighthouse on the cape"))
            return read(sql, params, **kw)

        backend._read = read_after_a_commit
        found = [h.memory.content for h in small.search("lighthouse")]
        assert done and len(found) == 2


def test_counts_read_outside_a_snapshot_across_a_commit_are_not_kept_for_one(tmp_path):
    """A search's snapshot has settled; another thread of the process, outside any
    snapshot, counts a term of the same scope while another process commits between its
    counter and its read (review of 196826e). Its rows are the newer file's: kept under
    the older counter (the small scopes' postings, the per-scope counts), the snapshot
    counted two lighthouses in a scope of one chunk."""
    with _two_handles(tmp_path) as (store, other):
        _small_beside_a_big_scope(store)
        backend, read, armed = store._backend, store._backend._read, []

        def read_after_a_commit(sql, params=(), **kw):
            if armed and threading.current_thread().name == "outside" and "MATCH" in sql:
                armed.clear()
                other.scope("a").save("a second lighthouse on the cape")
            return read(sql, params, **kw)

        backend._read = read_after_a_commit
        with store.snapshot():
            backend.term_stats(["harbour"], ["a"])  # the scope's totals kept under it
            armed.append(True)
            outside = threading.Thread(
                name="outside", target=backend.term_stats, args=(["lighthouse"], ["a"])
            )
            outside.start()
            outside.join()
            stats = backend.term_stats(["lighthouse"], ["a"])
        assert not armed  # the commit came
        assert (stats.total_chunks, stats.doc_freq) == (1, {"lighthouse": 1})  # one file
        assert backend.term_stats(["lighthouse"], ["a"]).doc_freq == {"lighthouse": 2}


def test_kept_session_neighbours_leave_the_garbage_collectors_lists(tmp_path):
    """The pairs kept per version are tuples, which collections stop tracking (a list
    is walked in every full collection for as long as nothing is written: up to 20,000
    anchors); asked again, they come back as the lists ``session_neighbours`` gives."""
    import gc

    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        mem = store.scope("a")
        ids = [mem.add_episode(f"turn {n} of the talk", f"s{n // 5}", "user").id for n in range(12)]
        backend, query, now = store._backend, Query(text="x"), store.clock()
        with backend.search_view():
            first = backend.session_neighbours(["a"], ids, query, now)
            gc.collect()  # the pairs' own tuples (of strings) first, then those of pairs
            gc.collect()
            kept = [
                pairs for by_anchor in backend._pairs.sides.values() for pairs in by_anchor.values()
            ]
            again = backend.session_neighbours(["a"], ids, query, now)
        assert len(kept) == len(ids) and not any(gc.is_tracked(pairs) for pairs in kept)
        assert again == first and all(type(pairs) is list for pairs in again.values())
        assert [n for n, _ in again[ids[1]]] == [ids[0], ids[2]]
