"""A question's statement form for the vector lane (``retrieval/question_forms.py``,
setting ``statement_weight``): the rewrite itself, the query vector it makes, and a
search that uses it."""

from __future__ import annotations

import numpy as np
import pytest

import hivemem
from hivemem import InvalidInput, Settings
from hivemem.retrieval.question_forms import query_vector, share, statement_form


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


def test_the_form_is_used_only_where_the_keyword_lane_ties_at_its_best():
    on = Settings().replace(statement_weight=0.5, keyword_ties=3)  # as resolved for L6
    tied = {str(i): 1.0 for i in range(8)}
    decisive = {"a": 1.0, "b": 1.0, "c": 0.5}
    assert share(on, tied, page=20) == 0.5
    assert share(on, decisive, page=20) == 0.0
    assert share(on, {}, page=20) == 0.0  # no keyword match: nothing ties
    assert share(Settings(), tied, page=20) == 0.0  # off
    assert share(on.replace(keyword_ties=0), tied, page=20) == 0.0


LIVE = [
    "We watched the band play live at the festival",
    "I live stream my cooking on weekends",
    "The live demo crashed during the keynote",
    "Live music in the park every Friday",
    "The football match was shown live on TV",
]
BERLIN = "I moved to Berlin last spring"


def _berlin_cosines(location, turns):
    """Berlin's vector-lane cosine for "Where does the user live now?" with the form
    off and at 0.5 (one store, reopened), and the vectors to check it against."""
    settings = Settings().replace(track_access=False)
    with hivemem.open(location, settings=settings, embedder="local") as store:
        mem = store.scope("u")
        mem.add_episodes({"content": t, "role": "user", "session_id": "s"} for t in turns)
        store.flush()
        # Embedded alone, its stored vector is the one ``embed_query`` gives its text.
        mem.add_episodes([{"content": BERLIN, "role": "user", "session_id": "b"}])
        store.flush()
        embed = store.indexer.embed_query
        vectors = [embed(t) for t in (BERLIN, "Where do I live now?", "I live now")]
    cosines = []
    for weight in (0.0, 0.5):
        with hivemem.open(
            location, settings=settings.replace(statement_weight=weight), embedder="local"
        ) as store:
            hits = store.scope("u").search("Where does the user live now?", limit=10)
            berlin = next(h for h in hits if h.memory.content == BERLIN)
            cosines.append(berlin.explain.lanes["vector"]["cosine"])
    doc, question, form = (v for v in vectors if v is not None)
    return cosines, doc, question, form


def test_a_search_whose_keyword_lane_ties_embeds_the_statement_form_beside_it(db_path):
    # Five memories hold "live", the question's one keyword: the lane ties them all, and
    # the vector lane searches the normalised mean of the question's and its statement
    # form's vectors: the lane's cosine for a memory is its cosine to that.
    (before, after), doc, question, form = _berlin_cosines(db_path, LIVE)
    assert before == pytest.approx(float(doc @ question), abs=1e-4)
    mixed = (question + form) / np.linalg.norm(question + form)
    assert after == pytest.approx(float(doc @ mixed), abs=1e-4)
    assert after != pytest.approx(before, abs=1e-3)


def test_a_search_whose_keyword_lane_is_decisive_embeds_the_question_alone(db_path):
    (before, after), *_ = _berlin_cosines(db_path, LIVE[:1])
    assert after == before
