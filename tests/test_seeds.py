"""The five seed designs' users, working as they do (issue #14): their tool names and
argument shapes (ADR 005, Agent Swarm, openhive, corvid), tool profiles, lead rights,
categories as a filter, and the audit habits — through the library, ``tools.call``, the
MCP server (SDK in-memory client) and the HTTP API (in-process client)."""

from __future__ import annotations

import asyncio
import json
import logging

import anyio
import httpx
import pytest

import hivemem
from hivemem import Forbidden, InvalidInput, NotFound, Settings, tools
from hivemem.frontends import mcp as mcp_server
from hivemem.frontends.http import create_app
from hivemem.write import learning

mcp = pytest.importorskip("mcp")
from mcp import Client  # noqa: E402


def call(mem, name, **args):
    out = tools.call(mem, name, args)
    json.dumps(out)
    return out


def mcp_calls(mem, calls, names=None):
    async def main():
        async with Client(mcp_server.create_server(mem, names)) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            return listed, [await client.call_tool(n, a) for n, a in calls]

    return anyio.run(main)


def http(app, method, url, token, **kwargs):
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await c.request(
                method, url, headers={"Authorization": f"Bearer {token}"}, **kwargs
            )

    return asyncio.run(go())


@pytest.fixture
def app(store):
    application = create_app(store)
    yield application
    application.state.api.close()


# ----------------------------------------------------------------------------- §1 tools


def test_adr005_search_memory_and_remember_fact_take_their_arguments(mem):
    saved = call(
        mem,
        "remember_fact",
        content="Vitaly prefers concise answers",
        confidence=0.8,
        entity_names=["Vitaly", "Project Alpha"],
        tags=["work"],
    )
    assert saved["memory"]["confidence"] == 0.8
    entity, linked = mem.entity("Project Alpha")
    assert [m.id for m in linked] == [saved["memory"]["id"]]
    mem.add_episode("Vitaly asked for shorter replies", "s1", "user")
    found = call(mem, "search_memory", query="concise answers", kind="fact", tag="work", limit=5)
    assert [r["id"] for r in found["results"]] == [saved["memory"]["id"]]
    assert call(mem, "search_memory", query="concise", tag="home")["results"] == []
    with pytest.raises(InvalidInput, match="confidence"):
        tools.call(mem, "remember_fact", {"content": "x", "confidence": 2})


def test_adr005s_preference_kind_is_a_fact_of_category_preference(mem):
    """ADR 005's kinds are episode | fact | preference | reflection; HiveMem keeps a
    preference as a fact its categorizer files under ``preference``."""
    liked = call(mem, "remember_fact", content="I prefer dark mode in every editor")
    mem.save("The editor crashed on startup after the update")
    found = call(mem, "search_memory", query="editor", kind="preference")
    assert [r["id"] for r in found["results"]] == [liked["memory"]["id"]]
    assert "category_fallback" not in found
    with pytest.raises(InvalidInput, match="category"):
        tools.call(mem, "search_memory", {"query": "x", "kind": "preference", "category": "task"})


def test_openhive_and_corvid_name_the_memory_by_its_key(mem):
    """openhive's ``memory_delete(key)`` and corvid's recall by key: ``key`` is the
    argument's name where a tool takes a memory's id or key."""
    mem.save("Never deploy on Fridays", key="deploy-lesson", type="warning")
    assert call(mem, "memory_get", key="deploy-lesson")["memory"]["type"] == "lesson"
    _, (deleted,) = mcp_calls(mem, [("memory_delete", {"key": "deploy-lesson"})])
    assert json.loads(deleted.content[0].text)["memory"]["status"] == "deleted"
    assert call(mem, "memory_search", query="deploy fridays")["results"] == []
    saved = call(mem, "memory_save", key="k", content="a")  # memory_save's own key stays
    assert saved["memory"]["key"] == "k"


