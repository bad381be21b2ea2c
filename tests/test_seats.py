"""Seats for the vector lane (``retrieval/fusion.py``'s ``seated``, setting
``vector_seats``): where the keyword lane ties many weak matches, a memory found only by
meaning that fusion ranks below the page takes one of the page's last places; the head
of the page is fusion's, unchanged; a memory under ``min_score`` takes no seat, nor one
where the keyword lane singles out its matches; the explanation says who seated it.
A real search on real SQLite (``test_backends_seats.py``: PostgreSQL too) with a
deterministic embedder."""

from __future__ import annotations

import pytest

import hivemem
from hivemem import InvalidInput, Settings
from hivemem.providers import calibration
from hivemem.retrieval import fusion
from test_model_profile import ConceptEmbedder

# Twelve memories hold the question's one keyword ("flat") in other senses: three short
# ones (the vector lane's best three) and nine long ones. The answer holds none of the
# question's words; the embedder reads "apartment" as "flat", so the answer is the
# vector lane's 4th, and fusion's 13th under twelve keyword matches.
SHORT = ["Flat bread", "Flat shoes", "Flat tyre"]
LONG = [
    "The flat white at the corner cafe was cold",
    "Flat pack furniture took the whole long evening",
    "The river looked flat and grey this morning",
    "The joke fell flat at the wedding dinner party",
    "A flat fee for the delivery of the heavy parcel",
    "Sing it flat and the choir notices quickly enough",
    "The battery went flat during the video call today",
    "The market stayed flat for the whole quarter again",
    "A flat stone skipped seven times over the lake",
]
ANSWER = "My apartment faces the big park"
QUESTION = "Which flat?"
BASE = Settings().replace(mmr_lambda=1.0)  # MMR off: the page is fusion's order
DIM = 1024  # no two words of these texts share a slot


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


def _embedder(model: str = "concepts") -> ConceptEmbedder:
    return ConceptEmbedder(model, DIM)


def _fill(location, model: str = "concepts"):
    with hivemem.open(location, embedder=_embedder(model)) as store:
        mem = store.scope("home")
        for text in [*SHORT, *LONG, ANSWER]:
            mem.save(text, wait=True)
    return location


@pytest.fixture
def filled(db_path):
    return _fill(db_path)


def _search(
    db_path, settings: Settings, limit: int = 10, model: str = "concepts", reranker=None, **kwargs
):
    with hivemem.open(
        db_path, embedder=_embedder(model), settings=settings, reranker=reranker
    ) as store:
        return store.scope("home").search(QUESTION, limit=limit, **kwargs)


def _own(hit) -> float:
    """The hit's score before a seat lowered it to the one above."""
    return hit.score / hit.explain.factors.get("seat", 1.0)


def test_a_memory_found_only_by_meaning_takes_a_seat_under_weak_keyword_matches(filled):
    off = _search(filled, BASE.replace(vector_seats=0))
    on = _search(filled, BASE.replace(vector_seats=4))
    assert ANSWER not in [h.memory.content for h in off]  # fusion ranks it below the page
    contents = [h.memory.content for h in on]
    assert len(on) == 10 and contents[9] == ANSWER  # the page's last place
    # The head is fusion's: the first six places (ten less four seats) are the same hits,
    # in the same order, with the same scores; scores still fall with rank.
    assert [(h.memory.id, h.score) for h in on[:6]] == [(h.memory.id, h.score) for h in off[:6]]
    assert [h.score for h in on] == sorted((h.score for h in on), reverse=True)
    seated = on[9]
    assert fusion.SEAT_NOTE in seated.explain.notes
    assert "keyword" not in seated.explain.lanes and seated.explain.lanes["vector"]["rank"] == 4
    assert all(fusion.SEAT_NOTE not in h.explain.notes for h in on[:9])


def test_mpnet_s_profile_holds_four_seats_and_a_set_value_wins(tmp_path, filled):
    mpnet = calibration.profile("all-mpnet-base-v2-int8:768")
    assert (mpnet.vector_seats, mpnet.seat_depth, mpnet.seat_lead) == (4, 1, 0.0)
    assert calibration.profile("paraphrase-MiniLM-L3-v2-int8:384").vector_seats == 0
    model = "all-mpnet-base-v2"  # its profile's seats; keyword ties as for the others
    path = _fill(tmp_path / "mpnet.db", model)
    ties = BASE.replace(keyword_ties=3)
    assert ANSWER in [h.memory.content for h in _search(path, ties, model=model)]
    off = _search(path, ties.replace(vector_seats=0), model=model)
    assert ANSWER not in [h.memory.content for h in off]
    assert ANSWER not in [h.memory.content for h in _search(filled, BASE)]  # unmeasured: off


