"""The tool table (``hivemem.tools``): every tool through ``tools.call`` on a real store,
argument aliases, schema validation with clear errors, and redaction of results."""

from __future__ import annotations

import contextlib
import json
import math

import pytest

import hivemem
from hivemem import Conflict, Forbidden, InvalidInput, NotFound, Settings, tools
from hivemem.lifecycle.maintenance import run_log

DESIGN_TOOLS = [
    "memory_save",
    "memory_search",
    "memory_get",
    "memory_list",
    "memory_delete",
    "remember_fact",
    "correct_fact",
    "confirm_fact",
    "memory_stats",
    "get_entity_info",
    "memory_consolidate",
    "inject_learning",
    "search_memory",
    "memory_related",
    "memory_purge",
    "memory_purge_all",
    "add_task_result",
    "memory_context",
]


def call(mem, name, **args):
    result = tools.call(mem, name, args)
    json.dumps(result)  # every result is JSON as it is
    return result


# ----------------------------------------------------------------------------- the table


def test_the_table_holds_the_design_tools_in_a_stable_order():
    assert list(tools.TOOLS) == DESIGN_TOOLS
    writes = {name for name, tool in tools.TOOLS.items() if tool.writes}
    assert writes == {
        "memory_save",
        "memory_delete",
        "remember_fact",
        "correct_fact",
        "confirm_fact",
        "memory_consolidate",
        "inject_learning",
        "memory_purge",
        "memory_purge_all",
        "add_task_result",
    }


@pytest.mark.parametrize("name", DESIGN_TOOLS)
def test_every_tool_has_a_description_and_a_closed_object_schema(name):
    tool = tools.TOOLS[name]
    assert tool.name == name
    assert len(tool.description) > 40 and "  " not in tool.description
    schema = tools.tool_schema(name)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema.get("required", [])) <= set(schema["properties"])
    assert "scope" not in schema["properties"]  # bound by the server, never by the model
    for prop in schema["properties"].values():
        assert prop.get("description") or prop.get("enum"), (name, prop)


def test_openai_functions_are_generated_from_the_table():
    functions = tools.openai_functions()
    assert [f["function"]["name"] for f in functions] == DESIGN_TOOLS
    for f in functions:
        assert f["type"] == "function"
        assert f["function"]["parameters"] == tools.TOOLS[f["function"]["name"]].parameters
    functions[0]["function"]["parameters"]["properties"].clear()  # a copy: the table keeps its own
    assert tools.TOOLS["memory_save"].parameters["properties"]
    json.dumps(functions)
    with pytest.raises(InvalidInput, match="unknown tool 'nope'"):
        tools.tool_schema("nope")


# ----------------------------------------------------------------------------- arguments


def test_aliases_models_send_are_accepted(mem):
    saved = call(mem, "memory_save", text="Never deploy on Fridays", key="deploy", type="warning")
    assert saved["memory"]["type"] == "lesson"  # the type alias too
    result = call(mem, "memory_search", q="deploy friday", limit=1)
    assert result["count"] == 1 and result["results"][0]["key"] == "deploy"
    assert call(mem, "memory_get", memory_id="deploy")["memory"]["id"] == saved["memory"]["id"]
    assert call(mem, "memory_search", q="deploy", query="deploy")["count"] == 1  # same value


def test_an_alias_and_its_argument_with_different_values_is_an_error(mem):
    with pytest.raises(InvalidInput, match="query: given twice"):
        tools.call(mem, "memory_search", {"query": "a", "q": "b"})


