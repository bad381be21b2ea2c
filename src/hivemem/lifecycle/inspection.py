"""What the web inspector shows, as library reads over one ``ScopedMemory``: an
overview of a scope, keyset pages of memories, one memory with its chain, provenance,
related memories and entities, entity lists and sessions. Read-only: the inspector's
writes go through the facade's own methods (correct, confirm, delete, promote, alias).

Every memory passes the store's scrubber (the vault's secret values never leave), every
filter is validated here once (``InvalidInput`` naming the field), and nothing here
counts a whole scope per request but ``overview``, whose counts the caller may cache.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from .. import arguments
from ..clock import to_text
from ..errors import InvalidInput, NotFound
from ..providers.entities import canonical
from ..store.protocols import SessionInfo
from ..types import (
    CATEGORIES,
    Entity,
    Kind,
    ListFilter,
    Memory,
    Related,
    Status,
    as_tuple,
)
from ..write import categories as category_rules
from ..write import rules
from .maintenance import RunRecord, run_log

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle, StoreHandle

PAGE_SIZE = 50
CURSOR_SEPARATOR = "~"


@dataclass(frozen=True, slots=True)
class Page:
    """One page of memories, newest first; ``next_cursor`` reads the next, older page
    (None: this is the last), ``prev_cursor`` the newer one (None: this is the first)."""

    memories: list[Memory]
    next_cursor: str | None
    prev_cursor: str | None = None


class Report(Protocol):
    """The health checks ``overview`` shows (``hivemem.evaluation.doctor.Report``, from
    the caller: the checks sit above this layer)."""

    @property
    def ok(self) -> bool: ...

    @property
    def checks(self) -> tuple[Any, ...]: ...

    @property
    def failed(self) -> tuple[Any, ...]: ...


@dataclass(frozen=True, slots=True)
class Overview:
    """Counts of one scope (own rows only), growth per day, the embedding queue, the
    doctor's findings and the newest maintenance runs."""

    scope: str
    total: int
    by_status: dict[str, int]
    by_kind: dict[str, int]  # active memories
    by_type: dict[str, int]  # active memories
    by_category: dict[str, int]  # active memories
    growth: list[tuple[str, int]]  # (day, memories created that day)
    pending_embeddings: int
    doctor: Report | None
    runs: list[RunRecord]


@dataclass(frozen=True, slots=True)
class Detail:
    """One memory and what surrounds it."""

    memory: Memory
    chain: list[Memory]  # the supersede chain, oldest first
    sources: list[Memory]  # the memories it was drawn from (its source_ids), when visible
    missing_sources: list[str]  # source ids not visible from this scope
    drawn: list[Memory]  # memories drawn from it (facts of an episode)
    related: list[Related]
    entities: list[Entity]


@dataclass(frozen=True, slots=True)
class SessionView:
    info: SessionInfo | None
    turns: list[Memory]
    facts: list[Memory]  # memories consolidated from the session (any status)
    more_turns: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _scrubbed(mem: ScopedHandle, value: Any) -> Any:
    return mem.store.scrubbed(value)


def parse_cursor(cursor: str | None) -> tuple[str, str] | None:
    """A page cursor (``created_at~id``, as ``Page.next_cursor`` makes it) or None."""
    if not cursor:
        return None
    when, sep, memory_id = cursor.partition(CURSOR_SEPARATOR)
    try:
        datetime.fromisoformat(when)
    except ValueError:
        raise InvalidInput("cursor", f"not a page cursor: {cursor!r}") from None
    if not sep or not memory_id or len(memory_id) > 100:
        raise InvalidInput("cursor", f"not a page cursor: {cursor!r}")
    return when, arguments.storable(memory_id, "cursor")


def page(
    mem: ScopedHandle,
    *,
    kind: Any = None,
    type: Any = None,  # noqa: A002 - the domain's word
    category: Any = None,
    status: Any = None,
    session_id: Any = None,
    tags: Any = None,
    since: Any = None,
    until: Any = None,
    cursor: str | None = None,
    newer: str | None = None,
    limit: int = PAGE_SIZE,
) -> Page:
    """A keyset page of the scope's memories (own and shared), newest first. ``status``
    defaults to active; ``since``/``until`` bound when a memory was stored
    (``created_at``, the order of the pages; an index range); the other filters mean
    what they mean in ``ScopedMemory.list``. ``cursor`` (a ``next_cursor``) reads the
    page older than it, ``newer`` (a ``prev_cursor``) the page newer than it."""
    if cursor and newer:
        raise InvalidInput("newer", "give cursor or newer, not both")
    stored_since = rules.optional_time(since, "since")
    stored_until = rules.optional_time(until, "until")
    common = rules.filters(mem.settings, kind, type, tags, session_id)
    statuses = rules.statuses(status)
    categories = tuple(as_tuple(category))
    for name in categories:
        if name not in CATEGORIES:
            raise InvalidInput("category", f"unknown category {name!r}; valid: {CATEGORIES}")
    flt = ListFilter(**common, statuses=statuses or (Status.ACTIVE,), include_expired=True)
    size = rules.limit(limit, maximum=500)
    found = mem.store.inspection.page(
        mem.visible,
        flt,
        mem.store.clock(),
        categories=categories,
        before=parse_cursor(cursor),
        after=parse_cursor(newer),
        stored_since=stored_since,
        stored_until=stored_until,
        limit=size + 1,
    )
    more = len(found) > size
    if newer:  # the extra row, if any, is the newest: there is a page before this one
        found = found[-size:] if more else found
        older, newer_exists = bool(found), more
    else:
        found = found[:size]
        older, newer_exists = more, bool(cursor) and bool(found)
    last = found[-1] if found and older else None
    first = found[0] if found and newer_exists else None
    return Page(_scrubbed(mem, found), _key(last), _key(first))


