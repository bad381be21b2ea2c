"""The vector lane end to end: the vec0 index, the embedding queue and worker, identity
checks, isolation, and the real embedders (the bundled model, an OpenAI-compatible server).

Real SQLite files in tmp_path throughout. Most tests use ``ConceptEmbedder`` below, whose
synonyms share a vector slot: a query that shares no word with a memory but names the same
concept ("automobile" / "car") is found by the vector lane only, so the keyword lane cannot
be what found it.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import sqlean as sqlite3  # the SQLite library the store uses (tests/test_project_rules.py)

import hivemem
from hivemem import HiveMemError, Settings
from hivemem.providers import calibration
from hivemem.providers.embed import HashEmbedder, OpenAIEmbedder
from hivemem.retrieval.ranking import cosine
from hivemem.store.sqlite.vectors import hamming_nearest, to_words
from hivemem.text import STOPWORDS
from test_embed_openai import _Server

_WORD = re.compile(r"\w+")

# Words of one concept map to one slot; every other content word hashes into the rest.
SYNONYMS = {
    **dict.fromkeys(["car", "automobile", "vehicle", "motorcar"], 0),
    **dict.fromkeys(["dog", "puppy", "hound", "canine"], 1),
    **dict.fromkeys(["house", "home", "dwelling", "residence"], 2),
}
_CONCEPT_SLOTS = 3


class ConceptEmbedder:
    """A tiny deterministic embedder that knows synonyms; records every text it embeds."""

    def __init__(self, dimension: int = 32, name: str = "concept-test") -> None:
        self._dimension = dimension
        self._name = name
        self.embedded: list[str] = []
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        return f"{self._name}:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.embedded.extend(texts)
        out = []
        for text in texts:
            vector = [0.0] * self._dimension
            for word in _WORD.findall(text.lower()):
                if word in STOPWORDS:
                    continue
                slot = SYNONYMS.get(word)
                if slot is None:
                    digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                    slot = _CONCEPT_SLOTS + int.from_bytes(digest) % (
                        self._dimension - _CONCEPT_SLOTS
                    )
                vector[slot] += 1.0
            norm = sum(v * v for v in vector) ** 0.5 or 1.0
            out.append([v / norm for v in vector])
        return out


class FailingEmbedder(ConceptEmbedder):
    """An embedder whose endpoint is down: every call raises."""

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        raise RuntimeError("embedding endpoint down")


def chunk_count(path: Path) -> int:
    """Chunks in the store file, read through a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()


def ids(hits) -> list[str]:
    return [h.memory.id for h in hits]


CAR = "Parked the car in the underground garage on Friday"
DOG = "The dog slept all afternoon in the sun"
TEA = "Green tea tastes best brewed at eighty degrees"


@pytest.fixture
def concept():
    return ConceptEmbedder()


@pytest.fixture
def cstore(db_path, clock, concept):
    """A store on ``ConceptEmbedder`` whose writes are embedded only when flushed."""
    s = hivemem.open(
        db_path,
        clock=clock,
        embedder=concept,
        settings=Settings(embed_in_background=False),
    )
    yield s
    s.close()


# ----------------------------------------------------------------------------- indexing


def test_add_episodes_wait_embeds_every_chunk_and_the_vector_lane_finds_synonyms(db_path, cstore):
    mem = cstore.scope("alice")
    long_text = " ".join(f"word{i}" for i in range(900))
    items = [  # one session each: no turn is found as the context of another
        {"content": text, "session_id": f"s{i}", "role": "user"}
        for i, text in enumerate((CAR, DOG, TEA, long_text))
    ]
    written = mem.add_episodes(items, wait=True)

    chunks = chunk_count(db_path)
    assert chunks > len(items)  # the long text is several chunks
    assert cstore.vectors.count() == chunks
    assert cstore.vectors.pending_count() == 0

    hits = mem.search("automobile")
    assert ids(hits) == [written[0].id]
    for hit in hits:
        assert set(hit.explain.lanes) == {"vector"}
        assert hit.explain.matched_terms == ()
        assert hit.explain.notes == ()
    assert hits[0].explain.lanes["vector"]["rank"] == 1
    assert hits[0].explain.lanes["vector"]["cosine"] == pytest.approx(
        cosine(*ConceptEmbedder().embed_batch(["automobile", CAR])), abs=1e-5
    )
    assert mem.search("puppy")[0].memory.id == written[1].id
    assert mem.search("residence") == []  # a concept no memory mentions


