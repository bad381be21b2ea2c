"""Issue #22 item 1: the context block from every front end. The CLI (``hivemem
context``), the MCP tool ``memory_context`` (the SDK's in-process client) and the HTTP
route ``POST /v1/scopes/{scope}/context`` (and ``…/tools/memory_context``) give the block
``ScopedMemory.context()`` builds, with its budget, session and profile options, as text
and JSON; none shows a vault secret, and hostile input is a clear error."""

from __future__ import annotations

import asyncio
import json
import os

import anyio
import httpx
import pytest
from click.testing import CliRunner

import hivemem
from hivemem import tools
from hivemem.frontends import mcp as mcp_server
from hivemem.frontends.cli import main
from hivemem.frontends.http import create_app

SECRET = "zq-9f8e7d6c5b4a-Mellon-Vault"  # no credential shape: only the vault knows it
QUERY = "When do we deploy the billing service?"

# (arguments, the field the error names)
HOSTILE = [
    ({"query": QUERY, "max_entries": 0}, "max_entries"),
    ({"query": QUERY, "max_entries": "10"}, "max_entries"),
    ({"query": QUERY, "max_tokens": -5}, "max_tokens"),
    ({"query": QUERY, "profile": "../../etc/passwd"}, "profile"),
    ({"query": QUERY, "min_score": 7}, "min_score"),
    ({"query": "\ud800 broken"}, "query"),
    ({"query": "x" * 5000}, "query"),
    ({"query": QUERY, "bogus": 1}, "bogus"),
]


@pytest.fixture
def store(db_path, clock):
    s = hivemem.open(
        db_path,
        clock=clock,
        embedder="hash",
        settings=hivemem.Settings(consolidate_on_session_switch=False),
    )
    mem = s.scope("team-a")
    mem.save("You are Ada, the release assistant", type="identity")
    mem.save(f"The billing database password is {SECRET}", type="context", key="db")
    mem.add_episode("We deploy the billing service on Tuesdays", session_id="s1", role="user")
    mem.add_episode("Deploy the billing service today?", session_id="now", role="user")
    s.vault("team-a").set("db-password", SECRET, secret=True)
    s.flush()
    yield s
    s.close()


def _check_block(block: str) -> None:
    assert block.startswith("## Memory\n")
    assert "You are Ada" in block
    assert "We deploy the billing service on Tuesdays" in block
    assert "today?" not in block  # the current session is left out
    assert SECRET not in block and "REDACTED" in block


def _check_answer(answer: dict) -> None:
    _check_block(answer["block"])
    assert SECRET not in json.dumps(answer)
    assert answer["entries"] == sum(len(s["memories"]) for s in answer["sections"])
    titles = [s["title"] for s in answer["sections"]]
    assert titles[0] == "Identity" and "Relevant from earlier sessions" in titles
    assert answer["profile"] == "hivemem" and answer["tokens"] > 0


def test_the_library_block_is_what_every_front_end_gives(store):
    block = store.scope("team-a").context(QUERY, session_id="now")
    _check_block(block)
    answer = tools.call(
        store.scope("team-a"), "memory_context", {"query": QUERY, "session_id": "now"}
    )
    assert answer["block"] == block
    _check_answer(answer)


# ----------------------------------------------------------------------------- CLI


