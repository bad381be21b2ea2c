"""Read your writes (issue 21, item 2; issue 25, item 13): a memory written through any
front end is found by meaning by the very next search of its scope, while the write
stays on the fast path (no model call there), and the worker never embeds it again.

Both backends (``any_location``: a SQLite file, then the embedded PostgreSQL). The model
calls are counted through a real embedder (``ConceptEmbedder`` records every text it
embeds; ``CountingEmbedder`` wraps the bundled model); the worker's own code path is
``store.flush()``. ``embed_in_background=False`` keeps the worker from racing the search,
so each test is deterministic.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

import pytest

import hivemem
from hivemem import Settings
from hivemem.frontends.http import create_app
from hivemem.lifecycle.indexer import SEARCH_SLICE
from hivemem.providers.embed import LocalEmbedder
from test_http import Client
from test_vectors import CAR, DOG, TEA, ConceptEmbedder

STILL = "some memories are still being embedded"
DOG_NAME = "My dog is called Rex"
PUPPY = "what is the name of my puppy"


class CountingEmbedder:
    """The bundled model, with every text it is asked to embed recorded."""

    def __init__(self) -> None:
        self.inner = LocalEmbedder()
        self.embedded: list[str] = []
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> list:
        with self._lock:
            self.embedded.extend(texts)
        return self.inner.embed_batch(texts)


def _open(location, clock, embedder, **settings):
    return hivemem.open(
        location,
        clock=clock,
        embedder=embedder,
        settings=Settings(embed_in_background=False, **settings),
    )


def _still(hits) -> bool:
    return any(note.startswith(STILL) for h in hits for note in h.explain.notes)


def test_a_write_is_found_by_meaning_by_the_next_search_and_embedded_once(any_location, clock):
    concept = ConceptEmbedder()
    store = _open(any_location, clock, concept)
    mem = store.scope("alice")
    mem.save(DOG)
    saved = mem.save(CAR)
    assert concept.embedded == []  # the write path calls no model
    assert store.vectors.pending_count() == 2

    hits = mem.search("automobile")  # shares no word with CAR: only meaning finds it
    assert [h.memory.id for h in hits] == [saved.id]
    assert set(hits[0].explain.lanes) == {"vector"}
    assert not _still(hits)
    assert store.vectors.pending_count() == 0

    assert store.flush() == 0  # the worker finds nothing left to embed
    assert sorted(concept.embedded) == sorted([CAR, DOG, "automobile"])  # each once
    store.close()


def test_scores_do_not_change_when_the_worker_catches_up(any_location, clock):
    concept = ConceptEmbedder()
    store = _open(any_location, clock, concept, track_access=False)
    mem = store.scope("alice")
    mem.save(DOG, wait=True)
    mem.save(TEA, wait=True)
    mem.save("The automobile is a motorcar parked outside")
    first = [(h.memory.id, h.score) for h in mem.search("car vehicle puppy")]
    store.flush()
    assert [(h.memory.id, h.score) for h in mem.search("car vehicle puppy")] == first
    store.close()


def test_a_burst_beyond_the_bound_is_found_by_keyword_and_says_so(any_location, clock):
    concept = ConceptEmbedder()
    store = _open(any_location, clock, concept, search_embed_max=3)
    mem = store.scope("alice")
    older = mem.save(CAR)
    for i in range(3):
        mem.save(f"note {i} about tea")
    hits = mem.search("automobile car")
    assert [h.memory.id for h in hits] == [older.id]
    assert set(hits[0].explain.lanes) == {"keyword"}  # the oldest waits for the worker
    assert _still(hits)
    assert store.vectors.pending_count() == 1  # the newest three were embedded
    assert store.flush() == 1
    assert "automobile" not in mem.search("automobile")[0].memory.content
    store.close()


def test_the_note_counts_only_the_scopes_searched(any_location, clock):
    store = _open(any_location, clock, ConceptEmbedder(), search_embed_max=0)
    store.scope("bob").save(DOG)  # queued in another scope: none of alice's business
    alice = store.scope("alice")
    alice.save(CAR, wait=True)
    hits = alice.search("car")
    assert hits and not _still(hits)
    store.close()


def test_no_note_with_the_default_embedder_after_a_write(db_path):
    """Issue 25, item 13: ``hivemem.open(path, embedder=None)`` (the default model)
    carried "some memories are still being embedded…" on every hit of the search after
    a write; the search now embeds the write first, so the note would be false."""
    store = hivemem.open(db_path, embedder=None)
    mem = store.scope("alice")
    saved = mem.save("Deploy any weekday before 15:00")
    hits = mem.search("deploy on a weekday")
    assert hits[0].memory.id == saved.id
    assert "vector" in hits[0].explain.lanes
    assert not _still(hits)
    store.close()


@pytest.mark.parametrize(
    ("memory", "paraphrase"),
    [
        (DOG_NAME, PUPPY),
        ("The user prefers tea over coffee", "favourite hot drink"),
    ],
)
def test_the_bundled_model_finds_a_paraphrase_right_after_the_write(
    any_location, clock, memory, paraphrase
):
    model = CountingEmbedder()
    store = _open(any_location, clock, model)
    mem = store.scope("alice")
    mem.save("The old billing system was retired in 2024", wait=True)
    saved = mem.save(memory)
    hits = mem.search(paraphrase)
    assert hits and hits[0].memory.id == saved.id
    assert "vector" in hits[0].explain.lanes
    assert store.flush() == 0
    assert model.embedded.count(memory) == 1
    store.close()


def test_http_write_then_search_finds_it_by_meaning(any_location, clock):
    """Through the HTTP API (in process): the write answers before any embedding, the
    next search finds it by a paraphrase, and the worker has nothing left to do."""
    model = CountingEmbedder()
    store = _open(any_location, clock, model)
    app = create_app(store)
    client = Client(app)
    token = store.tokens.create("w", {"alice": "write"}, store.clock())[1]
    made = client.post("/v1/scopes/alice/memories", token, json={"content": DOG_NAME})
    assert made.status_code == 200, made.text
    assert model.embedded == []  # the write answered without a model call
    found = client.post("/v1/scopes/alice/search", token, json={"query": PUPPY})
    assert found.status_code == 200, found.text
    hit = found.json()["results"][0]
    assert hit["snippet"] == DOG_NAME
    assert hit["source"] == "hybrid"  # the vector lane found it (no word is shared)
    assert store.flush() == 0 and model.embedded.count(DOG_NAME) == 1
    app.state.api.close()
    store.close()


def test_with_the_worker_running_the_next_search_still_finds_the_write(any_location, clock):
    """As an agent's store runs: the write wakes the worker, and the search right after
    either waits for the worker's batch or embeds the chunk itself; found either way."""
    store = hivemem.open(any_location, clock=clock, embedder=ConceptEmbedder())
    mem = store.scope("alice")
    for text in (DOG, TEA, CAR):
        saved = mem.save(text)
        word = {DOG: "puppy", TEA: "tea", CAR: "automobile"}[text]
        hits = mem.search(word)
        assert hits[0].memory.id == saved.id and "vector" in hits[0].explain.lanes
        assert not _still(hits)
    store.close()