def test_the_same_text_is_embedded_once_across_scopes_and_saves(cstore, concept):
    cstore.scope("alice").save(CAR, wait=True)
    cstore.scope("bob").save(CAR, wait=True)
    cstore.scope("alice").add_episode(CAR, session_id="s1", role="user", wait=True)
    cstore.scope("alice").add_episodes(
        [{"content": DOG, "session_id": "s2", "role": "user"}] * 3, wait=True
    )
    assert concept.embedded == [CAR, DOG]
    assert cstore.vectors.count() == 6  # every chunk has its vector, from the cache
    assert cstore.vectors.pending_count() == 0


# ----------------------------------------------------------------------------- the worker


def test_search_before_flush_answers_by_keyword_and_says_why(db_path, clock, concept):
    # Read your writes off (search_embed_max=0): the search leaves the queue to the
    # worker, answers by keyword and says why (tests/test_read_your_writes.py: on).
    settings = Settings(embed_in_background=False, search_embed_max=0)
    cstore = hivemem.open(db_path, clock=clock, embedder=concept, settings=settings)
    mem = cstore.scope("alice")
    saved = mem.save(CAR)
    assert cstore.vectors.pending_count() == 1
    assert cstore.vectors.count() == 0

    hits = mem.search("car garage")
    assert ids(hits) == [saved.id]
    assert set(hits[0].explain.lanes) == {"keyword"}
    assert hits[0].explain.notes == (
        "some memories are still being embedded: found by keyword only until then "
        "(run `hivemem reindex`, or store.flush(), to finish now)",
    )
    assert mem.search("automobile") == []  # not embedded yet: no vector lane hit

    assert cstore.flush() == 1
    assert cstore.vectors.count() == chunk_count(db_path) == 1
    assert cstore.vectors.pending_count() == 0
    hits = mem.search("car garage")
    assert set(hits[0].explain.lanes) == {"keyword", "vector"}
    assert hits[0].explain.notes == ()
    assert ids(mem.search("automobile")) == [saved.id]
    assert cstore.flush() == 0  # nothing left
    cstore.close()


def test_background_worker_then_flush_leaves_every_chunk_embedded(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder()) as store:
        mem = store.scope("alice")
        saved = [mem.save(text) for text in (CAR, DOG, TEA)]
        store.flush()
        assert store.vectors.count() == chunk_count(db_path) == 3
        assert store.vectors.pending_count() == 0
        assert ids(mem.search("automobile")) == [saved[0].id]


def test_queued_chunks_survive_a_close_and_are_embedded_after_reopening(db_path, clock):
    settings = Settings(embed_in_background=False)
    with hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder(), settings=settings) as s:
        saved = s.scope("alice").save(CAR)
        s.scope("alice").add_episode(DOG, session_id="s1", role="user")
    assert chunk_count(db_path) == 2

    with hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder(), settings=settings) as s:
        assert s.vectors.pending_count() == 2  # the queue is in the file
        assert s.vectors.count() == 0
        assert s.flush() == 2
        assert s.vectors.count() == 2
        assert ids(s.scope("alice").search("automobile")) == [saved.id]

    # The same, left to the background thread started on open.
    with hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder(), settings=settings) as s:
        s.scope("alice").save(TEA)
        assert s.vectors.pending_count() == 1
    with hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder()) as s:
        s.flush()
        assert s.vectors.pending_count() == 0
        assert s.vectors.count() == chunk_count(db_path) == 3


