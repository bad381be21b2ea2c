"""The inspector's pages and actions under ``/ui`` (see ``docs/inspector.md``).

Each handler: who is asking (``Ui.who``) → the scope handle, checked against what the
principal may do there (``Ui.bind``) → a library read (``hivemem.lifecycle.inspection``) or a
facade write (``ScopedMemory.correct/confirm/delete/promote/alias``, on the API's writer
thread) → a template, or a redirect after a write. Errors are translated once, in
``Ui.guarded``: a library error or a refusal becomes an HTML error page with the status
the JSON API would give; a missing sign-in becomes a redirect to the sign-in form.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ....errors import HiveMemError, InvalidInput
from ....facade.memory import ScopedMemory
from ....lifecycle import inspection
from ....types import CATEGORIES, Kind, MemoryType, Status
from ....write import categories
from ..errors import error_headers, from_library
from . import render
from .auth import (
    COOKIE,
    LOGIN_COOKIE,
    LocalPrincipal,
    Principal,
    Session,
    Sessions,
    TokenPrincipal,
    same,
)

PREFIX = "/ui"
OVERVIEW_TTL_S = 30.0
DOCTOR_TTL_S = 300.0
DOCTOR_AUTO_MAX = 20_000  # memories in the scope up to which the doctor runs by itself
SEARCH_LIMIT = 10  # hits a search page shows unless ?limit= asks for up to 50
ACTIONS = ("correct", "supersede", "confirm", "delete", "promote")
DONE = {  # ?done=… → the notice shown after a redirect (never the parameter's text)
    "correct": "Corrected: this is the new version; the old one is superseded.",
    "supersede": "Superseded: this is the new version; the old one is kept in the chain.",
    "confirm": "Confirmed: confidence 1.0, protected from decay.",
    "delete": "Deleted: it no longer appears in search or lists.",
    "promote": "Promoted: this is the copy in the shared scope.",
    "alias": "Alias added.",
}


class UiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class SignIn(Exception):
    """No session: send the browser to the sign-in form."""


class Ui:
    """The inspector over one ``hivemem.frontends.http.app.Api`` (its store, tokens, writer)."""

    def __init__(self, api: Any, start_key: str | None = None) -> None:
        self.api = api
        self.store = api.store
        self.sessions = Sessions(self.store, start_key, submit=api.writer.submit)
        # each printed value: the secrets known at the start of the page (refreshed by
        # the whole-page scrub before, so one store check a page, not one a value)
        self.env = render.environment(lambda text: self.store.scrubber.scrub(text, refresh=False))
        self._overviews: dict[str, tuple[float, inspection.Overview]] = {}
        self._doctor: tuple[float, Any, Any] | None = None  # (when, report, clock time)

    def scrub(self, text: str) -> str:
        return self.store.scrub(text)

    # ------------------------------------------------------------------ who and where

    async def who(self, request: Request) -> tuple[Principal, Session | None]:
        header = request.headers.get("authorization")
        if header is not None:
            kind, _, secret = header.partition(" ")
            found = None
            if kind.lower() == "bearer" and secret.strip():
                found = await run_in_threadpool(self.sessions.verify_token, secret)
            if found is None:
                raise UiError(401, "unknown or revoked token")
            self.api.note_use(found.id)
            return found, None
        known = await run_in_threadpool(self.sessions.principal, request.cookies.get(COOKIE))
        if known is None:
            raise SignIn
        if isinstance(known[0], TokenPrincipal):
            self.api.note_use(known[0].id)
        return known

    def bind(
        self, principal: Principal, scope: str, level: str, shared: tuple[str, ...] = ()
    ) -> ScopedMemory:
        mem = self.store.scope(scope, shared=shared)
        for name in (mem.name, *mem.shared):
            if not principal.can(name, level):
                raise UiError(403, f"you have no {level} access to scope {name!r}")
        # Looking is not using: the inspector's reads do not count as accesses.
        mem.settings = mem.settings.replace(track_access=False)
        return mem

    def scopes(self, principal: Principal) -> list[tuple[str, bool]]:
        """(scope, writable) the principal may read."""
        if isinstance(principal, LocalPrincipal):
            return [(s, True) for s in self.store.scopes()]
        return [(s, level == "write") for s, level in sorted(principal.scopes.items())]

    def render(
        self,
        request: Request,
        name: str,
        code: int = 200,
        *,
        failure: HiveMemError | None = None,
        **context: Any,
    ) -> Response:
        context.setdefault("principal", None)
        context.setdefault("session", None)
        if failure is None:
            self.scrub("")  # refresh the secret values once, before the values are printed
            return render.page(self.env, self.scrub, name, code, request=request, **context)
        # The page of a library error never needs the store (it may be down): the
        # secrets known now (``Scrubber.refresh_for_error``), and its Retry-After.
        scrubber = self.store.scrubber
        scrubber.refresh_for_error(failure)
        page = render.page(
            self.env,
            lambda text: scrubber.scrub(text, refresh=False),
            name,
            code,
            request=request,
            **context,
        )
        page.headers.update(error_headers(failure) or {})
        return page

    def context(
        self, request: Request, principal: Principal, session: Session | None, scope: str
    ) -> dict[str, Any]:
        return {
            "principal": principal,
            "session": session,
            "scope": scope,
            "writable": principal.can(scope, "write"),
            "csrf": session.csrf if session else "",
            "notice": DONE.get(request.query_params.get("done", "")),
        }

    # ------------------------------------------------------------------ error translation

    def guarded(self, handler: Callable[..., Awaitable[Response]]) -> Callable:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except SignIn:
                if request.method != "GET":
                    return self.render(
                        request, "error.html", 401, status=401, message="sign in first"
                    )
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                back = quote(target)  # a way back too long for a Location header is dropped
                where = f"?next={back}" if len(back) <= _MAX_NEXT else ""
                return RedirectResponse(f"{PREFIX}/login{where}", 303)
            except UiError as exc:
                return self.render(
                    request, "error.html", exc.status, status=exc.status, message=exc.message
                )
            except HiveMemError as exc:
                status, body = from_library(exc)
                error = body["error"]
                message = error["message"] + (
                    f" (field: {error['field']})" if "field" in error else ""
                )
                return self.render(
                    request, "error.html", status, failure=exc, status=status, message=message
                )

        endpoint.__name__ = handler.__name__
        return endpoint

    # ------------------------------------------------------------------ forms

    async def form(self, request: Request, session: Session | None) -> dict[str, str]:
        """The posted form (urlencoded), after the CSRF check of a cookie session."""
        raw = await request.body()
        try:
            fields = {
                k: v[-1] for k, v in parse_qs(raw.decode("utf-8"), keep_blank_values=True).items()
            }
        except UnicodeDecodeError:
            raise UiError(400, "the form is not UTF-8") from None
        if session is not None and not same(session.csrf, fields.get("csrf")):
            raise UiError(403, "missing or wrong CSRF token: reload the page and try again")
        return fields

    def overview(self, mem: ScopedMemory, run_doctor: bool = False) -> inspection.Overview:
        """The scope's overview: counts cached for ``OVERVIEW_TTL_S`` (dropped after a
        write through the inspector); the doctor's findings of the last run. The doctor
        reads the whole file (seconds at 100k memories), so it runs by itself only on
        small stores, when its findings are older than ``DOCTOR_TTL_S``, and else when
        asked (``run_doctor``)."""
        now = time.monotonic()
        cached = self._overviews.get(mem.name)
        if cached and now - cached[0] < OVERVIEW_TTL_S:
            found = cached[1]
        else:
            found = inspection.overview(mem)
            self._overviews[mem.name] = (now, found)
        stale = self._doctor is None or now - self._doctor[0] > DOCTOR_TTL_S
        if run_doctor or (stale and found.total <= DOCTOR_AUTO_MAX):
            from ....evaluation.doctor import diagnose

            self._doctor = (now, diagnose(self.store), self.store.clock())
        return replace(found, doctor=self._doctor[1] if self._doctor else None)

    def doctor_checked(self) -> Any:
        return self._doctor[2] if self._doctor else None

    def changed(self, scope: str) -> None:
        self._overviews.pop(scope, None)


def _filters(request: Request) -> dict[str, Any]:
    """The list and search filters from the query string (blank = not given)."""
    q = request.query_params

    def one(name: str) -> str | None:
        value = q.get(name, "").strip()
        return value or None

    tags = [t.strip() for t in q.getlist("tag") if t.strip()]
    return {
        "kind": one("kind"),
        "type": one("type"),
        "category": one("category"),
        "status": one("status"),
        "session_id": one("session"),
        "tags": tags or None,
        "since": one("since"),
        "until": one("until"),
    }


def _choices() -> dict[str, list[str]]:
    return {
        "kinds": [k.value for k in Kind],
        "types": [t.value for t in MemoryType],
        "statuses": [s.value for s in Status],
        "categories": list(CATEGORIES),
    }


def mount(app: Any, api: Any, start_key: str | None = None) -> Ui:
    """Add the inspector's routes and static files to ``app``; returns its state."""
    from starlette.staticfiles import StaticFiles

    ui = Ui(api, start_key)
    app.state.ui = ui
    add = app.router.add_route

    def route(path: str, methods: list[str]) -> Callable:
        def register(handler: Callable[..., Awaitable[Response]]) -> Callable:
            add(PREFIX + path, ui.guarded(handler), methods=methods, include_in_schema=False)
            return handler

        return register

    # ------------------------------------------------------------------ sign-in

    @route("/login", ["GET"])
    async def login_form(request: Request, error: str | None = None, status: int = 200) -> Response:
        import secrets as secretsmod

        nonce = request.cookies.get(LOGIN_COOKIE) or secretsmod.token_urlsafe(24)
        response = ui.render(
            request,
            "login.html",
            status,
            csrf=nonce,
            error=error,
            next=_safe_next(request.query_params.get("next")),
        )
        response.set_cookie(
            LOGIN_COOKIE, nonce, max_age=3600, path=PREFIX, httponly=True, samesite="strict"
        )
        return response

    @route("/login", ["POST"])
    async def login(request: Request) -> Response:
        fields = await ui.form(request, None)
        if not same(request.cookies.get(LOGIN_COOKIE), fields.get("csrf")):
            raise UiError(403, "missing or wrong CSRF token: reload the sign-in page")
        secret = fields.get("token", "").strip()
        found = await run_in_threadpool(ui.sessions.verify_token, secret) if secret else None
        if found is None:
            return await login_form(request, "unknown or revoked token", 401)
        session_id = await ui.api.write(lambda: ui.sessions.start(found))
        return _signed_in(session_id, _safe_next(fields.get("next")))

    @route("/start", ["GET"])
    async def start(request: Request) -> Response:
        key = request.query_params.get("key", "")
        session_id = await ui.api.write(lambda: ui.sessions.redeem(key))
        if session_id is None:
            raise UiError(
                403,
                "this start link was used already or is wrong; "
                "run `hivemem ui` again, or sign in with a token",
            )
        return _signed_in(session_id, PREFIX + "/")

    @route("/logout", ["POST"])
    async def logout(request: Request) -> Response:
        _principal, session = await ui.who(request)
        await ui.form(request, session)
        cookie = request.cookies.get(COOKIE)
        await ui.api.write(lambda: ui.sessions.end(cookie))
        response = RedirectResponse(f"{PREFIX}/login", 303)
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    # ------------------------------------------------------------------ pages

    @route("", ["GET"])
    async def root(request: Request) -> Response:
        return RedirectResponse(f"{PREFIX}/", 307)

    @route("/", ["GET"])
    async def home(request: Request) -> Response:
        principal, session = await ui.who(request)
        scopes = await run_in_threadpool(ui.scopes, principal)
        return ui.render(
            request,
            "home.html",
            principal=principal,
            session=session,
            csrf=session.csrf if session else "",
            scopes=scopes,
        )

    @route("/scopes/{scope}", ["GET"])
    async def overview(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        run_doctor = request.query_params.get("doctor") == "run"
        found = await run_in_threadpool(ui.overview, mem, run_doctor)
        return ui.render(
            request,
            "overview.html",
            **ui.context(request, principal, session, mem.name),
            o=found,
            doctor_checked=ui.doctor_checked(),
            chart=render.growth_chart(found.growth),
            page_name="overview",
        )

    @route("/scopes/{scope}/memories", ["GET"])
    async def memories(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        filters = _filters(request)
        cursor = request.query_params.get("cursor") or None
        newer = request.query_params.get("newer") or None
        found = await run_in_threadpool(
            lambda: inspection.page(mem, cursor=cursor, newer=newer, **filters)
        )
        keep = [
            (k, v)
            for k, v in request.query_params.multi_items()
            if k not in {"cursor", "newer"} and v
        ]
        next_url = (
            f"?{urlencode([*keep, ('cursor', found.next_cursor)])}" if found.next_cursor else None
        )
        return ui.render(
            request,
            "memories.html",
            **ui.context(request, principal, session, mem.name),
            page=found,
            f=filters,
            tag=", ".join(filters["tags"] or []),
            next_url=next_url,
            prev_url=f"?{urlencode([*keep, ('newer', found.prev_cursor)])}"
            if found.prev_cursor
            else None,
            first_url=f"?{urlencode(keep)}" if found.prev_cursor else None,
            choices=_choices(),
            page_name="memories",
        )

    @route("/scopes/{scope}/search", ["GET"])
    async def search(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        query = request.query_params.get("q", "")
        filters = _filters(request)
        limit = min(_int(request.query_params.get("limit") or str(SEARCH_LIMIT), "limit"), 50)
        hits: list[Any] = []
        if query.strip():  # the category is a filter of the search (a full page of it)
            hits = await run_in_threadpool(lambda: mem.search(query, max(limit, 1), **filters))
        return ui.render(
            request,
            "search.html",
            **ui.context(request, principal, session, mem.name),
            q=query,
            hits=hits,
            fell_back=categories.fell_back(hits),
            limit=limit,
            f=filters,
            tag=", ".join(filters["tags"] or []),
            choices=_choices(),
            page_name="search",
        )

    @route("/scopes/{scope}/memories/{id}", ["GET"])
    async def memory(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        found = await run_in_threadpool(inspection.detail, mem, request.path_params["id"])
        targets = [
            s for s, w in await run_in_threadpool(ui.scopes, principal) if w and s != mem.name
        ]
        return ui.render(
            request,
            "memory.html",
            **ui.context(request, principal, session, mem.name),
            d=found,
            m=found.memory,
            targets=targets,
            page_name="memories",
        )

    @route("/scopes/{scope}/entities", ["GET"])
    async def entities(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        prefix = request.query_params.get("prefix", "").strip() or None
        offset = _int(request.query_params.get("offset", "0"), "offset")
        found = await run_in_threadpool(
            lambda: inspection.entities(
                mem, prefix=prefix, limit=inspection.PAGE_SIZE + 1, offset=offset
            )
        )
        more = len(found) > inspection.PAGE_SIZE
        nav = {"prefix": prefix or ""}
        return ui.render(
            request,
            "entities.html",
            **ui.context(request, principal, session, mem.name),
            entities=found[: inspection.PAGE_SIZE],
            prefix=prefix or "",
            next_url=f"?{urlencode({**nav, 'offset': offset + inspection.PAGE_SIZE})}"
            if more
            else None,
            prev_url=f"?{urlencode({**nav, 'offset': max(offset - inspection.PAGE_SIZE, 0)})}"
            if offset
            else None,
            page_name="entities",
        )

    @route("/scopes/{scope}/entity", ["GET"])
    async def entity(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        name = request.query_params.get("name", "")
        found, linked = await run_in_threadpool(lambda: mem.entity(name, limit=200))
        return ui.render(
            request,
            "entity.html",
            **ui.context(request, principal, session, mem.name),
            e=found,
            memories=linked,
            page_name="entities",
        )

    @route("/scopes/{scope}/sessions", ["GET"])
    async def sessions(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        offset = _int(request.query_params.get("offset", "0"), "offset")
        size = inspection.PAGE_SIZE
        found = await run_in_threadpool(
            lambda: inspection.sessions(mem, limit=size + 1, offset=offset)
        )
        return ui.render(
            request,
            "sessions.html",
            **ui.context(request, principal, session, mem.name),
            sessions=found[:size],
            next_url=f"?offset={offset + size}" if len(found) > size else None,
            prev_url=f"?offset={max(offset - size, 0)}" if offset else None,
            page_name="sessions",
        )

    @route("/scopes/{scope}/sessions/{sid}", ["GET"])
    async def session_page(request: Request) -> Response:
        principal, session = await ui.who(request)
        mem = ui.bind(principal, request.path_params["scope"], "read")
        found = await run_in_threadpool(inspection.session, mem, request.path_params["sid"])
        return ui.render(
            request,
            "session.html",
            **ui.context(request, principal, session, mem.name),
            s=found,
            sid=request.path_params["sid"],
            page_name="sessions",
        )

    # ------------------------------------------------------------------ actions

    @route("/scopes/{scope}/memories/{id}/{action}", ["POST"])
    async def act(request: Request) -> Response:
        principal, session = await ui.who(request)
        action = request.path_params["action"]
        if action not in ACTIONS:
            raise UiError(404, f"no action {action!r}")
        fields = await ui.form(request, session)
        scope, memory_id = request.path_params["scope"], request.path_params["id"]
        shared: tuple[str, ...] = (fields.get("to", "").strip(),) if action == "promote" else ()
        if action == "promote" and not shared[0]:
            raise InvalidInput("to", "name the shared scope to promote to")
        mem = ui.bind(principal, scope, "write", shared)
        by = f"ui:{principal.name}"

        def run() -> Any:
            if action == "correct":
                return mem.correct(memory_id, fields.get("content", ""), minor=True, updated_by=by)
            if action == "supersede":
                reason = fields.get("reason", "").strip()
                if not reason:
                    raise InvalidInput("reason", "say why the new version replaces this one")
                return mem.correct(
                    memory_id, fields.get("content", ""), reason=reason, updated_by=by
                )
            if action == "confirm":
                return mem.confirm(memory_id, updated_by=by)
            if action == "delete":
                return mem.delete(memory_id, updated_by=by)
            return mem.promote(
                memory_id, shared[0], supersede_reason=fields.get("reason") or None, updated_by=by
            )

        result = await ui.api.write(run)
        ui.changed(result.scope)
        ui.changed(mem.name)
        where = (
            f"{PREFIX}/scopes/{quote(result.scope, safe='')}/memories/{quote(result.id, safe='')}"
        )
        return RedirectResponse(f"{where}?done={action}", 303)

    @route("/scopes/{scope}/entity/alias", ["POST"])
    async def alias(request: Request) -> Response:
        principal, session = await ui.who(request)
        fields = await ui.form(request, session)
        mem = ui.bind(principal, request.path_params["scope"], "write")
        name = fields.get("name", "")
        found = await ui.api.write(lambda: mem.alias(name, fields.get("alias", "")))
        where = f"{PREFIX}/scopes/{quote(mem.name, safe='')}/entity"
        return RedirectResponse(f"{where}?{urlencode({'name': found.name, 'done': 'alias'})}", 303)

    app.mount(f"{PREFIX}/static", StaticFiles(directory=str(render.STATIC)), name="ui-static")

    async def unknown(request: Request) -> Response:  # after the mount: never shadows it
        raise UiError(404, f"no page {request.url.path}")

    add(f"{PREFIX}/{{rest:path}}", ui.guarded(unknown), methods=["GET"], include_in_schema=False)
    return ui


def _int(raw: str, name: str) -> int:
    """A whole number of the query string; its bounds are the library's (an offset:
    ``hivemem.arguments.offset``, checked by the read it is passed to, as for the API)."""
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(name, f"expected a whole number, got {raw[:40]!r}") from None
    if value < 0:
        raise InvalidInput(name, f"expected a whole number >= 0, got {value}")
    return value


# The longest way back after sign-in kept in a URL (clients refuse Location headers past
# 64 kB; a hostile URL percent-encodes to many times its length).
_MAX_NEXT = 4096


def _safe_next(target: str | None) -> str:
    """Where to go after sign-in: a path of the inspector only (no open redirect)."""
    if (
        target
        and len(target) <= _MAX_NEXT
        and target.startswith(PREFIX + "/")
        and not target.startswith("//")
        and "\\" not in target
    ):
        return target
    return PREFIX + "/"


def _signed_in(session_id: str, target: str) -> Response:
    response = RedirectResponse(target, 303)
    response.set_cookie(COOKIE, session_id, path=PREFIX, httponly=True, samesite="strict")
    response.delete_cookie(LOGIN_COOKIE, path=PREFIX)
    return response
