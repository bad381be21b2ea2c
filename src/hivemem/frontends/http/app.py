"""The HTTP API: FastAPI over the library facade, its routes generated from the tool
registry (``hivemem.tools``).

Each request: bearer token → the scope from the URL, checked against the token's grants
→ the tool's arguments from the path, the query string and the JSON body →
``tools.call(mem, name, arguments)`` → its JSON result. Writes (tools with
``writes=True``) run on dedicated writer threads, at most ``Store.server_writes()`` at
once (on SQLite one, in arrival order: the file has one writer);
maintenance tools (``tools.MAINTENANCE``: consolidation, which may wait minutes on an
LLM) on a second thread, so they never stall the writes queued behind them; reads run on
the threadpool beside both, at most ``Store.server_reads()`` at once (on SQLite one: side
by side they only pass the GIL back and forth). The core stays synchronous.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

import hivemem

from ... import tools as toolsmod
from ...errors import HiveMemError, InvalidInput
from ...facade.database import Store
from ...settings import Settings
from ...store.tokens import TokenInfo
from .. import stages
from ..stages import timed
from . import mem0_routes, ui
from .docs import mount_docs
from .errors import ERROR_SCHEMA, STATUSES, error_body, error_headers, from_library
from .middleware import BodyTooLarge, Guard, log, render
from .routes import PREFIX, REST_ROUTES, Route, operations

TOUCH_EVERY_S = 60.0  # last_used_at of a token is written at most this often


class ApiError(Exception):
    """An error the HTTP layer itself answers (401, 403, 400, 413 …)."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


def json_response(body: Any, status: int = 200, headers: dict | None = None) -> Response:
    return Response(render(body), status, headers, media_type="application/json")


def error_response(status: int, message: str, field: str | None = None) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return json_response(error_body(status, message, field), status, headers)


class Api:
    """The state of one app: the store, the token table, the writer threads."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.tokens = store.tokens
        self.writer = ThreadPoolExecutor(
            max_workers=store.server_writes(), thread_name_prefix="hivemem-writer"
        )
        self.maintainer = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hivemem-maintenance"
        )
        self._touched: dict[str, float] = {}
        reads = store.server_reads()
        # None: anyio's default limiter (the threadpool's size), as any route's thread.
        self.reads = None if reads is None else anyio.CapacityLimiter(reads)

    def close(self) -> None:
        self.maintainer.shutdown(wait=True)
        self.writer.shutdown(wait=True)

    def scrub_error(self, exc: HiveMemError, body: dict) -> dict:
        """The error body of ``exc`` with every registered secret redacted (error bodies
        echo content, e.g. the memory in a conflict). Never a second failure: after a
        store failure the secrets known now are used, without asking the store
        (``Scrubber.refresh_for_error``), so a database that is down gives 503, not 500."""
        scrubber = getattr(self.store, "scrubber", None)
        if scrubber is None:
            return body
        scrubber.refresh_for_error(exc)
        return scrubber.scrubbed(body, refresh=False)

    async def write(self, fn: Any) -> Any:
        """Run ``fn`` on a writer thread (``server_writes`` at once, started in arrival
        order: on SQLite one after another)."""
        return await asyncio.get_running_loop().run_in_executor(self.writer, fn)

    async def read(self, fn: Any) -> Any:
        """Run ``fn``, a read, on the threadpool once fewer than ``server_reads`` run."""
        return await anyio.to_thread.run_sync(fn, limiter=self.reads)

    async def run(self, tool: Any, fn: Any) -> Any:
        """Run ``fn`` for ``tool``: a maintenance tool on the maintenance thread, another
        write on the writer thread, a read as ``read`` does."""
        if tool.name in toolsmod.MAINTENANCE:
            return await asyncio.get_running_loop().run_in_executor(self.maintainer, fn)
        return await (self.write(fn) if tool.writes else self.read(fn))

    async def authenticate(self, request: Request) -> TokenInfo:
        return await run_in_threadpool(self.verify, bearer(request))

    def verify(self, secret: str) -> TokenInfo:
        """The active token of ``secret`` (a read of the token table: a revocation made
        by any process counts at once), or ``ApiError`` 401."""
        with timed("auth"):
            token = self.tokens.verify(secret)
        if token is None:
            raise ApiError(401, "unknown or revoked token")
        self.note_use(token.id)
        return token

    def note_use(self, token_id: str) -> None:
        """Record that a token was used (its ``last_used_at``), at most once a minute."""
        now = time.monotonic()
        if now - self._touched.get(token_id, -math.inf) >= TOUCH_EVERY_S:
            self._touched[token_id] = now  # fire and forget, on the writer's queue
            self.writer.submit(self._touch, token_id)

    def _touch(self, token_id: str) -> None:
        try:
            self.tokens.touch(token_id, self.store.clock())
        except Exception:  # a busy store must not fail the request that was served
            log.warning("could not record the use of token %s", token_id, exc_info=True)

    def bind(self, token: TokenInfo, request: Request, writes: bool) -> hivemem.ScopedMemory:
        """The handle for the URL's scope, after checking the token grants it (write for
        a write) and read on every ``shared`` scope asked for. The handle leads every
        other scope the token may write (``hivemem.write.rights``: a write tool that changes a
        shared scope, inject_learning into a worker's scope, needs write there, else
        the library answers ``Forbidden``, 403) and writes as the token's name."""
        shared = request.query_params.getlist("shared")
        lead_of = [s for s, level in token.scopes.items() if level == "write"]
        mem = self.store.scope(
            request.path_params["scope"], shared=shared, lead_of=lead_of, actor=token.name
        )
        level = "write" if writes else "read"
        if not token.can(mem.name, level):
            granted = token.scopes.get(mem.name)
            why = f"only {granted}" if granted else "no access"
            raise ApiError(403, f"this token has {why} on scope {mem.name!r}; {level} is needed")
        for other in mem.shared:
            if not token.can(other, "read"):
                raise ApiError(403, f"this token cannot read the shared scope {other!r}", "shared")
        return mem


