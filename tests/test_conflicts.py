"""Conflicts found by consolidation (ADR 005: same entity, contradicting claim → the old
fact's confidence drops to 0.3 and the new one links to it): the heuristic's attribute
rule for moves and job changes, the LLM judge against a scripted local server and its
fallback; and the weekly reflection (tags, episodes read, the vault anti-pattern)."""

from __future__ import annotations

import json

import pytest

import hivemem
from hivemem import Kind, run_job
from hivemem.lifecycle.maintenance.conflicts import Claim, claim
from hivemem.providers.llm import OpenAIChatLLM
from test_llm import Reply, _Server


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alice lives in Berlin", Claim("alice", "residence", "berlin")),
        ("Alice moved to Munich last month.", Claim("alice", "residence", "munich")),
        ("Dr. Alice has recently relocated to New York", Claim("alice", "residence", "new york")),
        ("user said: I moved to Lisbon in May", Claim("user", "residence", "lisbon")),
        ("Bob works at Acme Corp since 2020", Claim("bob", "employer", "acme corp")),
        ("Bob joined Globex", Claim("bob", "employer", "globex")),
        ("Alice visited Berlin", None),
        ("The weather in Berlin is nice", None),
    ],
)
def test_claims_the_attribute_rule_knows(text, expected):
    assert claim(text) == expected


def _consolidate(mem, clock, *turns):
    mem.add_episodes([{"content": t, "session_id": "s-new", "role": "user"} for t in turns])
    clock.advance(hours=1)
    return mem.consolidate(session_id="s-new")


def test_a_move_lowers_the_old_residence_and_links_to_it(mem, clock):
    old = mem.save("Alice lives in Berlin", kind="fact")
    other = mem.save("Bob lives in Berlin", kind="fact")
    visit = mem.save("Alice visited Hamburg in spring", kind="fact")
    job = mem.save("Alice works at Acme Corp", kind="fact")
    result = _consolidate(mem, clock, "Alice moved to Munich last month.")
    assert result.counts["conflicts"] == 1
    [new] = [f for f in mem.list(kind="fact") if "Munich" in f.content]
    assert new.supersedes_id == old.id and new.supersede_reason == f"contradicts {old.id}"
    assert mem.get(old.id).confidence == pytest.approx(0.3)
    assert mem.get(old.id).status.value == "active"  # which one is right is not known
    assert [mem.get(m.id).confidence for m in (other, visit, job)] == [1.0, 1.0, 1.0]


def test_the_same_value_or_another_subject_is_no_conflict(mem, clock):
    old = mem.save("Alice lives in Munich", kind="fact")
    result = _consolidate(mem, clock, "Alice moved to Munich last month.", "Carol moved to Rome.")
    assert "conflicts" not in result.counts
    assert mem.get(old.id).confidence == 1.0


def test_a_job_change_of_the_speaker_is_a_conflict(mem, clock):
    mem.add_episodes([{"content": "I work at Initech as a backend developer", "session_id": "s0",
                       "role": "user"}])  # fmt: skip
    clock.advance(hours=1)
    mem.consolidate(session_id="s0")
    [old] = mem.list(kind="fact")
    assert old.content == "user said: I work at Initech as a backend developer"
    result = _consolidate(mem, clock, "I joined Globex as a senior platform engineer.")
    assert result.counts["conflicts"] == 1
    assert mem.get(old.id).confidence == pytest.approx(0.3)


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture
def llm_store(db_path, clock, server):
    llm = OpenAIChatLLM("m", base_url=server.url, max_retries=0)
    settings = hivemem.Settings(session_summaries=False)
    store = hivemem.open(db_path, clock=clock, embedder="none", llm=llm, settings=settings)
    yield store
    store.close()


def _facts(*contents):
    return json.dumps({"facts": [{"content": c, "turns": [1]} for c in contents]})


