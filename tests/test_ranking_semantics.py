"""What a ranking means to a user, whatever the data: memories saved on purpose are not
judged as dialogue, the current version of a key comes first, each memory appears once,
one tenant's writes never move another's scores, and diversity and re-ranking see what
they should."""

from __future__ import annotations

import pytest

import hivemem
from hivemem import Settings

BILLING_CHATTER = [
    "The billing database is slow again this morning.",
    "Billing database backups failed last night.",
    "Which database does billing run on today?",
    "I think the billing database needs more memory.",
    "Billing invoices are stored in that database.",
    "Let's talk about the billing database tomorrow.",
]


@pytest.mark.parametrize("embedder", ["none", "hash"])
def test_a_decision_saved_on_purpose_outranks_chatter_that_shares_its_words(
    tmp_path, clock, embedder
):
    with hivemem.open(tmp_path / "d.db", clock=clock, embedder=embedder) as store:
        mem = store.scope("team")
        decision = mem.save(
            "We decided to use PostgreSQL for the billing service", type="decision", wait=True
        )
        mem.add_episodes(
            [
                {"content": text, "session_id": "s1", "role": ("user", "assistant")[i % 2]}
                for i, text in enumerate(BILLING_CHATTER)
            ],
            wait=True,
        )
        hits = mem.search("which database did we decide for billing?")
        assert hits[0].memory.id == decision.id
        assert "session" not in hits[0].explain.factors  # neither helped nor hurt


def test_a_fact_outside_any_session_is_not_treated_as_a_weak_session(tmp_path, clock):
    settings = Settings(neighbour_weight=0, window_weight=0, decay_weight=0, mmr_lambda=1.0)
    with hivemem.open(tmp_path / "f.db", clock=clock, settings=settings, embedder="none") as s:
        mem = s.scope("a")
        fact = mem.save("Garden beds need compost first.")
        mem.add_episodes(
            [
                {"content": "We planted tomatoes in the garden.", "session_id": "g", "role": "a"},
                {"content": "The garden hose leaks.", "session_id": "g", "role": "b"},
            ]
        )
        hit = next(h for h in mem.search("garden") if h.memory.id == fact.id)
        assert "session" not in hit.explain.factors
        assert hit.score == pytest.approx(hit.explain.fused)


@pytest.mark.parametrize("embedder", ["none", "hash"])
def test_the_current_version_of_a_key_outranks_its_superseded_versions_for_any_query(
    tmp_path, clock, embedder
):
    with hivemem.open(tmp_path / "v.db", clock=clock, embedder=embedder) as store:
        mem = store.scope("a")
        old = mem.save("Billing runs on MySQL 5.7 in the Frankfurt region", key="billing.db")
        mid = mem.save(
            "Billing runs on MySQL 8", key="billing.db", supersede_reason="upgrade", wait=True
        )
        new = mem.save(
            "Payments moved to PostgreSQL 16",
            key="billing.db",
            supersede_reason="migration",
            wait=True,
        )
        mem.save("Frankfurt region has two zones", wait=True)
        for query in ["MySQL 5.7 Frankfurt region", "billing MySQL", "PostgreSQL payments"]:
            hits = mem.search(query)
            order = [h.memory.id for h in hits]
            assert new.id in order, query
            for superseded in (old.id, mid.id):
                if superseded in order:
                    assert order.index(new.id) < order.index(superseded), query
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
        # only superseded versions asked for: nothing to lift
        only_old = mem.search("MySQL 5.7 Frankfurt", status="superseded")
        assert new.id not in [h.memory.id for h in only_old]


def test_a_promoted_memory_appears_once_in_search_and_context(tmp_path, clock):
    with hivemem.open(tmp_path / "p.db", clock=clock, embedder="hash") as store:
        alice = store.scope("alice", shared=["team"])
        original = alice.save("Deploys freeze on Fridays after noon", type="decision", wait=True)
        copy = alice.promote(original.id, to="team")
        store.flush()
        assert copy.attributes["promoted_from"]["id"] == original.id
        hits = alice.search("deploy freeze friday")
        ids = [h.memory.id for h in hits]
        assert ids.count(original.id) + ids.count(copy.id) == 1
        assert original.id in ids  # the copy in the caller's own scope wins
        block = alice.context("when do deploys freeze?")
        assert block.count("Deploys freeze on Fridays after noon") == 1
        # a handle of the shared scope alone still finds the copy
        team = store.scope("team")
        assert [h.memory.id for h in team.search("deploy freeze friday")] == [copy.id]
        bob = store.scope("bob", shared=["team"])
        assert [h.memory.id for h in bob.search("deploy freeze friday")] == [copy.id]


def test_writing_to_one_scope_never_changes_a_score_in_another(tmp_path, clock):
    settings = Settings(track_access=False)
    with hivemem.open(tmp_path / "t.db", clock=clock, settings=settings, embedder="hash") as store:
        b = store.scope("tenant-b")
        b.save("The quarterly report is due on Friday", wait=True)
        b.save("Lunch with the finance team", wait=True)
        b.save("The report template lives in the wiki", wait=True)
        before = [(h.memory.id, h.score) for h in b.search("quarterly report")]
        a = store.scope("tenant-a")
        for i in range(30):
            a.save(f"Quarterly report draft {i} for the board", wait=True)
        a.save("Friday report review", wait=True)
        after = [(h.memory.id, h.score) for h in b.search("quarterly report")]
        assert after == before
        # deleting A's memories (their chunks go, whatever deletes them) changes nothing
        with store.atomic():
            store._backend._write("DELETE FROM memories WHERE scope = 'tenant-a'")
        store.scope("tenant-c").save("Parking rules", wait=True)  # a write settles counts
        assert store.keyword.term_stats(["quarterly"], ["tenant-a"]).doc_freq == {"quarterly": 0}
        assert [(h.memory.id, h.score) for h in b.search("quarterly report")] == before


class _CountingReranker:
    name = "counting"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def score(self, query, texts):
        self.sizes.append(len(texts))
        return [float(len(texts) - i) for i in range(len(texts))]


def test_the_reranker_receives_rerank_depth_candidates_before_diversity(tmp_path, clock):
    reranker = _CountingReranker()
    settings = Settings(rerank_depth=8, track_access=False)
    with hivemem.open(
        tmp_path / "r.db", clock=clock, settings=settings, embedder="hash", reranker=reranker
    ) as store:
        mem = store.scope("a")
        for i in range(12):
            mem.save(f"deploy note number {i} about the friday release", wait=True)
        hits = mem.search("deploy friday release", limit=3)
        assert len(hits) == 3
        assert reranker.sizes == [8]


def test_keyword_only_search_diversifies_near_duplicates(tmp_path, clock):
    settings = Settings(decay_weight=0, track_access=False)
    with hivemem.open(tmp_path / "k.db", clock=clock, settings=settings, embedder="none") as s:
        mem = s.scope("a")
        for suffix in ("", " today", " again"):
            mem.save(f"The staging cluster restarts every night at two{suffix}")
        other = mem.save(
            "Staging cluster restarts are logged in Grafana together with the deploy "
            "history of every service we run"
        )
        hits = mem.search("staging cluster restarts", limit=3)
        assert other.id in [h.memory.id for h in hits]
        assert any("diversity" in h.explain.factors for h in hits)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
