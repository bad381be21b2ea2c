"""Running an ASGI app with uvicorn, for every server HiveMem starts (``serve-http``,
``ui``, ``serve-mcp --transport http``): the address is printed once the socket listens
(never before: a port already taken must not be announced), and a bind failure becomes
one ``HiveMemError`` line instead of uvicorn's exit.

Every server parses HTTP with httptools (C, the ``http`` extra installs it) where it is
importable, else with uvicorn's pure-Python h11: under ``hivemem bench --load`` h11 cost
~0.5 ms of the server's CPU a request (framework 1.5 -> 1.0 ms; docs/reliability.md,
*The HTTP parser*). The event loop stays asyncio's: uvloop was measured too and did not
help a HiveMem server (MCP over HTTP ran 10-25% slower)."""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import HiveMemError
from . import stages


def run(
    app: Any,
    host: str,
    port: int,
    *,
    what: str,
    log_level: str = "warning",
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``app`` on ``host:port`` until interrupted. ``on_ready(url)`` runs once the
    server listens; ``what`` names the server in the error when it cannot start."""
    import uvicorn

    server = uvicorn.Server(config(app, host, port, log_level))
    stages.install()  # hivemem bench --load only: CPU by stage (hivemem.frontends.stages)
    if on_ready is not None:
        url = f"http://{_bracketed(host)}:{port}"

        def wait_then_call() -> None:
            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                on_ready(url)

        threading.Thread(target=wait_then_call, name="hivemem-ready", daemon=True).start()
    try:
        server.run()
    except SystemExit as exc:  # uvicorn exits when it cannot bind; say it our way
        if exc.code:
            raise HiveMemError(f"{what} could not start on {host}:{port}") from None
        raise
    if not server.started:
        raise HiveMemError(f"{what} could not start on {host}:{port}")


def http_parser() -> str:
    """``httptools`` where it is importable, else ``h11`` (uvicorn's names)."""
    return "httptools" if importlib.util.find_spec("httptools") is not None else "h11"


def parser_note() -> str:
    """What a server's start line adds when it runs on h11 (nothing on httptools)."""
    if http_parser() == "httptools":
        return ""
    return " (HTTP parsed by h11: `pip install 'hivemem[http]'` adds httptools, less CPU a request)"


def config(app: Any, host: str, port: int, log_level: str = "info") -> Any:
    """The ``uvicorn.Config`` of every HiveMem server: ``http_parser()``, no proxy headers."""
    import uvicorn

    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level, proxy_headers=False, http=http_parser()
    )


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
