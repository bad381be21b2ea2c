"""The fused pipeline on its own terms: dialogue context, fusion modes, thresholds."""

from __future__ import annotations

import pytest

import hivemem
from hivemem import Settings
from hivemem.retrieval.keyword import window_coverage


@pytest.fixture
def chat(tmp_path, clock):
    settings = Settings(decay_weight=0, mmr_lambda=1.0)
    with hivemem.open(tmp_path / "c.db", clock=clock, settings=settings, embedder="hash") as s:
        mem = s.scope("a")
        turns = mem.add_episodes(
            [
                {
                    "content": "Did you go to the Radiohead concert?",
                    "session_id": "s1",
                    "role": "b",
                },
                {
                    "content": "Yes, it was amazing, we danced all night",
                    "session_id": "s1",
                    "role": "a",
                },
                {"content": "Lunch was pasta today", "session_id": "s2", "role": "a"},
                {
                    "content": "What did you think of the Radiohead concert?",
                    "session_id": "s3",
                    "role": "b",
                },
            ],
            wait=True,
        )
        yield mem, turns


def test_the_reply_to_a_matching_turn_is_found_as_its_context(chat):
    mem, turns = chat
    hits = mem.search("radiohead concert")
    by_id = {h.memory.id: h for h in hits}
    reply = by_id[turns[1].id]
    anchor = by_id[turns[0].id]
    assert reply.explain.lanes["context"]["of"] >= 1
    assert reply.score == pytest.approx(0.4 * anchor.explain.fused, abs=1e-6)
    # the neighbour of s3's question is nothing (last turn of its session); s2 is unrelated
    assert turns[2].id not in by_id


def test_context_never_crosses_sessions_or_brings_back_deleted_turns(chat):
    mem, turns = chat
    mem.delete(turns[1].id)
    ids = [h.memory.id for h in mem.search("radiohead concert")]
    assert turns[1].id not in ids and turns[2].id not in ids


def test_context_can_be_turned_off(tmp_path, clock):
    settings = Settings(neighbour_weight=0, window_weight=0)
    with hivemem.open(tmp_path / "c.db", clock=clock, settings=settings, embedder="none") as s:
        mem = s.scope("a")
        mem.add_episode("Did you go to the Radiohead concert?", session_id="s1", role="b")
        mem.add_episode("Yes, it was amazing", session_id="s1", role="a")
        assert len(mem.search("radiohead concert")) == 1


def test_window_coverage_adds_a_share_of_what_the_neighbours_hold():
    weights = {"puppy": 1.0, "shelter": 1.0, "name": 2.0}
    own = {"q": ("puppy", "shelter"), "reply": ("name",), "far": ("name",)}
    windows = {"q": {"reply"}, "reply": {"q"}}
    full = window_coverage(own, windows, weights, 1.0)
    assert full == {"q": 1.0, "reply": 1.0, "far": 0.5}
    half = window_coverage(own, windows, weights, 0.5)
    assert half == {"q": 0.5 + 0.5 * 0.5, "reply": 0.5 + 0.5 * 0.5, "far": 0.5}
    assert window_coverage(own, windows, weights, 0.0) == {"q": 0.5, "reply": 0.5, "far": 0.5}


def _puppy_chat(path, clock, window_weight):
    settings = Settings(
        window_weight=window_weight, neighbour_weight=0, decay_weight=0, session_weight=0
    )
    store = hivemem.open(path, clock=clock, settings=settings, embedder="none")
    mem = store.scope("a")
    q, reply = mem.add_episodes(
        [
            {
                "content": "Did you adopt the puppy from the shelter?",
                "session_id": "s1",
                "role": "b",
            },
            {"content": "Yes! We named him Biscuit.", "session_id": "s1", "role": "a"},
        ]
    )
    decoy = mem.add_episode("I named my new plant Fern.", session_id="s2", role="a")
    mem.add_episode("The shelter was closed on Monday.", session_id="s3", role="a")
    return store, mem, reply, decoy


def test_a_reply_that_completes_the_question_outranks_a_turn_with_one_word(tmp_path, clock):
    query = "what name did the shelter puppy get"
    store, mem, reply, decoy = _puppy_chat(tmp_path / "w.db", clock, 0.6)
    with store:
        hits = mem.search(query)
        ids = [h.memory.id for h in hits]
        assert ids.index(reply.id) < ids.index(decoy.id)
        lane = hits[ids.index(reply.id)].explain.lanes["keyword"]
        assert lane["window"] > 0 and lane["coverage"] > lane["window"]
    store, mem, reply, decoy = _puppy_chat(tmp_path / "off.db", clock, 0.0)
    with store:
        hits = mem.search(query)
        fused = {h.memory.id: h.explain.fused for h in hits}
        assert fused[reply.id] == fused[decoy.id]  # alone, the two hold the same word
        assert all("window" not in h.explain.lanes.get("keyword", {}) for h in hits)