def test_swarm_hyphenated_tools_answer_in_mcp_and_http(store, app):
    worker = store.scope("worker-1")
    memory = worker.save("The API needs the Bearer prefix", key="auth")
    listed, (found, got, deleted) = mcp_calls(
        worker,
        [
            ("memory-search", {"query": "bearer prefix", "limit": 3}),
            ("memory-get", {"memoryId": memory.id}),
            ("memory-delete", {"memoryId": memory.id}),
        ],
        tools.select("swarm"),
    )
    assert listed == [
        "memory-search",
        "memory-get",
        "memory-delete",
        "inject-learning",
        "add_task_result",
    ]
    assert json.loads(found.content[0].text)["results"][0]["id"] == memory.id
    assert json.loads(got.content[0].text)["memory"]["id"] == memory.id
    assert worker.store.memories.get(["worker-1"], memory.id).access_count == 1  # the get
    assert json.loads(deleted.content[0].text)["memory"]["status"] == "deleted"
    token = store.tokens.create("w", {"worker-1": "write"}, store.clock())[1]
    again = worker.save("Retry with backoff on 429", key="retry")
    out = http(app, "POST", "/v1/scopes/worker-1/tools/memory-search", token, json={"query": "429"})
    assert out.status_code == 200 and out.json()["results"][0]["id"] == again.id
    got = http(
        app, "POST", "/v1/scopes/worker-1/tools/memory-get", token, json={"memoryId": again.id}
    )
    assert got.status_code == 200 and got.json()["memory"]["key"] == "retry"
    gone = http(
        app, "POST", "/v1/scopes/worker-1/tools/memory-delete", token, json={"memoryId": again.id}
    )
    assert gone.status_code == 200 and gone.json()["memory"]["status"] == "deleted"
    assert worker.search("429") == []


def test_memory_stats_gives_counts_by_kind_and_the_two_times(mem, store, app):
    empty = call(mem, "memory_stats")
    assert empty["latest_record_at"] is None and empty["last_consolidation_at"] is None
    mem.add_episode("We moved the standup to 9", "s1", "user")
    last = mem.save("Standups are at 9")
    result = mem.consolidate("s1")
    stats = call(mem, "memory_stats")
    assert stats["active_by_kind"]["episode"] == 1 and stats["active_by_kind"]["fact"] >= 1
    assert stats["latest_record_at"] >= last.created_at.isoformat()
    assert stats["last_consolidation_at"] == result.finished_at.isoformat()
    token = store.tokens.create("r", {"team-a": "read"}, store.clock())[1]
    over_http = http(app, "GET", "/v1/scopes/team-a/stats", token).json()
    assert over_http["last_consolidation_at"] == stats["last_consolidation_at"]


def test_memory_search_answers_in_openhives_shape(db_path, clock):
    long_text = " ".join(f"word{i}" for i in range(600)) + " kubernetes upgrade notes"
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        mem = store.scope("team")
        mem.save(long_text, key="long")
        store.flush()
        out = call(mem, "memory_search", query="kubernetes upgrade")
        [hit] = out["results"]
        assert out["search_mode"] == "hybrid"
        assert hit["key"] == "long" and hit["is_active"] and hit["type"] == "context"
        assert hit["source"] in {"hybrid", "keyword"} and hit["origin"] == "manual"
        assert 200 <= hivemem.text.count_tokens(hit["snippet"]) <= 402  # its whole chunk
        assert "kubernetes" in hit["snippet"]
        short = call(mem, "memory_search", query="kubernetes", snippet_tokens=20)
        assert hivemem.text.count_tokens(short["results"][0]["snippet"]) <= 22


def test_the_search_answer_carries_corvids_candidate_count(db_path, clock):
    """corvid's ``SearchResult.totalCandidates``: the answer says how many memories
    matched before the cut to the limit; a search that finds nothing says 0."""
    with hivemem.open(db_path, clock=clock, embedder="none") as store:
        mem = store.scope("team")
        for i in range(12):  # a name the query names: every replica is a candidate
            mem.save(f"Replica {i} of the Zephyr billing database lags", kind="fact")
        for food in ("tacos", "ramen", "pizza"):
            mem.save(f"Friday lunch is {food}", kind="fact")
        out = call(mem, "memory_search", query="Zephyr billing replica lag", max_results=3)
        assert out["count"] == 3 and out["total_candidates"] == 12
        assert call(mem, "search_memory", query="Zephyr billing replica lag", limit=2)[
            "total_candidates"] == 12  # fmt: skip
        hits = mem.search("Zephyr billing replica lag", 100)
        assert len(hits) == 12 and {h.explain.candidates for h in hits} == {12}
        none = call(mem, "memory_search", query="kubernetes upgrade")
        assert (none["count"], none["total_candidates"]) == (0, 0)