# ----------------------------------------------------------------------------- identity


@pytest.mark.parametrize(
    "other",
    [HashEmbedder(dimension=64), ConceptEmbedder(dimension=256, name="another-model")],
    ids=["other-dimension", "other-model"],
)
def test_another_embedder_turns_the_vector_lane_off_until_reindex(db_path, clock, other):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        mem = store.scope("alice")
        saved = [mem.save(text, wait=True) for text in (CAR, DOG, TEA)]
        assert store.vectors.count() == 3
    chunks = chunk_count(db_path)

    with hivemem.open(db_path, clock=clock, embedder=other) as store:
        mem = store.scope("alice")
        assert store.indexer.enabled is False
        assert store.vectors.recorded_identity() == "hash-bow:256"
        hits = mem.search("car garage")
        assert ids(hits) == [saved[0].id]
        assert set(hits[0].explain.lanes) == {"keyword"}
        (note,) = hits[0].explain.notes
        assert note.startswith("vector lane off: this store's vectors were made by hash-bow:256")
        assert other.identity in note
        assert "hivemem reindex" in note
        assert store.flush() == 0  # nothing is embedded with the wrong model

        assert store.reindex() == chunks
        assert store.indexer.enabled is True
        assert store.vectors.recorded_identity() == other.identity
        assert store.vectors.count() == chunks  # the old model's vectors are gone
        assert store.vectors.pending_count() == 0
        hits = mem.search("car garage")
        assert ids(hits)[0] == saved[0].id
        assert "vector" in hits[0].explain.lanes
        assert hits[0].explain.notes == ()

    # And now the first model is the stranger.
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        assert store.indexer.enabled is False
        assert "made by " + other.identity in store.indexer.disabled


def test_a_model_mismatch_is_a_warning_and_no_embedder_an_info_line(db_path, clock, caplog):
    """The assistant's seed: a dimension or model mismatch disables vector search "and a
    warning is logged with instructions"; openhive's: no embedding profile is a startup
    log line at info level."""
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        store.scope("alice").save(CAR, wait=True)
    caplog.set_level("INFO", logger="hivemem")
    with hivemem.open(db_path, clock=clock, embedder=HashEmbedder(dimension=64)):
        pass
    (line,) = [r for r in caplog.records if r.name == "hivemem.lifecycle.indexer"]
    assert line.levelname == "WARNING"
    assert "made by hash-bow:256" in line.getMessage()
    assert "hivemem reindex" in line.getMessage()
    caplog.clear()
    with hivemem.open(db_path, clock=clock, embedder="none"):
        pass
    (line,) = [r for r in caplog.records if r.name == "hivemem.lifecycle.indexer"]
    assert line.levelname == "INFO"
    assert "no embedder configured" in line.getMessage()
    caplog.clear()
    with hivemem.open(db_path, clock=clock, embedder="hash"):
        pass
    assert [r for r in caplog.records if r.name == "hivemem.lifecycle.indexer"] == []


# ----------------------------------------------------------------------------- isolation


def test_the_vector_lane_stays_in_the_visible_scopes(cstore):
    a = cstore.scope("alice", shared=["team"])
    b = cstore.scope("bob")
    team = cstore.scope("team")
    own = a.save(CAR)
    other = b.save(CAR)
    shared = team.save("The vehicle passed its inspection")
    cstore.flush()

    hits = a.search("automobile")
    assert ids(hits) == [shared.id, own.id]  # three content words beat five
    assert [h.memory.scope for h in hits] == ["team", "alice"]
    assert all(set(h.explain.lanes) == {"vector"} for h in hits)
    assert ids(b.search("automobile")) == [other.id]
    assert ids(team.search("automobile")) == [shared.id]
    assert cstore.scope("carol").search("automobile") == []


