"""Property: nothing in a search answer depends on data the caller cannot read (LESSONS
19). Issue 25: the keyword lane's raw ``bm25`` in an explanation of scope B changed when
scope A wrote, so a tenant holding a token for B alone could probe whether A's memories
hold a word. Here, on SQLite and on PostgreSQL, scope B's answers (the library's hits with
their explanations, and the HTTP API's JSON under a token bound to B) are taken, scope A
writes heavily (B's own query terms among its words, and B's entity names, a session,
unembedded memories), and every number, note and id of B's answers must be the same."""

from __future__ import annotations

import asyncio
import json
import random

import httpx

import hivemem
from hivemem.frontends.http import create_app

WORDS = ["deploy", "billing", "rollback", "friday", "postgres", "invoice", "cluster",
         "Alice", "Berlin", "window", "staging", "migration", "release", "Acme"]  # fmt: skip
QUERIES = [
    "deploy rollback friday",
    "billing invoice postgres",
    "Alice Berlin",
    "staging cluster migration window",
    "release",
    "when does Alice deploy the billing cluster",
    '"deploy" OR billing',
]


def _fill_b(mem) -> None:
    rng = random.Random(25)
    for i in range(40):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        filler = " ".join(
            rng.choice(["the", "team", "noted", "again", "we", "plan"]) for _ in range(5)
        )
        mem.save(f"{' '.join(words)} {filler} item {i}", tags=["b"] if i % 3 else None)
    for turn, text in enumerate(
        ["Alice asked when we deploy", "on Friday, after the billing rollback", "ok, Berlin too"]
    ):
        mem.add_episode(text, session_id="b-chat", role="user" if turn % 2 == 0 else "agent")


def _flood_a(store, mem) -> None:
    """Scope A writes what would move any statistic over the whole store: B's query
    terms at every frequency, B's entity names, a session, new chunks left unembedded."""
    rng = random.Random(7)
    for i in range(300):
        words = [rng.choice(WORDS[: 1 + i % len(WORDS)]) for _ in range(rng.randint(1, 40))]
        mem.save(f"{' '.join(words)} a-only {i}")
    for i in range(20):
        mem.add_episode(f"Alice deploy billing turn {i}", session_id="a-chat", role="user")
    store.flush()
    for i in range(30):  # left in the embedding queue (no flush after them)
        mem.save(f"deploy billing rollback Alice pending {i}")


def _library_answer(mem) -> list:
    out = []
    for query in QUERIES:
        fts = query.startswith('"')
        hits = mem.search(query, 10, fts_syntax=fts)
        out.append([hit.to_dict() for hit in hits])
    return json.loads(json.dumps(out, default=str))


def _http_answer(app, token: str) -> list:
    async def run() -> list:
        transport = httpx.ASGITransport(app=app)
        out = []
        async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
            for query in QUERIES:
                if query.startswith('"'):
                    continue  # the tools take natural language only
                body = {"query": query, "max_results": 10}
                response = await client.post(
                    "/v1/scopes/team-b/search",
                    json=body,
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert response.status_code == 200, response.text
                out.append(response.json())
        return out

    return asyncio.run(run())


def _differences(before, after, path="") -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for key in sorted(set(before) | set(after)):
            out += _differences(before.get(key), after.get(key), f"{path}.{key}")
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for i, (a, b) in enumerate(zip(before, after, strict=True)):
            out += _differences(a, b, f"{path}[{i}]")
        return out
    return [] if before == after else [f"{path}: {before!r} -> {after!r}"]


def test_scope_bs_answers_do_not_move_when_scope_a_writes(any_location, clock):
    settings = hivemem.Settings(track_access=False)  # B's own reads must not move B either
    store = hivemem.open(any_location, clock=clock, embedder="hash", settings=settings)
    try:
        a, b = store.scope("team-a"), store.scope("team-b")
        for i in range(40):  # A holds about as much as B: neither is the whole store
            a.save(f"cluster staging note {i} release window")
        _fill_b(b)
        store.flush()
        _, token = store.tokens.create("b-only", {"team-b": "read"}, store.clock())
        app = create_app(store)
        try:
            library, served = _library_answer(b), _http_answer(app, token)
            assert sum(len(hits) for hits in library) > 30  # the queries do find B's memories
            assert any("keyword" in h["explain"]["lanes"] for hits in library for h in hits)
            assert any("entity" in h["explain"]["lanes"] for hits in library for h in hits)
            _flood_a(store, a)
            changed = _differences(library, _library_answer(b))
            changed += _differences(served, _http_answer(app, token))
        finally:
            app.state.api.close()
        assert not changed, f"{len(changed)} numbers of scope B moved: {changed[:12]}"
    finally:
        store.close()