def test_profiles_choose_the_tools_offered(mem):
    assert tools.select("core") == [
        "search_memory",
        "remember_fact",
        "correct_fact",
        "confirm_fact",
        "memory_stats",
        "get_entity_info",
        "memory_consolidate",
    ]
    assert tools.select("openhive") == [
        "memory_save",
        "memory_search",
        "memory_list",
        "memory_delete",
    ]
    assert tools.select("memory_get, memory-search") == ["memory_get", "memory-search"]
    assert [f["function"]["name"] for f in tools.openai_functions(profile="assistant")] == (
        tools.select("core")[:6]
    )
    with pytest.raises(InvalidInput, match="unknown tool or profile 'nope'"):
        tools.select("nope")
    listed, (refused,) = mcp_calls(mem, [("memory_save", {"content": "x"})], tools.select("core"))
    assert listed == tools.select("core")
    assert refused.is_error and "unknown tool 'memory_save'" in refused.content[0].text
    assert mem.list() == []
    mem.save("Tabs, not spaces")
    _, (other_name,) = mcp_calls(mem, [("memory-search", {"query": "tabs"})])  # default set
    assert json.loads(other_name.content[0].text)["results"][0]["snippet"] == "Tabs, not spaces"


def test_serve_mcp_offers_a_profile_and_writes_as_its_agent(db_path):
    """A real ``hivemem serve-mcp --tools core --agent …`` process: it lists the 7 tools of
    ADR 005 under their names, refuses the others, and signs its writes."""
    import os
    import sys

    from mcp import StdioServerParameters

    cmd = [sys.executable, "-c", "from hivemem.frontends.cli import main; main()"]
    args = ["--db", str(db_path), "serve-mcp", "--scope", "me", "--tools", "core"]
    params = StdioServerParameters(
        command=cmd[0],
        args=[*cmd[1:], *args, "--agent", "assistant-1"],
        env={**os.environ, "HIVEMEM_EMBEDDER": "hash"},
    )

    async def main():
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            fact = await client.call_tool(
                "remember_fact", {"content": "Vitaly likes tea", "entity_names": ["Vitaly"]}
            )
            refused = await client.call_tool("memory_save", {"content": "x"})
            return names, fact, refused

    names, fact, refused = anyio.run(main)
    assert names == tools.select("core")
    assert json.loads(fact.content[0].text)["memory"]["updated_by"] == "assistant-1"
    assert refused.is_error
    with hivemem.open(db_path, embedder="hash") as store:
        assert [m.content for m in store.scope("me").entity("Vitaly")[1]] == ["Vitaly likes tea"]


def test_memory_list_gives_the_total_of_current_entries_through_every_front_end(store, app, clock):
    """openhive's ``memory_list`` returns all active entries; a page of ours says how
    many there are in all (``total``, the filters applied; expired and deleted rows not
    counted) beside ``more``/``next_offset``, through the table, MCP and HTTP alike."""
    mem = store.scope("team-a")
    notes = [mem.save(f"team note {i}", type="context") for i in range(7)]
    mem.save("a lesson learned", type="lesson")
    mem.save("a cached page", type="context", source="task_completion")  # expires in 7 days
    mem.delete(notes[0].id)
    clock.advance(days=8)
    page = call(mem, "memory_list", type="context", max_results=4)
    assert (page["count"], page["total"], page["more"], page["next_offset"]) == (4, 6, True, 4)
    last = call(mem, "memory_list", type="context", max_results=4, offset=4)
    assert (last["count"], last["total"], last["more"]) == (2, 6, False)
    assert call(mem, "memory_list")["total"] == 7
    _, [over_mcp] = mcp_calls(mem, [("memory_list", {"type": "lesson"})])
    assert json.loads(over_mcp.content[0].text)["total"] == 1
    token = store.tokens.create("r", {"team-a": "read"}, store.clock())[1]
    over_http = http(app, "GET", "/v1/scopes/team-a/memories?max_results=2", token).json()
    assert (over_http["count"], over_http["total"], over_http["more"]) == (2, 7, True)
    empty = call(store.scope("team-b"), "memory_list")
    assert (empty["count"], empty["total"], empty["more"]) == (0, 0, False)


