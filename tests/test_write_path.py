"""The SQLite write path in bulk (``insert_many``: one statement for the rows, one for
their chunks, the insertion order numbered by the insert itself) keeps every rule of one
row at a time: the order, the chunks and their queue, the entity links, and a refused
row named in its error with nothing of the batch left behind."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

import hivemem
from hivemem.clock import to_text
from hivemem.errors import Conflict
from hivemem.providers.embed import HashEmbedder
from hivemem.providers.entities import extract


def _rows(backend, sql, params=()):
    return [tuple(r) for r in backend._read(sql, params)]


def test_a_batch_is_numbered_chunked_queued_and_linked_like_single_writes(db_path):
    with hivemem.open(db_path, embedder="none") as store:
        mem = store.scope("a")
        first = mem.add_episode("Ana opened the ticket", session_id="s", role="user")
        batch = mem.add_episodes(
            [
                {"content": f"Bruno answered Ana, turn {i}", "session_id": "s", "role": "u"}
                for i in range(5)
            ]
        )
        last = mem.add_episode("Ana closed the ticket", session_id="s", role="user")
        backend = store._backend
        ids = [first.id, *(m.id for m in batch), last.id]
        seqs = _rows(backend, "SELECT id, seq FROM memories ORDER BY seq")
        assert [i for i, _ in seqs] == ids
        assert [s for _, s in seqs] == list(range(seqs[0][1], seqs[0][1] + 7))
        chunks = _rows(backend, "SELECT memory_id, text FROM chunks ORDER BY id")
        assert chunks == [(m.id, m.content) for m in (first, *batch, last)]
        queued = _rows(backend, "SELECT COUNT(*) FROM vector_queue")
        assert queued == [(7,)]
        counts = dict(_rows(backend, "SELECT canonical, mention_count FROM entities"))
        assert counts == {"ana": 7, "bruno": 5}
        found = mem.search("Bruno answered", limit=10)
        assert {m.id for m in batch} <= {h.memory.id for h in found}


def test_a_refused_row_in_a_batch_is_named_and_nothing_of_the_batch_stays(db_path):
    with hivemem.open(db_path, embedder="none") as store:
        holder = store.scope("a").save("the current value", key="k")
        template = store.scope("a").save("a row to copy")
        backend = store._backend
        before = _rows(backend, "SELECT id FROM memories ORDER BY seq")

        def row(content, **changes):
            fields = {"id": f"0000-{content}", "content": content, "key": None, **changes}
            return dataclasses.replace(template, **fields)

        keyed = [row("one"), row("two", key="k"), row("three")]
        refused = "key 'k' already has an active memory in scope 'a'"
        with pytest.raises(Conflict, match=refused), store.atomic():
            store.memories.insert_many([(m, [m.content], extract(m.content)) for m in keyed])
        taken = [row("four"), dataclasses.replace(row("five"), id=holder.id)]
        taken_id = f"a memory with id {holder.id} already exists"
        with pytest.raises(Conflict, match=taken_id), store.atomic():
            store.memories.insert_many([(m, [m.content], ()) for m in taken])
        assert _rows(backend, "SELECT id FROM memories ORDER BY seq") == before
        assert _rows(backend, "SELECT COUNT(*) FROM chunks") == [(2,)]


class _Recording(HashEmbedder):
    """The hash embedder, keeping the texts of each model call."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[list[str]] = []

    def embed_batch(self, texts):
        self.calls.append(list(texts))
        return super().embed_batch(texts)


def test_the_worker_sends_a_batch_to_the_model_in_length_order(db_path):
    # Trigger: the worker's batch (chunks of every writer and scope, in queue order) went
    # to the model in slices of STOP_SLICE as queued. Why: each call pads its texts to the
    # longest of the slice (LoCoMo turns: 2.19x the real tokens). Outcome: sliced in
    # length order (1.22x), every call's texts of a near length.
    embedder = _Recording()
    lengths = [(7 * i) % 40 + 1 for i in range(80)]
    items = [
        {"content": " ".join(f"w{i}x{j}" for j in range(n)), "session_id": "s", "role": "u"}
        for i, n in enumerate(lengths)
    ]
    with hivemem.open(db_path, embedder=embedder) as store:
        store.scope("a").add_episodes(items[:40])
        store.scope("b").add_episodes(items[40:])
        deadline = time.monotonic() + 30
        while store.indexer.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.indexer.pending() == 0
    sent = [text for call in embedder.calls for text in call]
    assert sorted(sent) == sorted(item["content"] for item in items)
    for call in embedder.calls:
        sizes = [len(text) for text in call]
        assert sizes == sorted(sizes)


@pytest.mark.parametrize(
    "when",
    [
        datetime(2026, 11, 27, 21, 20, 3, 777105, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(1999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-8))),
        datetime(999, 5, 1, 12, 0, tzinfo=UTC),  # a year strftime does not pad
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
)
def test_stored_times_keep_their_text_form(when):
    # to_text went from strftime to isoformat (the write path formats several per row):
    # the stored text must not change, or stored and new times would no longer compare.
    assert to_text(when) == when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_the_hot_path_replaces_no_row(db_path):
    """``INSERT OR REPLACE`` with foreign keys on cost a write five times the insert of
    its categorizer row (issue 24): the hot path's statements upsert instead, and a
    confidence noted again for the same memory still replaces the first."""
    with hivemem.open(db_path, embedder="none") as store:
        mem = store.scope("a")
        mem.add_episode("warm up", session_id="s", role="user")
        backend = store._backend
        statements: list[str] = []
        backend._conn.set_trace_callback(statements.append)
        try:
            episode = mem.add_episode("Ana asked about Berlin", session_id="s", role="user")
            mem.add_episodes(
                [{"content": f"turn {i}", "session_id": "s", "role": "u"} for i in range(3)]
            )
        finally:
            backend._conn.set_trace_callback(None)
        assert any("memory_categories" in s for s in statements)
        assert not [s for s in statements if "REPLACE" in s.upper() and "fts" not in s]
        with backend.atomic():
            store.job_state.note_categories([(episode.id, 0.25)])
        assert store.job_state.categories(["a"], [episode.id]) == {episode.id: 0.25}
