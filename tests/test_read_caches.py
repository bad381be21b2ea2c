"""Reads the SQLite backend keeps until the file changes (SQLite-only).

Session neighbours and the small scopes' rows per term (``termcounts.Postings``) are
kept per ``_version()``: this connection's commits and every other connection's
(``PRAGMA data_version``). A write through the same store or through another process's
connection must show at once.
"""

from __future__ import annotations

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
    path = tmp_path / "m.db"
    settings = hivemem.Settings(track_access=False)
    with (
        hivemem.open(path, embedder="none", settings=settings) as store,
        hivemem.open(path, embedder="none", settings=settings) as other,
    ):
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
    path = tmp_path / "m.db"
    settings = hivemem.Settings(track_access=False)
    with (
        hivemem.open(path, embedder="none", settings=settings) as store,
        hivemem.open(path, embedder="none", settings=settings) as other,
    ):
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


def _small_beside_a_big_scope(store):
    """Scope "a" with one memory beside scope "b" with twenty: a small scope's term rows
    are cached (its keys are under half the index)."""
    small, big = store.scope("a"), store.scope("b")
    small.save("the lighthouse keeper")
    for i in range(20):
        big.save(f"harbour note {i}")
    return small