def test_http_lists_a_profiles_functions(store, app):
    token = store.tokens.create("r", {"team-a": "read"}, store.clock())[1]
    listed = http(app, "GET", "/v1/tools?profile=swarm", token)
    assert [f["function"]["name"] for f in listed.json()["tools"]] == tools.select("swarm")
    assert http(app, "GET", "/v1/tools?profile=nope", token).status_code == 422


def test_serve_mcp_refuses_an_unknown_profile(db_path):
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    out = CliRunner().invoke(main, ["--db", str(db_path), "serve-mcp", "--tools", "nope"])
    assert out.exit_code == 2 and "unknown tool or profile" in out.output


def test_memory_consolidate_runs_extract_decay_and_reflect(mem):
    mem.add_episode("Alice moved to Munich", "s1", "user")
    out = call(mem, "memory_consolidate", session_id="s1")
    assert [r["job"] for r in out["runs"]] == ["consolidate", "decay", "reflect"]
    assert out["result"]["counts"]["sessions"] == 1
    # the description says exactly what ran: each job, and the session's summary it wrote
    said = tools.TOOLS["memory_consolidate"].description
    for words in ("extract", "duplicates", "contradicting", "summary of each", "decay",
                  "prune", "reflection"):  # fmt: skip
        assert words in said, words


def test_the_source_of_a_write_sets_its_ttl_through_the_tools(mem, clock):
    out = call(mem, "memory_save", content="Task 42 failed: missing key", source="task_completion")
    assert out["memory"]["source"] == "task_completion" and out["memory"]["expires_at"]
    clock.advance(days=8)
    assert call(mem, "memory_search", query="task failed missing key")["results"] == []
    assert call(mem, "memory_get", id=out["memory"]["id"])["memory"]["source"] == "task_completion"


# ----------------------------------------------------------------------------- §3 rights


def test_a_lead_deletes_and_corrects_in_the_swarm_scope_a_worker_cannot(store):
    swarm = store.scope("swarm")
    wrong = swarm.save("Deploys need two approvals", key="deploys")
    worker = store.scope("worker-1", shared=["swarm"])
    for action in (
        lambda: worker.delete(wrong.id),
        lambda: worker.correct(wrong.id, "One approval"),
        lambda: tools.call(worker, "memory_delete", {"id": "deploys"}),
    ):
        with pytest.raises(Forbidden, match="only a lead of 'swarm'"):
            action()
    lead = store.scope("lead", shared=["swarm"], lead_of=["swarm", "worker-*"])
    fixed = lead.correct("deploys", "Deploys need one approval", reason="policy changed")
    assert fixed.scope == "swarm" and fixed.updated_by == "lead"
    assert worker.get("deploys").content == "Deploys need one approval"
    gone = tools.call(lead, "memory_delete", {"id": fixed.id})["memory"]
    assert gone["status"] == "deleted" and gone["scope"] == "swarm"
    private = worker.save("My scratch note")
    with pytest.raises(NotFound):
        store.scope("other-lead", lead_of=["swarm"]).delete(private.id)
    assert lead.delete(private.id).scope == "worker-1"  # worker-* is led too


