"""The inspector's sign-in sessions live in the store (``hivemem.store.ui_sessions``):
a browser signed in through one app is signed in on every other app over the same
database (another worker, another node), a restart keeps it, expiry and revocation
refuse it at once, sign-out deletes it, and the session id is never stored in clear.

Two apps here are two ``Store`` handles over one file (or one PostgreSQL database,
``test_backends_ui_sessions.py``), each with its own ``create_app``: what two workers
or two nodes are. The real ``serve-http --workers 2`` is in ``test_ui_workers.py``."""

from __future__ import annotations

import re

import pytest

import hivemem
from hivemem.frontends.http import create_app
from hivemem.store import ui_sessions
from test_purge import file_bytes
from test_ui import Browserless

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture
def stores(db_path, clock):
    """Two handles on one database: what two workers or two nodes hold."""
    opened = [hivemem.open(db_path, clock=clock, embedder="hash") for _ in range(2)]
    yield opened
    for s in opened:
        s.close()


@pytest.fixture
def apps(stores):
    made = [create_app(s) for s in stores]
    yield made
    for app in made:
        app.state.api.close()


@pytest.fixture
def writer(stores):
    """A write token for team-a, made through the first handle."""
    return stores[0].tokens.create("writer", {"team-a": "write"}, stores[0].clock())[1]


def sign_in(client: Browserless, token: str) -> None:
    form = client.get("/ui/login")
    signed = client.post("/ui/login", data={"token": token, "csrf": CSRF.search(form.text)[1]})
    assert signed.status_code == 303, signed.text
    assert signed.headers["location"] == "/ui/"


def on(app, client: Browserless) -> Browserless:
    """The same browser (its cookies) talking to another app."""
    other = Browserless(app)
    other.cookies = client.cookies
    return other


def settle(app) -> None:
    """Wait for what the app queued on its writer thread (a session's use)."""
    app.state.api.writer.submit(lambda: None).result(timeout=30)


def test_a_sign_in_through_one_app_works_on_another_with_csrf(stores, apps, writer):
    a, b = apps
    lesson = stores[0].scope("team-a").save("Never deploy on Fridays", key="deploy")
    browser = Browserless(a)
    sign_in(browser, writer)
    there = on(b, browser)
    page = there.get(f"/ui/scopes/team-a/memories/{lesson.id}")
    assert page.status_code == 200 and "Never deploy on Fridays" in page.text
    csrf = CSRF.search(page.text)[1]
    # the CSRF token is the same on both apps (derived from the session id)
    assert CSRF.search(browser.get(f"/ui/scopes/team-a/memories/{lesson.id}").text)[1] == csrf
    url = f"/ui/scopes/team-a/memories/{lesson.id}/confirm"
    assert there.post(url, data={"csrf": "forged"}).status_code == 403
    assert stores[1].scope("team-a").get(lesson.id).decay_rate != 0.0
    done = there.post(url, data={"csrf": csrf})
    assert done.status_code == 303, done.text
    assert stores[0].scope("team-a").get(lesson.id).decay_rate == 0.0
    assert stores[0].scope("team-a").get(lesson.id).updated_by == "ui:writer"
    # an id nobody was given is refused on both
    forged = Browserless(b)
    forged.cookies.set("hivemem_ui", "x" * 43, domain="hivemem.test", path="/ui")
    assert forged.get("/ui/").status_code == 303


def test_a_restart_keeps_the_session(db_path, clock, writer, stores, apps):
    browser = Browserless(apps[0])
    sign_in(browser, writer)
    cookies = browser.cookies
    for app in apps:
        app.state.api.close()
    for s in stores:
        s.close()
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        app = create_app(store)
        try:
            again = Browserless(app)
            again.cookies = cookies
            home = again.get("/ui/")
            assert home.status_code == 200 and "writer" in home.text
        finally:
            app.state.api.close()


def test_sign_out_deletes_the_row_and_ends_the_session_everywhere(stores, apps, writer):
    a, b = apps
    browser = Browserless(a)
    sign_in(browser, writer)
    assert stores[0].ui_sessions.count() == 1
    there = on(b, browser)
    csrf = CSRF.search(there.get("/ui/").text)[1]
    assert there.post("/ui/logout", data={"csrf": csrf}).status_code == 303
    assert stores[0].ui_sessions.count() == 0
    stale = Browserless(a)  # the cookie as it was, sent again to the first app
    stale.cookies.set("hivemem_ui", _cookie(browser), domain="hivemem.test", path="/ui")
    assert stale.get("/ui/").status_code == 303


def _cookie(browser: Browserless) -> str:
    return next(c.value for c in browser.cookies.jar if c.name == "hivemem_ui")