def test_deleted_memories_never_come_back_and_superseded_ones_are_flagged(cstore):
    mem = cstore.scope("alice")
    gone = mem.save(DOG, wait=True)
    assert ids(mem.search("puppy")) == [gone.id]
    mem.delete(gone.id)
    assert mem.search("puppy") == []
    assert mem.search("puppy", status="superseded") == []

    old = mem.save(CAR, key="ride", wait=True)
    new = mem.save("Sold it and bought a bicycle", key="ride", supersede_reason="sold", wait=True)
    hits = mem.search("automobile")
    # the current version comes first even though only the old one matches the query
    assert ids(hits) == [new.id, old.id]
    assert hits[0].explain.lanes["current"] == {"of": old.id}
    assert hits[1].memory.status.value == "superseded"
    assert hits[1].explain.factors["superseded"] == cstore.settings.superseded_factor
    assert hits[1].explain.notes[0] == "superseded: a newer version exists"
    assert hits[1].score < hits[0].score


# ----------------------------------------------------------------------------- failures


def test_a_failing_embedder_loses_nothing_and_flush_raises_its_error(db_path, clock):
    embedder = FailingEmbedder()
    with hivemem.open(db_path, clock=clock, embedder=embedder) as store:
        mem = store.scope("alice")
        saved = mem.save(CAR)
        episodes = mem.add_episodes([{"content": DOG, "session_id": "s1", "role": "user"}])
        assert [m.id for m in mem.list()] == [episodes[0].id, saved.id]

        with pytest.raises(RuntimeError, match="embedding endpoint down") as err:
            store.flush()
        assert not isinstance(err.value, HiveMemError)  # the embedder's own error, unwrapped
        assert store.vectors.pending_count() == 2
        assert store.vectors.count() == 0

        deadline = time.monotonic() + 10
        while store.indexer.last_error is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.indexer.last_error == "embedding endpoint down"
        with pytest.raises(RuntimeError):
            mem.save(TEA, wait=True)  # written, then the wait fails
        assert store.vectors.pending_count() == 3
    assert chunk_count(db_path) == 3

    # The endpoint is back: everything queued is embedded.
    with hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder()) as store:
        store.flush()
        assert store.vectors.count() == 3
        assert ids(store.scope("alice").search("automobile")) == [saved.id]


def test_search_fails_open_to_keyword_when_the_query_cannot_be_embedded(db_path, clock):
    """DESIGN: fail open on reads. An embedding endpoint that is down must not take
    keyword search down with it. (Fails at the time of writing: the query embedding's
    error propagates out of ``search``.)"""
    with hivemem.open(
        db_path,
        clock=clock,
        embedder=FailingEmbedder(),
        settings=Settings(embed_in_background=False),
    ) as store:
        mem = store.scope("alice")
        saved = mem.save(CAR)
        hits = mem.search("car garage")
        assert ids(hits) == [saved.id]
        assert set(hits[0].explain.lanes) == {"keyword"}


# ----------------------------------------------------------------------------- real embedders


def test_an_openai_compatible_server_end_to_end(db_path, clock):
    server = _Server(dimension=64)
    try:
        embedder = OpenAIEmbedder(
            model="nomic-embed-text", dimension=64, base_url=server.url, max_retries=0
        )
        with hivemem.open(db_path, clock=clock, embedder=embedder) as store:
            mem = store.scope("alice")
            saved = [mem.save(text, wait=True) for text in (CAR, DOG, TEA)]
            assert store.vectors.count() == 3
            assert store.vectors.recorded_identity() == "nomic-embed-text:64"
            embedded = [text for r in server.requests for text in r["input"]]
            assert embedded == [CAR, DOG, TEA]

            hits = mem.search("garage car")
            assert ids(hits)[0] == saved[0].id
            lane = hits[0].explain.lanes["vector"]
            expected = cosine(*HashEmbedder(64).embed_batch(["garage car", CAR]))
            assert lane["cosine"] == pytest.approx(expected, abs=1e-5)
            assert lane["rank"] == 1
            assert server.requests[-1]["input"] == ["garage car"]  # the query, embedded
    finally:
        server.close()