def test_inject_learning_targets_the_swarm_by_default_or_one_worker(db_path, clock):
    settings = Settings().replace(learning_scope="swarm")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        lead = store.scope("lead", lead_of=["swarm", "worker-*"])
        shared = call(lead, "inject_learning", content="Run lint first", category="best-practice")
        assert shared["scope"] == "swarm"
        one = call(
            lead,
            "inject_learning",
            content="You keep forgetting the migrations",
            category="mistake-pattern",
            target_scope="worker-2",
        )
        assert one["scope"] == "worker-2"
        assert store.scope("worker-2").list()[0].attributes["injected_by"] == "lead"
        assert store.scope("worker-3").list() == []
        worker = store.scope("worker-2", shared=["swarm"])
        with pytest.raises(Forbidden):
            call(worker, "inject_learning", content="x", category="preference")
        with pytest.raises(Forbidden):
            call(lead, "inject_learning", content="x", category="preference", target_scope="ops")


def test_rights_over_http_come_from_the_tokens_write_grant(store, app):
    swarm = store.scope("swarm").save("Cache TTL is 5 minutes", key="ttl")
    tokens = store.tokens
    worker = tokens.create("worker", {"worker": "write", "swarm": "read"}, store.clock())[1]
    lead = tokens.create("lead", {"lead": "write", "swarm": "write"}, store.clock())[1]
    url = "/v1/scopes/{scope}/tools/memory_delete?shared=swarm"
    refused = http(app, "POST", url.format(scope="worker"), worker, json={"id": swarm.id})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    done = http(app, "POST", url.format(scope="lead"), lead, json={"id": swarm.id})
    assert done.status_code == 200, done.text
    assert done.json()["memory"]["status"] == "deleted"
    assert store.scope("swarm").get(swarm.id).updated_by == "lead"  # the token's name
    purge = http(app, "POST", "/v1/scopes/worker/purge", worker, json={"confirm": "worker"})
    assert purge.status_code == 200 and purge.json()["purged"]["target"] == "scope"
    learning = {"content": "Pin the CI image", "category": "best-practice"}
    to_worker = "/v1/scopes/lead/tools/inject_learning"
    body = {**learning, "target_scope": "worker"}
    assert http(app, "POST", to_worker, lead, json=body).status_code == 403  # no grant
    both = tokens.create("lead2", {"lead": "write", "worker": "write"}, store.clock())[1]
    taught = http(app, "POST", to_worker, both, json=body)
    assert taught.status_code == 200, taught.text
    assert taught.json()["scope"] == "worker"
    assert store.scope("worker").get(taught.json()["memory"]["id"]).updated_by == "lead2"
    reader = tokens.create("reader", {"lead": "read"}, store.clock())[1]
    assert (
        http(app, "POST", "/v1/scopes/lead/purge", reader, json={"confirm": "lead"}).status_code
        == 403
    )


def test_a_worker_gets_a_tool_error_over_mcp(store):
    store.scope("swarm").save("Shared", key="s")
    worker = mcp_server.bind(store, "worker", ["swarm"])
    _, (failed,) = mcp_calls(worker, [("memory_delete", {"id": "s"})])
    assert failed.is_error and failed.content[0].text.startswith("Forbidden:")
    lead = mcp_server.bind(store, "lead", ["swarm"], lead_of=["swarm"], agent="lead-7")
    _, (ok,) = mcp_calls(lead, [("memory_delete", {"id": "s"})])
    assert json.loads(ok.content[0].text)["memory"]["status"] == "deleted"
    assert store.scope("swarm").history("s")[0].updated_by == "lead-7"


def test_a_servers_lead_rights_come_from_the_lead_of_setting(db_path, clock):
    settings = Settings().replace(lead_of="swarm", agent="lead-1")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        shared = store.scope("swarm").save("Use port 8080", key="port")
        lead = mcp_server.bind(store, "lead", ["swarm"])
        _, (ok,) = mcp_calls(lead, [("memory-delete", {"memoryId": shared.id})])
        assert json.loads(ok.content[0].text)["memory"]["status"] == "deleted"
        assert store.scope("swarm").get(shared.id).updated_by == "lead-1"
        worker = mcp_server.bind(store, "worker", ["swarm"], lead_of=[])
        again = store.scope("swarm").save("Use port 9090", key="port2")
        _, (no,) = mcp_calls(worker, [("memory_delete", {"id": again.id})])
        assert no.is_error and "only a lead of 'swarm'" in no.content[0].text
        # no tool argument names rights: a model asking for them is refused
        with pytest.raises(InvalidInput):
            tools.call(worker, "memory_delete", {"id": again.id, "lead_of": ["swarm"]})


