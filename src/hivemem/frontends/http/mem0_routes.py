"""Mem0's REST routes under ``/mem0``: a client written for a Mem0 server points its base
URL at ``http://host:port/mem0`` and keeps its calls.

| route | Mem0 call (``hivemem.compat.mem0.Memory``) |
| --- | --- |
| ``POST /mem0/memories`` | ``add(messages, ids, metadata, infer, expiration_date)`` |
| ``GET /mem0/memories`` | ``get_all(ids, limit)`` (ids: ``user_id``, ``agent_id``, ``run_id``) |
| ``GET /mem0/memories/{id}`` | ``get`` |
| ``PUT /mem0/memories/{id}`` | ``update`` (body ``text``, ``data`` or ``memory``) |
| ``DELETE /mem0/memories/{id}`` | ``delete`` |
| ``DELETE /mem0/memories`` | ``delete_all(ids)`` |
| ``GET /mem0/memories/{id}/history`` | ``history`` |
| ``POST /mem0/search`` | ``search(query, ids, filters, limit/top_k, threshold)`` |

Only translation lives here: the compat adapter owns the mapping (identity → scope
``user:<id>``, ``agent:<id>``, ``run:<id>``). What differs from a Mem0 server: every
route needs a bearer token (as every route of the API but ``/v1/health``; Mem0's
``Token <key>`` form is accepted too) granted the identity's scope (write for writes),
and errors have the API's one shape. Writes run on the API's writer thread, reads as the
API's tools do (``Api.read``: at most ``server_reads`` at once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ...compat.mem0 import Memory
from ...errors import Forbidden, InvalidInput
from .errors import STATUSES

PREFIX = "/mem0"
_ERROR = {"$ref": "#/components/schemas/Error"}
_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {
        "description": STATUSES[status][1],
        "content": {"application/json": {"schema": _ERROR}},
    }
    for status in (401, 403, 404, 409, 422)
}
_IDS = ("user_id", "agent_id", "run_id")
_ADD = {"messages", *_IDS, "metadata", "infer", "expiration_date"}
_SEARCH = {"query", *_IDS, "filters", "limit", "top_k", "threshold"}


def _ids(source: dict[str, Any]) -> dict[str, Any]:
    return {name: source[name] for name in _IDS if source.get(name) is not None}


def _known(body: dict[str, Any], allowed: set[str]) -> dict[str, Any]:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(unknown[0], f"not a field of this route (fields: {sorted(allowed)})")
    return body


def _limit(request: Request) -> int | None:
    raw = request.query_params.get("limit")
    if raw is None:
        return None
    if not raw.isdigit():
        raise InvalidInput("limit", f"expected a whole number, got {raw!r}")
    return int(raw)


def mount(
    app: FastAPI,
    api: Any,  # the app's Api (hivemem.frontends.http.app), which imports this module
    json_body: Callable[[Request], Any],
    respond: Callable[[Any], Response],
) -> None:
    """Add the Mem0 routes to ``app`` (``json_body`` and ``respond`` are the API's own
    body reader and JSON response, so both speak the one error shape)."""
    mem0 = Memory(api.store)

    async def check(request: Request, scope: Callable[[], str], write: bool) -> None:
        """Authenticate, then check the token may read (or write) the scope the call
        reaches (``Forbidden``: 403, in the API's error shape)."""
        token = await api.authenticate(_as_bearer(request))
        name = await run_in_threadpool(scope)
        level = "write" if write else "read"
        if not token.can(name, level):
            raise Forbidden(f"this token has no {level} access to scope {name!r}")

    async def by_identity(request: Request, source: dict[str, Any], write: bool) -> None:
        filters = source.get("filters") if isinstance(source.get("filters"), dict) else None
        await check(request, lambda: mem0.scope_for(**_ids(source), filters=filters), write)

    async def by_id(request: Request, memory_id: str, write: bool) -> None:
        await check(request, lambda: mem0.scope_of(memory_id), write)

    tags: list[str | Any] = ["mem0"]
    shape: dict[str, Any] = {"tags": tags, "responses": _RESPONSES}

    @app.post(f"{PREFIX}/memories", operation_id="mem0_add", **shape)
    async def add(request: Request) -> Response:
        """Mem0's ``add``: ``messages`` (a text or ``[{role, content}]``) for an identity."""
        body = _known(await json_body(request), _ADD)
        await by_identity(request, body, write=True)
        if "messages" not in body:
            raise InvalidInput("messages", "is required")
        return respond(await api.write(lambda: mem0.add(body.pop("messages"), **body)))

    @app.get(f"{PREFIX}/memories", operation_id="mem0_get_all", **shape)
    async def get_all(request: Request) -> Response:
        """Mem0's ``get_all``: the memories of an identity (``user_id`` … in the query)."""
        ids = _ids(dict(request.query_params))
        await by_identity(request, ids, write=False)
        limit = _limit(request)
        return respond(await api.read(lambda: mem0.get_all(**ids, limit=limit)))

    @app.get(f"{PREFIX}/memories/{{memory_id}}", operation_id="mem0_get", **shape)
    async def get(request: Request, memory_id: str) -> Response:
        """Mem0's ``get``: one memory (an old id gives the current version)."""
        await by_id(request, memory_id, write=False)
        return respond(await api.read(lambda: mem0.get(memory_id)))

    @app.put(f"{PREFIX}/memories/{{memory_id}}", operation_id="mem0_update", **shape)
    async def update(request: Request, memory_id: str) -> Response:
        """Mem0's ``update``: the new text (``text``, ``data`` or ``memory``) as a new version."""
        body = _known(await json_body(request), {"text", "data", "memory", "metadata"})
        text = next((body[k] for k in ("text", "data", "memory") if k in body), None)
        if not isinstance(text, str):
            raise InvalidInput("text", "the new text of the memory is required")
        await by_id(request, memory_id, write=True)
        return respond(await api.write(lambda: mem0.update(memory_id, text)))

    @app.delete(f"{PREFIX}/memories/{{memory_id}}", operation_id="mem0_delete", **shape)
    async def delete(request: Request, memory_id: str) -> Response:
        """Mem0's ``delete`` (soft: the history keeps it)."""
        await by_id(request, memory_id, write=True)
        return respond(await api.write(lambda: mem0.delete(memory_id)))

    @app.delete(f"{PREFIX}/memories", operation_id="mem0_delete_all", **shape)
    async def delete_all(request: Request) -> Response:
        """Mem0's ``delete_all`` for an identity (soft)."""
        ids = _ids(dict(request.query_params))
        await by_identity(request, ids, write=True)
        return respond(await api.write(lambda: mem0.delete_all(**ids)))

    @app.get(f"{PREFIX}/memories/{{memory_id}}/history", operation_id="mem0_history", **shape)
    async def history(request: Request, memory_id: str) -> Response:
        """Mem0's ``history``: one entry per version, oldest first."""
        await by_id(request, memory_id, write=False)
        return respond(await api.read(lambda: mem0.history(memory_id)))

    @app.post(f"{PREFIX}/search", operation_id="mem0_search", **shape)
    async def search(request: Request) -> Response:
        """Mem0's ``search`` within an identity (ids in the body or in ``filters``)."""
        body = _known(await json_body(request), _SEARCH)
        await by_identity(request, body, write=False)
        if not isinstance(body.get("query"), str):
            raise InvalidInput("query", "is required")
        return respond(await api.read(lambda: mem0.search(body.pop("query"), **body)))


def _as_bearer(request: Request) -> Request:
    """Mem0's clients send ``Authorization: Token <key>``; the API reads ``Bearer``."""
    header = request.headers.get("authorization", "")
    kind, _, secret = header.partition(" ")
    if kind.lower() != "token":
        return request
    scope = dict(request.scope)
    scope["headers"] = [
        (k, v) for k, v in request.scope["headers"] if k.lower() != b"authorization"
    ] + [(b"authorization", f"Bearer {secret}".encode())]
    return Request(scope)
