"""Running an ASGI app with uvicorn, for every server HiveMem starts (``serve-http``,
``ui``, ``serve-mcp --transport http``): the address is printed once the socket listens
(never before: a port already taken must not be announced), and a bind failure becomes
one ``HiveMemError`` line instead of uvicorn's exit.

Every server parses HTTP with httptools (C, the ``http`` extra installs it) where it is
importable, else with uvicorn's pure-Python h11: under ``hivemem bench --load`` h11 cost
~0.4 ms of the server's CPU a request (framework 1.35-1.69 -> 0.98-1.30 ms;
docs/reliability.md, *The HTTP parser*). h11 refuses a request whose head (request
line and headers) passes 16 KiB; httptools has no such bound (a 20 MB header was read
whole), so HiveMem's httptools protocol keeps h11's: past ``HEAD_MAX`` bytes before the
head ends, a 400 and the connection closed. The event loop stays asyncio's: uvloop was
measured too and did not help a HiveMem server (MCP over HTTP ran 10-25% slower)."""

from __future__ import annotations

import functools
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


HEAD_MAX = 16 * 1024  # bytes of a request's head: h11's own bound (its 400 past it)


def config(app: Any, host: str, port: int, log_level: str = "info") -> Any:
    """The ``uvicorn.Config`` of every HiveMem server: HTTP parsed by httptools with the
    head bounded (``_bounded_httptools``) where httptools is installed, else by h11; no
    proxy headers."""
    import uvicorn

    http = _bounded_httptools() if http_parser() == "httptools" else "h11"
    return uvicorn.Config(
        app, host=host, port=port, log_level=log_level, proxy_headers=False, http=http
    )


@functools.cache
def _bounded_httptools() -> type:
    """uvicorn's httptools protocol, refusing a head longer than ``HEAD_MAX``: the bytes
    received while a request's head is incomplete are counted (from the connection's
    start, and from each request's first byte parsed), and past the bound the request is
    answered 400 and the connection closed, as h11 answers it."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class BoundedHead(HttpToolsProtocol):
        _head = 0  # bytes received since the head began; -1 once it is complete

        def data_received(self, data: bytes) -> None:
            if self._head >= 0:
                self._head += len(data)
                if self._head > HEAD_MAX:
                    self.logger.warning("Request head over %d bytes refused.", HEAD_MAX)
                    self.send_400_response("Request head too large.")
                    return
            super().data_received(data)

        def on_message_begin(self) -> None:
            self._head = max(self._head, 0)
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._head = -1
            super().on_headers_complete()

    return BoundedHead


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