# ----------------------------------------------------------------------------- §5 categories


def test_category_filters_list_and_search_and_falls_back_when_it_keeps_nothing(mem, store, app):
    cred = mem.save("secret token for GitHub", key="api-key")
    plain = mem.save("The sky was grey over the harbour")
    assert hivemem.write.categories.of(mem, cred) == ("credential", pytest.approx(0.65))
    assert hivemem.write.categories.of(mem, plain) == ("general", 0.0)
    assert [m.id for m in mem.list(category="credential")] == [cred.id]
    assert [h.memory.id for h in mem.search("token github", category="credential")] == [cred.id]
    fallback = mem.search("harbour sky", category="credential")
    assert [h.memory.id for h in fallback] == [plain.id]
    assert fallback[0].explain.notes[0].startswith(hivemem.write.categories.FALLBACK_NOTE)
    out = call(mem, "memory_search", query="harbour sky", filters={"category": "credential"})
    assert out["category_fallback"] is True and out["results"][0]["id"] == plain.id
    saved = call(mem, "memory_save", content="password for the staging database")
    assert saved["category"] == "credential" and saved["category_confidence"] > 0
    with pytest.raises(InvalidInput, match="unknown category"):
        mem.list(category="nope")
    _, (listed,) = mcp_calls(mem, [("memory_list", {"category": "credential"})])
    assert len(json.loads(listed.content[0].text)["memories"]) == 2
    token = store.tokens.create("r", {"team-a": "read"}, store.clock())[1]
    got = http(app, "GET", "/v1/scopes/team-a/memories?category=general", token)
    assert [m["id"] for m in got.json()["memories"]] == [plain.id]
    over_http = http(
        app, "POST", "/v1/scopes/team-a/search_memory", token,
        json={"query": "harbour sky", "category": "credential"},
    ).json()  # fmt: skip
    assert over_http["category_fallback"] is True and over_http["results"][0]["id"] == plain.id
    _, (over_mcp,) = mcp_calls(
        mem, [("search_memory", {"query": "token github", "category": "credential"})]
    )
    assert [r["id"] for r in json.loads(over_mcp.content[0].text)["results"]] == [cred.id]


# ----------------------------------------------------------------------------- §9 audit


def test_updated_by_is_the_handles_actor_on_every_write(store):
    mem = store.scope("team", actor="session-9")
    saved = mem.save("a")
    assert saved.updated_by == "session-9"
    assert call(mem, "memory_save", content="b")["memory"]["updated_by"] == "session-9"
    fixed = mem.correct(saved.id, "a, corrected")
    assert fixed.updated_by == "session-9"
    assert mem.get(saved.id).updated_by == "session-9"  # the superseded row too
    assert mem.delete(fixed.id).updated_by == "session-9"
    assert store.scope("plain").save("c").updated_by == "plain"


def test_the_cli_writes_as_the_agent_setting(db_path, monkeypatch):
    """An agent that calls the CLI from its shell names itself by HIVEMEM_AGENT, as a
    server does by --agent; without it the CLI writes as the scope."""
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    base = ["--db", str(db_path), "--scope", "team", "add", "--json"]
    plain = CliRunner().invoke(main, [*base, "Tea at four"])
    monkeypatch.setenv("HIVEMEM_AGENT", "ops-bot")
    named = CliRunner().invoke(main, [*base, "Coffee at nine"])
    assert json.loads(plain.stdout)["updated_by"] == "team"  # stderr: "created a new …"
    assert json.loads(named.stdout)["updated_by"] == "ops-bot"


