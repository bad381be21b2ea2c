"""The web inspector in process (httpx.ASGITransport): every page with a bearer token,
scope isolation, read-only tokens, cookie sign-in with CSRF, the one-time start link,
escaping, the vault's secrets, keyset paging and the library reads behind the pages.
The same flows in a real browser are in test_ui_browser.py."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

import httpx
import pytest

import hivemem
from hivemem.evaluation.doctor import diagnose
from hivemem.frontends.http import create_app
from hivemem.frontends.http.ui.render import growth_chart
from hivemem.frontends.http.ui.routes import _safe_next
from hivemem.lifecycle import inspection
from hivemem.lifecycle.maintenance import run_job

HOSTILE = '<script>alert("x")</script> and "><img src=x onerror=alert(1)>'


class Browserless:
    """An in-process client that keeps cookies between requests, like a browser."""

    def __init__(self, app) -> None:
        self.app = app
        self.cookies = httpx.Cookies()

    async def _request(self, method, url, token=None, **kwargs):
        headers = dict(kwargs.pop("headers", {}) or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://hivemem.test", cookies=self.cookies
        ) as client:
            response = await client.request(method, url, headers=headers, **kwargs)
            self.cookies.update(client.cookies)
            return response

    def get(self, url, token=None, **kwargs):
        return asyncio.run(self._request("GET", url, token, **kwargs))

    def post(self, url, token=None, **kwargs):
        return asyncio.run(self._request("POST", url, token, **kwargs))


@pytest.fixture
def tokens(store):
    tokens = store.tokens
    made = {}
    for label, scopes in {
        "writer": {"team-a": "write", "swarm": "write"},
        "reader": {"team-a": "read"},
        "b_writer": {"team-b": "write"},
    }.items():
        made[label] = tokens.create(label, scopes, store.clock())[1]
    return made


@pytest.fixture
def app(store):
    application = create_app(store, ui_start_key="start-key-for-tests")
    yield application
    application.state.api.close()


@pytest.fixture
def client(app):
    return Browserless(app)


@pytest.fixture
def seeded(store, clock):
    """team-a: a lesson under a key, a session of episodes consolidated into facts,
    a hostile memory; team-b: one private memory."""
    a = store.scope("team-a")
    lesson = a.save("Never deploy on Fridays, Melanie says", key="deploy", type="lesson")
    for i, (role, text) in enumerate(
        [
            ("user", "Caroline moved to Berlin last spring and loves the city."),
            ("agent", "Noted: Caroline lives in Berlin now."),
            ("user", "She works at Acme Robotics as a lead engineer since March."),
        ]
    ):
        clock.advance(minutes=1)
        a.add_episode(text, session_id="s-1", role=role, event_time=f"2026-01-0{i + 1}T10:00:00")
    clock.advance(hours=2)
    run_job(store, "consolidate", "team-a", session_id="s-1")
    hostile = a.save(HOSTILE, type="context")
    b = store.scope("team-b").save("team-b's private plan for Zurich", key="plan")
    store.flush()
    return {"lesson": lesson, "hostile": hostile, "b": b}


def test_every_page_renders_for_a_bearer_token(client, tokens, seeded, store):
    token = tokens["writer"]
    lesson = seeded["lesson"]
    pages = {
        "/ui/": ["team-a", "swarm"],
        "/ui/scopes/team-a": ["Active by kind", "lesson", "Growth", "Doctor", "consolidate"],
        "/ui/scopes/team-a/memories": ["Never deploy on Fridays", "Older" if False else "Kind"],
        "/ui/scopes/team-a/search?q=deploy+friday": ["Never deploy on Fridays", "fused"],
        f"/ui/scopes/team-a/memories/{lesson.id}": ["deploy", "History", "Fix it", "Melanie"],
        "/ui/scopes/team-a/entities": ["Caroline", "Berlin"],
        "/ui/scopes/team-a/entity?name=caroline": ["Caroline", "Add an alias"],
        "/ui/scopes/team-a/sessions": ["s-1", "3"],
        "/ui/scopes/team-a/sessions/s-1": ["Berlin", "Facts consolidated from it"],
    }
    for url, wanted in pages.items():
        response = client.get(url, token)
        assert response.status_code == 200, (url, response.text[:500])
        assert response.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in response.headers["content-security-policy"]
        for text in wanted:
            assert text in response.text, (url, text)
        assert "team-b's private plan" not in response.text


def test_search_shows_each_factor_of_the_explanation(client, tokens, seeded, store):
    hits = store.scope("team-a").search("deploy friday", 5)
    page = client.get("/ui/scopes/team-a/search?q=deploy+friday", tokens["writer"]).text
    top = hits[0]
    assert f"{top.score:.4f}" in page and f"{top.explain.fused:.4f}" in page
    for lane in top.explain.lanes:
        assert f'<th scope="row">{lane}</th>' in page
    for factor, value in top.explain.factors.items():
        assert f"× {factor}" in page and f"{value:.4f}" in page


def test_a_token_for_scope_a_cannot_open_scope_b(client, tokens, seeded):
    token = tokens["writer"]
    b_id = seeded["b"].id
    for url in [
        "/ui/scopes/team-b",
        "/ui/scopes/team-b/memories",
        "/ui/scopes/team-b/search?q=plan",
        f"/ui/scopes/team-b/memories/{b_id}",
        "/ui/scopes/team-b/entities",
        "/ui/scopes/team-b/entity?name=zurich",
        "/ui/scopes/team-b/sessions",
        "/ui/scopes/team-b/sessions/s-1",
    ]:
        response = client.get(url, token)
        assert response.status_code == 403, url
        assert "private plan" not in response.text
    # B's id under A's scope: not visible, so not found
    response = client.get(f"/ui/scopes/team-a/memories/{b_id}", token)
    assert response.status_code == 404 and "private plan" not in response.text
    posted = client.post(f"/ui/scopes/team-b/memories/{b_id}/delete", token)
    assert posted.status_code == 403


def test_a_read_only_token_sees_no_write_actions_and_gets_403_on_a_post(
    client, tokens, seeded, store
):
    token = tokens["reader"]
    lesson = seeded["lesson"]
    page = client.get(f"/ui/scopes/team-a/memories/{lesson.id}", token)
    assert page.status_code == 200
    assert '<form method="post"' not in page.text and "Fix it" not in page.text
    entity = client.get("/ui/scopes/team-a/entity?name=caroline", token).text
    assert "alias-form" not in entity
    for action, data in [
        ("correct", {"content": "Deploy whenever"}),
        ("supersede", {"content": "Deploy whenever", "reason": "new policy"}),
        ("confirm", {}),
        ("delete", {}),
        ("promote", {"to": "swarm"}),
    ]:
        response = client.post(f"/ui/scopes/team-a/memories/{lesson.id}/{action}", token, data=data)
        assert response.status_code == 403, action
    alias = client.post(
        "/ui/scopes/team-a/entity/alias", token, data={"name": "caroline", "alias": "caro"}
    )
    assert alias.status_code == 403
    assert store.scope("team-a").get(lesson.id).content == lesson.content
    assert store.scope("team-a").history(lesson.id) == [store.scope("team-a").get(lesson.id)]


def test_actions_go_through_the_facade_and_redirect_to_the_result(client, tokens, seeded, store):
    token = tokens["writer"]
    a = store.scope("team-a")
    lesson = seeded["lesson"]
    corrected = client.post(
        f"/ui/scopes/team-a/memories/{lesson.id}/correct",
        token,
        data={"content": "Never deploy on Fridays or weekends, Melanie says"},
    )
    assert corrected.status_code == 303
    new_id = corrected.headers["location"].split("/memories/")[1].split("?")[0]
    current = a.get("deploy")
    assert current.id == new_id and current.supersedes_id == lesson.id
    assert current.supersede_kind == "soft" and current.updated_by == "ui:writer"
    page = client.get(corrected.headers["location"], token).text
    assert "Corrected: this is the new version" in page
    assert page.count('class="when"') == 2  # the chain grew to two versions

    superseded = client.post(
        f"/ui/scopes/team-a/memories/{new_id}/supersede",
        token,
        data={"content": "Deploy any day with a canary", "reason": "canaries since v2"},
    )
    assert superseded.status_code == 303
    newest = a.get("deploy")
    assert newest.supersede_reason == "canaries since v2" and newest.supersede_kind == "hard"
    assert len(a.history("deploy")) == 3
    no_reason = client.post(
        f"/ui/scopes/team-a/memories/{newest.id}/supersede", token, data={"content": "x y z"}
    )
    assert no_reason.status_code == 422 and "reason" in no_reason.text

    assert client.post(f"/ui/scopes/team-a/memories/{newest.id}/confirm", token).status_code == 303
    assert a.get(newest.id).decay_rate == 0.0 and a.get(newest.id).confidence == 1.0

    promoted = client.post(
        f"/ui/scopes/team-a/memories/{newest.id}/promote", token, data={"to": "swarm"}
    )
    assert (
        promoted.status_code == 303 and "/ui/scopes/swarm/memories/" in promoted.headers["location"]
    )
    copy = store.scope("swarm").get("deploy")
    assert copy.source_ids == (newest.id,) and copy.content == newest.content
    refused = client.post(
        f"/ui/scopes/team-a/memories/{newest.id}/promote", token, data={"to": "team-b"}
    )
    assert refused.status_code == 403  # no write on team-b

    alias = client.post(
        "/ui/scopes/team-a/entity/alias", token, data={"name": "caroline", "alias": "Caro"}
    )
    assert alias.status_code == 303
    assert "caro" in a.entity("Caroline")[0].aliases
    assert "caro" in client.get(alias.headers["location"], token).text

    stale = client.post(
        f"/ui/scopes/team-a/memories/{lesson.id}/correct", token, data={"content": "old"}
    )
    assert stale.status_code == 409  # only the current version can change

    deleted = client.post(f"/ui/scopes/team-a/memories/{newest.id}/delete", token)
    assert deleted.status_code == 303
    assert a.get(newest.id).status.value == "deleted"
    found = client.get("/ui/scopes/team-a/search?q=deploy+canary", token).text
    assert newest.id not in found and "Deploy any day" not in found
    assert lesson.id in found  # superseded versions stay searchable, flagged
    assert "status-superseded" in found
    unknown = client.post(f"/ui/scopes/team-a/memories/{newest.id}/explode", token)
    assert unknown.status_code == 404


def test_content_is_escaped_everywhere(client, tokens, seeded):
    token = tokens["writer"]
    hostile = seeded["hostile"]
    for url in [
        "/ui/scopes/team-a/memories",
        "/ui/scopes/team-a/search?q=script+alert",
        f"/ui/scopes/team-a/memories/{hostile.id}",
        '/ui/scopes/team-a/search?q="><img src=x onerror=alert(1)>',
    ]:
        page = client.get(url, token).text
        assert "<script>alert" not in page and "<img src=x" not in page, url
        assert "&lt;script&gt;" in page or "&lt;img" in page, url


def test_the_vaults_secret_values_are_never_shown(client, tokens, store):
    a = store.scope("team-a")
    secret = "hunter2-very-secret-value"
    early = a.save(f"the staging password is {secret}", key="staging")
    store.vault("team-a").set("staging_password", secret, secret=True)
    a.add_episode(f"login with {secret} please", session_id=secret[:12], role="user")
    token = tokens["writer"]
    for url in [
        "/ui/scopes/team-a/memories",
        f"/ui/scopes/team-a/memories/{early.id}",
        "/ui/scopes/team-a/search?q=staging+password",
        f"/ui/scopes/team-a/search?q={secret}",
        f"/ui/scopes/team-a/sessions/{secret[:12]}",
    ]:
        page = client.get(url, token)
        assert page.status_code == 200, url
        assert secret not in page.text, url
    assert "[REDACTED]" in client.get(f"/ui/scopes/team-a/memories/{early.id}", token).text


# Markup the templates make, which a page must hold as elements, never as text.
_TAGS = ("label", "select", "span", "section", "table", "tr", "td", "a", "ul", "li")


def test_pages_keep_their_markup_when_the_vault_holds_a_secret(client, tokens, seeded, store):
    """Issue 25: one secret in any scope's vault turned every macro's markup into text
    (the filters, the memory table, the badges and the overview counts showed as
    literal ``<label>…`` / ``&lt;span…``). The secret is still redacted everywhere."""
    secret = "team-b-vault-secret-4711"
    store.scope("team-a").save(f"the old relay password was {secret}", key="relay")
    store.vault("team-b").set("relay_password", secret, secret=True)
    token = tokens["writer"]
    lesson = seeded["lesson"]
    pages = {
        "/ui/scopes/team-a": ['<table class="counts">', '<section class="card">'],
        "/ui/scopes/team-a/memories": ['<select name="type">', '<span class="badge kind">'],
        "/ui/scopes/team-a/search?q=deploy+friday": ['<select name="kind">', '<span class="badge'],
        f"/ui/scopes/team-a/memories/{lesson.id}": ['<span class="badge type">'],
        "/ui/scopes/team-a/entities": ["<table"],
        "/ui/scopes/team-a/entity?name=caroline": ['<table class="list">'],
        "/ui/scopes/team-a/sessions": ["<table"],
        "/ui/scopes/team-a/sessions/s-1": ['<ul class="items">', '<span class="badge'],
        "/ui/scopes/team-a/search?q=relay+password": ["[REDACTED]"],
    }
    for url, wanted in pages.items():
        page = client.get(url, token)
        assert page.status_code == 200, (url, page.text[:300])
        for markup in wanted:
            assert markup in page.text, (url, markup)
        for tag in _TAGS:
            assert f"&lt;{tag} " not in page.text and f"&lt;{tag}&gt;" not in page.text, (url, tag)
            assert f"&amp;lt;{tag}" not in page.text, (url, tag)
        assert secret not in page.text, url


@pytest.mark.parametrize(
    "query",
    [
        "offset=99999999999999999999",
        f"offset={2**63}",
        f"offset={2**63 - 1}",
        "offset=-1",
        "offset=1e3",
        "limit=99999999999999999999",
        f"limit={2**63}",
        "limit=-5",
        f"cursor=2026-01-01T00:00:00%7E{'9' * 30}",
    ],
)
def test_huge_or_bad_numbers_in_the_query_are_a_422_or_an_empty_page(client, tokens, seeded, query):
    """Issue 25: ``?offset=`` past 2**63 was an HTTP 500 (OverflowError on SQLite,
    NumericValueOutOfRange on PostgreSQL). Every number of a page goes through the
    bounds the API uses (``hivemem.arguments``): a clear 422, or a page past the end."""
    token = tokens["writer"]
    for page in ("entities", "sessions", "memories", "search?q=deploy"):
        url = f"/ui/scopes/team-a/{page}{'&' if '?' in page else '?'}{query}"
        response = client.get(url, token)
        assert response.status_code in (200, 422), (url, response.status_code, response.text[:300])
        if response.status_code == 422:
            assert "offset" in response.text or "limit" in response.text, url


def test_a_nul_in_a_name_or_id_is_a_422_naming_the_field(client, tokens, seeded):
    """Issue 25: ``?name=%00`` was an HTTP 500 on PostgreSQL (a raw psycopg.DataError)."""
    token = tokens["writer"]
    for url, field in [
        ("/ui/scopes/team-a/entity?name=%00", "name"),
        ("/ui/scopes/team-a/entity?name=Caro%00line", "name"),
        ("/ui/scopes/team-a/entities?prefix=ca%00", "prefix"),
        ("/ui/scopes/team-a/memories/a%00b", "id"),
        ("/ui/scopes/team-a/sessions/s%00", "session_id"),
        ("/ui/scopes/team-a/memories?session=s%00", "session_id"),
        ("/ui/scopes/team-a/memories?tag=t%00", "tags"),
        ("/ui/scopes/team-a/memories?cursor=2026-01-01T00:00:00%7Ea%00", "cursor"),
    ]:
        response = client.get(url, token)
        assert response.status_code == 422, (url, response.status_code, response.text[:300])
        assert f"field: {field}" in response.text, (url, response.text[-600:])


def test_sign_in_with_a_token_sets_a_strict_httponly_cookie_and_csrf_guards_posts(
    client, tokens, seeded, store
):
    assert client.get("/ui/scopes/team-a").status_code == 303  # to the sign-in form
    form = client.get("/ui/login?next=/ui/scopes/team-a")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    no_nonce = client.post("/ui/login", data={"token": tokens["writer"]})
    assert no_nonce.status_code == 403
    wrong = client.post("/ui/login", data={"token": "hm_nope", "csrf": csrf})
    assert wrong.status_code == 401 and "unknown or revoked token" in wrong.text
    signed = client.post(
        "/ui/login",
        data={"token": tokens["writer"], "csrf": csrf, "next": "/ui/scopes/team-a"},
    )
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/scopes/team-a"
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
    page = client.get(f"/ui/scopes/team-a/memories/{seeded['lesson'].id}")
    assert page.status_code == 200
    session_csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    url = f"/ui/scopes/team-a/memories/{seeded['lesson'].id}/confirm"
    assert client.post(url).status_code == 403  # CSRF missing
    assert client.post(url, data={"csrf": "forged"}).status_code == 403
    assert store.scope("team-a").get(seeded["lesson"].id).decay_rate != 0.0
    assert client.post(url, data={"csrf": session_csrf}).status_code == 303
    # revoking the token ends the session at once
    store.tokens.revoke("writer", store.clock())
    assert client.get("/ui/scopes/team-a").status_code == 303
    # sign out
    client.cookies.clear()


def test_sign_out_ends_the_session(client, tokens):
    form = client.get("/ui/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
    client.post("/ui/login", data={"token": tokens["reader"], "csrf": csrf})
    home = client.get("/ui/")
    assert home.status_code == 200
    session_csrf = re.search(r'name="csrf" value="([^"]+)"', home.text).group(1)
    assert client.post("/ui/logout").status_code == 403
    assert client.post("/ui/logout", data={"csrf": session_csrf}).status_code == 303
    assert client.get("/ui/").status_code == 303


def test_the_one_time_start_link_signs_in_once(app, store, seeded):
    first = Browserless(app)
    assert first.get("/ui/start?key=wrong").status_code == 403
    signed = first.get("/ui/start?key=start-key-for-tests")
    assert signed.status_code == 303
    home = first.get("/ui/")
    assert "team-a" in home.text and "team-b" in home.text  # the local user: every scope
    assert first.get(f"/ui/scopes/team-b/memories/{seeded['b'].id}").status_code == 200
    again = Browserless(app).get("/ui/start?key=start-key-for-tests")
    assert again.status_code == 403


def test_bad_bearer_tokens_are_refused(client, seeded, tokens):
    assert client.get("/ui/", "hm_nope").status_code == 401
    missing = client.get("/ui/no/such/page", tokens["writer"])
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert client.get("/ui/static/ui.js").status_code == 200
    assert client.get("/ui/", headers={"Authorization": "Basic abc"}).status_code == 401


def test_the_list_pages_by_keyset_and_filters(client, tokens, store, clock):
    a = store.scope("team-a")
    made = []
    for i in range(120):
        clock.advance(minutes=1)
        made.append(
            a.save(
                f"note number {i} about the roadmap",
                tags=["odd" if i % 2 else "even"],
                type="decision" if i % 3 == 0 else "context",
            )
        )
    token = tokens["writer"]
    seen, url = [], "/ui/scopes/team-a/memories?tag=odd"
    while url:
        page = client.get(url, token)
        assert page.status_code == 200
        seen += re.findall(r"note number (\d+) about", page.text)
        found = re.search(r'href="(\?[^"]+)" rel="next"', page.text)
        url = "/ui/scopes/team-a/memories" + found.group(1).replace("&amp;", "&") if found else None
    assert [int(n) for n in seen] == [i for i in reversed(range(120)) if i % 2]
    # and back, newer page by newer page, from the last page
    back = []
    while url_back := (re.search(r'href="(\?[^"]+)" rel="prev"', page.text)):
        back = re.findall(r"note number (\d+) about", page.text) + back
        page = client.get(
            "/ui/scopes/team-a/memories" + url_back.group(1).replace("&amp;", "&"), token
        )
    back = re.findall(r"note number (\d+) about", page.text) + back
    assert back == seen and 'rel="prev"' not in page.text and "« Newest" not in page.text
    decisions = client.get("/ui/scopes/team-a/memories?type=decision", token).text
    assert "note number 3 about" in decisions and "note number 1 about" not in decisions
    since = (made[100].created_at - timedelta(seconds=1)).isoformat()
    recent = client.get("/ui/scopes/team-a/memories", token, params={"since": since}).text
    assert "note number 119 about" in recent and "note number 99 about" not in recent
    bad = client.get("/ui/scopes/team-a/memories?kind=nonsense", token)
    assert bad.status_code == 422 and "kind" in bad.text
    bad_cursor = client.get("/ui/scopes/team-a/memories?cursor=garbage", token)
    assert bad_cursor.status_code == 422 and "cursor" in bad_cursor.text


def test_inspection_reads(store, seeded, clock):
    a = store.scope("team-a")
    view = inspection.overview(a, doctor=diagnose)
    assert view.total == sum(view.by_status.values()) and view.by_kind["episode"] == 3
    assert view.by_type["lesson"] == 1 and sum(view.by_category.values()) == sum(
        view.by_kind.values()
    )
    assert view.doctor is not None and view.doctor.ok
    assert [r.job for r in view.runs] == ["consolidate"]
    session = inspection.session(a, "s-1")
    assert len(session.turns) == 3 and session.facts
    fact = session.facts[0]
    detail = inspection.detail(a, fact.id)
    assert [s.id for s in detail.sources] == list(fact.source_ids)
    episode_detail = inspection.detail(a, fact.source_ids[0])
    assert fact.id in [m.id for m in episode_detail.drawn]
    assert {e.canonical for e in inspection.entities(a, prefix="car")} == {"caroline"}
    with pytest.raises(hivemem.InvalidInput, match="category"):
        inspection.page(a, category="nonsense")
    with pytest.raises(hivemem.NotFound):
        inspection.detail(a, seeded["b"].id)
    with pytest.raises(hivemem.NotFound):
        inspection.session(a, "no-such-session")
    assert inspection.page(a, category=fact.category).memories


def test_growth_chart_numbers():
    chart = growth_chart([("2026-01-01", 2), ("2026-01-03", 6)])
    assert [b["n"] for b in chart["bars"]] == [2, 0, 6]
    assert chart["grand"] == 8 and chart["top"] == 6
    assert chart["line"].split()[-1].endswith(",0.0")  # the running total reaches the top
    assert growth_chart([])["empty"]


def test_sign_in_redirects_only_inside_the_inspector():
    assert _safe_next("/ui/scopes/a") == "/ui/scopes/a"
    for bad in ["https://evil.test/", "//evil.test/ui/", "/ui\\..", None, "/v1/x"]:
        assert _safe_next(bad) == "/ui/"


def test_hivemem_ui_serves_on_localhost_with_a_one_time_link(db_path, tmp_path):
    """With the http_port taken (by serve-http, say), ``hivemem ui`` picks a free port."""
    import os
    import socket
    import subprocess
    import sys
    import time

    with hivemem.open(db_path, embedder="hash") as store:
        store.scope("team-a").save("seen through hivemem ui")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    opened = tmp_path / "opened.txt"  # the "browser": $BROWSER, as webbrowser reads it
    browser = (
        f"{sys.executable} -c \"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])\" %s"
    )
    command = ["-c", "from hivemem.frontends.cli import main; main()", "--db", str(db_path)]
    server = subprocess.Popen(
        [sys.executable, *command, "ui"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HIVEMEM_HTTP_PORT": str(busy), "BROWSER": browser},
    )
    try:
        link = None
        deadline = time.monotonic() + 30
        while link is None:
            assert time.monotonic() < deadline and server.poll() is None, "no link printed"
            line = server.stderr.readline()
            found = re.search(r"(http://127\.0\.0\.1:\d+/ui/start\?key=\S+)", line)
            link = found.group(1) if found else None
        port = int(re.search(r":(\d+)/", link).group(1))
        assert port != busy
        while not opened.exists() or not opened.read_text():
            assert time.monotonic() < deadline, "the browser was not opened"
            time.sleep(0.05)
        assert opened.read_text() == link
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", follow_redirects=True) as browser:
            signed = browser.get(link)  # follows the redirect with the cookie
            assert signed.status_code == 200 and "team-a" in signed.text
            page = browser.get("/ui/scopes/team-a/memories")
            assert "seen through hivemem ui" in page.text
        assert httpx.get(link).status_code == 403  # the link works once
    finally:
        server.terminate()
        server.wait(timeout=30)
        taken.close()


def test_the_ui_bench_times_every_page(tmp_path):
    from hivemem.evaluation.bench_ui import format_ui_table, run_ui_bench

    [result] = run_ui_bench(create_app, [300], requests=2, path=tmp_path)
    names = [p.page for p in result.pages]
    assert "memories: first page" in names and "search (hybrid)" in names
    assert "memories: 20 pages deep" in names and "one memory" in names
    assert all(p.latency.count >= 1 and p.latency.max_ms > 0 for p in result.pages)
    assert result.memories >= 300
    assert "memories: first page" in format_ui_table([result])
    again = run_ui_bench(create_app, [300], requests=1, path=tmp_path)[
        0
    ]  # the kept store is reused
    assert again.load_seconds == 0.0 and again.memories == result.memories


def test_successors_are_found_by_the_supersedes_index_not_a_walk_of_the_scope(store):
    """The memory page's chain: ``history`` asks for the successors of each version; at
    100k memories a walk of the scope cost 70 ms a call (the planner preferred the
    scope index)."""
    a = store.scope("team-a")
    first = a.save("v1", key="k")
    statements = []
    store._backend._conn.set_trace_callback(statements.append)
    try:
        with store._backend.on_writer():  # through the traced connection, not the pool
            store.memories.successors(["team-a"], first.id)
    finally:
        store._backend._conn.set_trace_callback(None)
    [sql] = [s for s in statements if "supersedes_id" in s]
    plan = " ".join(str(row) for row in store._backend._read(f"EXPLAIN QUERY PLAN {sql}"))
    assert "memories_supersedes" in plan, plan


def test_sessions_page_and_the_doctor_on_demand(client, tokens, store, seeded):
    token = tokens["writer"]
    a = store.scope("team-a")
    for n in range(55):
        a.add_episode(f"turn of session {n}", session_id=f"extra-{n:02d}", role="user")
    first = client.get("/ui/scopes/team-a/sessions", token).text
    assert 'rel="next"' in first
    second = client.get("/ui/scopes/team-a/sessions?offset=50", token).text
    assert 'rel="next"' not in second
    pattern = r"/sessions/([\w-]+)\""
    one, two = set(re.findall(pattern, first)), set(re.findall(pattern, second))
    assert len(one) == 50 and len(two) == 6 and not one & two
    overview = client.get("/ui/scopes/team-a", token).text
    assert "All checks pass" in overview  # a small store: the doctor ran by itself
    assert "Check again" in client.get("/ui/scopes/team-a?doctor=run", token).text


def test_a_deep_page_streams_from_the_index(store, clock):
    """Keyset pages: the cursor's condition must be an index range, or every older row
    is read and sorted (at 100k, 20 pages deep cost ~900 ms instead of ~3 ms)."""
    a = store.scope("team-a")
    for i in range(5):
        clock.advance(minutes=1)
        a.save(f"row {i}")
    statements = []
    store._backend._conn.set_trace_callback(statements.append)
    try:
        with store._backend.on_writer():  # through the traced connection, not the pool
            page = inspection.page(a, limit=2)
            inspection.page(a, limit=2, cursor=page.next_cursor)
    finally:
        store._backend._conn.set_trace_callback(None)
    [sql] = [s for s in statements if "m.created_at <=" in s]
    plan = " ".join(str(r) for r in store._backend._read(f"EXPLAIN QUERY PLAN {sql}"))
    assert "memories_scope_created" in plan and "MULTI-INDEX OR" not in plan, plan
    assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan


def test_pages_record_the_tokens_use_like_the_api(app, client, tokens, store):
    listed = {t.name: t for t in store.tokens.list()}
    assert listed["reader"].last_used_at is None
    assert client.get("/ui/scopes/team-a", tokens["reader"]).status_code == 200
    app.state.api.writer.submit(lambda: None).result()  # the touch is queued on the writer
    listed = {t.name: t for t in store.tokens.list()}
    assert listed["reader"].last_used_at is not None


def test_the_search_pages_category_filter_is_applied_by_the_search(client, tokens, store):
    """A full page of hits of the category, not the top hits filtered afterwards; when
    none is of it, the library's rule (unfiltered hits) is shown and said."""
    a = store.scope("team-a")
    for n in range(30):
        a.save(f"harbour lighthouse keeper note {n}: harbour lighthouse", category="general")
    tasks = {a.save(f"task {n}: paint the lighthouse", category="task").id for n in range(12)}
    store.flush()
    page = client.get(
        "/ui/scopes/team-a/search?q=harbour+lighthouse&category=task", tokens["writer"]
    )
    assert page.status_code == 200
    shown = set(
        re.findall(r'class="hit-link" href="/ui/scopes/team-a/memories/([^"]+)"', page.text)
    )
    assert len(shown) == 10 and shown <= tasks
    assert "No hit of category" not in page.text
    none = client.get(
        "/ui/scopes/team-a/search?q=harbour+lighthouse&category=credential", tokens["writer"]
    )
    assert "No hit of category “credential”" in none.text
    assert len(re.findall(r'class="hit-link"', none.text)) == 10