@pytest.mark.parametrize(
    ("name", "args", "field", "message"),
    [
        ("memory_search", {}, "query", "is required"),
        ("memory_search", {"query": 5}, "query", "expected a string, got an integer"),
        ("memory_search", {"query": "  "}, "query", "must not be empty"),
        ("memory_search", {"query": "x", "max_results": 0}, "max_results", "from 1 to 100"),
        ("memory_search", {"query": "x", "max_results": True}, "max_results", "an integer"),
        ("memory_search", {"query": "x", "scope": "other"}, "scope", "unknown argument"),
        ("memory_search", {"query": "x", "filters": {"type": "nope"}}, "filters.type", "valid:"),
        ("memory_search", {"query": "x", "filters": []}, "filters", "expected an object"),
        ("memory_save", {"content": "x", "tags": ["ok", 3]}, "tags[1]", "expected a string"),
        ("memory_save", {"content": "x", "minor": "yes"}, "minor", "expected a boolean"),
        ("memory_list", {"offset": -1}, "offset", "from 0"),
        ("inject_learning", {"content": "x", "category": "gossip"}, "category", "best-practice"),
        ("memory_get", None, "id", "is required"),
        ("memory_get", {"id": "\ud800"}, "id", "unpaired surrogate"),
        ("get_entity_info", {"name": "x\udcff"}, "name", "unpaired surrogate"),
        (
            "memory_search",
            {"query": "x", "filters": {"session_id": "\ud800"}},
            "filters.session_id",
            "UTF-8",
        ),
        (
            "memory_search",
            {"query": "x", "filters": {"min_score": math.nan}},
            "filters.min_score",
            "got nan",
        ),
        ("memory_search", {"query": "x", "max_results": 2.5}, "max_results", "got a number"),
        ("confirm_fact", {"id": "a\x00b"}, "id", "NUL"),
    ],
)
def test_bad_arguments_are_clear_errors_naming_the_argument(mem, name, args, field, message):
    if field is None:  # not a valid key: judged as an id, which no memory has
        with pytest.raises(NotFound):
            tools.call(mem, name, args)
        return
    with pytest.raises(InvalidInput) as info:
        tools.call(mem, name, args)
    assert info.value.field == field
    assert message in str(info.value)


