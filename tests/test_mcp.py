"""The MCP server (``hivemem.frontends.mcp``): every tool through the SDK's in-process
client, errors as tool error results, a real ``hivemem serve-mcp`` over stdio and over
streamable HTTP, and two server processes writing one database file at once."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

import hivemem
from hivemem import MissingDependency, Settings, tools
from hivemem.frontends import mcp as mcp_server
from hivemem.frontends.cli import main as cli_main

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

HIVEMEM = [sys.executable, "-c", "from hivemem.frontends.cli import main; main()"]


def run(fn, *args):
    return anyio.run(fn, *args)


def payload(result):
    """A successful result's JSON, checked to match its structured content."""
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


@pytest.fixture
def team(db_path, clock):
    """A lead bound to scope 'lead' with 'swarm' as its learning scope, and one memory."""
    settings = Settings().replace(learning_scope="swarm", lead_of="swarm")
    store = hivemem.open(db_path, settings=settings, clock=clock, embedder="hash")
    mem = mcp_server.bind(store, "lead")
    mem.save("Melanie Okafor owns the billing service", key="billing")
    mem.add_episode("The deploy window is Tuesday at 10am Berlin time.", "s1", "user")
    yield store, mem
    store.close()


def test_the_server_lists_every_tool_of_the_table(team):
    _, mem = team

    async def main():
        async with Client(mcp_server.create_server(mem)) as client:
            assert client.server_info.name == "hivemem"
            return (await client.list_tools()).tools

    listed = run(main)
    assert [t.name for t in listed] == list(tools.TOOLS)
    for tool in listed:
        spec = tools.TOOLS[tool.name]
        assert tool.description == spec.description
        assert tool.input_schema == spec.parameters
        assert tool.annotations.read_only_hint is (not spec.writes)


CALLS = [
    ("memory_save", {"text": "Never deploy on Fridays", "key": "deploy", "type": "warning"}),
    ("memory_search", {"q": "who owns billing", "limit": 3}),
    ("memory_get", {"id": "billing"}),
    ("memory_list", {"type": "context"}),
    ("remember_fact", {"fact": "The staging cluster runs in Frankfurt"}),
    ("correct_fact", {"id": "billing", "content": "Raj owns the billing service"}),
    ("confirm_fact", {"id": "billing"}),
    ("memory_stats", {}),
    ("get_entity_info", {"name": "Melanie Okafor"}),
    ("memory_consolidate", {"session_id": "s1"}),
    ("inject_learning", {"content": "Run migrations first", "category": "best-practice"}),
    ("search_memory", {"query": "deploy window", "kind": "episode", "limit": 3}),
    ("memory_related", {"id": "billing"}),
    ("memory_purge", {"id": "deploy", "dry_run": True}),
    ("memory_purge_all", {"confirm": "lead", "dry_run": True}),
    ("add_task_result", {"output": "Migrated the billing tables", "task_id": "t1"}),
    ("memory_context", {"query": "deploy window", "max_tokens": 200}),
    ("memory_delete", {"id": "billing"}),
]


def test_every_tool_answers_through_mcp_as_the_table_does(team):
    store, mem = team
    assert [name for name, _ in CALLS] == sorted(tools.TOOLS, key=[n for n, _ in CALLS].index)
    assert {name for name, _ in CALLS} == set(tools.TOOLS)

    async def main():
        async with Client(mcp_server.create_server(mem)) as client:
            return [await client.call_tool(name, args) for name, args in CALLS]

    out = dict(zip([name for name, _ in CALLS], map(payload, run(main)), strict=True))
    assert out["memory_save"]["memory"]["type"] == "lesson"
    assert out["memory_search"]["results"][0]["key"] == "billing"
    assert out["memory_search"]["search_mode"] == "hybrid"
    assert out["memory_get"]["memory"]["content"] == "Melanie Okafor owns the billing service"
    assert [m["key"] for m in out["memory_list"]["memories"]] == ["billing"]
    assert out["remember_fact"]["memory"]["kind"] == "fact"
    assert out["correct_fact"]["supersedes_id"] == out["memory_get"]["memory"]["id"]
    assert out["confirm_fact"]["memory"]["decay_rate"] == 0.0
    assert out["memory_stats"]["scope"] == "lead" and "swarm" in out["memory_stats"]["shared"]
    assert out["get_entity_info"]["entity"]["name"] == "Melanie Okafor"
    assert out["memory_consolidate"]["result"]["counts"]["sessions"] == 1
    assert out["inject_learning"]["scope"] == "swarm"
    assert out["search_memory"]["results"][0]["kind"] == "episode"
    assert out["memory_related"]["related"] == []  # the crossrefs job has not run
    assert out["memory_purge"]["purged"]["dry_run"] is True
    assert out["add_task_result"]["memory"]["source"] == "task_completion"
    assert out["memory_context"]["block"].startswith("## Memory")
    assert out["memory_purge_all"]["purged"]["counts"]["memories"] >= 3
    assert out["memory_delete"]["memory"]["status"] == "deleted"
    worker = store.scope("worker", shared=["swarm"])
    assert worker.search("migrations")[0].memory.content == "Run migrations first"


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("memory_save", {"content": "x", "key": "billing"}, "Conflict: key 'billing'"),
        ("memory_get", {"id": "missing"}, "NotFound: no memory 'missing'"),
        ("memory_search", {"query": 42}, "InvalidInput: query: expected a string"),
        ("memory_search", {"query": "x", "scope": "admin"}, "scope: unknown argument"),
        ("no_such_tool", {}, "InvalidInput: name: unknown tool"),
    ],
)
def test_library_errors_become_tool_error_results(team, name, args, message):
    store, mem = team

    async def main():
        async with Client(mcp_server.create_server(mem)) as client:
            failed = await client.call_tool(name, args)
            after = await client.call_tool("memory_stats", {})  # still serving
            return failed, after

    failed, after = run(main)
    assert failed.is_error and message in failed.content[0].text
    assert "Traceback" not in failed.content[0].text
    assert payload(after)["total"] == 2  # nothing written, nothing lost