def test_a_searchs_embedding_runs_outside_its_snapshot_and_the_search_sees_it(db_path, clock):
    """SQLite: the search asks the queue inside its snapshot (a kept read), and embeds the
    queued chunks outside any snapshot (a write that may wait for the writer: a lent
    snapshot would pin the WAL and hold back the writer's drain of the read pool, up to
    two seconds a drain), then reads through a new snapshot that sees the vectors."""
    inside: list[bool] = []

    class Watching(ConceptEmbedder):
        def embed_batch(self, texts):
            if texts != ["automobile"]:  # the chunks, not the query
                inside.append(store._backend._role.reader is not None)
            return super().embed_batch(texts)

    store = _open(db_path, clock, Watching())
    mem = store.scope("alice")
    saved = mem.save(CAR)
    assert [h.memory.id for h in mem.search("automobile")] == [saved.id]
    assert inside == [False]
    store.close()


def test_a_write_through_mcp_is_found_by_meaning_by_the_next_search(db_path, clock):
    """Through the MCP server (in process, the SDK's client): ``memory_save`` answers
    before any model call, and the next ``memory_search`` finds it by a paraphrase."""
    anyio = pytest.importorskip("anyio")
    mcp = pytest.importorskip("mcp")
    from hivemem.frontends import mcp as mcp_server

    model = CountingEmbedder()
    store = _open(db_path, clock, model)
    mem = mcp_server.bind(store, "alice")
    mem.save("The old billing system was retired in 2024", wait=True)
    model.embedded.clear()

    async def main():
        async with mcp.Client(mcp_server.create_server(mem)) as client:
            saved = await client.call_tool("memory_save", {"content": DOG_NAME})
            assert model.embedded == []  # the write answered without a model call
            found = await client.call_tool("memory_search", {"query": PUPPY})
            return saved, found

    saved, found = anyio.run(main)
    assert not saved.is_error and not found.is_error, found.content[0].text
    results = found.structured_content["results"]
    assert results[0]["snippet"] == DOG_NAME
    assert results[0]["source"] == "hybrid"  # the vector lane found it (no word is shared)
    assert store.flush() == 0 and model.embedded.count(DOG_NAME) == 1
    store.close()


