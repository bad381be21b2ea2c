"""A NUL character in any text argument, on SQLite and on PostgreSQL alike (issue 25).

PostgreSQL's text cannot hold NUL: ``entity("\\x00")`` and ``get_entity_info`` raised a raw
``psycopg.DataError``, and ``/v1/scopes/A/entities/%00`` and ``/ui/scopes/A/entity?name=%00``
answered HTTP 500. Every name, id, key, tag, session id, scope, vault key and FTS5 query is
validated at the facade: ``InvalidInput`` naming the field, the same on both backends. Free
text searched in natural language may hold one (it separates words, as any other symbol).
The HTTP API and the inspector, given ``%00`` in every path and query parameter, answer
below 500 on both backends."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from hivemem import InvalidInput, tools
from hivemem.frontends.http import create_app
from hivemem.frontends.http.routes import operations

NUL = "\x00"


@pytest.fixture
def seeded(any_store):
    mem = any_store.scope("team-a")
    fact = mem.save("Alice deploys the billing service on Mondays", key="deploy", tags=["ops"])
    mem.add_episode("Alice said hello", session_id="s1", role="user")
    any_store.vault("team-a").set("relay", "plain value")
    return mem, fact


CALLS = [
    ("name", lambda m, s: m.entity(NUL)),
    ("name", lambda m, s: m.entity(f"Ali{NUL}ce")),
    ("name", lambda m, s: m.alias(f"Ali{NUL}ce", "Al")),
    ("alias", lambda m, s: m.alias("Alice", f"A{NUL}l")),
    ("name", lambda m, s: m.describe_entity(f"Ali{NUL}ce", summary="x")),
    ("id", lambda m, s: m.get(f"deploy{NUL}")),
    ("id", lambda m, s: m.history(f"deploy{NUL}")),
    ("id", lambda m, s: m.related(f"a{NUL}b")),
    ("id", lambda m, s: m.delete(f"deploy{NUL}")),
    ("id", lambda m, s: m.confirm(f"a{NUL}b")),
    ("id", lambda m, s: m.correct(f"a{NUL}b", "new text")),
    ("id", lambda m, s: m.purge(f"deploy{NUL}")),
    ("key", lambda m, s: m.save("some text here", key=f"k{NUL}")),
    ("tags", lambda m, s: m.save("some text here", tags=[f"t{NUL}"])),
    ("session_id", lambda m, s: m.add_episode("hi there", session_id=f"s{NUL}", role="user")),
    ("role", lambda m, s: m.add_episode("hi there", session_id="s1", role=f"u{NUL}")),
    ("tags", lambda m, s: m.search("deploy", tags=[f"ops{NUL}"])),
    ("session_id", lambda m, s: m.search("deploy", session_id=f"s{NUL}")),
    ("query", lambda m, s: m.search(f"deploy{NUL}", fts_syntax=True)),
    ("tags", lambda m, s: m.list(tags=[f"ops{NUL}"])),
    ("session_id", lambda m, s: m.list(session_id=f"s{NUL}")),
    ("session_id", lambda m, s: m.consolidate(f"s{NUL}")),
    ("session_id", lambda m, s: m.end_session(f"s{NUL}")),
    ("scope", lambda m, s: s.scope(f"team{NUL}").list()),
    ("scope", lambda m, s: s.vault(f"team{NUL}")),
    ("key", lambda m, s: s.vault("team-a").set(f"k{NUL}", "v")),
    ("key", lambda m, s: s.vault("team-a").get(f"relay{NUL}")),
    ("key", lambda m, s: s.vault("team-a").delete(f"relay{NUL}")),
    ("prefix", lambda m, s: s.vault("team-a").list(f"re{NUL}")),
    ("name", lambda m, s: s.tokens.create(f"n{NUL}", {"team-a": "read"}, s.clock())),
]


@pytest.mark.parametrize(
    ("field", "call"), CALLS, ids=[f"{i}-{f}" for i, (f, _) in enumerate(CALLS)]
)
def test_a_nul_in_a_text_argument_is_invalid_input_naming_it(any_store, seeded, field, call):
    mem, _ = seeded
    with pytest.raises(InvalidInput) as info:
        call(mem, any_store)
    assert info.value.field == field, info.value
    assert "NUL" in str(info.value) or "control character" in str(info.value)


def test_free_text_with_a_nul_still_searches_and_nothing_was_written(any_store, seeded):
    mem, fact = seeded
    for query in (f"billing{NUL}", f"billing {NUL} Mondays", f"{NUL}billing"):
        assert fact.id in [h.memory.id for h in mem.search(query, 5)], query
    assert "billing" in mem.context(f"billing{NUL}service")
    assert "relay" in any_store.vault("team-a")
    assert f"relay{NUL}" not in any_store.vault("team-a")
    assert [m.id for m in mem.list()] == [m.id for m in mem.list()]  # the store still reads
    assert mem.get("deploy").id == fact.id


def _client(app) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://nul")


def _ui_gets(app) -> list[str]:
    return [
        route.path
        for route in app.routes
        if getattr(route, "path", "").startswith("/ui/")
        and "GET" in (getattr(route, "methods", None) or ())
    ]


UI_QUERY = ["name", "prefix", "q", "tag", "session", "kind", "type", "status", "category",
            "since", "until", "cursor", "newer", "offset", "limit", "next", "key"]  # fmt: skip


def test_every_route_given_a_nul_answers_below_500(any_store, seeded):
    mem, fact = seeded
    _, token = any_store.tokens.create("nul", {"team-a": "write"}, any_store.clock())
    app = create_app(any_store)
    auth = {"Authorization": f"Bearer {token}"}
    urls: list[tuple[str, str, bytes | None]] = []
    for route in operations(tools.TOOLS):
        names = re.findall(r"\{(\w+)\}", route.path)
        for nul_in in names:
            url = route.path
            for name in names:
                value = "%00" if name == nul_in else ("team-a" if name == "scope" else fact.id)
                url = url.replace(f"{{{name}}}", value)
            urls.append((route.method, url, b"{}" if route.method == "POST" else None))
        if route.method == "POST":
            properties = tools.TOOLS[route.tool].parameters.get("properties", {})
            body = {k: f"a{NUL}b" for k, v in properties.items() if v.get("type") == "string"}
            url = re.sub(
                r"\{(\w+)\}", lambda m: "team-a" if m[1] == "scope" else fact.id, route.path
            )
            urls.append(("POST", url, httpx.Request("POST", "/", json=body).content))
    for path in _ui_gets(app):
        urls.append(("GET", re.sub(r"\{(\w+)\}", "%00", path), None))
        filled = re.sub(r"\{(\w+)\}", lambda m: "team-a" if m[1] == "scope" else "s1", path)
        urls += [("GET", f"{filled}?{name}=a%00b", None) for name in UI_QUERY]

    async def run() -> list[tuple[str, str, int, str]]:
        out = []
        async with _client(app) as client:
            for method, url, body in urls:
                headers = {**auth, "Content-Type": "application/json"} if body else auth
                response = await client.request(method, url, content=body, headers=headers)
                out.append((method, url, response.status_code, response.text))
        return out

    try:
        answers = asyncio.run(run())
    finally:
        app.state.api.close()
    assert len(answers) > 100
    failed = [a for a in answers if a[2] >= 500]
    assert not failed, [(m, u, s, t[:300]) for m, u, s, t in failed[:5]]
    by_url = {url: (status, text) for _, url, status, text in answers}
    status, text = by_url["/v1/scopes/team-a/entities/%00"]
    assert status == 422 and '"field":"name"' in text.replace(" ", ""), text
    status, text = by_url["/ui/scopes/team-a/entity?name=a%00b"]
    assert status == 422 and "field: name" in text, text