@pytest.fixture
def cli(store, db_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("HIVEMEM_"):
            monkeypatch.delenv(name)
    store.close()  # the CLI opens the file itself
    runner = CliRunner()
    return lambda *args: runner.invoke(
        main, ["--db", str(db_path), "--scope", "team-a", *args], env={"HIVEMEM_EMBEDDER": "hash"}
    )


def test_cli_context_prints_the_block_and_json(cli):
    text = cli("context", QUERY, "--session", "now")
    assert text.exit_code == 0, text.output
    _check_block(text.stdout)
    as_json = cli("context", QUERY, "--session", "now", "--json")
    assert as_json.exit_code == 0, as_json.output
    _check_answer(json.loads(as_json.stdout))
    assert json.loads(as_json.stdout)["block"] == text.stdout
    pinned = json.loads(cli("context", QUERY, "--profile", "openhive", "--json").stdout)
    assert [s["title"] for s in pinned["sections"]] == ["Identity", "Current context"]
    small = json.loads(cli("context", QUERY, "--budget", "30", "--json").stdout)
    assert small["tokens"] <= 30 or small["sections"][0]["title"] == "Identity"
    assert json.loads(cli("context", QUERY, "--max-entries", "1", "--json").stdout)["entries"] == 1


def test_cli_context_refuses_hostile_input_with_one_line(cli):
    for args, field in [
        (["--max-entries", "0"], "max_entries"),
        (["--budget", "-5"], "max_tokens"),
        (["--min-score", "7"], "min_score"),
    ]:
        result = cli("context", QUERY, *args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {field}") and "Traceback" not in result.output
    bad_profile = cli("context", QUERY, "--profile", "nope")
    assert bad_profile.exit_code == 2 and "nope" in bad_profile.output
    empty = cli("context", "'; DROP TABLE memories; -- \x00 NEAR( * OR", "--profile", "swarm")
    assert empty.exit_code in (0, 2) and "Traceback" not in empty.output


# ----------------------------------------------------------------------------- MCP


def test_mcp_memory_context_gives_the_block(store):
    from mcp import Client

    mem = mcp_server.bind(store, "team-a")

    async def session():
        async with Client(mcp_server.create_server(mem)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            good = await client.call_tool("memory_context", {"query": QUERY, "session_id": "now"})
            bad = [await client.call_tool("memory_context", args) for args, _ in HOSTILE]
            return names, good, bad

    names, good, bad = anyio.run(session)
    assert "memory_context" in names
    assert not good.is_error, good.content[0].text
    _check_answer(json.loads(good.content[0].text))
    for result, (_, field) in zip(bad, HOSTILE, strict=True):
        assert result.is_error and field in result.content[0].text
        assert "Traceback" not in result.content[0].text


# ----------------------------------------------------------------------------- HTTP


def _http(app, method, url, token, **kwargs):
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hivemem.test") as c:
            headers = {"Authorization": f"Bearer {token}", **kwargs.pop("headers", {})}
            return await c.request(method, url, headers=headers, **kwargs)

    return asyncio.run(go())


def test_http_context_route_and_tool_route(store):
    _, token = store.tokens.create("reader", {"team-a": "read"}, store.clock())
    _, other = store.tokens.create("other", {"team-b": "write"}, store.clock())
    app = create_app(store)
    try:
        body = {"query": QUERY, "session_id": "now"}
        rest = _http(app, "POST", "/v1/scopes/team-a/context", token, json=body)
        assert rest.status_code == 200, rest.text
        _check_answer(rest.json())
        tool = _http(app, "POST", "/v1/scopes/team-a/tools/memory_context", token, json=body)
        assert tool.json() == rest.json()
        markdown = {"Accept": "text/markdown"}
        text = _http(app, "POST", "/v1/scopes/team-a/context", token, json=body, headers=markdown)
        assert text.headers["content-type"].startswith("text/markdown")
        assert text.text == rest.json()["block"]
        budget = {"query": QUERY, "max_tokens": 40, "profile": "assistant"}
        small = _http(app, "POST", "/v1/scopes/team-a/context", token, json=budget).json()
        assert small["profile"] == "assistant" and small["tokens"] <= 40
        denied = _http(app, "POST", "/v1/scopes/team-a/context", other, json=body)
        assert denied.status_code in (403, 404) and SECRET not in denied.text
        for args, field in HOSTILE:
            raw = json.dumps(args).encode()  # ASCII escapes: a lone surrogate arrives as sent
            headers = {"Content-Type": "application/json"}
            bad = _http(
                app, "POST", "/v1/scopes/team-a/context", token, content=raw, headers=headers
            )
            assert bad.status_code in (400, 422), bad.text
            assert bad.json()["error"]["field"] == field
        assert "/v1/scopes/{scope}/context" in app.openapi()["paths"]
    finally:
        app.state.api.close()