def test_an_unexpected_failure_is_a_tool_error_not_a_crash(team, monkeypatch):
    _, mem = team

    def broken(mem, args):
        raise RuntimeError("disk on fire")

    spec = tools.TOOLS["memory_stats"]
    monkeypatch.setitem(
        tools.NAMED, "memory_stats", spec.__class__(**{**vars(spec), "handler": broken})
    )

    async def main():
        async with Client(mcp_server.create_server(mem)) as client:
            return await client.call_tool("memory_stats", {}), await client.call_tool(
                "memory_get", {"id": "billing"}
            )

    failed, ok = run(main)
    assert (
        failed.is_error and "internal error in memory_stats: disk on fire" in failed.content[0].text
    )
    assert payload(ok)["memory"]["key"] == "billing"


def test_a_passing_store_failure_is_a_tool_error_saying_to_try_again(team, monkeypatch):
    _, mem = team

    def deadlocked(mem, args):
        raise hivemem.TryAgain("the write was aborted (DeadlockDetected); try again", reason="x")

    spec = tools.TOOLS["memory_stats"]
    monkeypatch.setitem(
        tools.NAMED, "memory_stats", spec.__class__(**{**vars(spec), "handler": deadlocked})
    )

    async def main():
        async with Client(mcp_server.create_server(mem)) as client:
            return await client.call_tool("memory_stats", {})

    failed = run(main)
    assert failed.is_error and failed.content[0].text.startswith("TryAgain: ")
    assert failed.content[0].text.endswith("try again")


def _slow_calls_counted(monkeypatch):
    """Every tool call made to take 50 ms (the others arrive while it runs): the most
    that ran at once, in the returned ``["most"]``."""
    real_call = tools.call
    lock = threading.Lock()
    seen = {"running": 0, "most": 0}

    def spy(mem, name, arguments=None):
        with lock:
            seen["running"] += 1
            seen["most"] = max(seen["most"], seen["running"])
        try:
            threading.Event().wait(0.05)
            return real_call(mem, name, arguments)
        finally:
            with lock:
                seen["running"] -= 1

    monkeypatch.setattr(tools, "call", spy)
    return seen


@pytest.mark.parametrize("server_reads", [0, 4])
def test_reads_run_at_most_server_reads_at_once(db_path, clock, monkeypatch, server_reads):
    """On SQLite one read at a time by default, on PostgreSQL no bound
    (``Store.server_reads``), as the HTTP API."""
    seen = _slow_calls_counted(monkeypatch)
    settings = Settings(server_reads=server_reads)
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        bound = store.server_reads()
        most = {1} if bound == 1 else set(range(2, (bound or 8) + 1))
        mem = mcp_server.bind(store, "lead")
        mem.save("Melanie Okafor owns the billing service")
        results = []

        async def main():
            async with Client(mcp_server.create_server(mem)) as client:

                async def search():
                    results.append(await client.call_tool("memory_search", {"query": "billing"}))

                async with anyio.create_task_group() as group:
                    for _ in range(8):
                        group.start_soon(search)

        run(main)
    assert len(results) == 8 and all(payload(r)["results"] for r in results)
    assert seen["most"] in most


def test_writes_run_at_most_server_writes_at_once(db_path, clock, monkeypatch):
    """One write at a time on SQLite, side by side on PostgreSQL (``Store.server_writes``),
    as the HTTP API."""
    seen = _slow_calls_counted(monkeypatch)
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        bound = store.server_writes()
        mem = mcp_server.bind(store, "lead")
        results = []

        async def main():
            async with Client(mcp_server.create_server(mem)) as client:

                async def save(i):
                    results.append(
                        await client.call_tool("memory_save", {"content": f"note {i} saved"})
                    )

                async with anyio.create_task_group() as group:
                    for i in range(8):
                        group.start_soon(save, i)

        run(main)
        assert len(results) == 8 and not any(r.is_error for r in results)
        assert len(mem.list(limit=20)) == 8
    assert seen["most"] == 1 if bound == 1 else 1 < seen["most"] <= bound


