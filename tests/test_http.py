"""The HTTP API, in process (httpx.ASGITransport): tokens bound to scopes, the one error
shape for every status, request size limits, the writer thread, and a fuzz of the
OpenAPI schema (schemathesis) in which no request may get a 5xx."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

import hivemem
from hivemem import tools
from hivemem.frontends.http import create_app
from hivemem.frontends.http.errors import ERROR_SCHEMA, STATUSES
from hivemem.frontends.http.routes import REST_ROUTES


class Client:
    """A synchronous face on an in-process httpx client."""

    def __init__(self, app) -> None:
        self.app = app

    async def arequest(self, method, url, token=None, **kwargs):
        headers = dict(kwargs.pop("headers", {}) or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hivemem.test") as c:
            return await c.request(method, url, headers=headers, **kwargs)

    def request(self, method, url, token=None, **kwargs):
        return asyncio.run(self.arequest(method, url, token, **kwargs))

    def get(self, url, token=None, **kwargs):
        return self.request("GET", url, token, **kwargs)

    def post(self, url, token=None, **kwargs):
        return self.request("POST", url, token, **kwargs)


@pytest.fixture
def tokens(store):
    return store.tokens


@pytest.fixture
def grants(store, tokens):
    """Secrets: write on team-a (read on swarm), read-only on team-a, write on team-b."""
    made = {}
    for label, scopes in {
        "a_writer": {"team-a": "write", "swarm": "read"},
        "a_reader": {"team-a": "read"},
        "b_writer": {"team-b": "write"},
    }.items():
        made[label] = tokens.create(label, scopes, store.clock())[1]
    return made


@pytest.fixture
def app(store):
    application = create_app(store)
    yield application
    application.state.api.close()


@pytest.fixture
def client(app):
    return Client(app)


def save(client, token, scope, content, **args):
    return client.post(f"/v1/scopes/{scope}/memories", token, json={"content": content, **args})


def assert_error_shape(response, status):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert error["code"] == STATUSES[status][0]
    assert isinstance(error["message"], str) and error["message"].strip()
    assert set(error) <= set(ERROR_SCHEMA["properties"]["error"]["properties"])  # documented
    assert "Traceback" not in response.text


# ----------------------------------------------------------------------------- operations


def test_save_search_get_list_delete_through_rest_routes(client, grants, store):
    token = grants["a_writer"]
    made = save(client, token, "team-a", "Never deploy on Fridays", key="deploy", type="warning")
    assert made.status_code == 200, made.text
    found = client.post("/v1/scopes/team-a/search", token, json={"query": "deploy friday"})
    assert found.status_code == 200, found.text
    assert "Never deploy on Fridays" in found.text
    memory = store.scope("team-a").get("deploy")
    assert memory.content == "Never deploy on Fridays" and memory.type.value == "lesson"
    listed = client.get("/v1/scopes/team-a/memories", token)
    assert listed.status_code == 200 and memory.id in listed.text
    got = client.get(f"/v1/scopes/team-a/memories/{memory.id}", token)
    assert got.status_code == 200 and memory.id in got.text
    gone = client.request("DELETE", f"/v1/scopes/team-a/memories/{memory.id}", token)
    assert gone.status_code == 200, gone.text
    assert store.scope("team-a").get(memory.id).status.value == "deleted"


def test_query_strings_are_typed_by_the_tool_schema(client, grants, store):
    token = grants["a_writer"]
    for i in range(5):
        store.scope("team-a").save(f"note {i} about Melanie", tags=["even" if i % 2 else "odd"])
    listed = client.get("/v1/scopes/team-a/memories?max_results=2", token)
    assert listed.status_code == 200 and listed.json()["count"] == 2
    tagged = client.get("/v1/scopes/team-a/memories?tags=even&tags=none", token).json()
    assert sorted(m["content"] for m in tagged["memories"]) == [
        "note 1 about Melanie",
        "note 3 about Melanie",
    ]
    for query, field in [("max_results=abc", "max_results"), ("max_results=0", "max_results")]:
        bad = client.get(f"/v1/scopes/team-a/memories?{query}", token)
        assert_error_shape(bad, 422)
        assert bad.json()["error"]["field"] == field
    twice = client.get("/v1/scopes/team-a/memories?offset=1&offset=2", token)
    assert_error_shape(twice, 422)
    entity = client.get("/v1/scopes/team-a/entities/Melanie?max_results=3", token)
    assert entity.status_code == 200, entity.text
    assert len(entity.json()["memories"]) == 3


def test_every_tool_has_a_route_and_the_rest_routes_are_served(app):
    schema = app.openapi()
    paths = schema["paths"]
    for name in tools.TOOLS:
        assert "post" in paths[f"/v1/scopes/{{scope}}/tools/{name}"], name
    for name, (method, path, _args) in REST_ROUTES.items():
        if name in tools.TOOLS:
            assert method.lower() in paths[f"/v1/scopes/{{scope}}{path}"], name
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, operations in paths.items():
        for method, operation in operations.items():
            if path == "/v1/health":
                continue
            assert "401" in operation["responses"], (method, path)


def test_tool_route_takes_the_arguments_as_the_body(client, grants):
    token = grants["a_writer"]
    made = client.post(
        "/v1/scopes/team-a/tools/memory_save", token, json={"content": "Berlin is home"}
    )
    assert made.status_code == 200, made.text
    found = client.post("/v1/scopes/team-a/tools/memory_search", token, json={"query": "Berlin"})
    assert found.status_code == 200 and "Berlin is home" in found.text
    listed = client.get("/v1/tools", token)
    names = [f["function"]["name"] for f in listed.json()["tools"]]
    assert names == list(tools.TOOLS)


# ----------------------------------------------------------------------------- auth


def test_a_token_for_one_scope_never_reads_or_writes_another(client, grants, store):
    store.scope("team-b").save("team b secret plan", key="plan")
    a_token = grants["a_writer"]
    b_memory = store.scope("team-b").get("plan")
    attempts = [
        ("POST", "/v1/scopes/team-b/memories", {"json": {"content": "intruder"}}),
        ("POST", "/v1/scopes/team-b/search", {"json": {"query": "secret plan"}}),
        ("GET", "/v1/scopes/team-b/memories", {}),
        ("GET", f"/v1/scopes/team-b/memories/{b_memory.id}", {}),
        ("DELETE", f"/v1/scopes/team-b/memories/{b_memory.id}", {}),
        ("GET", "/v1/scopes/team-b/stats", {}),
        ("POST", "/v1/scopes/team-b/tools/memory_save", {"json": {"content": "intruder"}}),
        ("POST", "/v1/scopes/team-b/tools/memory_search", {"json": {"query": "secret"}}),
        ("GET", "/v1/scopes/team-a/memories?shared=team-b", {}),
        ("POST", "/v1/scopes/team-a/search?shared=team-b", {"json": {"query": "secret plan"}}),
    ]
    for method, url, kwargs in attempts:
        response = client.request(method, url, a_token, **kwargs)
        assert_error_shape(response, 403)
        assert "secret plan" not in response.text
    assert [m.content for m in store.scope("team-b").list()] == ["team b secret plan"]
    assert store.scope("team-b").get("plan").status.value == "active"
    # A memory id of scope B is not found through scope A either.
    assert_error_shape(client.get(f"/v1/scopes/team-a/memories/{b_memory.id}", a_token), 404)
    # ... and B's own token reads it.
    own = client.get(f"/v1/scopes/team-b/memories/{b_memory.id}", grants["b_writer"])
    assert own.status_code == 200 and "team b secret plan" in own.text


def test_read_grant_reads_but_never_writes(client, grants, store):
    store.scope("team-a").save("readable", key="r")
    reader = grants["a_reader"]
    assert client.get("/v1/scopes/team-a/memories", reader).status_code == 200
    assert client.post("/v1/scopes/team-a/search", reader, json={"query": "x"}).status_code == 200
    assert_error_shape(save(client, reader, "team-a", "forbidden write"), 403)
    memory = store.scope("team-a").get("r")
    assert_error_shape(
        client.request("DELETE", f"/v1/scopes/team-a/memories/{memory.id}", reader), 403
    )
    assert [m.content for m in store.scope("team-a").list()] == ["readable"]


def test_shared_scope_is_read_when_the_token_grants_it(client, grants, store):
    store.scope("swarm").save("shared wisdom about deploys")
    plain = client.post("/v1/scopes/team-a/search", grants["a_writer"], json={"query": "wisdom"})
    assert "shared wisdom" not in plain.text
    shared = client.post(
        "/v1/scopes/team-a/search?shared=swarm", grants["a_writer"], json={"query": "wisdom"}
    )
    assert shared.status_code == 200 and "shared wisdom" in shared.text


def test_a_learning_reaches_the_shared_scope_only_with_write_on_it(db_path, clock):
    if "learning_scope" not in {name for name, _d, _h in hivemem.Settings.fields_help()}:
        pytest.skip("the learning_scope setting is not there yet")
    settings = hivemem.Settings().replace(learning_scope="swarm")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        tokens = store.tokens
        reader = tokens.create("lead", {"lead": "write", "swarm": "read"}, clock())[1]
        lead = tokens.create("lead", {"lead": "write", "swarm": "write"}, clock())[1]
        worker = tokens.create("worker", {"worker": "write", "swarm": "read"}, clock())[1]
        app = create_app(store)
        try:
            client = Client(app)
            body = {"content": "Run the linter before pushing", "category": "best-practice"}
            url = "/v1/scopes/lead/learnings?shared=swarm"
            assert_error_shape(client.post(url, reader, json=body), 403)
            assert store.scope("swarm").list() == []
            made = client.post(url, lead, json=body)
            assert made.status_code == 200, made.text
            assert made.json()["memory"]["scope"] == "swarm"
            found = client.post(
                "/v1/scopes/worker/search?shared=swarm", worker, json={"query": "linter"}
            )
            assert "Run the linter before pushing" in found.text
        finally:
            app.state.api.close()


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic abc", "Bearer hm_not-a-token", "Bearer \u00e9\u00e9"],
)
def test_missing_or_bad_tokens_get_401(client, header):
    headers = {} if header is None else {"Authorization": header.encode("utf-8")}
    response = client.get("/v1/scopes/team-a/memories", headers=headers)
    assert_error_shape(response, 401)
    assert response.headers["www-authenticate"] == "Bearer"


def test_a_revoked_token_is_refused_at_once(client, grants, tokens, store):
    token = grants["a_writer"]
    assert client.get("/v1/token", token).status_code == 200
    tokens.revoke("a_writer", store.clock())
    assert_error_shape(client.get("/v1/scopes/team-a/memories", token), 401)


def test_use_of_a_token_is_recorded(client, grants, tokens, app):
    client.get("/v1/token", grants["a_reader"])
    app.state.api.writer.submit(lambda: None).result()  # the touch is queued before this
    assert tokens.find("a_reader").last_used_at is not None
    assert tokens.find("b_writer").last_used_at is None


def test_health_needs_no_token(client):
    response = client.get("/v1/health")
    assert response.status_code == 200 and response.json()["status"] == "ok"


# ----------------------------------------------------------------------------- errors


def test_every_status_the_api_returns_has_the_one_error_shape(client, grants, monkeypatch):
    token = grants["a_writer"]
    seen = set()

    def check(response, status):
        assert_error_shape(response, status)
        seen.add(status)

    check(client.post("/v1/scopes/team-a/memories", token, content=b"{not json"), 400)
    check(client.post("/v1/scopes/team-a/memories", token, content=b"[1, 2]"), 400)
    check(client.post("/v1/scopes/team-a/memories", token, content=b"\xff\xfe"), 400)
    check(client.post("/v1/scopes/team-a/memories", token, content=b"[" * 100_000), 400)
    check(client.get("/v1/scopes/team-a/memories"), 401)
    check(save(client, token, "team-b", "x"), 403)
    check(client.get("/v1/scopes/team-a/memories/01-no-such-id", token), 404)
    check(client.get("/v1/no/such/route", token), 404)
    check(client.request("PUT", "/v1/scopes/team-a/memories", token), 405)
    assert save(client, token, "team-a", "first", key="k").status_code == 200
    conflict = save(client, token, "team-a", "second", key="k")
    check(conflict, 409)
    assert conflict.json()["error"]["current"]["content"] == "first"
    check(save(client, token, "team-a", "x" * 2_000_000), 413)
    check(save(client, token, "team-a", 5), 422)
    assert client.post("/v1/scopes/team-a/memories", token, json={}).json()["error"]["field"]
    check(save(client, token, "team-a", "x", type="no-such-type"), 422)
    check(client.get("/v1/scopes/%20/memories", token), 422)

    def fail_with(exc):
        def call(mem, name, arguments=None):
            raise exc

        return call

    monkeypatch.setattr(tools, "call", fail_with(RuntimeError("a bug")))
    bug = client.get("/v1/scopes/team-a/memories", token)
    check(bug, 500)
    assert "a bug" not in bug.text  # no internals leak
    monkeypatch.setattr(tools, "call", fail_with(hivemem.MissingDependency("x", "pip install x")))
    check(client.get("/v1/scopes/team-a/memories", token), 501)
    monkeypatch.setattr(tools, "call", fail_with(hivemem.StoreError("locked too long")))
    check(client.get("/v1/scopes/team-a/memories", token), 503)
    again = hivemem.TryAgain("aborted as a deadlock victim; try again", reason="deadlock")
    monkeypatch.setattr(tools, "call", fail_with(again))
    passing = client.get("/v1/scopes/team-a/memories", token)
    check(passing, 503)
    assert passing.headers["Retry-After"] == "1" and passing.json()["error"]["retry_after"] == 1
    monkeypatch.setattr(tools, "call", fail_with(hivemem.StoreFull("the disk is full")))
    check(client.get("/v1/scopes/team-a/memories", token), 507)
    assert seen == set(STATUSES)


def test_a_streamed_body_over_the_limit_is_cut_off(store, grants):
    small = create_app(store, store.settings.replace(http_max_body_bytes=1000))
    try:

        async def chunks():
            for _ in range(20):
                yield b'{"content": "' + b"x" * 100

        client = Client(small)
        response = client.post("/v1/scopes/team-a/memories", grants["a_writer"], content=chunks())
        assert_error_shape(response, 413)
        fits = save(client, grants["a_writer"], "team-a", "y" * 500)
        assert fits.status_code == 200, fits.text
    finally:
        small.state.api.close()
    assert [m.content for m in store.scope("team-a").list()] == ["y" * 500]


def test_bad_input_loses_no_data(client, grants, store):
    token = grants["a_writer"]
    assert save(client, token, "team-a", "kept", key="k").status_code == 200
    for bad in ({"content": ""}, {"content": "\x00"}, {"content": "x", "key": 7}):
        assert client.post("/v1/scopes/team-a/memories", token, json=bad).status_code == 422
    lone_surrogate = b'{"content": "x", "key": "\\ud800"}'
    refused = client.post("/v1/scopes/team-a/memories", token, content=lone_surrogate)
    assert_error_shape(refused, 422)
    assert [m.content for m in store.scope("team-a").list()] == ["kept"]


def test_error_bodies_never_echo_a_vault_secret(client, grants, store):
    store.scope("team-a").save("the db password is pw-7f3a9c-unique", key="db")
    store.vault("team-a").set("db_password", "pw-7f3a9c-unique", secret=True)
    conflict = save(client, grants["a_writer"], "team-a", "new text", key="db")
    assert_error_shape(conflict, 409)
    assert "pw-7f3a9c-unique" not in conflict.text
    assert "the db password is" in conflict.json()["error"]["current"]["content"]


def test_missing_extra_is_a_missing_dependency(store, monkeypatch):
    monkeypatch.setitem(sys.modules, "fastapi", None)
    monkeypatch.delitem(sys.modules, "hivemem.frontends.http.app", raising=False)
    with pytest.raises(hivemem.MissingDependency, match=r"pip install 'hivemem\[http\]'"):
        create_app(store)


# ----------------------------------------------------------------------------- writer thread


def test_writes_run_on_the_writer_threads_and_reads_beside_them(client, grants, store, monkeypatch):
    threads: dict[str, set[str]] = {"write": set(), "read": set()}
    real_call = tools.call

    def spy(mem, name, arguments=None):
        kind = "write" if tools.TOOLS[name].writes else "read"
        threads[kind].add(threading.current_thread().name)
        return real_call(mem, name, arguments)

    monkeypatch.setattr(tools, "call", spy)
    token = grants["a_writer"]

    async def burst():
        requests = []
        for i in range(30):
            body = {"content": f"note number {i} about parallel writes"}
            requests.append(client.arequest("POST", "/v1/scopes/team-a/memories", token, json=body))
            requests.append(
                client.arequest("POST", "/v1/scopes/team-a/search", token, json={"query": "note"})
            )
        return await asyncio.gather(*requests)

    responses = asyncio.run(burst())
    assert [r.status_code for r in responses] == [200] * 60
    assert 1 <= len(threads["write"]) <= store.server_writes()  # one on SQLite
    assert all(name.startswith("hivemem-writer") for name in threads["write"])
    assert not any(name.startswith("hivemem-writer") for name in threads["read"])
    assert len(store.scope("team-a").list(limit=100)) == 30


def test_writes_one_at_a_time_on_sqlite_and_side_by_side_on_postgresql(
    client, grants, store, monkeypatch
):
    """``Store.server_writes``: SQLite's file has one writer; on PostgreSQL a write waits
    on the server between its round trips, and one writer thread made the writes queue
    behind each other under load (one process: p50 ~0.8 s)."""
    state = _slow_calls_counted(monkeypatch, writes=True)

    async def burst():
        return await asyncio.gather(
            *(
                client.arequest(
                    "POST",
                    "/v1/scopes/team-a/memories",
                    grants["a_writer"],
                    json={"content": f"written side by side {i}"},
                )  # fmt: skip
                for i in range(8)
            )
        )

    assert [r.status_code for r in asyncio.run(burst())] == [200] * 8
    if store.location.startswith(("postgresql://", "postgres://")):
        assert 1 < state["most"] <= store.server_writes()
    else:
        assert state["most"] == 1
    assert len(store.scope("team-a").list(limit=100)) == 8


def _slow_calls_counted(monkeypatch, writes, others=None):
    """The tool calls that write (``writes``) or read made to take 50 ms (the others
    arrive while one runs) and counted: the most that ran at once (``["most"]``), how
    many ended (``["done"]``). Calls of the other kind go through ``others(call, mem,
    name, arguments)`` where given, else straight through."""
    real_call = tools.call
    lock = threading.Lock()
    state = {"running": 0, "most": 0, "done": 0}

    def spy(mem, name, arguments=None):
        if tools.TOOLS[name].writes is not writes:
            return (others or (lambda call, *a: call(*a)))(real_call, mem, name, arguments)
        with lock:
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        try:
            time.sleep(0.05)
            return real_call(mem, name, arguments)
        finally:
            with lock:
                state["running"] -= 1
                state["done"] += 1

    monkeypatch.setattr(tools, "call", spy)
    return state


def _overlap(client, token, monkeypatch, searches=6, write=False):
    """Fire ``searches`` searches at once (and a write after them, with ``write``): how
    many reads ran at once at most, and whether the write was answered while reads were
    still waiting."""

    def write(call, mem, name, arguments):
        result = call(mem, name, arguments)
        state["write_saw"] = state["done"]
        return result

    state = _slow_calls_counted(monkeypatch, writes=False, others=write)
    state["write_saw"] = None

    async def burst():
        body = {"query": "note"}
        asked = [
            client.arequest("POST", "/v1/scopes/team-a/search", token, json=body)
            for _ in range(searches)
        ]
        if write:
            asked.append(
                client.arequest("POST", "/v1/scopes/team-a/memories", token, json={"content": "x"})
            )
        return await asyncio.gather(*asked)

    responses = asyncio.run(burst())
    assert [r.status_code for r in responses] == [200] * len(responses)
    return state


def test_reads_one_at_a_time_on_sqlite_and_writes_pass_the_queue(
    client, grants, store, monkeypatch
):
    """``server_reads`` 0 is one read at a time on SQLite (side by side, reads only pass
    the GIL back and forth, ``Store.server_reads``), no bound on PostgreSQL; a write
    does not wait behind the reads."""
    state = _overlap(client, grants["a_writer"], monkeypatch, write=True)
    if store.server_reads() is None:  # PostgreSQL
        assert state["most"] > 1
    else:
        assert state["most"] == 1
    assert state["write_saw"] is not None and state["write_saw"] < 6


def test_server_reads_sets_how_many_reads_run_at_once(db_path, monkeypatch):
    settings = hivemem.Settings(server_reads=3)
    with hivemem.open(db_path, embedder="hash", settings=settings) as store:
        assert store.server_reads() == 3
        token = store.tokens.create("t", {"team-a": "write"}, store.clock())[1]
        app = create_app(store)
        try:
            state = _overlap(Client(app), token, monkeypatch, searches=9)
        finally:
            app.state.api.close()
    assert 1 < state["most"] <= 3


def test_the_automatic_bound_is_one_on_sqlite_and_none_on_postgresql(store, monkeypatch):
    postgres = store.location.startswith(("postgresql://", "postgres://"))
    assert store.server_reads() == (None if postgres else 1)
    for location, bound, writes in [("postgresql://db/x", None, 4), ("/data/memory.db", 1, 1)]:
        monkeypatch.setattr(type(store), "location", property(lambda self, at=location: at))
        assert (store.server_reads(), store.server_writes()) == (bound, writes)
    with pytest.raises(hivemem.InvalidInput, match="server_reads"):
        hivemem.Settings(server_reads=-1)


# ----------------------------------------------------------------------------- fuzz


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory):
    store = hivemem.open(tmp_path_factory.mktemp("fuzz") / "memory.db", embedder="hash")
    secret = store.tokens.create("fuzz", {"fuzz": "write"}, store.clock())[1]
    store.scope("fuzz").save("A memory the fuzzer can find", key="seed")
    app = create_app(store)
    yield app, secret
    app.state.api.close()
    store.close()


@pytest.fixture(scope="module")
def fuzz_schema(fuzz_target):
    return schemathesis.openapi.from_asgi("/openapi.json", fuzz_target[0])


schema = schemathesis.pytest.from_fixture("fuzz_schema")


@schema.parametrize()
@settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_fuzz_the_openapi_schema_no_5xx(case, fuzz_target):
    _app, secret = fuzz_target
    if "scope" in (case.path_parameters or {}):
        case.path_parameters["scope"] = "fuzz"
    response = case.call(headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code < 500, (case.method, case.path, response.text)
    if response.status_code >= 400:
        body = response.json()
        assert (
            set(body) == {"error"} and body["error"]["code"] == STATUSES[response.status_code][0]
        ), body


# ----------------------------------------------------------------------------- the server


def test_serve_http_answers_on_a_real_socket(db_path):
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    made = CliRunner().invoke(main, ["--db", str(db_path), "token", "create", "t", "--write", "a"])
    secret = made.output.split("token: ")[1].split()[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = ["-c", "from hivemem.frontends.cli import main; main()", "--db", str(db_path)]
    server = subprocess.Popen(
        [sys.executable, *command, "serve-http", "--port", str(port), "--learning-scope", "a"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                assert httpx.get(f"{base}/v1/health", timeout=1).status_code == 200
                break
            except httpx.TransportError:
                assert server.poll() is None, server.stdout.read().decode()
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        auth = {"Authorization": f"Bearer {secret}"}
        saved = httpx.post(
            f"{base}/v1/scopes/a/memories", json={"content": "over tcp"}, headers=auth
        )
        assert saved.status_code == 200, saved.text
        refused = httpx.get(f"{base}/v1/scopes/b/memories", headers=auth)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        assert httpx.get(f"{base}/openapi.json").json()["info"]["title"] == "HiveMem"
        learned = httpx.post(
            f"{base}/v1/scopes/a/learnings",
            json={"content": "lint first", "category": "best-practice"},
            headers=auth,
        )
        assert learned.status_code == 200, learned.text
    finally:
        server.terminate()
        server.wait(timeout=30)
    with hivemem.open(db_path, embedder="hash") as store:
        assert sorted(m.content for m in store.scope("a").list()) == ["lint first", "over tcp"]


def test_serve_http_without_the_extra_says_how_to_install(db_path, monkeypatch):
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    monkeypatch.setitem(sys.modules, "uvicorn", None)
    result = CliRunner().invoke(main, ["--db", str(db_path), "serve-http"])
    assert result.exit_code == 5
    assert "pip install 'hivemem[http]'" in result.output and "Traceback" not in result.output
