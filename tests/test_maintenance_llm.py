"""Maintenance jobs with an LLM: a real local HTTP server speaking the OpenAI chat
protocol with scripted replies (``test_llm._Server``). Consolidation (facts, provenance,
keys that supersede, a failing server mid-job and the resumed run, the extractive
fallback after repeated failures), reflection and enrichment."""

from __future__ import annotations

import json

import pytest

import hivemem
from hivemem import Status, run_job
from hivemem.lifecycle.maintenance import run_log
from hivemem.providers.llm import LLMError, OpenAIChatLLM
from test_llm import Reply, _Server


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture
def llm_store(db_path, clock, server):
    llm = OpenAIChatLLM("qwen2.5:7b", base_url=server.url, max_retries=0)
    # Session summaries and conflicts ask the model too; their own tests are in
    # test_sessions.py and test_conflicts.py.
    settings = hivemem.Settings(session_summaries=False, llm_conflicts=False)
    store = hivemem.open(db_path, clock=clock, embedder="none", llm=llm, settings=settings)
    yield store
    store.close()


def _facts(*facts: dict) -> str:
    return json.dumps({"facts": list(facts)})


def _turns(mem, n, session="s1"):
    return mem.add_episodes(
        [
            {
                "content": f"Turn {i}: server {i} runs service kappa{i}.",
                "session_id": session,
                "role": "user",
            }
            for i in range(n)
        ]
    )


def test_llm_consolidation_makes_facts_with_provenance(llm_store, clock, server):
    mem = llm_store.scope("team-a")
    episodes = mem.add_episodes(
        [
            {"content": "hey", "session_id": "s1", "role": "user"},
            {"content": "I moved to lisbon last month", "session_id": "s1", "role": "user"},
            {"content": "Nice! Lisbon is lovely.", "session_id": "s1", "role": "assistant"},
        ]
    )
    server.script(_facts({"content": "The user moved to Lisbon in 2025-12.", "turns": [2]}))
    clock.advance(hours=1)
    result = mem.consolidate()
    assert result.counts["facts"] == 1
    [fact] = mem.list(kind="fact")
    assert fact.content == "The user moved to Lisbon in 2025-12."
    assert fact.source_ids == (episodes[1].id,)
    assert fact.attributes == {"consolidated_by": "llm:openai:qwen2.5:7b"}
    [request] = server.requests
    prompt = request["messages"][-1]["content"]
    assert "[2] user" in prompt and "I moved to lisbon last month" in prompt
    assert request["response_format"]["type"] == "json_schema"
    assert mem.consolidate().counts == {}  # consolidated: the model is not asked again
    assert len(server.requests) == 1


def test_a_fact_whose_key_holds_another_value_supersedes_it(llm_store, clock, server):
    mem = llm_store.scope("team-a")
    old = mem.save("Alice lives in Paris", key="alice.city", kind="fact")
    _turns(mem, 2)
    server.script(
        _facts(
            {"content": "Alice lives in Berlin", "key": "alice.city", "turns": [1]},
            {"content": "Alice lives in Berlin", "key": "alice.city", "turns": [2]},
        )
    )
    clock.advance(hours=1)
    result = mem.consolidate()
    assert dict(result.counts) == {
        "batches": 1,
        "duplicates": 1,
        "episodes": 2,
        "facts": 1,
        "sessions": 1,
        "superseded": 1,
    }
    assert mem.get("alice.city").content == "Alice lives in Berlin"
    assert mem.get(old.id).status is Status.SUPERSEDED
    chain = mem.history("alice.city")
    assert [m.content for m in chain] == ["Alice lives in Paris", "Alice lives in Berlin"]
    assert chain[1].supersede_reason == "consolidation of session s1"


def test_the_server_failing_mid_job_then_a_rerun_loses_and_duplicates_nothing(
    llm_store, clock, server
):
    mem = llm_store.scope("team-a")
    episodes = _turns(mem, 70)  # three batches of at most 30
    clock.advance(hours=1)
    server.script(
        _facts(*({"content": f"Server {i} runs kappa{i}.", "turns": [i + 1]} for i in range(30))),
        Reply(status=500, body={"error": {"message": "model crashed"}}),
    )
    with pytest.raises(LLMError, match="failed"):
        mem.consolidate()
    assert len(mem.list(kind="fact", limit=1000)) == 30
    [failed] = run_log(llm_store, "consolidate")
    assert failed.status == "failed" and "model crashed" in failed.error
    assert failed.counts == {"batches": 1, "episodes": 30, "facts": 30}
    server.script(
        _facts(
            *({"content": f"Server {i} runs kappa{i}.", "turns": [i - 29]} for i in range(30, 60))
        ),
        _facts(
            *({"content": f"Server {i} runs kappa{i}.", "turns": [i - 59]} for i in range(60, 70))
        ),
    )
    result = mem.consolidate()
    assert result.counts["episodes"] == 40 and result.counts["facts"] == 40
    facts = mem.list(kind="fact", limit=1000)
    assert sorted(f.content for f in facts) == sorted(
        f"Server {i} runs kappa{i}." for i in range(70)
    )
    by_content = {f.content: f.source_ids for f in facts}
    assert by_content["Server 45 runs kappa45."] == (episodes[45].id,)
    assert mem.consolidate().counts == {}


