"""The HTTP API (``hivemem serve-http``; needs the ``hivemem[http]`` extra).

``create_app(store)`` builds the ASGI app; ``serve(store, host, port)`` runs it with
uvicorn. The web framework is imported only here, when asked for, so the library and
the CLI work without the extra; without it both raise ``MissingDependency`` with the
install command. See ``docs/http.md``.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ...errors import HiveMemError, MissingDependency
from ...write.redact import install_log_filter

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
    writer thread is the process's one writer). ``on_ready()`` is called once the
    server listens (``hivemem ui`` opens the browser then)."""
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependency("hivemem serve-http", INSTALL) from exc
    app = create_app(store, settings, ui_start_key=ui_start_key)
    # The access log prints request paths, which may hold a memory key: scrub it too.
    install_log_filter(("uvicorn", "uvicorn.access", "uvicorn.error"))
    config = uvicorn.Config(app, host=host, port=port, log_level="info", proxy_headers=False)
    server = uvicorn.Server(config)
    if on_ready is not None:

        def wait_then_call() -> None:
            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                on_ready()

        threading.Thread(target=wait_then_call, name="hivemem-ui-ready", daemon=True).start()
    try:
        server.run()
    except SystemExit as exc:  # uvicorn exits when it cannot bind; say it our way
        if exc.code:
            raise HiveMemError(f"the HTTP API could not start on {host}:{port}") from None
        raise
    if not server.started:
        raise HiveMemError(f"the HTTP API could not start on {host}:{port}")


__all__ = ["INSTALL", "create_app", "serve"]
