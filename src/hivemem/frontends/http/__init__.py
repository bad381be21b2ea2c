"""The HTTP API (``hivemem serve-http``; needs the ``hivemem[http]`` extra).

``create_app(store)`` builds the ASGI app; ``serve(store, host, port)`` runs it with
uvicorn. The web framework is imported only here, when asked for, so the library and
the CLI work without the extra; without it both raise ``MissingDependency`` with the
install command. See ``docs/http.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import MissingDependency
from ...write.redact import install_log_filter
from ..serving import run

if TYPE_CHECKING:  # pragma: no cover
    from ...facade.database import Store
    from ...settings import Settings

INSTALL = "pip install 'hivemem[http]'"


_FRAMEWORK = {"fastapi", "starlette", "pydantic", "jinja2", "markupsafe"}


def create_app(
    store: Store, settings: Settings | None = None, *, ui_start_key: str | None = None
) -> Any:
    """The FastAPI app over ``store`` (see ``hivemem.frontends.http.app``), with the inspector."""
    try:
        from .app import create_app as build
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] in _FRAMEWORK:
            raise MissingDependency("the HTTP API", INSTALL) from exc
        raise
    return build(store, settings, ui_start_key=ui_start_key)


def serve(
    store: Store,
    host: str,
    port: int,
    settings: Settings | None = None,
    *,
    ui_start_key: str | None = None,
    on_ready: Any = None,
) -> None:
    """Serve the API and the inspector until interrupted (uvicorn, one process: the
    writer thread is the process's one writer). ``on_ready(url)`` is called once the
    server listens (``hivemem ui`` opens the browser then)."""
    try:
        import uvicorn  # noqa: F401  (the extra is checked before the app is built)
    except ImportError as exc:
        raise MissingDependency("hivemem serve-http", INSTALL) from exc
    app = create_app(store, settings, ui_start_key=ui_start_key)
    # The access log prints request paths, which may hold a memory key: scrub it too.
    install_log_filter(("uvicorn", "uvicorn.access", "uvicorn.error"))
    run(app, host, port, what="the HTTP API", log_level="info", on_ready=on_ready)


__all__ = ["INSTALL", "create_app", "serve"]