def test_what_a_maintenance_job_writes_is_signed_by_the_job(store, clock):
    """``updated_by`` on the rows no handle wrote: consolidated facts, the session summary,
    the reflection, the summary of old memories. The conflict's lowered fact keeps its
    author: a derived confidence is not an edit (issue #25)."""
    mem = store.scope("team", actor="agent-7")
    old = mem.save("Alice lives in Berlin")
    mem.save("Deploy checklist v1", key="project:deploy")
    mem.save("Deploy checklist for staging", key="project:staging")
    clock.advance(days=40)
    mem.add_episode("Alice moved to Munich last week", "s1", "user")
    mem.add_episode("We decided to use Postgres for billing", "s1", "user")
    for n in range(3):
        mem.save(f"Rust lifetimes note {n}")
    mem.consolidate("s1")
    for job in ("reflect", "summarize"):
        hivemem.run_job(store, job, "team")
    by_source = {m.source: m.updated_by for m in mem.list()}
    assert by_source["consolidation"] == "maintenance:consolidate"
    assert by_source["session_summary"] == "maintenance:consolidate"
    assert by_source["reflection"] == "maintenance:reflect"
    assert by_source["summary"] == "maintenance:summarize"
    assert mem.get(old.id).confidence == 0.3
    assert mem.get(old.id).updated_by == "agent-7"
    manual = [m.updated_by for m in mem.list() if m.source == "manual" and m.id != old.id]
    assert manual and set(manual) == {"agent-7"}  # the handle's own writes


def test_a_supersede_reason_is_searchable_context(mem):
    mem.save("Cache sessions in memcached", key="cache")
    new = mem.save(
        "Cache sessions in Redis",
        key="cache",
        supersede_reason="memcached evicted sessions under load and logged users out",
    )
    hits = mem.search("evicted under load")
    assert hits[0].memory.id == new.id
    quiet = mem.save("Cache sessions in Redis 7", key="cache", minor=True)
    assert quiet.supersede_reason == "minor correction"


def test_the_reason_stays_searchable_after_an_export_and_a_repair(tmp_path, mem, store):
    import io

    from hivemem.lifecycle.portability import export_jsonl, import_jsonl

    mem.save("Deploy with blue-green", key="deploy")
    new = mem.save(
        "Deploy with canaries", key="deploy", supersede_reason="blue-green doubled costs"
    )
    out = io.StringIO()
    export_jsonl(store, out)
    with hivemem.open(tmp_path / "copy.db", embedder="hash") as copy:
        assert import_jsonl(copy, io.StringIO(out.getvalue())).ok
        assert copy.scope("team-a").search("doubled costs")[0].memory.id == new.id
    store.health.rebuild_chunks([new.id], 400, 80)  # what doctor --repair runs
    assert mem.search("doubled costs")[0].memory.id == new.id


def test_a_type_suggestion_is_logged_and_returned_but_never_applied(mem, caplog):
    with caplog.at_level(logging.INFO, logger="hivemem.write.audit"):
        out = call(mem, "memory_save", content="Never deploy on Fridays", type="context")
    assert out["memory"]["type"] == "context"
    assert "lesson" in out["type_suggestion"]
    assert any("reads like a lesson" in r.message for r in caplog.records)
    assert "type_suggestion" not in call(mem, "memory_save", content="Never x", type="lesson")


def test_learning_entries_use_openhives_keys_and_confidence_tags(store):
    lead = store.scope("lead", lead_of=["research"])
    claim = "SQLite WAL allows one writer at a time"
    first = lead.inject_learning(
        claim,
        "codebase-knowledge",
        to="research",
        topic="SQLite concurrency",
        confidence="high",
        corroborated=2,
        domains=["sqlite.org", "example.com"],
        verified="2026-01-01",
    )
    assert first.key == learning.learn_key("SQLite concurrency", claim)
    assert first.key.startswith("learn:sqlite-concurrency:") and len(first.key.split(":")[2]) == 12
    assert {"confidence:high", "corroborated:2", "domains:example.com,sqlite.org"} <= set(
        first.tags
    )
    assert "verified:2026-01-01" in first.tags
    same = lead.inject_learning(
        claim, "codebase-knowledge", to="research", topic="SQLite concurrency", confidence="high",
        corroborated=2, domains=["sqlite.org", "example.com"], verified="2026-01-01",
    )  # fmt: skip
    assert same.id == first.id  # nothing new: a no-op
    again = lead.inject_learning(
        claim, "codebase-knowledge", to="research", topic="SQLite concurrency",
        confidence="high", corroborated=3, domains=["sqlite.org", "example.com", "b.io"],
        verified="2026-03-01",
    )  # fmt: skip
    assert again.supersedes_id == first.id and again.supersede_reason.startswith("re-verified")
    with pytest.raises(InvalidInput, match="confidence"):
        lead.inject_learning("x", "preference", to="research", confidence="sure")
    # a lead of one named scope teaches it by default, without a learning_scope setting
    assert lead.inject_learning("Prefer small PRs", "preference").scope == "research"