def test_the_window_never_reaches_across_sessions_or_to_deleted_turns(tmp_path, clock):
    store, mem, reply, decoy = _puppy_chat(tmp_path / "w.db", clock, 1.0)
    with store:
        question = mem.search("adopt puppy")[0]
        mem.delete(question.memory.id)
        hits = mem.search("shelter puppy named")
        by_id = {h.memory.id: h for h in hits}
        assert question.memory.id not in by_id
        assert "window" not in by_id[reply.id].explain.lanes["keyword"]
        assert "window" not in by_id[decoy.id].explain.lanes["keyword"]


def test_a_turn_of_the_session_about_the_topic_outranks_a_lone_match(tmp_path, clock):
    settings = Settings(neighbour_weight=0, window_weight=0, decay_weight=0)
    with hivemem.open(tmp_path / "s.db", clock=clock, settings=settings, embedder="none") as s:
        mem = s.scope("a")
        lone = mem.add_episode("The garden gate needs oil.", session_id="chores", role="a")
        topic = mem.add_episodes(
            [
                {"content": "We planted tomatoes in the garden.", "session_id": "g", "role": "a"},
                {"content": "Mine got blight, sadly.", "session_id": "g", "role": "b"},
                {"content": "Garden beds need compost first.", "session_id": "g", "role": "a"},
            ]
        )
        hits = mem.search("garden")
        order = [h.memory.id for h in hits]
        assert order.index(topic[2].id) < order.index(lone.id)
        assert order.index(topic[0].id) < order.index(lone.id)
        assert hits[order.index(lone.id)].explain.factors["session"] < 1.0
        assert "session" not in hits[0].explain.factors
    off = Settings(neighbour_weight=0, window_weight=0, decay_weight=0, session_weight=0)
    with hivemem.open(tmp_path / "s.db", clock=clock, settings=off, embedder="none") as s:
        hits = s.scope("a").search("garden")
        assert all("session" not in h.explain.factors for h in hits)


@pytest.mark.parametrize("fusion", ["minmax", "weighted", "rrf"])
def test_every_fusion_gives_sorted_scores_in_the_unit_interval(tmp_path, clock, fusion):
    settings = Settings(fusion=fusion)
    with hivemem.open(tmp_path / "f.db", clock=clock, settings=settings, embedder="hash") as s:
        mem = s.scope("a")
        for text in ["deploy on friday", "deploy rules", "friday lunch", "berlin office", "x y"]:
            mem.save(text, wait=True)
        hits = mem.search("deploy friday")
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and all(0 < x <= 1 for x in scores)
        assert hits[0].memory.content == "deploy on friday"
        assert {"keyword", "vector"} <= set(hits[0].explain.lanes)


class _LengthReranker:
    """Prefers shorter texts: an order no lane would give, so its effect is visible."""

    name = "by-length"

    def score(self, query, texts):
        return [-len(t) for t in texts]


class _BrokenReranker:
    name = "broken"

    def score(self, query, texts):
        raise RuntimeError("model exploded")


def _ranked_store(tmp_path, clock, reranker):
    settings = Settings(
        decay_weight=0, neighbour_weight=0, previous_weight=0, track_access=False, mmr_lambda=1.0
    )
    return hivemem.open(
        tmp_path / "r.db", clock=clock, settings=settings, embedder="none", reranker=reranker
    )


def test_a_reranker_reorders_the_head_and_explains_itself(tmp_path, clock):
    with _ranked_store(tmp_path, clock, _LengthReranker()) as s:
        mem = s.scope("a")
        long = mem.save("deploy friday rules for the whole platform team, written long ago")
        short = mem.save("deploy friday")
        mem.save("deploy")
        hits = mem.search("deploy friday rules")
        assert hits[0].memory.id == short.id and hits[1].memory.id != long.id
        assert hits[0].explain.lanes["rerank"]["score"] == -13.0  # len("deploy friday")
        assert sorted(h.explain.lanes["rerank"]["rank"] for h in hits) == [1, 2, 3]
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and all(0 <= x <= 1 for x in scores)


def test_a_failing_reranker_keeps_the_fused_order(tmp_path, clock, caplog):
    with _ranked_store(tmp_path, clock, None) as s:
        mem = s.scope("a")
        mem.save("deploy friday rules for the whole platform team")
        mem.save("deploy friday")
        plain = [(h.memory.id, h.score) for h in mem.search("deploy friday rules")]
    with _ranked_store(tmp_path, clock, _BrokenReranker()) as s:
        hits = s.scope("a").search("deploy friday rules")
        assert [(h.memory.id, h.score) for h in hits] == plain
        assert "re-rank failed, fused order kept: model exploded" in hits[0].explain.notes
        assert "model exploded" in caplog.text


def test_an_unknown_reranker_is_a_clear_error(tmp_path):
    with pytest.raises(hivemem.InvalidInput, match="unknown re-ranker 'nope'"):
        hivemem.open(tmp_path / "x.db", embedder="none", reranker="nope")