def test_repeated_failures_on_one_batch_fall_back_to_extractive(db_path, clock, server):
    settings = hivemem.Settings(
        consolidate_max_failures=2, session_summaries=False, llm_conflicts=False
    )
    llm = OpenAIChatLLM("m", base_url=server.url, max_retries=0)
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="none", llm=llm) as store:
        mem = store.scope("team-a")
        _turns(mem, 3)
        clock.advance(hours=1)
        for _ in range(2):
            server.script(Reply(status=500, body={"error": {"message": "boom"}}))
            with pytest.raises(LLMError):
                mem.consolidate()
        result = mem.consolidate()  # no reply scripted: the model is not asked
        assert result.counts["fallback_batches"] == 1 and result.counts["facts"] == 3
        assert len(server.requests) == 2
        assert {f.attributes["consolidated_by"] for f in mem.list(kind="fact")} == {"extractive"}


def test_llm_reflection(llm_store, server):
    mem = llm_store.scope("team-a")
    for text in ["Ana leads platform", "Bo owns billing", "Cy joined data in May"]:
        mem.save(text, kind="fact")
    server.script("- The team grew: Cy joined data.\n- Ownership is clear.")
    [result] = run_job(llm_store, "reflect", "team-a")
    assert result.status == "ok"
    [reflection] = mem.list(kind="reflection")
    assert reflection.content.endswith("- The team grew: Cy joined data.\n- Ownership is clear.")
    assert reflection.attributes["reflected_by"] == "llm:openai:qwen2.5:7b"
    assert reflection.decay_rate == 0
    assert "Cy joined data in May" in server.requests[0]["messages"][-1]["content"]
    [again] = run_job(llm_store, "reflect", "team-a")
    assert again.status == "skipped" and len(server.requests) == 1


def test_llm_enrichment_links_entities_the_regexes_missed(llm_store, server):
    mem = llm_store.scope("team-a")
    quiet = mem.save("the team met acme corp in berlin", kind="fact")
    named = mem.save("Ana and Bo met Cy at Globex", kind="fact")  # enough entities already
    server.script(
        json.dumps(
            {
                "memories": [
                    {
                        "index": 1,
                        "entities": [
                            {"name": "acme corp", "type": "organization"},
                            {"name": "berlin", "type": "location", "confidence": 0.95},
                        ],
                    }
                ]
            }
        )
    )
    [result] = run_job(llm_store, "enrich", "team-a")
    assert result.status == "ok"
    assert dict(result.counts) == {"checked": 2, "enriched": 1, "mentions": 2}
    acme, linked = mem.entity("Acme Corp")
    assert [m.id for m in linked] == [quiet.id]
    assert (acme.type, mem.entity("Berlin")[0].type) == ("organization", "location")
    assert "Ana and Bo" not in server.requests[0]["messages"][-1]["content"]
    assert named.id  # checked, not sent
    [again] = run_job(llm_store, "enrich", "team-a")
    assert dict(again.counts) == {} and len(server.requests) == 1


def test_the_cli_gives_the_llm_its_key_from_the_environment(db_path, server):
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    with hivemem.open(db_path, embedder="none") as store:
        store.scope("default").add_episodes(
            [{"content": "I moved to lisbon last month", "session_id": "s1", "role": "user"}]
        )
    server.script(
        _facts({"content": "The user moved to Lisbon.", "turns": [1]}),
        "- The user moved to Lisbon.",  # the session's summary
    )
    env = {
        "HIVEMEM_LLM": "openai",
        "HIVEMEM_LLM_MODEL": "qwen2.5:7b",
        "HIVEMEM_LLM_BASE_URL": server.url,
        "HIVEMEM_LLM_API_KEY": "sk-test-key-123",
        "HIVEMEM_EMBEDDER": "none",
        "HIVEMEM_CONSOLIDATE_IDLE_MINUTES": "0",  # the session has ended
    }
    result = CliRunner().invoke(
        main, ["--db", str(db_path), "maintain", "consolidate", "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    assert [r["auth"] for r in server.requests] == ["Bearer sk-test-key-123"] * 2
    assert "sk-test-key-123" not in result.output
