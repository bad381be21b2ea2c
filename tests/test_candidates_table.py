"""The search's candidates as one table by position (``retrieval/candidates.py``): lane
arrays, the explanation's lane dicts and a lane naming one memory twice, as the
per-candidate dicts gave them; a search's hits explain themselves from it."""

from __future__ import annotations

import numpy as np

import hivemem
from hivemem.retrieval.candidates import Candidate, Candidates


def test_lanes_by_position_give_the_arrays_and_explanations_of_the_dicts():
    table = Candidates()
    a, b = table.add("a"), table.add("b")
    table.keyword[a] = (1, 0.123456789, 0.25)  # rank, coverage, window
    table.keyword[b] = (2, 0.5, 0.0)
    c = table.add("c")
    assert table.add("a") == a and len(table) == 3
    table.vector_lane[c] = (1, 0.9, 0.712345678)  # rank, score, cosine
    table.vector_lane[a] = (2, 0.4, 0.5)
    table.vector_lane[a] = (3, 0.3, 0.45)  # the lane named "a" twice: the later entry holds
    table.entity[b] = (1, 1.0, 0.0)
    table.context[c] = (1, 0.0333333333)
    lanes = table.arrays(["keyword", "vector", "entity"])
    assert lanes["keyword"].tolist() == [0.123456789, 0.5, 0.0]
    assert lanes["vector"].tolist() == [0.3, 0.0, 0.9]
    assert lanes["entity"].tolist() == [0.0, 1.0, 0.0]
    assert all(v.dtype == np.float64 for v in lanes.values())
    assert table.lanes(a) == {
        "keyword": {"rank": 1, "coverage": 0.123457, "window": 0.25},
        "vector": {"rank": 3, "cosine": 0.45, "score": 0.3},
    }
    assert list(table.lanes(b)) == ["keyword", "entity"]
    assert table.lanes(b)["keyword"] == {"rank": 2, "coverage": 0.5}  # no window: none added
    assert table.lanes(c) == {
        "vector": {"rank": 1, "cosine": 0.712346, "score": 0.9},
        "context": {"of": 1, "score": 0.033333},
    }
    assert sorted(table.cosines()) == [0.45, 0.712346]
    view = Candidate(table, c)
    view.set_lane("rerank", {"rank": 2, "score": 0.5})
    assert list(view.lanes) == ["vector", "context", "rerank"]
    assert (view.memory_id, view.chunk_id, view.chunk_text, view.matched) == ("c", None, "", ())


def test_hits_explain_their_lanes_and_count_every_candidate(tmp_path, clock):
    with hivemem.open(tmp_path / "c.db", clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        for n in range(6):
            mem.add_episode(f"we talked about the garden and tomatoes, turn {n}", "s1", "user")
        mem.save("Tomatoes need sun.")
        store.flush()
        hits = mem.search("tomatoes garden", limit=3)
        assert len(hits) == 3
        for hit in hits:
            lanes = hit.explain.lanes
            assert "keyword" in lanes and lanes["keyword"]["rank"] >= 1
            assert set(lanes["keyword"]) <= {"rank", "coverage", "window"}
            if "vector" in lanes:
                assert set(lanes["vector"]) == {"rank", "cosine", "score"}
            assert hit.explain.candidates >= 7  # all found, not only the hits returned
            assert isinstance(hit.memory, hivemem.Memory)


def test_a_current_version_brought_in_by_its_superseded_match_explains_only_that(tmp_path):
    # Found in review: the current version was also a keyword candidate outside the
    # scored pool, and its hit showed that slot's keyword rank and matched term beside
    # "current" (fused 0.0). A current version brought in by its superseded match is its
    # own record, as before candidates were a table.
    store = hivemem.open(
        tmp_path / "m.db",
        embedder="hash",
        settings=hivemem.Settings(keyword_weight=0.0, vector_weight=1.0),
    )
    try:
        mem = store.scope("a")
        mem.save("The car needs new tires", key="ride", wait=True)
        new = mem.save(
            "Sold it and bought a bicycle", key="ride", supersede_reason="sold", wait=True
        )
        hits = {h.memory.id: h for h in mem.search("car bicycles")}
        current = hits[new.id]
        assert set(current.explain.lanes) == {"current"}
        assert current.explain.matched_terms == ()
        assert current.snippet == "Sold it and bought a bicycle"
    finally:
        store.close()
