"""The learned order of dialogue (``learned_order``): episodes re-ordered by the fitted
model, memories saved on purpose left where they were, scores still sorted."""

from __future__ import annotations

import pytest

import hivemem
from hivemem import Settings
from hivemem.retrieval import learned
from hivemem.retrieval.candidates import Candidate, Candidates
from hivemem.retrieval.hitset import Ranked

TURNS = [
    "Where did you go on holiday in June?",
    "We went to Lisbon, my sister Anna came too.",
    "The holiday photos are on my laptop.",
    "June was hot, the holiday flat had no fan.",
    "Anna loved the tram rides in Lisbon.",
]


def _ranked(memory, score, matched, *, keyword=None, vector=None, session=1.0):
    table = Candidates()
    at = table.add(memory.id)
    table.matched[at] = matched
    if keyword is not None:
        table.keyword[at] = (1, keyword, 0.0)  # rank, coverage, window
    if vector is not None:
        table.vector_lane[at] = (1, vector, vector)  # rank, score, cosine
    candidate = Candidate(table, at)
    factors = {"session": session} if session < 1.0 else {}
    return Ranked(score, score, candidate, memory, factors)


def test_the_model_reorders_episodes_and_leaves_saved_memories_in_place(tmp_path, clock):
    with hivemem.open(tmp_path / "l.db", clock=clock, embedder="none") as store:
        mem = store.scope("a")
        loose, fact, exact = (
            mem.add_episode("holiday chatter", session_id="s", role="a"),
            mem.save("Anna is the user's sister."),
            mem.add_episode("Lisbon with Anna in June", session_id="s", role="b"),
        )
        pool = [
            # Best fused score, but one lane, a third of the words, a weak session.
            _ranked(loose, 0.60, ("holiday",), keyword=0.3, session=0.6),
            _ranked(fact, 0.55, ("anna",), keyword=0.4),
            # Both lanes, every word of the query: the model puts it first.
            _ranked(exact, 0.50, ("lisbon", "anna", "june"), keyword=0.9, vector=0.8),
        ]
        out = learned.reorder(pool, query_terms=3)
    assert [r.memory.id for r in out] == [exact.id, fact.id, loose.id]
    assert [r.score for r in out] == [0.60, 0.55, 0.50]  # each takes its place's score
    assert out[0].factors["learned"] == pytest.approx(0.60 / 0.50)
    assert "learned" not in out[1].factors  # saved on purpose: place and score kept


def test_learned_order_in_search_keeps_scores_sorted_and_saved_memories_placed(tmp_path, clock):
    with hivemem.open(tmp_path / "s.db", clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        mem.add_episodes(
            [{"content": t, "session_id": "s1", "role": "ab"[i % 2]} for i, t in enumerate(TURNS)],
            wait=True,
        )
        fact = mem.save("Anna went to Lisbon in June for the holiday.", wait=True)
        query = "Who went to Lisbon on holiday in June?"
        plain = mem.search(query, limit=6)
        with hivemem.open(
            tmp_path / "s.db", clock=clock, embedder="hash", settings=Settings(learned_order=True)
        ) as again:
            ordered = again.scope("a").search(query, limit=6)
    scores = [h.score for h in ordered]
    assert scores == sorted(scores, reverse=True)
    assert {h.memory.id for h in ordered} == {h.memory.id for h in plain}
    where = lambda hits: next(i for i, h in enumerate(hits) if h.memory.id == fact.id)  # noqa: E731
    assert where(ordered) == where(plain)
    assert ordered[where(ordered)].score == plain[where(plain)].score
    moved = [h for h, p in zip(ordered, plain, strict=True) if h.memory.id != p.memory.id]
    assert all("learned" in h.explain.factors for h in moved)


def test_the_fitting_command_learns_which_feature_marks_the_answer(tmp_path):
    import numpy as np

    from hivemem.evaluation import fusion_fit
    from hivemem.evaluation.suites import Doc, Item, Suite, Unit

    rng = np.random.default_rng(7)
    questions = []
    for _ in range(60):
        x = rng.random((8, len(learned.FEATURES)))
        y = np.zeros(8, dtype=bool)
        y[int(np.argmax(x[:, 2]))] = True  # the answer has the best keyword coverage
        questions.append((x, y))
    w = fusion_fit.fit(questions)
    assert int(np.argmax(w)) == 2
    learned_at_1 = float(fusion_fit.hit_rates(questions, w).split("/")[0])
    by_score_at_1 = float(fusion_fit.hit_rates(questions, None).split("/")[0])
    assert learned_at_1 >= 0.9 > 0.3 > by_score_at_1

    turns = [
        Doc(t, "episode", (f"D{i}",), session="s1", role="ab"[i % 2]) for i, t in enumerate(TURNS)
    ]
    items = (Item("Who loved the tram rides in Lisbon?", "4 single-hop", ("D4",)),)
    suite = Suite("tiny", (Unit("tiny:1", tuple(turns), items),), ("hit@1",), 10)
    collected = fusion_fit.collect(suite, tmp_path / "keep", Settings(embedder="hash"))
    [(rows, answers)] = collected.values()
    assert rows.shape[1] == len(learned.FEATURES) and answers.sum() == 1
    assert learned.reorder is not None and learned.reorder.__name__ == "reorder"  # restored
