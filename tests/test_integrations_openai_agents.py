"""HiveMem in the real OpenAI Agents SDK (openai-agents, pinned in requirements-dev.lock).

The session is held to the SDK's ``Session`` protocol and checked against the SDK's own
``SQLiteSession``: the same calls give the same items. The function tools and the
session then run inside ``Runner`` against a real local HTTP server that speaks the
chat completions API (no network, tracing off).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, SQLiteSession, set_tracing_disabled
from agents.memory import Session
from openai import AsyncOpenAI

from hivemem import tools
from hivemem.integrations.openai_agents import HiveMemSession, function_tools
from scripted_server import ScriptedServer

set_tracing_disabled(True)

ITEMS = [
    {"role": "user", "content": "Hi, I'm Ada"},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Hello Ada"}]},
    {"type": "function_call", "call_id": "c1", "name": "memory_search", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": '{"results": []}'},
    {"role": "user", "content": "Remember: deploys freeze on Fridays"},
]


def _drive(session):
    async def run():
        seen = [await session.get_items()]
        await session.add_items(ITEMS[:3])
        await session.add_items(ITEMS[3:])
        await session.add_items([])
        seen += [await session.get_items(), await session.get_items(limit=2)]
        seen.append(await session.get_items(limit=0))
        seen.append(await session.pop_item())
        seen.append(await session.get_items())
        await session.clear_session()
        seen += [await session.get_items(), await session.pop_item()]
        return seen

    return asyncio.run(run())


def test_the_session_answers_as_the_sdks_sqlite_session(mem):
    ours = HiveMemSession(mem, "chat-1")
    assert isinstance(ours, Session)
    assert _drive(ours) == _drive(SQLiteSession("chat-1"))


def test_sessions_are_apart_and_items_are_episodes(mem):
    one, two = HiveMemSession(mem, "one"), HiveMemSession(mem, "two")
    asyncio.run(one.add_items(ITEMS))
    asyncio.run(two.add_items(ITEMS[:1]))
    assert len(asyncio.run(one.get_items())) == 5 and len(asyncio.run(two.get_items())) == 1
    episodes = mem.list(kind="episode", session_id="one")
    assert {e.role for e in episodes} == {
        "user",
        "assistant",
        "function_call",
        "function_call_output",
    }
    assert mem.search("Fridays deploys")[0].memory.content == "Remember: deploys freeze on Fridays"
    asyncio.run(one.clear_session())
    assert asyncio.run(two.get_items()) == ITEMS[:1]
    # cleared items are soft-deleted: the history still has them
    assert mem.list(kind="episode", session_id="one", status="deleted", limit=10)


def test_a_vault_secret_in_an_item_never_comes_back(store, mem):
    secret = "hunter2-Zq8v-very-secret"
    store.vault(mem.name).set("db", secret, secret=True)
    session = HiveMemSession(mem, "s")
    asyncio.run(session.add_items([{"role": "user", "content": f"the password is {secret}"}]))
    assert secret not in json.dumps(asyncio.run(session.get_items()))


def test_function_tools_are_the_tool_table(mem):
    made = function_tools(mem, "core")
    assert [t.name for t in made] == tools.select("core")
    for tool in made:
        assert tool.params_json_schema == tools.tool_schema(tool.name)
        assert tool.description == tools.NAMED[tool.name].description
    assert [t.name for t in function_tools(mem)] == tools.select(None)


def _invoke(tool, arguments):
    return json.loads(asyncio.run(tool.on_invoke_tool(None, arguments)))


def test_a_tool_call_runs_on_the_bound_scope_and_errors_go_back_to_the_model(store, mem):
    by_name = {t.name: t for t in function_tools(mem)}
    saved = _invoke(by_name["memory_save"], json.dumps({"content": "Staging is db-stage-2"}))
    assert mem.get(saved["memory"]["id"]).content == "Staging is db-stage-2"
    found = _invoke(by_name["memory_search"], '{"query": "staging"}')
    assert "db-stage-2" in json.dumps(found)
    # a model naming a scope reaches nothing: the scope is bound, the argument refused
    error = _invoke(by_name["memory_save"], json.dumps({"content": "x", "scope": "other"}))
    assert error["error"]["type"] == "InvalidInput" and "scope" in error["error"]["message"]
    assert store.scope("other").list() == []
    assert _invoke(by_name["memory_get"], '{"id": "nope"}')["error"]["type"] == "NotFound"
    assert _invoke(by_name["memory_search"], "{not json")["error"]["type"] == "InvalidInput"


def _completion(message, finish):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767268800,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    }


def test_the_runner_uses_the_tools_and_the_session_over_http(mem):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "memory_save",
            "arguments": '{"content": "Deploys freeze on Fridays"}',
        },
    }
    server = ScriptedServer(
        _completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
        _completion({"role": "assistant", "content": "Saved."}, "stop"),
        _completion(
            {"role": "assistant", "content": "You said deploys freeze on Fridays."}, "stop"
        ),
    )
    try:
        client = AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
        agent = Agent(
            name="assistant",
            model=OpenAIChatCompletionsModel(model="test-model", openai_client=client),
            tools=function_tools(mem, "memory_save,memory_search"),
        )
        session = HiveMemSession(mem, "chat-1")
        first = Runner.run_sync(agent, "Remember: deploys freeze on Fridays", session=session)
        later = Runner.run_sync(agent, "What did I say?", session=HiveMemSession(mem, "chat-1"))
    finally:
        server.close()
    assert (first.final_output, later.final_output) == (
        "Saved.",
        "You said deploys freeze on Fridays.",
    )
    assert [m.content for m in mem.list(kind="fact")] == ["Deploys freeze on Fridays"]
    # the later run sent the session's earlier turns, tool call and output included
    sent = server.requests[2]["messages"]
    assert sent[0] == {"role": "user", "content": "Remember: deploys freeze on Fridays"}
    assert any(m.get("tool_calls") for m in sent) and any(m["role"] == "tool" for m in sent)
    assert sent[-1] == {"role": "user", "content": "What did I say?"}
    assert len(asyncio.run(session.get_items())) == 6


def test_without_the_sdk_the_import_names_the_extra():
    code = (
        "import sys; sys.modules['agents'] = None\n"
        "import hivemem\n"
        "try:\n"
        "    import hivemem.integrations.openai_agents\n"
        "except hivemem.MissingDependency as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'hivemem[openai-agents]'" in done.stdout, done.stderr


@pytest.mark.parametrize("profile", ["core", "memory_save,memory_search"])
def test_profiles_select_tools(mem, profile):
    assert [t.name for t in function_tools(mem, profile)] == tools.select(profile)