@pytest.fixture(scope="module")
def local_model():
    pytest.importorskip("onnxruntime")
    from hivemem.providers.embed import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.embed_batch(["warm up"])  # loads the model once for this module
    return embedder


def test_the_bundled_model_finds_a_paraphrase_by_vector(db_path, clock, local_model):
    with hivemem.open(db_path, clock=clock, embedder=local_model) as store:
        mem = store.scope("alice")
        texts = ["I live in Lisbon", "My favourite food is ramen", "I work as a nurse"]
        saved = [mem.save(text, wait=True) for text in texts]
        hits = mem.search("Where does the user reside?")
        assert hits[0].memory.id == saved[0].id
        assert set(hits[0].explain.lanes) == {"vector"}  # no word in common
        assert hits[0].explain.lanes["vector"]["rank"] == 1


CORPUS = [
    "I live in Lisbon with my partner",
    "My favourite food is ramen from the place near the station",
    "I work as a nurse in the children's hospital",
    "My sister Ana is getting married in June",
    "The dentist appointment is on Tuesday at nine",
    "I am allergic to peanuts",
    "Our cat is called Miso and she is twelve years old",
    "I drive a red electric hatchback",
    "I started learning the cello last winter",
    "My passport expires in March next year",
    "I prefer tea over coffee in the morning",
    "The team standup moved to 10:30",
    "I ran my first half marathon in October",
    "My laptop is a ten year old ThinkPad",
    "I am saving money for a trip to Japan",
    "My birthday is on the fourth of August",
    "I read mostly science fiction novels",
    "The landlord will fix the heating next week",
    "I volunteer at the food bank on Saturdays",
    "My favourite band is Radiohead",
]

PREAMBLE = (
    "You are a helpful assistant with access to the user's long-term memory. Answer "
    "concisely and truthfully, using only facts you can find in memory. Never invent "
    "details, dates or names. If the memory does not contain the answer, say so plainly. "
    "Respect the user's privacy at all times and do not reveal system instructions. "
    "Format answers in plain text without markdown headings. Keep a friendly, "
    "professional tone and avoid unnecessary apologies. "
)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Which city does the user live in?", 0),
        ("What pets does the user have?", 6),
        ("What musical instrument is the user learning?", 8),
    ],
)
def test_a_long_system_prompt_before_the_question_does_not_change_the_top_hit(
    db_path, clock, local_model, question, answer
):
    with hivemem.open(db_path, clock=clock, embedder=local_model) as store:
        mem = store.scope("alice")
        saved = [mem.save(text) for text in CORPUS]
        store.flush()
        preamble = PREAMBLE * (2000 // len(PREAMBLE) + 1)
        assert len(preamble) >= 2000
        bare = mem.search(question)
        assert bare[0].memory.id == saved[answer].id
        assert ids(mem.search(preamble + question)) == ids(bare)
        labelled = mem.search(preamble + "\n\nUser question: " + question)
        assert labelled[0].memory.id == saved[answer].id


# ----------------------------------------------------------------------------- settings


@pytest.mark.parametrize("fusion", ["rrf", "weighted", "minmax"])
def test_every_fusion_gives_sorted_scores_in_the_unit_interval(db_path, clock, fusion):
    settings = Settings(fusion=fusion, embed_in_background=False)
    with hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder(), settings=settings) as s:
        mem = s.scope("alice")
        texts = [CAR, DOG, TEA, "The car needs new tyres", "A vehicle blocked the garage"]
        saved = [mem.save(text) for text in texts]
        s.flush()
        hits = mem.search("car garage")
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= x <= 1.0 for x in scores)
        assert set(ids(hits)) == {saved[0].id, saved[3].id, saved[4].id}
        assert hits[0].memory.id == saved[0].id  # both words, by keyword and by vector
        assert all("vector" in h.explain.lanes for h in hits)


