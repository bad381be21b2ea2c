"""Running an ASGI app with uvicorn, for every server HiveMem starts (``serve-http``,
``ui``, ``serve-mcp --transport http``): the address is printed once the socket listens
(never before: a port already taken must not be announced), and a bind failure becomes
one ``HiveMemError`` line instead of uvicorn's exit."""

from __future__ import annotations

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

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, proxy_headers=False)
    server = uvicorn.Server(config)
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


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
