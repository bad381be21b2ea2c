"""The outermost layer of the HTTP app, in plain ASGI: the request size limit and the
last line of defence that turns any uncaught exception into the one error shape.

Size: a ``Content-Length`` over the limit is refused before the body is read; a body
streamed without one is counted as it arrives and refused the moment it passes the limit
(nothing is handed to the library). Both answer 413.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .errors import error_body

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("hivemem.frontends.http")


def render(body: Any) -> bytes:
    """JSON bytes of a response body: UTF-8 text, with ``\\u`` escapes only when the body
    holds text that is not valid Unicode (a lone surrogate echoed from a bad request)."""
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, ensure_ascii=True, allow_nan=False).encode("ascii")


class BodyTooLarge(Exception):
    pass


async def send_error(send: Send, status: int, message: str, headers: list | None = None) -> None:
    payload = render(error_body(status, message))
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class Guard:
    """Wraps the app: body size limit, and a JSON 500 for anything left uncaught."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        too_large = f"the request body is over the limit of {limit} bytes (http_max_body_bytes)"
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await send_error(send, 400, "Content-Length is not a number")
                return
            if declared > limit:
                await send_error(send, 413, too_large, [(b"connection", b"close")])
                return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except BodyTooLarge:
            if not started:
                await send_error(send, 413, too_large, [(b"connection", b"close")])
        except Exception:  # the last line: a bug must still answer in the one shape
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await send_error(send, 500, "internal error (logged by the server)")
