"""The API's /docs page works offline: it names no other host and its assets are served
by the app itself (issue 12, item 7)."""

from __future__ import annotations

import re

import httpx
import pytest

from hivemem.frontends.http import create_app


@pytest.fixture
def app(store):
    application = create_app(store)
    yield application
    application.state.api.close()


def _get(app, url):
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://hivemem.test") as c:
            return await c.get(url)

    import asyncio

    return asyncio.run(go())


def test_docs_page_references_no_external_host_and_its_assets_are_served(app):
    page = _get(app, "/docs")
    assert page.status_code == 200
    assert "swagger" in page.text.lower()
    external = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page.text, re.I)
    assert external == [], external
    assets = re.findall(r"""(?:src|href)=["']?(/[^"' >]+)""", page.text)
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    for asset in assets:
        response = _get(app, asset)
        assert response.status_code == 200, asset
        assert len(response.content) > 1000, asset
    assert "/openapi.json" in page.text
    assert _get(app, "/openapi.json").status_code == 200