def test_a_write_through_the_cli_is_found_by_meaning_by_the_next_search(db_path):
    """The CLI: ``hivemem add`` then ``hivemem search`` (two invocations, the bundled
    model), the paraphrase found by its vector lane."""
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    runner = CliRunner()

    def run(*args):
        result = runner.invoke(main, ["--db", str(db_path), *args], env={"HIVEMEM_EMBEDDER": None})
        assert result.exit_code == 0, (result.output, result.exception)
        return result.stdout

    run("add", "The old billing system was retired in 2024")
    run("add", DOG_NAME)
    found = json.loads(run("search", PUPPY, "--json"))
    assert found[0]["memory"]["content"] == DOG_NAME
    assert "vector" in found[0]["explain"]["lanes"]


class SlowEmbedder(ConceptEmbedder):
    """A model taking ``delay`` seconds a call (a big model on a small machine)."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def embed_batch(self, texts):
        time.sleep(self.delay)
        return super().embed_batch(texts)


def test_a_search_embeds_the_pending_chunks_only_within_its_time_bound(any_location, clock):
    """``search_embed_ms``: the search embeds slices of ``SEARCH_SLICE`` newest first
    until its time is up (the first slice always runs); the rest wait for the worker,
    found by keyword meanwhile, with the note; nothing is lost."""
    slow = SlowEmbedder(0.08)
    store = _open(any_location, clock, slow, search_embed_ms=30)
    mem = store.scope("alice")
    older = mem.save(CAR)
    for i in range(2 * SEARCH_SLICE):
        mem.save(f"note {i} about tea")
    hits = mem.search("automobile car")
    assert [h.memory.id for h in hits] == [older.id]
    assert set(hits[0].explain.lanes) == {"keyword"}  # past the bound: keyword only
    assert _still(hits)
    assert store.vectors.pending_count() == SEARCH_SLICE + 1  # one slice embedded
    assert store.flush() == SEARCH_SLICE + 1  # the worker embeds the rest
    assert "vector" in mem.search("automobile")[0].explain.lanes
    store.close()

    # The same burst with room for it: every slice runs, nothing is left to the worker.
    store = _open(any_location, clock, SlowEmbedder(0.08), search_embed_ms=10_000)
    bob = store.scope("bob")
    bob.save(CAR)
    for i in range(2 * SEARCH_SLICE):
        bob.save(f"note {i} about tea")
    assert "vector" in bob.search("automobile")[0].explain.lanes
    assert store.vectors.pending_count() == 0
    store.close()


def test_the_benchs_row_counts_each_write_the_next_search_finds_by_meaning():
    """``hivemem bench``'s read-your-writes row (the bundled model, the worker running):
    every write found by the search right after it, and the same rounds without the
    search's embedding beside them."""
    from hivemem.evaluation.bench import CorpusGenerator
    from hivemem.evaluation.bench_ryw import bench_read_your_writes

    row = bench_read_your_writes(
        CorpusGenerator(), Settings(), lambda *_: None, writes=6, preload=30
    )
    assert (row.writes, row.found) == (6, 6)
    assert 0 <= row.found_without <= 6
    assert row.model == LocalEmbedder().identity
    assert row.first_search.count == row.first_search_without.count == 6