def bearer(request: Request) -> str:
    """The secret of the request's ``Authorization: Bearer`` header, or ``ApiError`` 401."""
    header = request.headers.get("authorization", "")
    kind, _, secret = header.partition(" ")
    if kind.lower() != "bearer" or not secret.strip():
        raise ApiError(401, "send a bearer token: Authorization: Bearer <token>")
    return secret.strip()


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()  # BodyTooLarge past the limit: answered as 413
    return _parsed_body(raw)


def _parsed_body(raw: bytes) -> dict[str, Any]:
    """The JSON object of a request body (``{}`` for an empty one), or ``ApiError``."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}", "body") from None
    except RecursionError:
        raise ApiError(400, "the body is nested too deeply", "body") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"the body must be a JSON object, not {type(body).__name__}", "body")
    return body


def _coerce(name: str, values: list[str], schema: dict[str, Any]) -> Any:
    """A query-string value as the type the tool's schema declares."""
    kind = schema.get("type")
    if kind == "array":
        return [_coerce(name, [v], schema.get("items") or {}) for v in values]
    if len(values) > 1:
        raise InvalidInput(name, "given more than once")
    raw = values[0]
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            number = float(raw)
            if not math.isfinite(number):
                raise ValueError(raw)
            return number
        if kind == "boolean":
            lowered = raw.lower()
            if lowered not in {"true", "false", "1", "0"}:
                raise ValueError(raw)
            return lowered in {"true", "1"}
        if kind == "object":
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise ValueError(raw)
            return value
    except ValueError:
        raise InvalidInput(name, f"expected {kind}, got {raw!r}") from None
    return raw


def arguments(request: Request, route: Route, tool: Any, raw: bytes) -> dict[str, Any]:
    """The tool's arguments: path parameters, then the query string, then the body
    (``raw``, already read)."""
    with timed("parse"):
        return _arguments(request, route, tool, raw)


def _arguments(request: Request, route: Route, tool: Any, raw: bytes) -> dict[str, Any]:
    properties = tool.parameters.get("properties", {})
    args: dict[str, Any] = {}
    for placeholder, argument in route.path_args.items():
        args[argument] = request.path_params[placeholder]
    query = request.query_params
    for name in dict.fromkeys(query.keys()):
        if name == "shared":
            continue
        if name in args:
            raise InvalidInput(name, "is given in the path; do not repeat it in the query")
        args[name] = _coerce(name, query.getlist(name), properties.get(name, {}))
    if route.method == "POST":
        for name, value in _parsed_body(raw).items():
            if name in args and args[name] != value:
                raise InvalidInput(name, "differs between the URL and the body")
            args[name] = value
    return args


def _wants_markdown(request: Request) -> bool:
    """``Accept: text/markdown`` (or ``text/plain``) ahead of JSON: the context block as
    the text to paste into a prompt."""
    accept = request.headers.get("accept", "").lower()
    text = min((accept.find(t) for t in ("text/markdown", "text/plain") if t in accept), default=-1)
    return text >= 0 and (
        "application/json" not in accept or text < accept.find("application/json")
    )