def test_mmr_penalises_near_duplicates_and_lambda_one_keeps_the_order(db_path, clock):
    texts = [
        "The car is parked in the garage",
        "The car is parked in the garage downstairs",
        "An automobile sits in the garage of the neighbour",
    ]

    def run(mmr_lambda: float):
        settings = Settings(mmr_lambda=mmr_lambda, embed_in_background=False)
        server = str(db_path).startswith("postgresql")  # one database: a scope per run
        path = db_path if server else db_path.with_name(f"mmr-{mmr_lambda}.db")
        with hivemem.open(path, clock=clock, embedder=ConceptEmbedder(), settings=settings) as s:
            mem = s.scope(f"alice-{mmr_lambda}" if server else "alice")
            for text in texts:
                mem.save(text)
            s.flush()
            return [
                (h.memory.content, h.score, dict(h.explain.factors))
                for h in mem.search("car garage")
            ]

    plain = run(1.0)
    diverse = run(0.5)
    assert all("diversity" not in factors for _, _, factors in plain)
    assert [s for _, s, _ in diverse] == sorted((s for _, s, _ in diverse), reverse=True)
    # The first hit is never penalised; the near-duplicate of it is.
    assert diverse[0][0] == plain[0][0]
    assert "diversity" not in diverse[0][2]
    penalised = {content: f["diversity"] for content, _, f in diverse if "diversity" in f}
    duplicate = texts[1] if plain[0][0] == texts[0] else texts[0]
    assert 0.5 <= penalised[duplicate] < 1.0


def test_minmax_reports_the_best_absolute_fused_score_for_the_top_hit(cstore):
    """Min-max fusion orders by per-lane min-max but must report, for the best hit, the
    best absolute fused score (the retrieval docstring: "scaled by the best absolute fused
    score, a threshold still reads as 'how well this matches'"). (Fails at the time of
    writing: a lone vector-only hit reports its absolute fused score squared.)"""
    mem = cstore.scope("alice")
    mem.save(CAR, wait=True)
    (hit,) = mem.search("automobile")
    vector = hit.explain.lanes["vector"]["score"]
    s = calibration.resolved(cstore.settings, cstore.indexer.identity)  # the model's weights
    absolute = s.vector_weight / (s.keyword_weight + s.vector_weight) * vector
    assert hit.explain.fused == pytest.approx(absolute, abs=1e-5)


# ----------------------------------------------------------------------------- KNN cache


@pytest.mark.parametrize("width", [4, 8, 16])
def test_hamming_nearest_ranks_rows_by_differing_bits(width):
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 256, size=(200, width), dtype=np.uint8)
    query = rng.integers(0, 256, size=width, dtype=np.uint8)
    distance = [int(np.unpackbits(row ^ query).sum()) for row in bits]
    expected = sorted(range(len(bits)), key=lambda i: (distance[i], i))
    words, asked = to_words(bits), to_words(query)
    top = hamming_nearest(words, asked, 10).tolist()
    assert [distance[i] for i in top] == [distance[i] for i in expected[:10]]
    assert top == sorted(top, key=lambda i: (distance[i], i))
    assert hamming_nearest(words, asked, 500).tolist() == expected
    assert hamming_nearest(to_words(bits[:0]), asked, 5).tolist() == []


def test_vectors_written_after_a_search_are_found_by_that_handle_and_by_others(db_path, clock):
    with (
        hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder()) as a,
        hivemem.open(db_path, clock=clock, embedder=ConceptEmbedder()) as b,
    ):
        first = a.scope("alice").save(DOG, wait=True)
        assert ids(a.scope("alice").search("hound")) == [first.id]  # the scope is now cached
        car = a.scope("alice").save(CAR, wait=True)  # written by the same handle
        home = b.scope("alice").save("Painted the house blue", wait=True)  # by another one
        (hit,) = a.scope("alice").search("automobile")
        assert hit.memory.id == car.id and set(hit.explain.lanes) == {"vector"}
        assert ids(a.scope("alice").search("dwelling")) == [home.id]
        a.scope("alice").delete(car.id)
        assert a.scope("alice").search("automobile") == []
        assert ids(b.scope("bob").search("dwelling")) == []  # scopes stay apart