# The lane by cosine in the filled store: "Flat bread/shoes/tyre" .707, the answer .5, and
# the lane's 10th ("The battery went flat ...") .408: the answer leads it by .092.
LEAD = 0.5 - 1 / 6**0.5


def test_a_seat_with_a_lead_goes_to_a_memory_leading_the_lane_s_10th_by_that_much(filled):
    # 2 seats from the lane's best 4 (the three "Flat ..." and the answer), each leading
    # the lane's 10th cosine by seat_lead: the answer leads by .092.
    seats = BASE.replace(vector_seats=2, seat_depth=2)
    hits = _search(filled, seats.replace(seat_lead=LEAD - 0.01))
    assert hits[9].memory.content == ANSWER and fusion.SEAT_NOTE in hits[9].explain.notes
    short = _search(filled, seats.replace(seat_lead=LEAD + 0.01))
    assert ANSWER not in [h.memory.content for h in short]
    assert all(fusion.SEAT_NOTE not in h.explain.notes for h in short)
    # Depth 1 looks at the lane's best 2 only (two "Flat ..." already on the page).
    assert ANSWER not in [h.memory.content for h in _search(filled, seats.replace(seat_depth=1))]
    # With a lead the seat proves itself: no tie gate (12 ties are decisive at 12, which
    # keeps seats without a lead away: test_no_seat_where_...).
    decisive = _search(filled, seats.replace(seat_lead=LEAD - 0.01, keyword_ties=12))
    assert decisive[9].memory.content == ANSWER


def test_the_default_model_s_profile_seats_only_a_lead_of_at_least_15(tmp_path, filled):
    l6 = calibration.profile("all-MiniLM-L6-v2-int8:384")
    assert (l6.vector_seats, l6.seat_depth, l6.seat_lead) == (2, 2, 0.15)
    model = "all-MiniLM-L6-v2-int8"  # its profile's seats; no floors (its cosines are not these)
    unfloored = BASE.replace(match_floor=0.0, unknown_floor=0.0, stranger_floor=0.0)
    # In the filled store the answer leads the lane's 10th by .092: not seated by the
    # profile (its 2 seats from the best 4, lead .15); seated where the lead asked is less.
    path = _fill(tmp_path / "l6.db", model)
    assert ANSWER not in [h.memory.content for h in _search(path, unfloored, model=model)]
    hits = _search(path, unfloored.replace(seat_lead=LEAD - 0.01), model=model)
    assert hits[9].memory.content == ANSWER and fusion.SEAT_NOTE in hits[9].explain.notes
    off = _search(path, unfloored.replace(vector_seats=0), model=model)
    assert [h.memory.id for h in hits[:8]] == [h.memory.id for h in off[:8]]


def test_a_memory_under_min_score_takes_no_seat(filled):
    on = _search(filled, BASE.replace(vector_seats=4))
    floor = (_own(on[9]) + on[5].score) / 2  # above the seated answer, below the head
    hits = _search(filled, BASE.replace(vector_seats=4), min_score=floor)
    assert hits and ANSWER not in [h.memory.content for h in hits]
    assert all(h.score >= floor for h in hits)
    assert all(fusion.SEAT_NOTE not in h.explain.notes for h in hits)


def test_deep_mode_s_seats_hold_min_score_and_drop_no_hit_that_passes_it(filled):
    # Deep mode runs the pipeline unfloored and drops what is under min_score after its
    # merge: a seat given to the answer (under the floor) took the place of "Sing it
    # flat" (at it), then was dropped too, and the page held nine hits where ten pass.
    plain = _search(filled, BASE.replace(vector_seats=0), mode="deep")
    assert len(plain) == 10 and ANSWER not in [h.memory.content for h in plain]
    floor = plain[-1].score - 0.001  # every one of the ten passes, the answer does not
    fast = _search(filled, BASE.replace(vector_seats=4), min_score=floor)
    for seats in (0, 4):
        deep = _search(filled, BASE.replace(vector_seats=seats), mode="deep", min_score=floor)
        assert [h.memory.id for h in deep] == [h.memory.id for h in plain]
        assert [h.memory.id for h in deep] == [h.memory.id for h in fast]
        assert all(fusion.SEAT_NOTE not in h.explain.notes for h in deep)
    # Unfloored, deep mode seats the answer as fast mode does.
    deep = _search(filled, BASE.replace(vector_seats=4), mode="deep")
    assert deep[9].memory.content == ANSWER and fusion.SEAT_NOTE in deep[9].explain.notes


