"""The API's documentation page, served offline.

FastAPI's default ``/docs`` page loads Swagger UI from a CDN and is blank without the
internet. Here the page points at Swagger UI's script and stylesheet as shipped by the
pinned ``fastapi-offline`` package, served by this app under ``/docs/assets``: nothing
is fetched from another host.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from ...errors import MissingDependency

ASSETS = "/docs/assets"
INSTALL = "pip install 'hivemem[http]'"


def assets_folder() -> Path:
    """The folder of Swagger UI's files inside the installed ``fastapi-offline``."""
    try:
        import fastapi_offline
    except ImportError:
        raise MissingDependency("the HTTP API's /docs page", INSTALL) from None
    return Path(fastapi_offline.__file__).parent / "static"


def mount_docs(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    """Add ``GET /docs`` and its assets to ``app`` (created with ``docs_url=None``)."""
    app.mount(ASSETS, StaticFiles(directory=assets_folder()), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            # Swagger UI would send the schema to validator.swagger.io; nothing leaves.
            swagger_ui_parameters={"validatorUrl": None},
        )