def test_the_llm_judges_conflicts_when_configured(llm_store, clock, server):
    mem = llm_store.scope("team-a")
    old = mem.save("Alice prefers tea in the morning", kind="fact")  # no rule knows this
    unrelated = mem.save("Alice lives in Berlin", kind="fact")
    server.script(
        _facts("Alice switched to coffee in the morning"),
        json.dumps({"conflicts": [{"new": 1, "contradicts": [old.id, "not-an-id"]}]}),
    )
    result = _consolidate(mem, clock, "I drink coffee every morning now, Alice said.")
    assert result.counts["conflicts"] == 1
    assert mem.get(old.id).confidence == pytest.approx(0.3)
    assert mem.get(unrelated.id).confidence == 1.0
    [new] = [f for f in mem.list(kind="fact") if "coffee" in f.content]
    assert new.supersedes_id == old.id
    prompt = server.requests[1]["messages"]
    assert "contradicts" in prompt[0]["content"]
    assert f"({old.id}) Alice prefers tea in the morning" in prompt[1]["content"]
    assert "[1] Alice switched to coffee in the morning" in prompt[1]["content"]


def test_the_llm_saying_none_overrides_the_heuristic(llm_store, clock, server):
    mem = llm_store.scope("team-a")
    old = mem.save("Alice lives in Berlin", kind="fact")
    server.script(_facts("Alice moved to Munich"), json.dumps({"conflicts": []}))
    result = _consolidate(mem, clock, "Alice moved to Munich.")
    assert "conflicts" not in result.counts and mem.get(old.id).confidence == 1.0


def test_a_failing_llm_judge_falls_back_to_the_heuristic(llm_store, clock, server):
    mem = llm_store.scope("team-a")
    old = mem.save("Alice lives in Berlin", kind="fact")
    server.script(_facts("Alice moved to Munich"), Reply(status=500, body={"error": {}}))
    result = _consolidate(mem, clock, "Alice moved to Munich.")
    assert result.counts["conflict_fallbacks"] == 1 and result.counts["conflicts"] == 1
    assert mem.get(old.id).confidence == pytest.approx(0.3)


# ----------------------------------------------------------------------------- reflection


def test_the_reflection_is_weekly_reads_turns_and_flags_the_vault_pattern(llm_store, server):
    mem = llm_store.scope("team-a")
    for text in ["Ana leads platform", "Bo owns billing", "Cy joined data in May"]:
        mem.save(text, kind="fact")
    mem.add_episode("We should hire a data engineer", session_id="s1", role="user")
    mem.save("0 posts reported", key="reported_posts")
    for n in range(1, 30):
        mem.save(f"{n} posts reported", key="reported_posts", supersede_reason="count")
    server.script("- The team grew.")
    [result] = run_job(llm_store, "reflect", "team-a")
    assert result.status == "ok", result.reason
    [reflection] = mem.list(kind="reflection")
    assert reflection.tags == ("weekly",)
    assert reflection.attributes["vault_candidates"] == {"reported_posts": 30}
    assert "Vault candidates: `reported_posts` (30 versions)" in reflection.content
    assert "hivemem vault set" in reflection.content
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "Cy joined data in May" in prompt and "user: We should hire a data engineer" in prompt


def test_the_extractive_reflection_flags_the_vault_pattern_too(store):
    mem = store.scope("team-a")
    for text in ["Ana leads platform", "Bo owns billing", "Cy joined data in May"]:
        mem.save(text, kind="fact")
    mem.save("cache v0", key="feed-cache")
    for n in range(1, 3):
        mem.save(f"cache v{n}", key="feed-cache", supersede_reason="refresh")
    [quiet] = run_job(store, "reflect", "team-a")
    [reflection] = mem.list(kind=Kind.REFLECTION)
    assert "vault_candidates" not in reflection.attributes  # 3 versions: not dozens
    assert reflection.tags == ("weekly",) and quiet.status == "ok"