class _FlatReranker:
    """Scores a text by whether it holds the question's word: the answer last."""

    name = "flat"

    def score(self, query, texts):
        return [1.0 if "flat" in text.lower() else 0.0 for text in texts]


class _BrokenReranker:
    name = "broken"

    def score(self, query, texts):
        raise RuntimeError("model exploded")


def test_a_reranker_s_order_is_final_no_seat_overrides_it(filled):
    settings = BASE.replace(vector_seats=4)
    hits = _search(filled, settings, reranker=_FlatReranker())
    assert len(hits) == 10 and ANSWER not in [h.memory.content for h in hits]
    assert all(fusion.SEAT_NOTE not in h.explain.notes for h in hits)
    assert all("rerank" in h.explain.lanes for h in hits)
    # A re-ranker that fails keeps the fused order, and with it the seats.
    kept = _search(filled, settings, reranker=_BrokenReranker())
    assert kept[9].memory.content == ANSWER and fusion.SEAT_NOTE in kept[9].explain.notes


def test_with_mmr_on_a_near_duplicate_of_a_seated_memory_yields_its_seat(db_path):
    # The answer's twin (the same words, so the same vector): by cosine alone both took
    # seats, where MMR (on by default, mmr_lambda 0.7) keeps two copies off a page.
    twin = "The big park: my apartment faces it"
    with hivemem.open(db_path, embedder=_embedder()) as store:
        for text in [*SHORT, *LONG, ANSWER, twin]:
            store.scope("home").save(text, wait=True)
    seated = _search(db_path, BASE.replace(vector_seats=5))  # MMR off: both, by cosine
    assert {h.memory.content for h in seated[-2:]} == {ANSWER, twin}
    hits = _search(db_path, Settings().replace(vector_seats=5))
    seats = [h.memory.content for h in hits if fusion.SEAT_NOTE in h.explain.notes]
    assert len(hits) == 10 and len(seats) == 2  # as many seats, one copy among them
    assert len({ANSWER, twin} & set(seats)) == 1
    off = _search(db_path, Settings().replace(vector_seats=0))
    assert [h.memory.id for h in hits[:5]] == [h.memory.id for h in off[:5]]


def test_no_seat_where_the_keyword_lane_singles_out_its_matches(filled):
    # Twelve ties are "weak" only above keyword_ties: at 12 the lane is decisive.
    hits = _search(filled, BASE.replace(vector_seats=4, keyword_ties=12))
    assert ANSWER not in [h.memory.content for h in hits]


def test_nothing_below_a_page_that_holds_every_memory_is_seated(filled):
    wide = _search(filled, BASE.replace(vector_seats=0), limit=20)
    seated_wide = _search(filled, BASE.replace(vector_seats=4), limit=20)
    assert len(wide) == 13  # every memory: none is left below the page to seat
    assert [h.memory.id for h in seated_wide] == [h.memory.id for h in wide]
    assert all(fusion.SEAT_NOTE not in h.explain.notes for h in seated_wide)


def test_seats_scale_with_the_limit_and_never_take_the_head():
    assert [fusion.seat_count(limit, 4) for limit in (1, 2, 3, 5, 10, 20, 50)] == [
        0, 0, 1, 2, 4, 8, 20,
    ]  # fmt: skip
    assert fusion.seat_count(10, 5) == 5 and fusion.seat_count(10, 0) == 0
    with pytest.raises(InvalidInput, match="vector_seats"):
        Settings().replace(vector_seats=6)


class _Hit:
    def __init__(self, name: str, score: float, cosine: float | None) -> None:
        self.name, self.score, self.cosine, self.factors = name, score, cosine, {}