def current_count(
    mem: ScopedHandle,
    *,
    kind: Any = None,
    type: Any = None,  # noqa: A002 - the domain's word
    tags: Any = None,
    category: Any = None,
) -> int:
    """How many current memories (active, not expired) of the visible scopes pass the
    filters, as ``ScopedMemory.list(..., include_expired=False)`` reads them: the total
    ``memory_list`` gives beside its page (openhive's seed lists every active entry)."""
    common = rules.filters(mem.settings, kind, type, tags)
    common["categories"] = category_rules.valid(category)
    flt = ListFilter(**common, statuses=(Status.ACTIVE,), include_expired=False)
    return mem.store.inspection.count(mem.visible, flt, mem.store.clock())


def _key(memory: Memory | None) -> str | None:
    return f"{to_text(memory.created_at)}{CURSOR_SEPARATOR}{memory.id}" if memory else None


def overview(
    mem: ScopedHandle, *, doctor: Callable[[StoreHandle], Report] | None = None, runs: int = 10
) -> Overview:
    """The scope's overview. Counts every row of the scope (tens of ms at 100k): cache
    it. ``doctor`` (``hivemem.evaluation.doctor.diagnose``, passed in by the caller: the
    health checks sit above this layer) adds the store's health checks; none by default
    (an integrity check reads the whole file)."""
    store = mem.store
    inspection = store.inspection
    by_status: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    by_category: Counter[str] = Counter()
    for status, kind, mtype, category, count in inspection.counts([mem.name]):
        by_status[status] += count
        if status == Status.ACTIVE.value:
            by_kind[kind] += count
            by_type[mtype] += count
            by_category[category] += count
    recent = [r for r in run_log(store, limit=200) if r.scope in (None, mem.name)][:runs]
    return Overview(
        scope=mem.name,
        total=sum(by_status.values()),
        by_status=dict(by_status.most_common()),
        by_kind=dict(by_kind.most_common()),
        by_type=dict(by_type.most_common()),
        by_category=dict(by_category.most_common()),
        growth=inspection.growth([mem.name]),
        pending_embeddings=store.vectors.pending_count([mem.name]),
        doctor=doctor(store) if doctor is not None else None,
        runs=recent,
    )


def detail(mem: ScopedHandle, memory_id: str) -> Detail:
    """One memory by id (any status) with its chain, provenance, related memories and
    entities. Raises ``NotFound`` when no memory of the visible scopes has that id."""
    if not isinstance(memory_id, str) or not memory_id:
        raise InvalidInput("id", "expected a memory id")
    rules.utf8(memory_id, "id")
    store = mem.store
    memory = store.memories.get(mem.visible, memory_id)
    if memory is None:
        raise NotFound(f"no memory {memory_id!r} visible from scope {mem.name!r}")
    sources = (
        store.memories.get_many(mem.visible, list(memory.source_ids)) if memory.source_ids else []
    )
    found = {m.id for m in sources}
    return Detail(
        memory=_scrubbed(mem, memory),
        chain=mem.history(memory.id),
        sources=_scrubbed(mem, sources),
        missing_sources=[s for s in memory.source_ids if s not in found],
        drawn=_scrubbed(mem, store.inspection.drawn_from(mem.visible, memory)),
        related=mem.related(memory.id),
        entities=store.inspection.entities_of(mem.visible, memory.id),
    )


def entities(
    mem: ScopedHandle, *, prefix: str | None = None, limit: int = PAGE_SIZE, offset: int = 0
) -> list[Entity]:
    """Entities of the visible scopes, most mentioned first (``prefix``: of the
    canonical name, e.g. "mel")."""
    clean = None
    if prefix:
        rules.utf8(prefix, "prefix")
        clean = canonical(prefix)
    return mem.store.inspection.entities(
        mem.visible, clean, rules.limit(limit, maximum=500), arguments.offset(offset)
    )


def sessions(mem: ScopedHandle, *, limit: int = PAGE_SIZE, offset: int = 0) -> list[SessionInfo]:
    """The own scope's sessions, latest activity first."""
    return mem.store.inspection.sessions(
        mem.name, rules.limit(limit, maximum=500), arguments.offset(offset)
    )


def session(mem: ScopedHandle, session_id: str, *, limit: int = 200) -> SessionView:
    """A session's turns (oldest first, at most ``limit``) and the memories consolidated
    from it (facts, summaries: any kind but episode, any status)."""
    sid = str(rules.name(session_id, "session_id", 200))
    info = mem.store.inspection.session(mem.name, sid)
    turns = page(mem, session_id=sid, kind=Kind.EPISODE, status=list(Status), limit=limit + 1)
    facts = page(
        mem,
        session_id=sid,
        kind=[k for k in Kind if k is not Kind.EPISODE],
        status=list(Status),
        limit=500,
    )
    if info is None and not turns.memories and not facts.memories:
        raise NotFound(f"no session {sid!r} in scope {mem.name!r}")
    shown = turns.memories[:limit]
    return SessionView(
        info,
        sorted(shown, key=lambda m: (m.event_time or m.created_at, m.id)),
        facts.memories,
        more_turns=len(turns.memories) > limit,
    )


__all__ = [
    "PAGE_SIZE",
    "Detail",
    "Overview",
    "Page",
    "SessionView",
    "detail",
    "entities",
    "overview",
    "page",
    "parse_cursor",
    "session",
    "sessions",
]