def test_arguments_must_be_an_object_and_the_tool_must_exist(mem):
    with pytest.raises(InvalidInput, match="arguments: expected an object"):
        tools.call(mem, "memory_stats", ["x"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="unknown tool"):
        tools.call(mem, "drop_tables", {})


def test_null_arguments_take_their_default(mem):
    call(mem, "memory_save", content="Postgres runs on port 5432", key=None, type=None)
    result = call(mem, "memory_search", query="postgres port", max_results=None, filters=None)
    assert result["count"] == 1


def test_a_refused_write_loses_nothing(mem, db_path):
    call(mem, "memory_save", content="Deploys happen on Tuesdays", key="deploy")
    for bad in ({"content": "", "key": "deploy"}, {"content": "x", "type": "nope"}):
        with pytest.raises(InvalidInput):
            tools.call(mem, "memory_save", bad)
    with pytest.raises(Conflict, match="Deploys happen on Tuesdays"):
        tools.call(mem, "memory_save", {"content": "Deploys happen daily", "key": "deploy"})
    assert mem.get("deploy").content == "Deploys happen on Tuesdays"
    assert mem.store._backend._read("SELECT COUNT(*) FROM memories") == [(1,)]


# ----------------------------------------------------------------------------- each tool


def test_memory_save_supersedes_with_a_reason(mem):
    first = call(mem, "memory_save", content="Deploys happen on Tuesdays", key="deploy")
    second = call(
        mem,
        "memory_save",
        content="Deploys happen on Thursdays",
        key="deploy",
        supersede_reason="team moved the release day",
    )
    assert second["supersedes_id"] == first["memory"]["id"]
    assert second["memory"]["supersede_reason"] == "team moved the release day"
    assert [m.content for m in mem.history("deploy")] == [
        "Deploys happen on Tuesdays",
        "Deploys happen on Thursdays",
    ]


def test_memory_search_flags_superseded_results_and_reports_the_mode(mem):
    old = call(mem, "memory_save", content="The staging cluster runs in Dublin", key="staging")
    call(
        mem,
        "memory_save",
        content="The staging cluster runs in Frankfurt",
        key="staging",
        supersede_reason="migrated",
    )
    mem._store.flush()
    result = call(mem, "memory_search", query="where does the staging cluster run")
    assert result["search_mode"] == "hybrid" and result["search_mode_reason"] is None
    first, second = result["results"]
    assert first["snippet"] == "The staging cluster runs in Frankfurt" and first["is_active"]
    assert second["id"] == old["memory"]["id"] and second["superseded"]
    assert second["status"] == "superseded" and not second["is_active"]
    assert set(first) >= {"id", "key", "snippet", "score", "type", "is_active", "source"}
    assert first["source"] == "hybrid" and first["origin"] == "manual"  # openhive's shape
    assert 0 < second["score"] < first["score"] <= 1
    current = call(
        mem, "memory_search", query="staging cluster", filters={"include_superseded": False}
    )
    assert [r["key"] for r in current["results"]] == ["staging"]


def test_memory_search_says_when_it_is_keyword_only(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="none") as store:
        mem = store.scope("a")
        call(mem, "memory_save", content="Redis caches sessions")
        result = call(mem, "memory_search", query="redis")
    assert result["search_mode"] == "keyword"
    assert "no embedder" in result["search_mode_reason"]
    assert result["results"][0]["source"] == "keyword"
    assert result["results"][0]["snippet"] == "Redis caches sessions"


def test_memory_search_filters(mem):
    call(mem, "memory_save", content="Use ruff for linting Python", type="decision", tags=["py"])
    call(mem, "memory_save", content="Python 3.11 is the minimum version", type="identity")
    by_type = call(mem, "memory_search", query="python", filters={"type": "choice"})
    assert [r["type"] for r in by_type["results"]] == ["decision"]
    by_tag = call(mem, "memory_search", query="python", filters={"tags": ["py"]})
    assert [r["snippet"] for r in by_tag["results"]] == ["Use ruff for linting Python"]


def test_memory_get_counts_an_access_and_reads_expired_and_deleted_rows(mem, clock):
    expiring = mem.save("Build 4411 is green", source="task_completion")
    clock.advance(days=8)  # past the 7-day TTL of task_completion
    assert call(mem, "memory_search", query="build 4411")["count"] == 0
    got = call(mem, "memory_get", id=expiring.id)["memory"]
    assert got["content"] == "Build 4411 is green"
    assert got["access_count"] == 0  # as it was before this read
    assert call(mem, "memory_get", id=expiring.id)["memory"]["access_count"] == 1
    assert mem.list(include_expired=True)[0].access_count == 2
    call(mem, "memory_delete", id=expiring.id)
    assert call(mem, "memory_get", id=expiring.id)["memory"]["status"] == "deleted"
    with pytest.raises(NotFound):
        tools.call(mem, "memory_get", {"id": "no-such-memory"})


def test_memory_list_filters_by_type(mem):
    call(mem, "memory_save", content="We are the platform team", type="core")
    call(mem, "memory_save", content="Never force-push main", type="warning")
    call(mem, "memory_save", content="Chose Postgres over Mongo", type="decision")
    lessons = call(mem, "memory_list", type="lesson")
    assert lessons["count"] == 1 and lessons["memories"][0]["content"] == "Never force-push main"
    everything = call(mem, "memory_list", max_results=2)
    assert everything["count"] == 2
    assert call(mem, "memory_list", max_results=2, offset=2)["count"] == 1


def test_memory_delete_hides_from_search(mem):
    saved = call(mem, "memory_save", content="The VPN password rotates monthly", key="vpn")
    deleted = call(mem, "memory_delete", id="vpn")
    assert deleted["deleted"] and deleted["memory"]["id"] == saved["memory"]["id"]
    assert deleted["memory"]["status"] == "deleted"
    assert call(mem, "memory_search", query="vpn password")["count"] == 0
    with pytest.raises(NotFound):
        tools.call(mem, "memory_delete", {"id": "never-saved"})


def test_remember_fact_stores_a_fact_once(mem):
    first = call(mem, "remember_fact", fact="Melanie leads the data team")
    again = call(mem, "remember_fact", content="Melanie leads the data team")
    assert first["memory"]["id"] == again["memory"]["id"]
    assert first["memory"]["kind"] == "fact" and first["memory"]["updated_by"] == "team-a"
    assert mem.stats()["total"] == 1


def test_correct_fact_keeps_the_old_version_and_confirm_protects(mem):
    fact = call(mem, "remember_fact", content="The API rate limit is 100 rps", key="rate")
    corrected = call(
        mem,
        "correct_fact",
        id=fact["memory"]["id"],
        correction="The API rate limit is 250 rps",
        reason="measured in production",
    )
    assert corrected["supersedes_id"] == fact["memory"]["id"]
    assert corrected["memory"]["supersede_reason"] == "measured in production"
    assert mem.get(fact["memory"]["id"]).status.value == "superseded"
    with pytest.raises(Conflict, match="superseded"):
        tools.call(mem, "correct_fact", {"id": fact["memory"]["id"], "content": "x"})
    confirmed = call(mem, "confirm_fact", id="rate")["memory"]
    assert confirmed["confidence"] == 1.0 and confirmed["decay_rate"] == 0.0
    assert mem.get("rate").decay_rate == 0.0


def test_memory_stats_counts_the_scope(mem):
    call(mem, "memory_save", content="one")
    call(mem, "memory_save", content="two", type="lesson")
    stats = call(mem, "memory_stats")
    assert stats["scope"] == "team-a" and stats["total"] == 2
    assert stats["active_by_type"] == {"context": 1, "lesson": 1}


def test_get_entity_info_finds_memories_by_name_and_alias(mem):
    call(mem, "memory_save", content="Melanie Okafor owns the billing service")
    call(mem, "memory_save", content="Invoices need a review by Melanie Okafor")
    mem.alias("Melanie Okafor", "Mel")
    info = call(mem, "get_entity_info", entity="Mel")
    assert info["entity"]["name"] == "Melanie Okafor" and "mel" in info["entity"]["aliases"]
    assert len(info["memories"]) == 2
    with pytest.raises(NotFound, match="no entity"):
        tools.call(mem, "get_entity_info", {"name": "Nobody Known"})


def test_memory_consolidate_turns_a_session_into_facts(mem):
    mem.add_episode("Our staging cluster runs in Frankfurt since June.", "s1", "user")
    mem.add_episode("The deploy window is Tuesday at 10am Berlin time.", "s1", "user")
    out = call(mem, "memory_consolidate", session_id="s1")
    result = out["result"]
    assert result["job"] == "consolidate" and result["status"] == "ok"
    assert result["counts"]["sessions"] == 1
    assert call(mem, "memory_list", kind="fact")["count"] >= 1
    # one library call (ScopedMemory.consolidate_cycle): every run logged as the tool's
    logged = run_log(mem.store, scope=mem.name)
    assert sorted((r.job, r.trigger) for r in logged) == [
        ("consolidate", "tool"),
        ("decay", "tool"),
        ("reflect", "tool"),
    ]
    assert [r["run_id"] for r in out["runs"]] == [r.id for r in reversed(logged)]


def test_inject_learning_writes_to_the_configured_shared_scope(db_path, clock):
    settings = Settings().replace(learning_scope="swarm")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        lead = store.scope("lead", shared=["swarm"], lead_of=["swarm"])
        out = call(
            lead,
            "inject_learning",
            content="Run the migrations before the tests",
            category="Mistake-Pattern",
        )
        assert out["scope"] == "swarm" and out["category"] == "mistake-pattern"
        worker = store.scope("worker-1", shared=["swarm"])
        [hit] = call(worker, "memory_search", query="migrations tests")["results"]
        assert hit["scope"] == "swarm" and hit["type"] == "lesson"
        stored = worker.get(hit["id"])
        assert set(stored.tags) >= {"learning", "mistake-pattern"}
        assert stored.attributes["injected_by"] == "lead"
        assert lead.stats()["total"] == 0  # the lead's own scope is untouched
        for other in (store.scope("stranger"), worker):  # neither leads swarm
            with pytest.raises(Forbidden, match="does not lead 'swarm'"):
                tools.call(other, "inject_learning", {"content": "x", "category": "preference"})
        assert len(worker.list()) == 1


def test_inject_learning_without_a_learning_scope_is_refused(mem):
    with pytest.raises(InvalidInput, match="no shared learning scope is configured"):
        tools.call(mem, "inject_learning", {"content": "x", "category": "best-practice"})


def test_secrets_are_redacted_from_results_and_errors(db_path, clock):
    secret = "hunter2-Zq8v-very-secret"
    settings = Settings().replace(credential_policy="allow")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        mem.save(f"Melanie Okafor knows the code {secret}", key="code")
        store.vault("a").set("code", secret, secret=True)
        for name, args in [
            ("memory_search", {"query": "code"}),
            ("get_entity_info", {"name": "Melanie Okafor"}),
            ("memory_list", {}),
        ]:
            assert secret not in json.dumps(tools.call(mem, name, args)), name
        with pytest.raises(Conflict) as info:
            tools.call(mem, "memory_save", {"content": "other", "key": "code"})
        assert secret not in str(info.value) and "REDACTED" in str(info.value)


def test_docs_describe_every_tool_argument_and_alias():
    from pathlib import Path

    from hivemem.tools.schema import ALIASES

    doc = (Path(__file__).parent.parent / "docs" / "tools.md").read_text()
    for name, tool in tools.TOOLS.items():
        [row] = [line for line in doc.splitlines() if line.startswith(f"| `{name}` |")]
        assert ("| yes |" in row) is tool.writes, name
        for argument in tool.parameters["properties"]:
            assert f"`{argument}`" in row, (name, argument)
    for alias in ALIASES:
        assert f"`{alias}`" in doc, alias


def test_any_arguments_give_a_result_or_a_library_error(tmp_path):
    """Whatever a model sends, a tool answers or raises a ``HiveMemError``: never a
    traceback of another kind, and the store stays readable."""
    from hypothesis import given
    from hypothesis import settings as hsettings
    from hypothesis import strategies as st

    from hivemem.tools.schema import ALIASES

    text = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)
    scalar = st.none() | st.booleans() | st.integers() | st.floats() | text
    anything = st.recursive(
        scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3)
    )

    words = st.sampled_from(["billing", "Melanie Okafor", "s1", "7d", "lesson", "x"])
    nice = words | st.text(max_size=20)

    def fitting(schema):  # mostly values of the right type, so the handlers run
        kind = schema.get("type")
        if "enum" in schema:
            good = st.sampled_from(schema["enum"])
        elif kind == "object":
            return arguments(schema)
        else:
            good = {
                "string": nice,
                "integer": st.integers(-3, 120),
                "number": st.floats(-1, 2),
                "boolean": st.booleans(),
                "array": st.lists(nice, max_size=3),
            }[kind]
        return st.one_of(good, good, good, anything)

    def arguments(schema):
        props = schema["properties"]
        required = schema.get("required", [])
        keys = list(props) + [a for a, target in ALIASES.items() if target in props]
        valued = {k: fitting(props.get(ALIASES.get(k), props.get(k, {}))) for k in keys}
        optional = {k: v for k, v in valued.items() if k not in required}
        typed = st.fixed_dictionaries({k: valued[k] for k in required}, optional=optional)
        return st.one_of(typed, typed, typed, st.dictionaries(text, anything, max_size=2))

    fuzzed = [n for n in tools.TOOLS if not n.startswith("memory_purge")]  # erasure: below
    calls = st.sampled_from(fuzzed).flatmap(
        lambda name: st.tuples(st.just(name), arguments(tools.TOOLS[name].parameters))
    )
    settings = Settings().replace(learning_scope="swarm")
    with hivemem.open(tmp_path / "fuzz.db", settings=settings, embedder="hash") as store:
        mem = store.scope("fuzz", shared=["swarm"])
        mem.save("Melanie Okafor owns billing", key="billing")
        mem.add_episode("We ship on Tuesdays", "s1", "user")

        @hsettings(max_examples=400, deadline=None)
        @given(calls)
        def check(call):
            with contextlib.suppress(hivemem.HiveMemError):
                json.dumps(tools.call(mem, *call))

        check()
        assert mem.stats()["total"] >= 2  # soft deletes only: every row is still there
        assert mem.history("billing")[0].content == "Melanie Okafor owns billing"
