"""Property: every HTTP route, given hostile path parameters, query strings, bodies and
tokens, answers below 500, and every error is the one shape
``{"error": {"code", "message", "field"?}}`` with the code of its status.

The routes are the API's own list (``hivemem.frontends.http.routes.operations`` over the tool
registry, plus the meta routes), so a new tool's routes are fuzzed without a change here.
Requests go through the real app in process (httpx's ASGI transport). This complements
the schemathesis run in tests/test_http.py, which only sends what the OpenAPI schema
allows: here values break the schema on purpose (wrong types, huge numbers, surrogates
escaped in JSON, bytes that are not UTF-8 in the URL, bodies that are not JSON).
"""

from __future__ import annotations

import asyncio
import json
import re
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hivemem
from hivemem import tools
from hivemem.frontends.http import create_app
from hivemem.frontends.http.errors import STATUSES
from hivemem.frontends.http.routes import operations

from .hostile import FUZZ, hostile_text, hostile_value, tally

ROUTES = [(r.method, r.path, r.tool) for r in operations(tools.TOOLS)]
ROUTES += [("GET", "/v1/health", None), ("GET", "/v1/token", None), ("GET", "/v1/tools", None)]
PLAUSIBLE = ["team-a", "swarm", "deploy-window", "deploy", "Alice", "s1", "mistake-pattern"]


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    path = tmp_path_factory.mktemp("http-fuzz") / "fuzz.db"
    store = hivemem.open(path, embedder="hash", settings=hivemem.Settings(learning_scope="swarm"))
    mem = store.scope("team-a", shared=["swarm"])
    old = mem.save("the deploy window is Monday", key="deploy-window")
    mem.save("the deploy window is Tuesday", key="deploy-window", supersede_reason="moved")
    mem.add_episode("Alice said hello", "s1", "user")
    tokens = store.tokens
    _, writer = tokens.create("fuzz", {"team-a": "write", "swarm": "write"}, store.clock())
    app = create_app(store)
    yield app, writer, [*PLAUSIBLE, old.id]
    app.state.api.close()
    store.close()


def _url_piece(text: str) -> str:
    """A path or query piece as a client would send it: UTF-8 percent-encoded, lone
    surrogates as the bytes they stand for (invalid UTF-8), cut to 600 characters: a
    URL holds at most eight pieces, each at most 12 characters a character encoded, so
    it stays under the 64 kB clients accept (servers' request lines stop far earlier)."""
    return quote(text[:600].encode("utf-8", "surrogatepass"), safe="")


def _body(data: st.DataObject, properties: list[str], plausible: list) -> bytes:
    kind = data.draw(st.sampled_from(["object", "object", "object", "other", "raw"]), "body")
    if kind == "raw":
        return data.draw(st.sampled_from([b"", b"{", b"\xff\xfe", b"[1, 2]", b"null", b"{}" * 3]))
    names = st.one_of(st.sampled_from(properties or ["x"]), hostile_text())
    value = data.draw(
        st.dictionaries(names, hostile_value(plausible), max_size=5)
        if kind == "object"
        else hostile_value(plausible)
    )
    return json.dumps(value, default=repr).encode("utf-8", "surrogatepass")


async def _send(app, method: str, url: str, body: bytes | None, token: str | None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://fuzz") as client:
        return await client.request(method, url, content=body, headers=headers)


@pytest.mark.parametrize(("method", "path", "tool"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
@FUZZ
@given(data=st.data())
def test_http_route(api, method, path, tool, data):
    app, writer, plausible = api
    texts = st.one_of(hostile_text(), st.sampled_from(plausible), st.sampled_from(plausible))
    properties = list(tools.TOOLS[tool].parameters.get("properties", {})) if tool else []

    def fill(match: re.Match) -> str:
        return _url_piece(data.draw(texts, match.group(1)))

    url = re.sub(r"\{(\w+)\}", fill, path)
    query = data.draw(
        st.lists(
            st.tuples(st.one_of(st.sampled_from([*properties, "shared"]), hostile_text()), texts),
            max_size=3,
        ),
        "query",
    )
    if query:
        url += "?" + "&".join(f"{_url_piece(k)}={_url_piece(v)}" for k, v in query)
    body = _body(data, properties, plausible) if method == "POST" else None
    token = data.draw(st.sampled_from([writer, writer, writer, None, "hm_forged", "x" * 5000]))

    response = asyncio.run(_send(app, method, url, body, token))
    tally("http", str(response.status_code))
    assert response.status_code < 500, (method, url, body, response.text[:500])
    if response.status_code >= 400:
        error = response.json()["error"]
        assert set(error) >= {"code", "message"}, response.text
        assert error["code"] == STATUSES[response.status_code][0], response.text
        assert isinstance(error["message"], str) and error["message"]
