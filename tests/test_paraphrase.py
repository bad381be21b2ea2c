"""The paraphrase suite: answers that share no content word with their question, found
by meaning; and what search does for them (first-person questions, a keyword lane that
cannot tell its matches apart, silence when nothing matches)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import hivemem
from hivemem import InvalidInput, Settings
from hivemem.evaluation.paraphrase import (
    PAIRS_B_FILE,
    content_words,
    load_distractors,
    load_pairs,
)
from hivemem.evaluation.suites import paraphrase_suite, run_suite
from hivemem.frontends.cli import main
from hivemem.retrieval.pipeline import tie_page
from hivemem.retrieval.ranking import lane_confidence
from hivemem.text import as_first_person


def test_the_bundled_pairs_share_no_content_word_and_span_many_domains():
    pairs = load_pairs()
    assert len(pairs) >= 200
    assert len({p.domain for p in pairs}) >= 15
    assert len({p.question for p in pairs}) == len(pairs)
    for pair in pairs:  # load_pairs enforces it; checked here in the open as well
        assert not content_words(pair.question) & content_words(pair.answer), pair.key
    # The index's own stems: "walks" and "walker" are one word to it.
    assert content_words("Who walks the dog?") & content_words("A dog walker comes")


def test_set_b_is_new_pairs_in_twenty_domains_each_passing_the_loader():
    # Set B (held out, written after the seats were chosen on the first set): every pair
    # passes load_pairs' no-shared-word rule, and none repeats an answer of set A.
    pairs = load_pairs(name=PAIRS_B_FILE)
    assert len(pairs) == 200 and all(p.key.startswith(f"b-{p.domain}-") for p in pairs)
    domains = {p.domain for p in pairs}
    assert len(domains) >= 20 and all(sum(p.domain == d for p in pairs) == 10 for d in domains)
    assert len({p.question for p in pairs}) == len(pairs)
    first = load_pairs()
    assert not {p.answer for p in pairs} & {p.answer for p in first}
    # One question is set A's word for word, by chance (found after set B was measured,
    # so it stays): its answer is another one, in another store.
    same = {p.question for p in pairs} & {p.question for p in first}
    assert same == {"What car does the user drive?"}
    assert not {p.key for p in pairs} & {p.key for p in first}
    for pair in pairs:
        assert not content_words(pair.question) & content_words(pair.answer), pair.key


def test_a_pair_that_shares_a_word_is_refused_by_name():
    bad = [{"key": "k1", "domain": "home", "question": "Where does Maya live?",
            "answer": "Maya lives in Lisbon"}]  # fmt: skip
    with pytest.raises(InvalidInput, match=r"k1.*\['live', 'maya'\]"):
        load_pairs(bad)
    with pytest.raises(InvalidInput, match="pair 0"):
        load_pairs([{"question": "q"}])


def test_every_answer_is_hidden_once_among_real_dialogue_turns():
    suite = paraphrase_suite()
    (unit,) = suite.units
    gold = [d for d in unit.docs if d.labels]
    assert sorted(d.labels[0] for d in gold) == sorted(p.key for p in load_pairs())
    assert len(unit.docs) - len(gold) == sum(len(s) for s in load_distractors()) >= 1500
    assert len({d.session for d in gold}) > 100  # spread over many sessions


def test_keyword_search_alone_finds_none_of_the_answers(tmp_path):
    report = run_suite(paraphrase_suite(), Settings(embedder="none"))
    assert report.questions == len(load_pairs())
    assert report.overall["bm25"]["hit@10"] == 0.0
    # Only the dialogue window (a neighbour turn that shares a word) can bring one in.
    assert report.overall["hivemem"]["hit@10"] < 0.02


def test_eval_paraphrase_prints_the_table_with_bm25_beside(monkeypatch):
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "none")
    result = CliRunner().invoke(main, ["eval", "paraphrase", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["suite"] == "Paraphrase" and out["overall"]["n"] >= 200
    assert set(out["overall"]["bm25"]) == {"hit@1", "hit@5", "hit@10"}


def test_eval_all_runs_set_b_only_when_named_with_bm25_beside(monkeypatch, tmp_path):
    # A slice of set B end to end with the deterministic hash embedder; without
    # --suite paraphrase-b, eval all runs set A alone (set B stays held out).
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")
    args = ["eval", "all", "--limit-questions", "5", "--keep", str(tmp_path), "--json"]
    named = CliRunner().invoke(main, [*args, "--suite", "paraphrase-b"])
    assert named.exit_code == 0, named.output
    (out,) = json.loads(named.stdout)
    assert out["suite"] == "Paraphrase B" and out["overall"]["n"] == 5
    assert out["memories"] == 200 + sum(len(s) for s in load_distractors())
    assert out["overall"]["bm25"] == {"hit@1": 0.0, "hit@5": 0.0, "hit@10": 0.0}
    unnamed = CliRunner().invoke(main, args)
    assert unnamed.exit_code == 0, unnamed.output
    assert [r["suite"] for r in json.loads(unnamed.stdout)] == ["Paraphrase"]


def test_eval_paraphrase_b_is_its_own_command():
    assert "paraphrase-b" in main.commands["eval"].commands  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Where does the user live now?", "Where do I live now?"),
        ("What is the user's job?", "What is my job?"),
        ("Is the user vegetarian?", "Am I vegetarian?"),
        ("Who did the user meet?", "Who did I meet?"),
        ("Where does Caroline live?", "Where does Caroline live?"),
        ("What do users want?", "What do users want?"),
    ],
)
def test_questions_about_the_user_are_read_in_the_first_person(question, said):
    assert as_first_person(question) == said


def test_a_lane_that_ties_many_memories_at_its_best_counts_less():
    assert lane_confidence({"a": 1.0, "b": 0.5, "c": 0.0}, 3) == 1.0
    assert lane_confidence({str(i): 1.0 for i in range(30)}, 3) == pytest.approx(0.1)
    assert lane_confidence({"a": 0.0}, 3) == 1.0
    assert lane_confidence({str(i): 1.0 for i in range(30)}, 0) == 1.0


def test_ties_are_counted_on_a_fixed_page_not_on_the_backends_page():
    # SQLite and PostgreSQL return their own number of keyword candidates: 30 ties on
    # one and 42 on the other weigh the lane alike once both fill the page.
    thirty = {str(i): 1.0 for i in range(30)}
    forty_two = {str(i): 1.0 for i in range(42)}
    assert lane_confidence(thirty, 3, page=20) == lane_confidence(forty_two, 3, page=20)
    assert lane_confidence(thirty, 3, page=20) == pytest.approx(0.15)
    assert tie_page(10, 30) == 20 and tie_page(5, 15) == 10 and tie_page(100, 120) == 20
    assert tie_page(10, 10) == 10  # never more than the lane fetched


LIVE = [
    "We watched the band play live at the festival",
    "I live stream my cooking on weekends",
    "The live demo crashed during the keynote",
    "Live music in the park every Friday",
    "The football match was shown live on TV",
    "Plants need light to live and grow",
    "The live chat support answered quickly",
    "I can't live without my morning coffee",
]


def test_an_answer_found_by_meaning_beats_memories_that_only_share_a_common_word(tmp_path):
    # "Where does the user live now?" has one keyword, "live": every memory holding it
    # ties at full coverage (and every one is an "exact" match). The answer shares no
    # word with the question.
    settings = Settings().replace(track_access=False)
    with hivemem.open(tmp_path / "m.db", settings=settings, embedder="local") as store:
        mem = store.scope("u")
        mem.add_episodes(
            {"content": t, "role": "user", "session_id": f"s{i}"} for i, t in enumerate(LIVE)
        )
        mem.add_episodes(
            [{"content": "I moved to Berlin last spring", "role": "user", "session_id": "s2"}]
        )
        store.flush()
        ids = [h.memory.content for h in mem.search("Where does the user live now?", limit=3)]
        assert "I moved to Berlin last spring" in ids
    before = settings.replace(keyword_ties=0, first_person_queries=False)
    with hivemem.open(tmp_path / "m.db", settings=before, embedder="local") as store:
        hits = store.scope("u").search("Where does the user live now?", limit=3)
        assert "I moved to Berlin last spring" not in [h.memory.content for h in hits]


def test_an_unrelated_question_gets_no_hit_and_a_related_one_keeps_its_hits(tmp_path):
    turns = [
        "I moved to Berlin last spring",
        "Our team deploys the billing service on weekdays before three",
        "My daughter Lily plays hockey on Saturdays",
        "I'm allergic to peanuts and carry an EpiPen",
    ]
    with hivemem.open(tmp_path / "m.db", embedder="local") as store:
        mem = store.scope("u")
        mem.add_episodes({"content": t, "role": "user", "session_id": "s1"} for t in turns)
        store.flush()
        assert mem.search("What is the Mohs hardness of corundum?") == []
        assert mem.search("Which enzyme catalyses the third step of the Krebs cycle?") == []
        found = mem.search("Which city did the user move to?")
        assert found and found[0].memory.content == "I moved to Berlin last spring"
        assert mem.search("billing")  # a keyword match is a match
    off = Settings().replace(match_floor=0.0, unknown_floor=0.0)
    with hivemem.open(tmp_path / "m.db", settings=off, embedder="local") as store:
        # The least unrelated memories come back: what the floors keep out ("Krebs" and
        # "catalyses" are in no memory and rare: retrieval.silence silences it too).
        assert store.scope("u").search("Which enzyme catalyses the third step of the Krebs cycle?")


def test_a_model_nobody_calibrated_keeps_every_candidate(tmp_path):
    with hivemem.open(tmp_path / "m.db", embedder="hash") as store:
        mem = store.scope("u")
        mem.add_episodes(
            [{"content": "billing quarterly review", "role": "user", "session_id": "s1"}]
        )
        store.flush()
        assert mem.search("billing quantum chromodynamics lattice gauge theory")
    strict = Settings().replace(match_floor=0.9)
    with hivemem.open(tmp_path / "m.db", settings=strict, embedder="hash") as store:
        # Nothing shares a word and nothing is near in meaning: silence …
        assert store.scope("u").search("quantum chromodynamics lattice gauge theory") == []
        # … but a shared word is a match, whatever the floor ("where does alice live?"
        # over "I live in Berlin" was silenced by a floor on weak keyword evidence).
        hits = store.scope("u").search("billing quantum chromodynamics lattice gauge theory")
        assert [h.memory.content for h in hits] == ["billing quarterly review"]


def test_minmax_page_scales_a_lane_between_its_best_and_its_nth_best():
    from hivemem.retrieval.pipeline import _minmax

    lane = {"a": 0.9, "b": 0.5, "c": 0.3, "d": 0.1, "e": 0.0}
    whole = _minmax(lane)  # weakest candidate "d" is the low end
    assert whole["a"] == 1.0 and whole["d"] == pytest.approx(0.05) and whole["e"] == 0.0
    paged = _minmax(lane, page=2)  # the 2nd best "b" is the low end, weaker ones the floor
    assert paged["a"] == 1.0 and paged["b"] == pytest.approx(0.05)
    assert paged["c"] == paged["d"] == pytest.approx(0.05) and paged["e"] == 0.0
    # the low end no longer depends on how many weak candidates a backend fetched
    assert _minmax({**lane, "f": 0.01}, page=2)["a"] == paged["a"]
    assert _minmax({**lane, "f": 0.01}, page=2)["b"] == paged["b"]
    assert _minmax({**lane, "f": 0.01})["b"] != whole["b"]
