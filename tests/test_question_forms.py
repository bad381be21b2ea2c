"""A question's statement form for the vector lane (``retrieval/question_forms.py``,
setting ``statement_weight``): the rewrite itself, the query vector it makes, and a
search that uses it."""

from __future__ import annotations

import numpy as np
import pytest

import hivemem
from hivemem import InvalidInput, Settings
from hivemem.retrieval.question_forms import query_vector, statement_form


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Where do I live now?", "I live now"),
        ("What floor is my flat on?", "my flat is on floor"),
        ("How many rooms does my apartment have?", "my apartment have many rooms"),
        ("Do I have siblings?", "I have siblings"),
        ("Am I busy next week?", "I am busy next week"),
        ("Which city is Maya based in these days?", "Maya is based in these days city"),
        ("What kind of food do I dislike?", "I dislike food"),
        ("How long is my commute?", "my commute is long"),
        ("Who fixed the broken build?", "fixed the broken build"),
        ("Why was the ORM removed?", "the ORM was removed"),
    ],
)
def test_a_question_is_rewritten_as_the_statement_its_answer_makes(question, said):
    assert statement_form(question) == said


@pytest.mark.parametrize(
    "text",
    ["I moved to Berlin last spring", "Berlin", "", "deploy window", "Caroline: hi!"],
)
def test_a_text_that_is_not_a_question_is_left_as_it_is(text):
    assert statement_form(text) == text


class _Recorder:
    """An embedder of a few fixed texts, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.vectors = {
            "Where do I live now?": np.array([1.0, 0.0, 0.0], dtype=np.float32),
            "I live now": np.array([0.0, 1.0, 0.0], dtype=np.float32),
        }

    def __call__(self, text: str) -> np.ndarray | None:
        self.asked.append(text)
        return self.vectors.get(text)


def test_the_query_vector_is_the_weighted_mean_of_the_two_forms_each_embedded_alone():
    embed = _Recorder()
    vector = query_vector(embed, "Where do I live now?", 0.5)
    assert embed.asked == ["Where do I live now?", "I live now"]  # one text a call
    assert vector is not None
    np.testing.assert_allclose(vector, np.array([1.0, 1.0, 0.0]) / np.sqrt(2), rtol=1e-6)
    assert query_vector(embed, "Where do I live now?", 0.25) @ np.array([1, 0, 0]) > 0.9


def test_off_or_without_a_statement_form_the_question_is_embedded_once():
    embed = _Recorder()
    assert query_vector(embed, "Where do I live now?", 0.0) is embed.vectors["Where do I live now?"]
    assert query_vector(embed, "Berlin", 0.5) is None  # the recorder knows no "Berlin"
    assert embed.asked == ["Where do I live now?", "Berlin"]


def test_the_setting_is_a_share_between_0_and_1():
    assert Settings().statement_weight == 0.0
    with pytest.raises(InvalidInput, match="statement_weight"):
        Settings().replace(statement_weight=1.5)


def test_a_search_embeds_the_statement_form_beside_the_question(tmp_path):
    # The vector lane's cosine for a memory is its cosine to the normalised mean of the
    # two forms' vectors: the lane searched with both. (One memory: embedded alone, its
    # stored vector is the one ``embed_query`` gives its text.)
    turns = ["I moved to Berlin last spring"]
    question = "Where does the user live now?"
    cosines = {}
    for weight in (0.0, 0.5):
        settings = Settings().replace(track_access=False, statement_weight=weight)
        with hivemem.open(tmp_path / f"m{weight}.db", settings=settings, embedder="local") as s:
            mem = s.scope("u")
            mem.add_episodes({"content": t, "role": "user", "session_id": "s"} for t in turns)
            s.flush()
            hits = mem.search(question, limit=1)
            berlin = next(h for h in hits if h.memory.content == turns[0])
            cosines[weight] = berlin.explain.lanes["vector"]["cosine"]
            embed = s.indexer.embed_query
            doc = embed(turns[0])
            assert doc is not None
            q, f = embed("Where do I live now?"), embed("I live now")
            assert q is not None and f is not None
            mixed = (q + f) / np.linalg.norm(q + f) if weight else q
            assert cosines[weight] == pytest.approx(float(doc @ mixed), abs=1e-4)
    assert cosines[0.5] != cosines[0.0]
