"""Issue #22 items 3-4: seed profiles apply a seed's defaults wholesale (settings, the
seed's own environment variable names, access counting and its curve), and openhive's
and Agent Swarm's partial contracts: memory_search returns 5 under openhive, a 30-day-old
context memory keeps half its score, memory_list lists every current entry or says there
are more, scope names held to the slug rule without locking an existing scope out."""

from __future__ import annotations

from datetime import timedelta

import pytest

import hivemem
from hivemem import InvalidInput, Settings, tools
from hivemem.retrieval.ranking import access_boost


def _open(path, clock, **settings):
    return hivemem.open(path, clock=clock, embedder="hash", settings=Settings(**settings))


def test_a_profile_sets_every_default_of_its_seed_and_explicit_values_win():
    from hivemem.settings import SEED_PROFILES

    for name, values in SEED_PROFILES.items():
        settings = Settings(profile=name)
        assert {k: getattr(settings, k) for k in values} == dict(values), name
    swarm = Settings(profile="swarm")
    assert (swarm.decay_profile, swarm.access_counts, swarm.access_curve) == (
        "recency",
        "get",
        "linear",
    )
    assert swarm.replace(decay_weight=0.3).decay_weight == 0.3  # even HiveMem's own default
    assert Settings().access_counts == "get" and Settings().search_limit == 10
    with pytest.raises(InvalidInput) as err:
        Settings(profile="mem0")
    assert err.value.field == "profile"


def test_agent_swarms_variable_names_are_read_under_its_profile():
    env = {
        "HIVEMEM_PROFILE": "swarm",
        "MEMORY_RECENCY_HALF_LIFE_DAYS": "7",
        "MEMORY_ACCESS_BOOST_MAX": "2",
        "MEMORY_ACCESS_RECENCY_HOURS": "24",
        "MEMORY_CANDIDATE_MULTIPLIER": "5",
    }
    settings = Settings.from_env(env)
    assert settings.recency_half_life_days == 7.0
    assert settings.max_access_boost == 2.0
    assert settings.access_recency_hours == 24.0
    assert settings.candidate_multiplier == 5
    assert settings.decay_profile == "recency"  # the rest of the profile
    # HIVEMEM_* wins where both are set; without the profile MEMORY_* is not read
    both = Settings.from_env({**env, "HIVEMEM_CANDIDATE_MULTIPLIER": "4"})
    assert both.candidate_multiplier == 4
    assert Settings.from_env({"MEMORY_CANDIDATE_MULTIPLIER": "5"}).candidate_multiplier == 3
    with pytest.raises(InvalidInput) as err:
        Settings.from_env({"HIVEMEM_PROFILE": "swarm", "MEMORY_ACCESS_BOOST_MAX": "lots"})
    assert err.value.field == "MEMORY_ACCESS_BOOST_MAX"


def test_under_swarm_only_a_get_counts_and_the_boost_is_linear(db_path, clock):
    store = _open(db_path, clock, profile="swarm")
    mem = store.scope("worker-1")
    saved = mem.save("The build cache lives on the NFS share")
    for _ in range(3):
        tools.call(mem, "memory-search", {"query": "build cache"})
    assert mem.get(saved.id).access_count == 0  # searches never count (the get counts after)
    for _ in range(2):
        tools.call(mem, "memory-get", {"id": saved.id})
    assert mem.get(saved.id).access_count == 3
    hit = mem.search("build cache")[0]
    assert hit.explain.factors["access"] == pytest.approx(1.4)  # 1 + min(4/10, 0.5)
    store.close()
    assert access_boost(20, 1.5, curve="linear") == 1.5
    assert access_boost(3, 1.5, curve="linear") == pytest.approx(1.3)


def test_by_default_a_search_restarts_the_decay_clock_but_earns_no_boost(mem, clock):
    saved = mem.save("The build cache lives on the NFS share")
    clock.advance(days=3)
    mem.search("build cache")
    assert "access" not in mem.search("build cache")[0].explain.factors  # no boost earned
    seen = mem.get(saved.id)  # the get counts after it is read
    assert seen.access_count == 0 and seen.last_accessed > saved.created_at + timedelta(days=3)
    assert mem.search("build cache")[0].explain.factors["access"] > 1.0  # the get's