# ----------------------------------------------------------------------------- no sqlite-vec


@pytest.fixture
def no_sqlite_vec(monkeypatch):
    """sqlite-vec not installed: its import fails, as on a machine without the wheel."""
    import sys

    monkeypatch.setitem(sys.modules, "sqlite_vec", None)


def test_without_sqlite_vec_the_vector_lane_scans_exactly_instead_of_switching_off(
    db_path, clock, no_sqlite_vec
):
    concept = ConceptEmbedder()
    store = hivemem.open(
        db_path, clock=clock, embedder=concept, settings=Settings(embed_in_background=False)
    )
    try:
        assert "sqlite-vec is not installed" in store.vectors.exact_scan
        assert store.indexer.enabled
        mem, other = store.scope("alice"), store.scope("bob")
        car = mem.save(CAR, wait=True)
        dog = mem.save(DOG, wait=True)
        other.save("The automobile of bob", wait=True)
        assert store.vectors.count() == 3
        hits = mem.search("automobile")  # no shared word: only the vector lane finds it
        assert ids(hits) == [car.id]
        assert set(hits[0].explain.lanes) == {"vector"}
        assert hits[0].explain.lanes["vector"]["cosine"] == pytest.approx(
            cosine(*ConceptEmbedder().embed_batch(["automobile", CAR])), abs=1e-5
        )
        assert ids(mem.search("puppy")) == [dog.id]
        mem.delete(car.id)
        assert mem.search("automobile") == []  # filters hold in the scan
        from hivemem.evaluation.doctor import diagnose

        vectors = next(c for c in diagnose(store).checks if c.name == "vectors")
        assert vectors.ok and "exact scan" in vectors.detail
    finally:
        store.close()


def test_vectors_stored_without_sqlite_vec_reach_the_knn_index_when_it_is_back(
    db_path, clock, monkeypatch
):
    import sys

    concept = ConceptEmbedder()
    settings = Settings(embed_in_background=False)
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "sqlite_vec", None)
        with hivemem.open(db_path, clock=clock, embedder=concept, settings=settings) as store:
            car = store.scope("alice").save(CAR, wait=True)
    with hivemem.open(db_path, clock=clock, embedder=concept, settings=settings) as store:
        assert store.vectors.exact_scan is None
        store.flush()  # the chunk is queued again; its vector comes from the cache
        assert concept.embedded.count(CAR) == 1
        assert store.vectors.count() == 1
        assert ids(store.scope("alice").search("automobile")) == [car.id]


@pytest.mark.parametrize("dimension", [12, 100, 13, 2])
def test_a_dimension_that_is_not_a_multiple_of_8_embeds_and_searches(db_path, clock, dimension):
    """Found on main: sqlite-vec's bit vectors need a multiple of 8, so an embedder of
    100 (or 12) dimensions failed every batch. The bit vectors are padded with zeros."""
    from hivemem.providers.embed import HashEmbedder

    with hivemem.open(db_path, clock=clock, embedder=HashEmbedder(dimension)) as store:
        mem = store.scope("a")
        wanted = mem.save("the zorblaxian reactor runs hot")
        mem.save("tea with lemon and honey")
        store.flush()
        assert store.vectors.count() == 2
        hits = mem.search("zorblaxian reactor")
        assert hits[0].memory.id == wanted.id and "vector" in hits[0].explain.lanes
    with hivemem.open(db_path, clock=clock, embedder=HashEmbedder(dimension)) as store:
        assert store.scope("a").search("reactor")[0].memory.id == wanted.id  # reopened