def test_the_seed_arguments_reach_the_library_over_mcp_and_http(store, app):
    mem = mcp_server.bind(store, "team-a", lead_of=["research"])
    _, (fact, stats, learned) = mcp_calls(
        mem,
        [
            (
                "remember_fact",
                {
                    "content": "Project Alpha ships in May",
                    "confidence": 0.7,
                    "entity_names": ["Project Alpha"],
                    "source": "task_completion",
                },
            ),
            ("memory_stats", {}),
            (
                "inject_learning",
                {
                    "content": "FTS5 optimize merges segments",
                    "category": "codebase-knowledge",
                    "target_scope": "research",
                    "topic": "fts5",
                    "confidence": "medium",
                },
            ),
        ],
    )
    made = json.loads(fact.content[0].text)["memory"]
    assert (made["confidence"], made["source"]) == (0.7, "task_completion")
    assert made["expires_at"] is not None  # the task_completion TTL
    assert json.loads(stats.content[0].text)["latest_record_at"] == made["created_at"]
    key = json.loads(learned.content[0].text)["memory"]["key"]
    assert key.startswith("learn:fts5:")
    token = store.tokens.create("t", {"team-a": "write"}, store.clock())[1]
    saved = http(
        app,
        "POST",
        "/v1/scopes/team-a/facts",
        token,
        json={"content": "Berta leads Project Beta", "entity_names": ["Berta"], "confidence": 0.9},
    ).json()
    assert saved["memory"]["confidence"] == 0.9 and saved["category_confidence"] >= 0
    assert [m.id for m in store.scope("team-a").entity("Berta")[1]] == [saved["memory"]["id"]]
    found = http(
        app, "POST", "/v1/scopes/team-a/search_memory", token, json={"query": "Berta", "limit": 2}
    ).json()
    assert found["results"][0]["id"] == saved["memory"]["id"]
    shaped = http(app, "POST", "/v1/scopes/team-a/search", token, json={"query": "Alpha"}).json()
    assert shaped["search_mode"] in {"hybrid", "keyword"}
    assert {"key", "snippet", "score", "type", "is_active", "source", "origin"} <= set(
        shaped["results"][0]
    )


def test_add_task_result_is_a_tool_over_mcp_and_http(store, app, clock):
    mem = store.scope("worker-1")
    _, (done,) = mcp_calls(
        mem,
        [("add_task_result", {"output": "Flaky test quarantined", "status": "failed",
                              "task_id": "t-7", "error": "timeout on CI"})],
        tools.select("swarm"),
    )  # fmt: skip
    made = json.loads(done.content[0].text)["memory"]
    assert made["source"] == "task_completion" and made["key"] == "task:t-7"
    assert "timeout on CI" in made["content"] and made["expires_at"] is not None
    token = store.tokens.create("w", {"worker-1": "write"}, store.clock())[1]
    again = http(
        app, "POST", "/v1/scopes/worker-1/tasks", token,
        json={"output": "Quarantine lifted", "task_id": "t-7"},
    )  # fmt: skip
    assert again.status_code == 200, again.text
    assert again.json()["supersedes_id"] == made["id"]
    with pytest.raises(InvalidInput, match="status"):
        tools.call(mem, "add_task_result", {"output": "x", "status": "maybe"})
