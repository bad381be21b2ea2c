"""Property: every route of the web inspector (``/ui``), given hostile path parameters,
query strings, form bodies and credentials (a writer's bearer token, a signed-in cookie
session with its CSRF token or a forged one, nothing, a forged token), answers below 500:
a page, a redirect, or the inspector's error page with the status the JSON API would
give. The routes are read from the app itself, so a new page is fuzzed without a change
here. Found missing: the HTTP fuzz (test_fuzz_http.py) covered only the JSON API; then
(issue 25) the paging parameters (offset, prefix, cursor, newer) and numbers past 2**63."""

from __future__ import annotations

import asyncio
import re
from urllib.parse import quote, urlencode

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hivemem
from hivemem.frontends.http import create_app

from .hostile import FUZZ, hostile_text, tally

PLAUSIBLE = ["team-a", "swarm", "deploy-window", "Alice", "s1", "correct", "promote", "1"]
FIELDS = ["csrf", "content", "reason", "to", "name", "alias", "token", "next", "key"]
QUERY = ["q", "kind", "type", "tag", "status", "since", "until", "limit", "page", "next",
         "name", "done", "session", "category", "doctor", "key", "offset", "prefix",
         "cursor", "newer"]  # fmt: skip
# Numbers as a query string holds them: past SQLite's and PostgreSQL's 64-bit integers
# (issue 25: ``?offset=99999999999999999999`` was an HTTP 500), negative, not whole.
NUMBERS = [str(10**20), str(2**63), str(2**63 - 1), str(2**64), "-1", "1e3", "0x10", "9" * 5000]


def _ui_routes(app) -> list[tuple[str, str]]:
    out = []
    for route in app.routes:
        path = getattr(route, "path", "")
        if path.startswith("/ui") and not path.startswith("/ui/static"):
            out += [(m, path) for m in sorted(route.methods or ()) if m != "HEAD"]
    return out


def _client(app) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://fuzz")


async def _sign_in(app, token: str) -> tuple[str, str]:
    """A cookie session as a browser gets it: the sign-in form, then its CSRF token."""
    async with _client(app) as client:
        form = await client.get("/ui/login")
        nonce = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
        await client.post("/ui/login", data={"token": token, "csrf": nonce})
        cookie = client.cookies.get("hivemem_ui") or next(iter(client.cookies.values()))
        page = await client.get("/ui/scopes/team-a")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    return cookie, csrf


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    path = tmp_path_factory.mktemp("ui-fuzz") / "fuzz.db"
    store = hivemem.open(path, embedder="hash")
    mem = store.scope("team-a", shared=["swarm"])
    old = mem.save("the deploy window is Monday", key="deploy-window")
    mem.save("the deploy window is Tuesday", key="deploy-window", supersede_reason="moved")
    mem.add_episode("Alice said hello", "s1", "user")
    _, writer = store.tokens.create("fuzz", {"team-a": "write", "swarm": "write"}, store.clock())
    app = create_app(store)
    cookie, csrf = asyncio.run(_sign_in(app, writer))
    yield app, writer, cookie, csrf, [*PLAUSIBLE, old.id]
    app.state.api.close()
    store.close()


def _piece(text: str) -> str:
    return quote(text[:2000].encode("utf-8", "surrogatepass"), safe="")


def _routes() -> list[tuple[str, str]]:
    store = hivemem.open(":memory:", embedder="none")
    try:
        app = create_app(store)
        try:
            return _ui_routes(app)
        finally:
            app.state.api.close()
    finally:
        store.close()


ROUTES = _routes()


def test_the_inspector_has_routes_to_fuzz():
    assert len(ROUTES) >= 15 and ("POST", "/ui/scopes/{scope}/memories/{id}/{action}") in ROUTES


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
@FUZZ
@given(data=st.data())
def test_ui_route(ui, method, path, data):
    app, writer, cookie, csrf, plausible = ui
    texts = st.one_of(
        hostile_text(), st.sampled_from(plausible), st.sampled_from(plausible),
        st.sampled_from(NUMBERS),
    )  # fmt: skip
    url = re.sub(r"\{(\w+)\}", lambda m: _piece(data.draw(texts, m.group(1))), path)
    query = data.draw(
        st.lists(st.tuples(st.one_of(st.sampled_from(QUERY), hostile_text()), texts), max_size=3),
        "query",
    )
    if query:
        url += "?" + "&".join(f"{_piece(k)}={_piece(v)}" for k, v in query)
    auth = data.draw(st.sampled_from(["bearer", "cookie", "cookie", "none", "forged"]), "auth")
    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    if auth == "bearer":
        headers["Authorization"] = f"Bearer {writer}"
    elif auth == "cookie":
        cookies["hivemem_ui"] = cookie
    elif auth == "forged":
        headers["Authorization"] = data.draw(st.sampled_from(["Bearer hm_forged", "Basic x"]))
    body = None
    if method == "POST":
        fields = data.draw(
            st.dictionaries(st.one_of(st.sampled_from(FIELDS), hostile_text()), texts, max_size=4),
            "form",
        )
        if auth == "cookie" and data.draw(st.booleans(), "csrf ok"):
            fields["csrf"] = csrf
        raw = data.draw(st.sampled_from(["form", "form", "bytes"]), "body")
        body = (
            urlencode({k[:2000]: v[:20_000] for k, v in fields.items()}, encoding="utf-8",
                      errors="surrogatepass").encode()
            if raw == "form"
            else data.draw(st.sampled_from([b"\xff\xfe", b"%ff%fe=1", b"a=%ZZ", b"&&=&"]))
        )  # fmt: skip
        headers["Content-Type"] = "application/x-www-form-urlencoded"

    async def send() -> httpx.Response:
        async with _client(app) as client:
            for name, value in cookies.items():
                client.cookies.set(name, value)
            return await client.request(method, url, content=body, headers=headers)

    response = asyncio.run(send())
    tally("ui", str(response.status_code))
    assert response.status_code < 500, (method, url, body, response.text[:500])
    # the error page; the API's JSON where no page matched the path
    if response.status_code >= 400 and not response.headers["content-type"].startswith("text/html"):
        assert set(response.json()["error"]) >= {"code", "message"}, response.text[:300]