def _endpoint(api: Api, route: Route) -> Any:
    async def endpoint(request: Request) -> Response:
        if stages.CLOCK is not None:
            stages.CLOCK.request()
        tool = toolsmod.NAMED[route.tool]
        secret = bearer(request)
        raw = await request.body() if route.method == "POST" else b""  # 413 past the limit

        def prepare() -> tuple[hivemem.ScopedMemory, dict[str, Any]]:
            token = api.verify(secret)
            with timed("auth"):
                mem = api.bind(token, request, tool.writes)
            return mem, arguments(request, route, tool, raw)

        def call(mem: hivemem.ScopedMemory, args: dict[str, Any]) -> dict[str, Any]:
            with timed("library"):
                return toolsmod.call(mem, tool.name, args)

        if tool.writes or tool.name in toolsmod.MAINTENANCE:
            mem, args = await run_in_threadpool(prepare)  # never on the writer's thread
            result = await api.run(tool, functools.partial(call, mem, args))
        else:  # a read: the token, the scope and the tool on one trip to a thread
            result = await api.read(lambda: call(*prepare()))
        with timed("serialise"):
            if tool.name == "memory_context" and _wants_markdown(request):
                return Response(result["block"], 200, media_type="text/markdown; charset=utf-8")
            return json_response(result)

    endpoint.__name__ = route.operation_id
    return endpoint


def create_app(
    store: Store, settings: Settings | None = None, *, ui_start_key: str | None = None
) -> FastAPI:
    """The ASGI app over ``store``, with the web inspector under ``/ui``
    (``ui_start_key``: the one-time key of ``hivemem ui``'s link). Settings default to
    the store's. Call ``app.state.api.close()`` (or run the app's lifespan) to stop the
    writer thread."""
    settings = settings or store.settings
    api = Api(store, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        api.close()

    app = FastAPI(
        lifespan=lifespan,
        title="HiveMem",
        version=hivemem.__version__,
        description="Long-term memory for AI agents. Every route but /v1/health needs a "
        "bearer token (`hivemem token create`) granted the scope in the URL.",
        docs_url=None,  # served offline by mount_docs below
        redoc_url=None,
    )
    app.state.api = api
    mount_docs(app)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return error_response(exc.status, exc.message, exc.field)

    @app.exception_handler(HiveMemError)
    async def _library_error(request: Request, exc: HiveMemError) -> Response:
        status, body = from_library(exc)
        body = await run_in_threadpool(api.scrub_error, exc, body)
        return json_response(body, status, error_headers(exc))

    @app.exception_handler(BodyTooLarge)
    async def _too_large(request: Request, exc: BodyTooLarge) -> Response:
        limit = settings.http_max_body_bytes
        return error_response(413, f"the request body is over the limit of {limit} bytes")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        status = exc.status_code if exc.status_code in STATUSES else 400
        message = exc.detail if isinstance(exc.detail, str) else STATUSES[status][1]
        if status == 404:
            message = f"no route {request.method} {request.url.path}"
        return error_response(status, message)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        field = ".".join(str(p) for p in first.get("loc", ())[1:]) or None
        return error_response(422, first.get("msg", "invalid request"), field)

    @app.get("/v1/health", operation_id="health", tags=["meta"])
    async def health() -> dict[str, str]:
        """Liveness: no token needed."""
        return {"status": "ok", "version": hivemem.__version__}

    @app.get("/v1/token", operation_id="whoami", tags=["meta"], responses=_errors(401))
    async def whoami(request: Request) -> Response:
        """The token this request carries: its name and the scopes it is granted."""
        return json_response((await api.authenticate(request)).to_dict())

    @app.get("/v1/tools", operation_id="list_tools", tags=["meta"], responses=_errors(401, 422))
    async def list_tools(request: Request, profile: str | None = None) -> Response:
        """The tools as OpenAI-style function definitions: every tool, or those of
        ``profile`` (a profile name or a comma-separated list of tool names)."""
        await api.authenticate(request)
        return json_response({"tools": toolsmod.openai_functions(profile)})

    for route in operations(toolsmod.NAMED):
        tool = toolsmod.NAMED[route.tool]
        app.add_api_route(
            route.path,
            _endpoint(api, route),
            methods=[route.method],
            operation_id=route.operation_id,
            summary=tool.name,
            description=tool.description,
            tags=["tools" if route.path.startswith(f"{PREFIX}/tools") else "memories"],
            openapi_extra=route.openapi(tool, ERROR_REF),
        )

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            components = schema.setdefault("components", {})
            components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
            components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            schema["security"] = [{"bearer": []}]
            schema["paths"]["/v1/health"]["get"]["security"] = []
            app.openapi_schema = schema
        return app.openapi_schema

    mem0_routes.mount(app, api, _json_body, json_response)  # Mem0's REST routes: /mem0
    app.openapi = openapi  # type: ignore[method-assign]
    ui.mount(app, api, ui_start_key)  # the web inspector: /ui (hivemem.frontends.http.ui)
    # Inside Starlette's own error middleware: a bug answers in the one error shape.
    app.add_middleware(Guard, max_body_bytes=settings.http_max_body_bytes)
    return app


ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        s: {"description": STATUSES[s][1], "content": {"application/json": {"schema": ERROR_REF}}}
        for s in statuses
    }


__all__ = ["REST_ROUTES", "create_app"]
