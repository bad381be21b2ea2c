"""The ``resolve`` job (ADR 005 phase 4: LLM entity resolution where name similarity is
below 0.7), against a real local HTTP server speaking the OpenAI chat protocol
(``test_llm._Server``): related names of low similarity are asked about and merged when
the model says they are one; similar names are never asked; verdicts are kept, so a
rerun asks nothing; protected entities are never absorbed; without an LLM nothing
changes; the write path never calls the model."""

from __future__ import annotations

import json

import pytest

import hivemem
from hivemem import run_job
from hivemem.lifecycle.maintenance.resolve import candidates, similarity
from hivemem.providers.llm import OpenAIChatLLM
from test_llm import Reply, _Server


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


@pytest.fixture
def store(db_path, clock, server):
    llm = OpenAIChatLLM("m", base_url=server.url, max_retries=0)
    with hivemem.open(db_path, clock=clock, embedder="none", llm=llm) as s:
        yield s


def _verdicts(*same: bool) -> str:
    return json.dumps({"pairs": [{"index": i, "same": v} for i, v in enumerate(same, 1)]})


def _asked(server) -> list[str]:
    return [r["messages"][-1]["content"] for r in server.requests]


def test_related_names_of_low_similarity_are_asked_and_merged(store, server):
    mem = store.scope("team-a")
    first = mem.save("Alice Smith joined the platform team", kind="fact")
    second = mem.save("We asked Alice about the budget", kind="fact")
    assert server.requests == []  # the write path never asks the model
    assert similarity("alice", "alice smith") < 0.7
    server.script(_verdicts(True))
    [result] = run_job(store, "resolve", "team-a", raise_errors=True)
    assert result.counts["merged"] == 1 and result.counts["asked"] == 1
    [prompt] = _asked(server)
    assert '"Alice" (person' in prompt and '"Alice Smith" (person' in prompt
    assert "We asked Alice about the budget" in prompt  # context for each name
    entity, memories = mem.entity("Alice")
    assert entity.canonical == "alice smith" and "alice" in entity.aliases
    assert {m.id for m in memories} == {first.id, second.id}
    assert entity.mention_count == 2
    # a later mention under the absorbed name is linked to the kept entity on write
    third = mem.save("I met Alice at lunch", kind="fact")
    assert third.id in {m.id for m in mem.entity("Alice Smith")[1]}
    # a rerun has nothing new to ask
    [again] = run_job(store, "resolve", "team-a", raise_errors=True)
    assert again.counts.get("asked", 0) == 0 and len(server.requests) == 1


def test_similar_names_are_not_asked_and_a_no_is_remembered(store, server):
    mem = store.scope("team-a")
    mem.save("Acme Corp signed", kind="fact")
    mem.save("Acme Corporation renewed", kind="fact")  # similarity >= 0.7: no question
    mem.save("Project Alpha ships in May", kind="fact")
    mem.save("Alpha Centauri is a star", kind="fact")  # related, dissimilar: asked
    assert similarity("acme corp", "acme corporation") >= 0.7
    server.script(_verdicts(False))
    [result] = run_job(store, "resolve", "team-a", raise_errors=True)
    assert result.counts["confident"] >= 1 and result.counts["asked"] == 1
    assert result.counts.get("merged", 0) == 0
    [prompt] = _asked(server)
    assert "Corporation" not in prompt and "Alpha Centauri" in prompt
    assert mem.entity("Project Alpha")[0].canonical == "project alpha"
    assert mem.entity("Alpha Centauri")[0].canonical == "alpha centauri"
    run_job(store, "resolve", "team-a", raise_errors=True)
    assert len(server.requests) == 1  # the "no" was recorded


def test_a_protected_entity_absorbs_and_is_never_absorbed(store, server):
    mem = store.scope("team-a")
    mem.save("Caro called", kind="fact")
    mem.save("Caro called again", kind="fact")
    mem.save("Caroline Jones is our lawyer", kind="fact")
    mem.describe_entity("Caroline Jones", protected=True)
    server.script(_verdicts(True))
    run_job(store, "resolve", "team-a", raise_errors=True)
    kept, memories = mem.entity("Caro")
    assert kept.canonical == "caroline jones" and kept.protected and len(memories) == 3


def test_a_failed_call_merges_nothing_and_the_rerun_asks_again(store, server):
    mem = store.scope("team-a")
    mem.save("Alice Smith joined", kind="fact")
    mem.save("Alice left early", kind="fact")
    server.script(Reply(status=500, body={"error": {"message": "down"}}))
    [failed] = run_job(store, "resolve", "team-a")
    assert failed.status == "failed"
    assert mem.entity("Alice")[0].canonical == "alice"
    server.script(_verdicts(True))
    [ok] = run_job(store, "resolve", "team-a", raise_errors=True)
    assert ok.counts["merged"] == 1


def test_without_an_llm_nothing_is_merged(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="none") as store:
        mem = store.scope("team-a")
        mem.save("Alice Smith joined", kind="fact")
        mem.save("Alice left early", kind="fact")
        [result] = run_job(store, "resolve", "team-a")
        assert result.status == "skipped" and "no LLM" in (result.reason or "")
        assert mem.entity("Alice")[0].canonical == "alice"


def test_candidates_need_related_names_and_compatible_types(store):
    mem = store.scope("team-a")
    mem.save("Berlin is cold, Bertha is warm, Alice Smith and Alice met at Docker", kind="fact")
    rows = store.resolutions.entities("team-a", ("person", "location", "tool"))
    pairs = {(a.canonical, b.canonical) for a, b, _ in candidates(rows)}
    assert ("alice smith", "alice") in pairs or ("alice", "alice smith") in pairs
    assert not any("berlin" in p and "bertha" in p for p in pairs)  # no word relation
