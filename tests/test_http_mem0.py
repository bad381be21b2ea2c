"""Mem0's REST routes under /mem0 (frontends/http/mem0_routes.py), in process through
httpx, with the request and response shapes of Mem0's server and API docs: a client
written for a Mem0 server changes only its base URL (and sends a token)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import httpx
import pytest

from hivemem.frontends.http import create_app
from hivemem.frontends.http.errors import STATUSES


@pytest.fixture
def app(store):
    application = create_app(store)
    yield application
    application.state.api.close()


@pytest.fixture
def tokens(store):
    grants = {
        "alice": {"user:alice": "write"},
        "reader": {"user:alice": "read"},
        "bob": {"user:bob": "write"},
    }
    return {
        name: store.tokens.create(name, scopes, store.clock())[1] for name, scopes in grants.items()
    }


def call(app, method, path, token=None, scheme="Bearer", **kwargs):
    headers = {"Authorization": f"{scheme} {token}"} if token else {}

    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hivemem.test") as c:
            return await c.request(method, f"/mem0{path}", headers=headers, **kwargs)

    return asyncio.run(go())


def ok(response):
    assert response.status_code == 200, response.text
    return response.json()


def error(response, status):
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == STATUSES[status][0], body
    return body["error"]


def test_the_mem0_calls_round_trip(app, tokens, store):
    t = tokens["alice"]
    added = ok(
        call(
            app,
            "POST",
            "/memories",
            t,
            json={
                "messages": "I live in Berlin",
                "user_id": "alice",
                "metadata": {"topic": "home"},
            },
        )
    )
    [first] = added["results"]
    assert (first["memory"], first["event"]) == ("I live in Berlin", "ADD")
    chat = [{"role": "user", "content": "I love hiking in the Alps"}]
    body = {"messages": chat, "user_id": "alice", "run_id": "trip", "infer": False}
    assert ok(call(app, "POST", "/memories", t, json=body))["results"][0]["event"] == "ADD"
    listed = ok(call(app, "GET", "/memories", t, params={"user_id": "alice"}))["results"]
    assert {m["memory"] for m in listed} == {"I live in Berlin", "I love hiking in the Alps"}
    found = ok(
        call(app, "POST", "/search", t, json={"query": "where does alice live", "user_id": "alice"})
    )
    assert found["results"][0]["memory"] == "I live in Berlin" and found["results"][0]["score"] > 0
    by_topic = {"query": "live", "filters": {"user_id": "alice", "topic": "home"}, "top_k": 5}
    assert [m["id"] for m in ok(call(app, "POST", "/search", t, json=by_topic))["results"]] == [
        first["id"]
    ]
    by_run = ok(
        call(
            app,
            "POST",
            "/search",
            t,
            json={"query": "hiking", "user_id": "alice", "run_id": "trip"},
        )
    )
    assert [m["memory"] for m in by_run["results"]] == ["I love hiking in the Alps"]
    assert ok(call(app, "GET", f"/memories/{first['id']}", t))["metadata"] == {"topic": "home"}
    updated = ok(call(app, "PUT", f"/memories/{first['id']}", t, json={"text": "I live in Munich"}))
    assert updated["message"] == "Memory updated successfully!"
    assert ok(call(app, "GET", f"/memories/{first['id']}", t))["memory"] == "I live in Munich"
    history = ok(call(app, "GET", f"/memories/{first['id']}/history", t))
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I live in Berlin"),
        ("UPDATE", "I live in Berlin", "I live in Munich"),
    ]
    assert ok(call(app, "DELETE", f"/memories/{updated['id']}", t))["message"].startswith(
        "Memory deleted"
    )
    assert ok(call(app, "DELETE", "/memories", t, params={"user_id": "alice"}))["message"].endswith(
        "deleted successfully!"
    )
    assert ok(call(app, "GET", "/memories", t, params={"user_id": "alice"}))["results"] == []


def test_expiration_date_ends_the_memory(app, tokens, store, clock):
    t = tokens["alice"]
    body = {
        "messages": "Parking spot 42 this week",
        "user_id": "alice",
        "expiration_date": "2026-01-03",
    }
    [made] = ok(call(app, "POST", "/memories", t, json=body))["results"]
    chat = {"messages": [{"role": "user", "content": "Desk 7 today"}], "user_id": "alice"}
    chat["expiration_date"] = "2026-01-03"
    ok(call(app, "POST", "/memories", t, json=chat))
    expiry = store.scope("user:alice").get(made["id"]).expires_at
    assert expiry == datetime(2026, 1, 3, 23, 59, 59, 999999, tzinfo=UTC)
    assert {m.expires_at for m in store.scope("user:alice").list()} == {expiry}
    clock.advance(days=3)
    assert ok(call(app, "GET", "/memories", t, params={"user_id": "alice"}))["results"] == []
    assert (
        ok(call(app, "POST", "/search", t, json={"query": "parking", "user_id": "alice"}))[
            "results"
        ]
        == []
    )
    bad = dict(body, expiration_date=20260103)
    assert error(call(app, "POST", "/memories", t, json=bad), 422)["field"] == "expiration_date"


def test_tokens_reach_only_their_identities(app, tokens):
    mine = ok(
        call(app, "POST", "/memories", tokens["alice"], json={"messages": "A", "user_id": "alice"})
    )
    memory_id = mine["results"][0]["id"]
    error(call(app, "GET", "/memories", params={"user_id": "alice"}), 401)
    error(call(app, "GET", "/memories", "wrong", params={"user_id": "alice"}), 401)
    error(call(app, "GET", "/memories", tokens["bob"], params={"user_id": "alice"}), 403)
    error(call(app, "GET", f"/memories/{memory_id}", tokens["bob"]), 403)
    error(call(app, "GET", f"/memories/{memory_id}/history", tokens["bob"]), 403)
    error(call(app, "POST", "/search", tokens["bob"], json={"query": "A", "user_id": "alice"}), 403)
    error(
        call(
            app,
            "POST",
            "/search",
            tokens["bob"],
            json={"query": "A", "filters": {"user_id": "alice"}},
        ),
        403,
    )
    # read is not write
    assert ok(call(app, "GET", f"/memories/{memory_id}", tokens["reader"]))["memory"] == "A"
    error(call(app, "DELETE", f"/memories/{memory_id}", tokens["reader"]), 403)
    error(call(app, "PUT", f"/memories/{memory_id}", tokens["reader"], json={"text": "B"}), 403)
    error(
        call(
            app, "POST", "/memories", tokens["reader"], json={"messages": "C", "user_id": "alice"}
        ),
        403,
    )
    # Mem0's own header form
    assert (
        ok(call(app, "GET", f"/memories/{memory_id}", tokens["alice"], scheme="Token"))["memory"]
        == "A"
    )


def test_bad_requests_get_the_one_error_shape(app, tokens):
    t = tokens["alice"]
    assert error(call(app, "GET", "/memories", t), 422)["field"] == "user_id"
    assert (
        error(call(app, "POST", "/memories", t, json={"user_id": "alice"}), 422)["field"]
        == "messages"
    )
    assert (
        error(
            call(
                app, "POST", "/memories", t, json={"messages": "x", "user_id": "alice", "nope": 1}
            ),
            422,
        )["field"]
        == "nope"
    )
    bad_meta = {"messages": "x", "user_id": "alice", "metadata": "not an object"}
    assert error(call(app, "POST", "/memories", t, json=bad_meta), 422)["field"] == "metadata"
    bad_k = {"query": "x", "user_id": "alice", "top_k": "5"}
    assert error(call(app, "POST", "/search", t, json=bad_k), 422)["field"] == "top_k"
    error(call(app, "POST", "/memories", t, content=b"{not json"), 400)
    error(call(app, "GET", "/memories/no-such-id", t), 404)
    error(call(app, "PUT", "/memories/x", t, json={}), 422)
    error(
        call(
            app,
            "POST",
            "/search",
            t,
            json={"query": "x", "user_id": "alice", "filters": {"n": {"$regex": "a"}}},
        ),
        422,
    )


def test_a_vault_secret_never_comes_back(app, tokens, store):
    secret = "hunter2-Zq8v-very-secret"
    store.vault("user:alice").set("db", secret, secret=True)
    t = tokens["alice"]
    made = ok(
        call(
            app,
            "POST",
            "/memories",
            t,
            json={"messages": f"db password {secret}", "user_id": "alice"},
        )
    )
    for response in [
        call(app, "POST", "/search", t, json={"query": "db password", "user_id": "alice"}),
        call(app, "GET", "/memories", t, params={"user_id": "alice"}),
        call(app, "GET", f"/memories/{made['results'][0]['id']}", t),
    ]:
        assert response.status_code == 200 and secret not in response.text


def test_hostile_input_is_data(app, tokens, store):
    t = tokens["alice"]
    text = '\'; DROP TABLE memories; -- NEAR("a" "b") OR *'
    ok(call(app, "POST", "/memories", t, json={"messages": text, "user_id": "alice"}))
    found = ok(call(app, "POST", "/search", t, json={"query": text, "user_id": "alice"}))["results"]
    assert found[0]["memory"] == text
    weird = store.tokens.create("w", {"user:x' OR '1'='1": "write"}, store.clock())[1]
    ok(
        call(
            app, "POST", "/memories", weird, json={"messages": "odd id", "user_id": "x' OR '1'='1"}
        )
    )
    assert [
        m["memory"]
        for m in ok(call(app, "GET", "/memories", t, params={"user_id": "alice"}))["results"]
    ] == [text]


def test_the_routes_are_in_the_openapi_schema(app):
    paths = app.openapi()["paths"]
    for path, method in [
        ("/mem0/memories", "post"),
        ("/mem0/memories", "get"),
        ("/mem0/memories", "delete"),
        ("/mem0/memories/{memory_id}", "put"),
        ("/mem0/memories/{memory_id}/history", "get"),
        ("/mem0/search", "post"),
    ]:
        assert "401" in paths[path][method]["responses"], (method, path)