def test_the_model_cannot_reach_another_scope(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        store.scope("private").save("The root password hint is the cat's name")
        mem = mcp_server.bind(store, "agent", shared=["team"])

        async def main():
            async with Client(mcp_server.create_server(mem)) as client:
                return await client.call_tool("memory_search", {"query": "root password"})

        assert payload(run(main))["count"] == 0


def test_a_missing_sdk_is_a_missing_dependency_with_the_install_command(monkeypatch, db_path):
    monkeypatch.setitem(sys.modules, "mcp.server", None)
    with pytest.raises(MissingDependency, match=r"pip install 'hivemem\[mcp\]'"):
        mcp_server._sdk()
    result = CliRunner().invoke(cli_main, ["--db", str(db_path), "serve-mcp"])
    assert result.exit_code == 5
    assert "pip install 'hivemem[mcp]'" in result.output
    if not str(db_path).startswith("postgresql"):
        assert not db_path.exists()  # failed before opening the store


# ----------------------------------------------------------------------------- real processes


def _params(db: Path, *args: str) -> StdioServerParameters:
    env = {**os.environ, "HIVEMEM_EMBEDDER": "hash", "HIVEMEM_DB": str(db)}
    return StdioServerParameters(command=HIVEMEM[0], args=[*HIVEMEM[1:], *args], env=env)


def test_serve_mcp_over_stdio(db_path):
    params = _params(
        db_path,
        "serve-mcp",
        "--scope",
        "agent-1",
        "--learning-scope",
        "swarm",
        "--lead-of",
        "swarm",
    )

    async def main():
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            saved = await client.call_tool("memory_save", {"content": "Tabs, not spaces"})
            found = await client.call_tool("memory_search", {"q": "tabs"})
            learned = await client.call_tool(
                "inject_learning", {"content": "Lint before pushing", "category": "best-practice"}
            )
            return names, saved, found, learned

    names, saved, found, learned = run(main)
    assert names == list(tools.TOOLS)
    assert payload(saved)["memory"]["scope"] == "agent-1"
    assert payload(found)["results"][0]["snippet"] == "Tabs, not spaces"
    assert payload(learned)["scope"] == "swarm"
    with hivemem.open(db_path, embedder="hash") as store:
        assert [m.content for m in store.scope("swarm").list()] == ["Lint before pushing"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_mcp_over_streamable_http_says_where_it_listens(db_path):
    port = _free_port()
    env = {**os.environ, "HIVEMEM_EMBEDDER": "hash"}
    cmd = [*HIVEMEM, "--db", str(db_path), "serve-mcp", "--transport", "http"]
    proc = subprocess.Popen(
        [*cmd, "--scope", "web", "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    try:
        # The server prints its address once it listens: the client connects to that.
        while "HiveMem MCP server" not in (line := lines.get(timeout=60)):
            pass
        url = re.search(r"at (http://\S+/mcp)", line).group(1)
        assert url == f"http://127.0.0.1:{port}/mcp" and "'web'" in line, line

        async def main():
            async with Client(url) as client:
                await client.call_tool("remember_fact", {"content": "HTTP works too"})
                return await client.call_tool("memory_search", {"query": "http works"})

        assert payload(run(main))["results"][0]["scope"] == "web"
        # Each answer is one JSON body, not an event stream (the stream cost CPU per call)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        conn.request("POST", "/mcp", json.dumps(hello), headers)
        answer = conn.getresponse()
        assert answer.getheader("content-type", "").startswith("application/json")
        assert json.loads(answer.read())["result"]["serverInfo"]["name"] == "hivemem"
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_two_server_processes_write_one_file_at_once(db_path):
    per_server = 60

    async def writer(name: str, results: list) -> None:
        async with Client(_params(db_path, "serve-mcp", "--scope", "team")) as client:
            for i in range(per_server):
                tool = "memory_save" if i % 2 else "remember_fact"
                args = {"content": f"{name} learned fact number {i}", "key": f"{name}-{i}"}
                results.append(await client.call_tool(tool, args))
            results.append(await client.call_tool("memory_search", {"query": "learned fact"}))

    async def main():
        results: list = []
        async with anyio.create_task_group() as group:
            group.start_soon(writer, "alpha", results)
            group.start_soon(writer, "beta", results)
        return results

    results = run(main)
    errors = [r.content[0].text for r in results if r.is_error]
    assert errors == []  # no "database is locked" ever reaches the model
    with hivemem.open(db_path, embedder="hash") as store:
        keys = {m.key for m in store.scope("team").list(limit=1000)}
    assert keys == {f"{n}-{i}" for n in ("alpha", "beta") for i in range(per_server)}
