"""The keyword lane: recall of natural questions, filters, scores, explanations.

The store here has no embedder, entity lane, dialogue context or decay, so a hit's score
is exactly its keyword coverage (the fused pipeline has tests of its own in test_vectors.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import hivemem
from hivemem import Kind, Query, Settings
from hivemem.retrieval.keyword import coverage, idf


@pytest.fixture
def store(db_path, clock):
    settings = Settings(decay_weight=0, entity_weight=0, neighbour_weight=0)
    s = hivemem.open(db_path, clock=clock, embedder="none", settings=settings)
    yield s
    s.close()


def test_idf_is_positive_and_falls_with_frequency():
    assert idf(1000, 1) > idf(1000, 100) > idf(1000, 999) > 0
    assert idf(3, 3) > 0  # a term in every chunk still weighs a little


def test_coverage_is_the_share_of_idf_mass():
    weights = {"berlin": 3.0, "live": 1.0}
    assert coverage(weights, ["berlin"]) == 0.75
    assert coverage(weights, ["berlin", "live", "live"]) == 1.0
    assert coverage(weights, []) == 0.0
    assert coverage({}, ["x"]) == 0.0


@pytest.fixture
def loaded(mem):
    mem.add_episode(
        "I moved to Berlin last spring", session_id="s1", role="user", event_time="2023-05-01"
    )
    mem.add_episode(
        "My sister still lives in Lisbon", session_id="s1", role="user", event_time="2023-05-01"
    )
    mem.add_episode(
        "We adopted a dog called Pixel", session_id="s2", role="user", event_time="2023-08-01"
    )
    mem.save("Deploys happen on Tuesdays", type="decision", tags=["ops"])
    mem.save("The staging database is pg-stage-2", type="reference", tags=["ops", "db"])
    return mem


def test_a_natural_question_matches_on_its_meaningful_terms(loaded):
    hits = loaded.search("Where did I move to? Was it Berlin?")
    assert hits[0].memory.content == "I moved to Berlin last spring"
    assert set(hits[0].explain.matched_terms) == {"move", "berlin"}  # porter: moved ~ move


def test_scores_are_in_unit_interval_best_first_and_explained(loaded):
    hits = loaded.search("dog Pixel adopted staging")
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    top = hits[0]
    assert top.memory.content == "We adopted a dog called Pixel"
    lane = top.explain.lanes["keyword"]
    assert lane["rank"] >= 1 and lane["coverage"] == top.score
    assert "bm25" not in lane  # FTS5's raw number reads every tenant's rows (issue 25)
    assert top.explain.fused == top.score


def test_full_match_scores_one_and_threshold_means_the_same_across_queries(loaded):
    assert loaded.search("Pixel")[0].score == 1.0
    assert loaded.search("Lisbon sister")[0].score == 1.0
    partial = loaded.search("Lisbon quantum chromodynamics")
    assert 0 < partial[0].score < 0.5
    assert loaded.search("Lisbon quantum chromodynamics", min_score=0.5) == []


def test_filters(loaded):
    def contents(**kw):
        return sorted(
            h.memory.content for h in loaded.search("berlin lisbon dog deploys staging", **kw)
        )

    assert contents(kind="episode") == [
        "I moved to Berlin last spring",
        "My sister still lives in Lisbon",
        "We adopted a dog called Pixel",
    ]
    assert contents(type="decision") == ["Deploys happen on Tuesdays"]
    assert contents(tags=["db"]) == ["The staging database is pg-stage-2"]
    assert contents(session_id="s2") == ["We adopted a dog called Pixel"]
    assert "We adopted a dog called Pixel" not in contents(exclude_sessions=["s2"])
    assert "Deploys happen on Tuesdays" in contents(exclude_sessions=["s2"])  # no session: kept
    assert contents(since="2023-07-01", kind="episode") == ["We adopted a dog called Pixel"]
    assert contents(until="2023-07-01", kind="episode") == [
        "I moved to Berlin last spring",
        "My sister still lives in Lisbon",
    ]


def test_query_object_and_limit(loaded):
    hits = loaded.search(Query(text="berlin lisbon pixel", limit=2, kinds=(Kind.EPISODE,)))
    assert len(hits) == 2


def test_fts_syntax_is_opt_in(loaded):
    assert loaded.search('"moved to" NOT lisbon', fts_syntax=True)[0].memory.content.startswith(
        "I moved"
    )
    assert loaded.search('"moved to" NOT lisbon') != []  # as plain words: still safe


def test_search_counts_access(loaded):
    """By default (``access_counts=get``) a search only restarts the decay clock
    (``last_accessed``) and a get counts; with ``access_counts=search`` a search counts
    too."""
    hit = loaded.search("Pixel")[0]
    got = loaded.get(hit.memory.id)
    assert got.access_count == 0 and got.last_accessed is not None
    assert loaded.get(hit.memory.id).access_count == 1  # the get before it counted
    loaded.settings = loaded.settings.replace(access_counts="search")
    loaded.search("Pixel")
    assert loaded.get(hit.memory.id).access_count == 3  # get, search, get


def test_empty_store_and_empty_query_give_no_hits(mem):
    assert mem.search("anything") == []
    assert mem.search("   ") == []
    assert mem.search("?!…") == []


def test_bad_search_arguments(loaded):
    from hivemem import InvalidInput

    for kwargs, field in [
        ({"limit": 0}, "limit"),
        ({"limit": "10"}, "limit"),
        ({"min_score": 2}, "min_score"),
        ({"kind": "dream"}, "kind"),
        ({"since": "not a time"}, "since"),
    ]:
        with pytest.raises(InvalidInput) as err:
            loaded.search("x", **kwargs)
        assert err.value.field == field
    with pytest.raises(InvalidInput):
        loaded.search(b"bytes")  # type: ignore[arg-type]


def test_event_time_accepts_datetime_and_dates(mem):
    m = mem.add_episode("x", session_id="s", role="user", event_time=datetime(2024, 1, 2, 3, 4))
    assert m.event_time == datetime(2024, 1, 2, 3, 4, tzinfo=UTC)


def test_selective_terms_keep_the_rarest_within_the_budget():
    from hivemem.retrieval.keyword import selective_terms

    freq = {"kevin": 3, "game": 900, "task": 1500, "meeting": 40}
    assert selective_terms(["kevin", "game", "task", "meeting"], freq, 1000) == [
        "kevin",
        "game",
        "meeting",
    ]
    assert selective_terms(["game", "task"], freq, 10) == ["game"]  # at least one term
    assert selective_terms([], freq, 10) == []


def test_common_terms_still_score_and_complete_a_short_result(tmp_path):
    import hivemem

    settings = hivemem.Settings().replace(keyword_match_budget=1)
    with hivemem.open(tmp_path / "s.db", settings=settings, embedder="none") as store:
        mem = store.scope("s")
        for i in range(5):
            mem.save(f"weekly meeting notes number {i}")
        mem.save("Zanzibar trip planning meeting")
        hits = mem.search("zanzibar meeting")
        # "zanzibar" (rare) finds candidates; "meeting" (common) still counts in coverage
        assert hits[0].memory.content == "Zanzibar trip planning meeting"
        assert hits[0].score == 1.0
        # too few found by the rare term: the common one completes the result
        assert len(hits) == 6


def test_document_frequencies_follow_the_index_as_it_grows(mem, store):
    mem.save("alpha one")
    assert store.keyword.term_stats(["alpha"]).doc_freq == {"alpha": 1}
    mem.add_episodes(
        [{"content": f"alpha {i}", "session_id": "s", "role": "user"} for i in range(120)]
    )
    assert store.keyword.term_stats(["alpha"]).doc_freq == {"alpha": 121}


def test_a_hit_clears_a_min_score_equal_to_its_own_score(loaded):
    """``min_score`` compares the score a hit shows (rounded to 6 places), in fast and deep
    mode alike: fast mode compared the unrounded one, so a hit shown with 0.412346 was
    dropped by ``min_score=0.412346`` when its score was 0.4123456 (deep mode kept it)."""
    query = "berlin lisbon dog deploys staging pixel sister"
    for mode in ("fast", "deep"):
        hits = loaded.search(query, limit=20, mode=mode)
        assert len({h.score for h in hits}) > 2
        for hit in hits:
            again = loaded.search(query, limit=20, mode=mode, min_score=hit.score)
            assert hit.memory.id in {h.memory.id for h in again}, (mode, hit.score)