def _seated(page, rest, seats, limit=10, depth=1, lead=0.0, **knobs):
    """``fusion.seated`` on plain hits, with the measured variants' knobs set."""
    saved = {k: getattr(fusion, k) for k in knobs}
    try:
        for k, v in knobs.items():
            setattr(fusion, k, v)
        out, seated = fusion.seated(
            page, page + rest, seats, lambda h: h.cosine, limit, depth=depth, lead=lead
        )
    finally:
        for k, v in saved.items():
            setattr(fusion, k, v)
    return [h.name for h in out], [h.name for h in seated]


def _page():
    # Ten fused hits, the vector lane's 2nd (cosine .6) among them at place 3; below the
    # page the lane's 1st (.7) and 3rd (.5), and a weak one (.2).
    page = [_Hit(f"f{i}", 1.0 - i / 20, 0.6 if i == 2 else 0.1) for i in range(10)]
    # v1 scores above the page's tail (as one MMR passed over can): lowered when seated.
    rest = [_Hit("v1", 0.65, 0.7), _Hit("v3", 0.2, 0.5), _Hit("v9", 0.1, 0.2)]
    return page, rest


def test_seated_takes_the_last_places_for_the_lane_s_best_below_the_page():
    page, rest = _page()
    names, seated = _seated(page, rest, 2)
    # The lane's best two are v1 and f2; f2 holds its place, v1 takes the last one.
    assert seated == ["v1"] and names == [f"f{i}" for i in range(9)] + ["v1"]
    v1 = rest[0]  # scores still fall with rank: v1 takes the score above it, a factor says so
    assert v1.score == page[8].score and v1.factors["seat"] == pytest.approx(page[8].score / 0.65)
    assert all(not h.factors for h in page)


def test_the_measured_variants_depth_floor_lead_and_spread():
    page, rest = _page()
    assert _seated(page, rest, 2, depth=2)[1] == ["v1", "v3"]  # the best four looked at
    assert _seated(page, rest, 2, depth=2, SEAT_FLOOR=0.55)[1] == ["v1"]  # v3 is .5
    # A lead over the lane's 10th cosine (.1 here): .7 leads by .6, .5 by .4.
    assert _seated(page, rest, 2, depth=2, lead=0.5)[1] == ["v1"]
    assert _seated(page, rest, 2, depth=2, lead=0.4)[1] == ["v1", "v3"]
    names, seated = _seated(page, rest, 2, depth=2, SEAT_SPREAD=True)
    # Spread: a head of 10 − 2 × 2 = 6, then seats and fused hits in turn.
    assert names == ["f0", "f1", "f2", "f3", "f4", "f5", "v1", "f6", "v3", "f7"]
    assert seated == ["v1", "v3"]
    assert _seated(page, rest, 0) == ([h.name for h in page], [])


class _Hit:
    def __init__(self, name: str, score: float, cosine: float | None) -> None:
        self.name, self.score, self.cosine, self.factors = name, score, cosine, {}


def test_a_higher_min_score_never_changes_who_leads_nor_drops_a_hit_that_clears_it():
    """The lane, its 10th cosine and its best were read after the ``min_score`` cut: with
    fewer than ten clearing it the reference fell to 0, so a memory leading by .09 (under
    the .15 asked) was seated at ``min_score`` .2 and not at 0 (the reviewer's case)."""
    page = [_Hit(f"kw{i}", 0.9 - 0.05 * i, None) for i in range(10)]
    rest = [_Hit("answer", 0.30, 0.50)]
    rest += [_Hit(f"v{i}", 0.10 - 0.004 * i, 0.41 - 0.003 * i) for i in range(12)]
    shown = {}
    for floor in (0.0, 0.05, 0.2, 0.35):
        cut = [h for h in page if fusion.clears(h.score, floor)]
        out, seated = fusion.seated(
            cut, cut + rest, 2, lambda h: h.cosine, 10, floor, depth=2, lead=0.15
        )
        assert seated == []
        shown[floor] = [h.name for h in out]
    assert all(shown[f] == [h.name for h in page if h.score >= f] for f in shown)
    # A lane shorter than the limit leads over its own last cosine, not over 0.
    few = [_Hit("near", 0.2, 0.45), _Hit("far", 0.1, 0.40)]
    assert fusion.seated(page[:3], page[:3] + few, 2, lambda h: h.cosine, 10, lead=0.15)[1] == []
    assert fusion.seated(page[:3], page[:3] + few, 2, lambda h: h.cosine, 10, lead=0.04)[1] == [
        few[0]
    ]


