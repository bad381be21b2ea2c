"""The web inspector in a real browser: headless Chromium from Debian's packages
(``.ci/install-browser.sh``; ``make test`` installs it) driven by Playwright, against a
real uvicorn server on a local port over a real SQLite file.

With ``HIVEMEM_SCREENSHOTS=docs/img`` the tests also save the screenshots of the main
pages that the docs show (1200x800).

Skipped, with the reason, when Playwright or the chromium executable is missing (set
``HIVEMEM_CHROMIUM`` to use another executable)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import hivemem
from hivemem.frontends.http import create_app
from hivemem.lifecycle.maintenance import run_job

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = os.environ.get("HIVEMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists() and os.environ.get("CI"):
    # CI runs `make test` as root on Debian, where .ci/install-browser.sh installs it: a
    # browser missing there is a broken install step, not a reason to skip.
    pytest.fail(f"CI: no chromium at {CHROMIUM}; .ci/install-browser.sh did not install it")
if not Path(CHROMIUM).exists():
    pytest.skip(
        f"no chromium at {CHROMIUM}: run .ci/install-browser.sh (make browser)",
        allow_module_level=True,
    )

SHOTS = os.environ.get("HIVEMEM_SCREENSHOTS")
START_KEY = "browser-test-start-key"
HOSTILE_SCRIPT = "<script>alert('script ran')</script> remember the launch codes"
HOSTILE_ATTR = '"><img src=x onerror=alert("img ran")> the attribute breakout'
VIEWPORT = {"width": 1200, "height": 800}
VAULT_SECRET = "relay-vault-secret-8812"


class StepClock:
    """Days of history for the growth chart: each call is a little later."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC) - timedelta(days=40)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def _seed(store, clock: StepClock) -> dict:
    """Two teams: team-a with lessons, decisions, a consolidated session, entities;
    team-b with a private memory."""
    a = store.scope("team-a")
    facts = [
        ("Never deploy on Fridays: rollbacks need the whole team.", "lesson", "deploy-day"),
        ("We chose PostgreSQL over MySQL for the billing service.", "decision", "billing-db"),
        ("The staging cluster runs in Frankfurt (eu-central-1).", "context", "staging"),
        ("Melanie owns the release checklist.", "identity", None),
        ("Use ruff format before every commit.", "lesson", None),
        ("The design review is on Tuesdays at 10:00.", "context", None),
        ("Caroline prefers short written summaries over meetings.", "context", None),
        ("API tokens rotate every 90 days.", "reference", None),
        ("We release every second Wednesday.", "decision", "release-cadence"),
    ]
    made = {}
    for day in range(36):
        clock.now += timedelta(days=1)
        for i in range(day % 5 + 1):
            a.save(f"roadmap item {day * 7 + i}: progress noted on day {day}.", type="context")
        if day < len(facts):
            content, kind, key = facts[day]
            made[key or content[:12]] = a.save(content, type=kind, key=key, tags=["team"])
    clock.now += timedelta(hours=1)
    for role, text in [
        ("user", "Caroline moved to Berlin last spring and works at Acme Robotics."),
        ("agent", "Noted: Caroline is in Berlin, at Acme Robotics."),
        ("user", "She leads the perception team there since March 2026."),
    ]:
        clock.now += timedelta(minutes=2)
        a.add_episode(text, session_id="chat-42", role=role)
    clock.now += timedelta(hours=3)
    run_job(store, "consolidate", "team-a", session_id="chat-42")
    run_job(store, "crossrefs", "team-a")
    made["script"] = a.save(HOSTILE_SCRIPT, type="context")
    made["attr"] = a.save(HOSTILE_ATTR, type="context")
    made["b"] = store.scope("team-b").save("team-b private: the Zurich offer", key="offer")
    store.flush()
    return made


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A store file, its tokens and a real server on 127.0.0.1."""
    yield from _serve(tmp_path_factory.mktemp("ui") / "memory.db")


@pytest.fixture(scope="module")
def served_with_secret(tmp_path_factory):
    """The same store with one secret in team-b's vault, its value also in a memory of
    team-a written before the secret was registered (the scrubber redacts it)."""
    yield from _serve(tmp_path_factory.mktemp("ui-secret") / "memory.db", secret=VAULT_SECRET)


def _serve(path: Path, secret: str | None = None):
    import uvicorn

    clock = StepClock()
    store = hivemem.open(path, clock=clock, embedder="hash")
    made = _seed(store, clock)
    if secret is not None:
        made["leak"] = store.scope("team-a").save(f"the relay password was {secret}", key="relay")
        store.vault("team-b").set("relay_password", secret, secret=True)
    tokens = store.tokens
    secrets = {
        label: tokens.create(label, scopes, store.clock())[1]
        for label, scopes in {
            "alice": {"team-a": "write", "swarm": "write"},
            "reader": {"team-a": "read"},
            "bob": {"team-b": "write"},
        }.items()
    }
    app = create_app(store, ui_start_key=START_KEY)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield {"url": f"http://127.0.0.1:{port}", "store": store, "made": made, "tokens": secrets}
    server.should_exit = True
    thread.join(10)
    store.close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser, served):
    context = browser.new_context(base_url=served["url"], viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    opened = context.new_page()
    opened.dialogs = []  # every alert/confirm a page opens: none may
    opened.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    yield opened
    assert opened.dialogs == [], f"a dialog fired: {opened.dialogs}"
    context.close()


def sign_in(page, token: str, then: str = "/ui/") -> None:
    page.goto(f"/ui/login?next={then}")
    page.fill("#token", token)
    page.press("#token", "Enter")
    page.wait_for_url(f"**{then}")


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def csrf_of(page) -> str:
    return page.locator("input[name=csrf]").first.get_attribute("value")


# ----------------------------------------------------------------------------- flows


def test_sign_in_search_open_correct_see_the_chain_delete_gone(page, served):
    sign_in(page, served["tokens"]["alice"])
    page.click("text=team-a")
    page.wait_for_url("**/ui/scopes/team-a")
    page.click("nav >> text=Search")
    page.fill("#q", "PostgreSQL for the billing service")
    page.press("#q", "Enter")
    first = page.locator(".hit", has_text="PostgreSQL over MySQL").first
    first.locator("summary").click()  # the explanation opens
    assert "fused" in first.locator("details.explain").inner_text()
    shot(page, "search")
    first.locator("a.hit-link").click()
    page.wait_for_selector("#correct-form")
    assert page.locator("#chain li").count() == 1
    page.fill("#correct-content", "We chose PostgreSQL over MySQL for billing and invoicing.")
    page.click("#correct-form button")
    page.wait_for_selector("text=Corrected: this is the new version")
    assert page.locator("#chain li").count() == 2  # the chain grew
    assert "billing and invoicing" in page.inner_text("#content")
    assert "by ui:alice" in page.inner_text("#chain")
    shot(page, "memory")
    memory_url = page.url.split("?")[0]
    page.click("#delete-form button")
    page.wait_for_selector("text=Deleted: it no longer appears")
    assert "deleted" in page.inner_text("#chain")
    page.goto("/ui/scopes/team-a/search?q=billing+invoicing+postgres")
    links = [a.get_attribute("href") for a in page.locator("a.hit-link").all()]
    assert memory_url.replace(served["url"], "") not in links
    assert "billing and invoicing" not in page.inner_text("main")


def test_hostile_content_renders_as_text(page, served):
    made = served["made"]
    sign_in(page, served["tokens"]["alice"])
    for url in [
        "/ui/scopes/team-a/memories",
        "/ui/scopes/team-a/search?q=launch+codes+attribute+breakout",
        f"/ui/scopes/team-a/memories/{made['script'].id}",
        f"/ui/scopes/team-a/memories/{made['attr'].id}",
    ]:
        page.goto(url)
        text = page.inner_text("main")
        assert "<script>alert('script ran')</script>" in text or '"><img src=x' in text, url
        assert page.locator("main img").count() == 0, url
        assert page.locator("main script").count() == 0, url
    page.goto(f"/ui/scopes/team-a/memories/{made['attr'].id}")
    assert page.inner_text("#content") == HOSTILE_ATTR
    page.goto(f"/ui/scopes/team-a/memories/{made['script'].id}")
    assert page.inner_text("#content") == HOSTILE_SCRIPT
    # the dialog list is checked empty by the fixture


def test_a_read_only_token_sees_no_write_actions_and_gets_403(page, served):
    made = served["made"]
    sign_in(page, served["tokens"]["reader"])
    page.goto(f"/ui/scopes/team-a/memories/{made['deploy-day'].id}")
    assert "Never deploy on Fridays" in page.inner_text("#content")
    assert page.locator("#actions").count() == 0
    assert page.locator("form[method=post]").count() == 1  # sign out only
    page.goto("/ui/scopes/team-a/entity?name=caroline")
    assert page.locator("#alias-form").count() == 0
    response = page.request.post(
        f"/ui/scopes/team-a/memories/{made['deploy-day'].id}/delete",
        form={"csrf": csrf_of(page)},
        max_redirects=0,
    )
    assert response.status == 403
    assert "no write access" in response.text()
    store = served["store"]
    assert store.scope("team-a").get(made["deploy-day"].id).status.value == "active"


def test_a_token_for_scope_a_cannot_open_scope_b_by_url(page, served):
    made = served["made"]
    sign_in(page, served["tokens"]["alice"])
    for url in [
        "/ui/scopes/team-b",
        "/ui/scopes/team-b/memories",
        f"/ui/scopes/team-b/memories/{made['b'].id}",
        "/ui/scopes/team-b/search?q=zurich",
    ]:
        response = page.goto(url)
        assert response.status == 403, url
        assert "Zurich" not in page.inner_text("body")
    response = page.goto(f"/ui/scopes/team-a/memories/{made['b'].id}")
    assert response.status == 404 and "Zurich" not in page.inner_text("body")


def test_a_post_without_the_csrf_token_is_refused(page, served):
    made = served["made"]
    sign_in(page, served["tokens"]["alice"])
    page.goto(f"/ui/scopes/team-a/memories/{made['staging'].id}")
    url = f"/ui/scopes/team-a/memories/{made['staging'].id}/confirm"
    missing = page.request.post(url, form={"x": "1"}, max_redirects=0)
    assert missing.status == 403 and "CSRF" in missing.text()
    forged = page.request.post(url, form={"csrf": "forged"}, max_redirects=0)
    assert forged.status == 403
    # the form's own token works: the button does it
    page.click("#confirm-form button")
    page.wait_for_selector("text=Confirmed: confidence 1.0")
    assert "confirmed" in page.inner_text("main")


def test_overview_memories_filters_and_paging(page, served):
    sign_in(page, served["tokens"]["alice"], "/ui/scopes/team-a")
    main = page.inner_text("main")
    for text in ["Active by kind", "Active by type", "By status", "Active by category"]:
        assert text in main
    assert page.locator("svg.chart rect.bar").count() > 30  # a bar per day
    assert "consolidate" in page.inner_text("main") and "crossrefs" in main
    assert "All checks pass" in main or "check(s) failed" in main
    shot(page, "overview")
    page.click("#run-doctor")
    page.wait_for_url("**/ui/scopes/team-a?doctor=run")
    assert "Checked" in page.inner_text("main")
    page.click("nav >> text=Memories")
    page.wait_for_url("**/memories")
    assert page.locator("table.list tbody tr").count() == 50
    shot(page, "memories")
    first_page = page.inner_text("table.list")
    page.click("text=Older ›")
    assert page.locator("table.list tbody tr").count() > 0
    second_page = page.inner_text("table.list")
    assert second_page != first_page
    page.click("text=Older ›")
    page.click("text=‹ Newer")
    assert page.inner_text("table.list") == second_page
    page.click("text=« Newest")
    assert page.inner_text("table.list") == first_page
    page.select_option("select[name=type]", "decision")
    page.click(".filters button")
    rows = page.locator("table.list tbody tr")
    assert rows.count() >= 1
    assert all("decision" in rows.nth(i).inner_text() for i in range(rows.count()))
    page.select_option("select[name=type]", "")
    page.fill("input[name=tag]", "team")
    page.select_option("select[name=kind]", "fact")
    page.click(".filters button")
    assert "Never deploy on Fridays" in page.inner_text("table.list")
    assert "roadmap item" not in page.inner_text("table.list")
    page.fill("input[name=tag]", "")
    page.fill("input[name=session]", "chat-42")
    page.select_option("select[name=kind]", "episode")
    page.click(".filters button")
    assert page.locator("table.list tbody tr").count() == 3
    page.fill("input[name=session]", "")
    page.select_option("select[name=kind]", "")
    page.fill("input[name=since]", "1d")
    page.click(".filters button")
    assert "noted on day 0." not in page.inner_text("main")
    page.fill("input[name=since]", "")
    page.fill("input[name=until]", "2000-01-01")
    page.click(".filters button")
    assert "No memories match." in page.inner_text("main")
    page.fill("input[name=until]", "")
    page.select_option("select[name=category]", "person")
    page.select_option("select[name=status]", "active")
    page.click(".filters button")
    assert page.locator(".error").count() == 0


def test_entities_alias_and_an_entitys_memories(page, served):
    sign_in(page, served["tokens"]["alice"], "/ui/scopes/team-a/entities")
    assert "Caroline" in page.inner_text("table.list")
    shot(page, "entities")
    page.fill("input[name=prefix]", "carol")
    page.click(".filters button")
    page.click("table.list >> text=Caroline")
    page.wait_for_selector("#alias-form")
    assert "Berlin" in page.inner_text("main")
    page.fill("#alias", "Caro")
    page.click("#alias-form button")
    page.wait_for_selector("text=Alias added.")
    assert "caro" in page.inner_text("#aliases")
    page.goto("/ui/scopes/team-a/search?q=caro")
    assert page.locator(".hit").count() > 0


def test_sessions_turns_facts_and_provenance(page, served):
    sign_in(page, served["tokens"]["alice"], "/ui/scopes/team-a/sessions")
    page.click("text=chat-42")
    page.wait_for_url("**/sessions/chat-42")
    assert page.locator("ol.turns li").count() == 3
    facts = page.locator("section:has-text('Facts consolidated') ul.items li")
    assert facts.count() >= 1
    shot(page, "session")
    facts.first.locator("a").click()
    page.wait_for_selector("text=Drawn from:")
    page.locator("section:has-text('Provenance') li a").first.click()
    page.wait_for_selector("text=Memories drawn from this one:")
    assert page.locator("section:has-text('Provenance') li a").count() >= 1


def test_supersede_with_a_reason_and_promote(page, served):
    made = served["made"]
    sign_in(page, served["tokens"]["alice"])
    page.goto(f"/ui/scopes/team-a/memories/{made['API tokens r'].id}")
    page.fill("#supersede-content", "API tokens rotate every 30 days.")
    page.fill("#supersede-reason", "security review of November")
    page.click("#supersede-form button")
    page.wait_for_selector("text=Superseded: this is the new version")
    assert "security review of November" in page.inner_text("#chain")
    assert "hard supersede" in page.inner_text("#chain")
    page.fill("#promote-to", "swarm")
    page.click("#promote-form button")
    page.wait_for_selector("text=Promoted: this is the copy")
    assert "/ui/scopes/swarm/memories/" in page.url
    assert "promotion" in page.inner_text("main")


def test_the_one_time_link_and_sign_out(page, served):
    response = page.goto(f"/ui/start?key={START_KEY}")
    assert response.ok and page.url.endswith("/ui/")
    assert "team-b" in page.inner_text("main")  # the local user sees every scope
    page.click("text=Sign out")
    page.wait_for_url("**/ui/login")
    again = page.goto(f"/ui/start?key={START_KEY}")
    assert again.status == 403
    assert page.goto("/ui/scopes/team-a").url.split("?")[0].endswith("/ui/login")


def test_the_keyboard_reaches_search_and_actions(page, served):
    sign_in(page, served["tokens"]["alice"], "/ui/scopes/team-a")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "quick-q"
    page.keyboard.type("release checklist")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search?q=release+checklist")
    assert "Melanie owns the release checklist" in page.inner_text("ol.hits")
    page.goto("/ui/scopes/team-a")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    for _ in range(30):  # tab along until the Memories link, then follow it with Enter
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Memories":
            break
    page.keyboard.press("Enter")
    page.wait_for_url("**/memories")
    assert re.search(r"/ui/scopes/team-a/memories$", page.url)


def test_every_page_keeps_its_elements_when_the_vault_holds_a_secret(browser, served_with_secret):
    """Issue 25: with any secret in any scope's vault, the filters, the memory table, the
    badges and the overview counts showed as literal ``<label>…`` / ``&lt;span…`` text.
    Each page must hold real elements, no markup as text, and never the secret."""
    served = served_with_secret
    context = browser.new_context(base_url=served["url"], viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    page = context.new_page()
    made = served["made"]
    sign_in(page, served["tokens"]["alice"], "/ui/scopes/team-a")
    pages = {
        "/ui/scopes/team-a": ["table.counts", "section.card", "svg.chart"],
        "/ui/scopes/team-a/memories": ["select[name=type]", "table.list tbody tr", "span.badge"],
        "/ui/scopes/team-a/search?q=relay+password": ["select[name=kind]", ".hit", "span.badge"],
        f"/ui/scopes/team-a/memories/{made['leak'].id}": ["span.badge.kind"],
        f"/ui/scopes/team-a/memories/{made['deploy-day'].id}": ["span.badge.type"],
        "/ui/scopes/team-a/entities": ["table.list tbody tr"],
        "/ui/scopes/team-a/entity?name=caroline": ["table.list tbody tr", "span.badge"],
        "/ui/scopes/team-a/sessions": ["table tbody tr"],
        "/ui/scopes/team-a/sessions/chat-42": ["ol.turns li", "ul.items li", "span.badge"],
    }
    try:
        for url, selectors in pages.items():
            page.goto(url)
            for selector in selectors:
                assert page.locator(selector).count() >= 1, (url, selector)
            text = page.inner_text("body")
            for tag in ("<label", "<select", "<span", "<section", "<table", "<tr", "<td", "<li"):
                assert tag not in text, (url, tag, text[:400])
            assert "&lt;" not in text and "&amp;" not in text, (url, text[:400])
            assert VAULT_SECRET not in page.content(), url
        page.goto(f"/ui/scopes/team-a/memories/{made['leak'].id}")
        assert "[REDACTED]" in page.inner_text("main")
        page.goto("/ui/scopes/team-a/memories")
        page.select_option("select[name=type]", "decision")
        page.click(".filters button")
        rows = page.locator("table.list tbody tr")
        assert rows.count() >= 1
        assert all("decision" in rows.nth(i).inner_text() for i in range(rows.count()))
    finally:
        context.close()
