"""A consolidation served over HTTP waits on its LLM beside the writer, not on it: writes
sent meanwhile are answered at once (issue #13: an LLM consolidation stalled every write
for its whole run). The LLM is a real local HTTP server that holds the request open."""

from __future__ import annotations

import asyncio
import time

import pytest

import hivemem
from hivemem.providers.llm import OpenAIChatLLM
from test_llm import Reply, _Server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from hivemem.frontends.http import create_app  # noqa: E402


def test_writes_go_on_while_a_consolidation_waits_on_its_llm(db_path, clock):
    server = _Server()
    server.script(Reply(hang=True))
    llm = OpenAIChatLLM("qwen2.5:7b", base_url=server.url, max_retries=0)
    settings = hivemem.Settings(session_summaries=False, llm_conflicts=False)
    store = hivemem.open(db_path, clock=clock, embedder="none", llm=llm, settings=settings)
    app = create_app(store)
    try:
        mem = store.scope("team-a")
        mem.add_episodes(
            [
                {"content": f"Server {i} runs kappa{i}.", "session_id": "s1", "role": "user"}
                for i in range(3)
            ]
        )
        secret = store.tokens.create("t", {"team-a": "write"}, clock())[1]
        auth = {"Authorization": f"Bearer {secret}"}

        async def scenario():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://h") as c:
                consolidate = asyncio.create_task(
                    c.post("/v1/scopes/team-a/consolidate", json={"session_id": "s1"}, headers=auth)
                )
                deadline = time.monotonic() + 10
                while not server.requests:  # the job now waits on the model
                    assert time.monotonic() < deadline, "the LLM was never asked"
                    await asyncio.sleep(0.02)
                started = time.monotonic()
                saved = await asyncio.wait_for(
                    c.post(
                        "/v1/scopes/team-a/memories", json={"content": "A new fact"}, headers=auth
                    ),
                    timeout=5,
                )
                waited = time.monotonic() - started
                still_running = not consolidate.done()
                server.release.set()
                done = await consolidate
                return saved, waited, still_running, done

        saved, waited, still_running, done = asyncio.run(scenario())
        assert saved.status_code == 200, saved.text
        assert still_running and waited < 5
        assert done.status_code in (200, 400), done.text  # the model hung up: its outcome
        assert mem.get(saved.json()["memory"]["id"]).content == "A new fact"
    finally:
        app.state.api.close()
        store.close()
        server.close()