def test_idle_and_lifetime_expiry_refuse_the_session(stores, apps, writer, clock):
    a, b = apps
    browser = Browserless(a)
    sign_in(browser, writer)
    there = on(b, browser)
    # used every 11 hours, it lives on past the idle limit ...
    for _ in range(3):
        clock.advance(hours=11)
        assert there.get("/ui/").status_code == 200
        settle(b)
    # ... but an idle limit without a use ends it, on every app
    clock.advance(seconds=ui_sessions.IDLE_S + 1)
    assert browser.get("/ui/").status_code == 303
    assert there.get("/ui/").status_code == 303
    # the expired row is swept at the next sign-in (of anyone)
    assert stores[0].ui_sessions.count() == 1
    fresh = Browserless(b)
    sign_in(fresh, writer)
    assert stores[0].ui_sessions.count() == 1  # the new one only
    # the lifetime: used every 11 hours, it still ends 7 days after the sign-in
    used = 0
    while fresh.get("/ui/").status_code == 200:
        settle(b)
        clock.advance(hours=11)
        used += 11
        assert used <= ui_sessions.LIFETIME_S / 3600 + 11
    assert used >= ui_sessions.LIFETIME_S / 3600 - 11


def test_a_use_is_recorded_at_most_once_a_minute(stores, apps, writer, clock):
    a, _ = apps
    browser = Browserless(a)
    sign_in(browser, writer)
    rows = stores[0].ui_sessions
    first = rows.get(_cookie(browser), clock())
    for _ in range(5):
        assert browser.get("/ui/").status_code == 200
    settle(a)
    assert rows.get(_cookie(browser), clock()).seen_at == first.seen_at  # no write per page
    clock.advance(minutes=2)
    assert browser.get("/ui/").status_code == 200
    settle(a)
    later = rows.get(_cookie(browser), clock())
    assert later.seen_at > first.seen_at and later.expires_at > first.expires_at


def test_revoking_the_token_refuses_its_sessions_at_once(stores, apps, writer, clock):
    a, b = apps
    browser = Browserless(a)
    sign_in(browser, writer)
    there = on(b, browser)
    assert there.get("/ui/").status_code == 200
    stores[0].tokens.revoke("writer", clock())  # through the first handle
    assert there.get("/ui/").status_code == 303
    assert browser.get("/ui/").status_code == 303
    # its row goes at the next sign-in
    other = stores[0].tokens.create("other", {"team-a": "read"}, clock())[1]
    sign_in(Browserless(b), other)
    assert stores[0].ui_sessions.count() == 1


def test_a_purge_that_deletes_the_token_deletes_its_sessions(stores, apps, writer):
    from hivemem.write.purge import purge_all

    a, b = apps
    browser = Browserless(a)
    sign_in(browser, writer)
    assert browser.get("/ui/").status_code == 200
    # a hard purge of team-a deletes the token (its only scope); its sessions go with it
    purge_all(stores[1].scope("team-a"))
    assert stores[0].ui_sessions.count() == 0
    assert on(b, browser).get("/ui/").status_code == 303


def test_the_session_id_and_its_csrf_token_are_never_stored_in_clear(stores, apps, writer):
    a, _ = apps
    browser = Browserless(a)
    sign_in(browser, writer)
    session_id = _cookie(browser)
    csrf = CSRF.search(browser.get("/ui/").text)[1]
    assert csrf == ui_sessions.csrf_token(session_id)
    stores[0].flush()
    data = file_bytes(stores[0].location)
    assert session_id.encode().lower() not in data
    assert csrf.encode().lower() not in data
    from hivemem.store.tokens import hash_token

    assert hash_token(session_id).encode() in data  # what is kept: its sha256


def test_the_local_session_of_hivemem_ui_is_bound_to_that_run(db_path, clock, stores):
    ui_app = create_app(stores[0], ui_start_key="key-of-this-run")
    served = create_app(stores[1])  # serve-http over the same database: no start key
    other_run = create_app(stores[1], ui_start_key="key-of-another-run")
    try:
        local = Browserless(ui_app)
        assert local.get("/ui/start?key=key-of-this-run").status_code == 303
        assert local.get("/ui/").status_code == 200
        for app in (served, other_run):
            assert on(app, local).get("/ui/").status_code == 303  # every scope: not there
    finally:
        for app in (ui_app, served, other_run):
            app.state.api.close()


def test_a_principal_keeps_a_bounded_number_of_sessions(stores, writer, clock, monkeypatch):
    monkeypatch.setattr(ui_sessions, "PER_PRINCIPAL", 3)
    rows = stores[0].ui_sessions
    token_id = stores[0].tokens.find("writer").id
    made = []
    for _ in range(5):
        clock.advance(seconds=1)
        made.append(rows.create(clock(), token_id=token_id))
    assert rows.count() == 3
    live = [s for s in made if rows.get(s, clock()) is not None]
    assert live == made[-3:]  # the longest idle went


def test_a_session_is_a_tokens_or_the_local_users(stores, clock):
    with pytest.raises(ValueError, match="exactly one"):
        stores[0].ui_sessions.create(clock())
    assert stores[0].ui_sessions.get("", clock()) is None
    assert stores[0].ui_sessions.end("") is False