def test_openhive_memory_search_returns_five_and_decays_to_half_at_thirty_days(db_path, clock):
    store = _open(db_path, clock, profile="openhive")
    mem = store.scope("ops-team")
    old = mem.save("The release train leaves on Tuesdays", type="context")
    lesson = mem.save("Release trains never leave on Fridays", type="lesson")
    clock.advance(days=30)
    for i in range(8):
        mem.save(f"release train note {i}", type="reference")
    answer = tools.call(mem, "memory_search", {"query": "release train"})
    assert answer["count"] == 5
    assert (
        tools.call(mem, "memory_search", {"query": "release train", "max_results": 9})["count"] == 9
    )
    hits = {h.memory.id: h for h in mem.search("release train", limit=20)}
    assert hits[old.id].explain.factors["decay"] == pytest.approx(0.5, abs=1e-3)
    assert "decay" not in hits[lesson.id].explain.factors  # lessons are exempt
    store.close()
    default = _open(db_path, clock)
    hits = {h.memory.id: h for h in default.scope("ops-team").search("release train", limit=20)}
    assert hits[old.id].explain.factors["decay"] == pytest.approx(0.85, abs=1e-3)
    default.close()


def test_memory_list_lists_every_current_entry_or_says_there_are_more(mem, clock):
    for i in range(45):
        mem.save(f"team note {i}", type="context")
    mem.save("a cached page", source="task_completion")  # expires in 7 days
    clock.advance(days=8)
    listed = tools.call(mem, "memory_list", {})
    assert listed["count"] == 45 and listed["more"] is False and "next_offset" not in listed
    assert all("cached page" not in m["content"] for m in listed["memories"])
    page = tools.call(mem, "memory_list", {"max_results": 20})
    assert page["count"] == 20 and page["more"] is True and page["next_offset"] == 20
    last = tools.call(mem, "memory_list", {"max_results": 20, "offset": 40})
    assert last["count"] == 5 and last["more"] is False


def test_the_slug_rule_refuses_new_names_and_keeps_existing_scopes_readable(db_path, clock):
    before = _open(db_path, clock)
    before.scope("Team A").save("written before the rule", key="k")
    before.close()
    store = _open(db_path, clock, profile="openhive")
    for bad in ("../evil team", "Ops", "ops--team", "ops_team", "-ops"):
        with pytest.raises(InvalidInput) as err:
            store.scope(bad)
        assert err.value.field == "scope" and "slug" in err.value.message
    assert store.scope("ops-team").name == "ops-team"
    assert store.scope("Team A").get("k").content == "written before the rule"
    assert sorted(store.scopes()) == ["Team A"]
    store.close()
    assert _open(db_path, clock).scope("../evil team").name == "../evil team"  # rule off


def test_serve_mcp_with_openhives_tools_applies_its_defaults(db_path):
    """A real ``hivemem serve-mcp --tools openhive`` process: memory_search answers 5 by
    default, and a new scope whose name is no slug is refused before it serves."""
    import json
    import os
    import subprocess
    import sys

    import anyio

    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    with hivemem.open(db_path, embedder="hash") as store:
        for i in range(8):
            store.scope("ops-team").save(f"release train note {i}")
    cmd = [sys.executable, "-c", "from hivemem.frontends.cli import main; main()"]
    args = ["--db", str(db_path), "serve-mcp", "--scope", "ops-team", "--tools", "openhive"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env["HIVEMEM_EMBEDDER"] = "hash"
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], *args], env=env)

    async def main():
        async with Client(params) as client:
            return await client.call_tool("memory_search", {"query": "release train"})

    answer = json.loads(anyio.run(main).content[0].text)
    assert answer["count"] == 5
    bad = [*cmd, "--db", str(db_path), "serve-mcp", "--scope", "Evil Team", "--tools", "openhive"]
    refused = subprocess.run(bad, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "slug" in refused.stderr