def test_a_superseded_version_takes_no_seat_where_current_ones_are_asked_for(db_path):
    """The superseded answer was seated alone, its current version (no vector-lane entry
    of its own) not shown."""
    with hivemem.open(db_path, embedder=_embedder()) as store:
        mem = store.scope("home")
        for text in [*SHORT, *LONG]:
            mem.save(text, wait=True)
        mem.save(ANSWER, key="home", wait=True)
        mem.save(
            "We moved: our home is near the station now",
            key="home",
            supersede_reason="moved",
            wait=True,
        )
    hits = _search(db_path, BASE.replace(vector_seats=4))
    assert ANSWER not in [h.memory.content for h in hits]
    assert all(fusion.SEAT_NOTE not in h.explain.notes for h in hits)
    old = _search(db_path, BASE.replace(vector_seats=4), status="superseded")
    assert [h.memory.content for h in old] == [ANSWER]


def test_seats_for_the_first_places_of_a_longer_page_go_there_the_rest_follow():
    # context() reads its first N hits of a page fetched with headroom: the seats are a
    # page of N's, in its last places, and the page's other hits follow in fused order.
    page, rest = _page()
    long_page = page + [_Hit(f"g{i}", 0.4 - i / 100, 0.1) for i in range(10)]
    out, seated = fusion.seated(long_page, long_page + rest, 2, lambda h: h.cosine, 20, within=10)
    names = [h.name for h in out]
    assert [h.name for h in seated] == ["v1"]
    assert names[:10] == [f"f{i}" for i in range(9)] + ["v1"]  # as a page of ten
    assert names[10:] == ["f9"] + [f"g{i}" for i in range(9)]  # the rest, 20 in all
    # Without ``within`` the page of 20 seats in its own last places, past the first ten.
    plain, _ = fusion.seated(long_page, long_page + rest, 4, lambda h: h.cosine, 20)
    assert "v1" not in [h.name for h in plain[:10]]


def test_a_query_s_seat_page_seats_where_the_caller_reads(filled):
    settings = BASE.replace(vector_seats=4)
    with hivemem.open(filled, embedder=_embedder(), settings=settings) as store:
        mem = store.scope("home")
        wide = mem.search(QUESTION, limit=13)
        read = mem.search(hivemem.Query(text=QUESTION, limit=13, seat_page=10))
    # A page of 13 seats one memory (13 × 4 // 10 = 5 seats, the answer not among the
    # page's best): past place 10; read as a page of 10 the answer is its last place.
    assert ANSWER not in [h.memory.content for h in wide[:10]]
    assert [h.memory.content for h in read][9] == ANSWER
    assert fusion.SEAT_NOTE in read[9].explain.notes
    assert len(read) == 13 and len({h.memory.id for h in read}) == 13


def test_the_memory_block_holds_the_seated_memory(db_path):
    # context() fetched 2 × 10 + 10 hits for its 10 relevant entries: read as a page of
    # 30 the answer stayed at fusion's 13th place, past the 10 the block shows. Episodes,
    # so only the relevant section can show them.
    with hivemem.open(db_path, embedder=_embedder()) as store:
        mem = store.scope("home")
        for text in [*SHORT, *LONG, ANSWER]:
            mem.add_episode(text, "s1", "user")
        store.flush()
    settings = BASE.replace(vector_seats=4)
    with hivemem.open(db_path, embedder=_embedder(), settings=settings) as store:
        mem = store.scope("home")
        assert ANSWER not in [h.memory.content for h in mem.search(QUESTION, limit=30)[:10]]
        block = mem.context(QUESTION, max_relevant=10, max_entries=50)
    assert ANSWER in block and block.count("\n- ") == 10


@pytest.mark.parametrize("bad", [-1, True, "10", 1.5, 10**6])
def test_a_bad_seat_page_is_refused_naming_it(filled, bad):
    with (
        hivemem.open(filled, embedder=_embedder()) as store,
        pytest.raises(InvalidInput, match="seat_page"),
    ):
        store.scope("home").search(hivemem.Query(text=QUESTION, seat_page=bad))
