"""Values that cross the public API: memories, hits, queries, and the vocabularies
(kind, type, status, source) with their aliases.

All results are frozen dataclasses. Times are timezone-aware UTC ``datetime`` values.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from .errors import InvalidInput


class Kind(enum.StrEnum):
    """How a memory was made."""

    EPISODE = "episode"  # a raw dialogue turn
    FACT = "fact"
    REFLECTION = "reflection"
    SUMMARY = "summary"
    NOTE = "note"  # an indexed file


class MemoryType(enum.StrEnum):
    """The role a memory plays in a prompt. Never changed automatically."""

    IDENTITY = "identity"
    LESSON = "lesson"
    DECISION = "decision"
    CONTEXT = "context"
    REFERENCE = "reference"
    HISTORICAL = "historical"


TYPE_ALIASES: Mapping[str, MemoryType] = {
    "core": MemoryType.IDENTITY,
    "self": MemoryType.IDENTITY,
    "warning": MemoryType.LESSON,
    "insight": MemoryType.LESSON,
    "learning": MemoryType.LESSON,
    "commitment": MemoryType.DECISION,
    "choice": MemoryType.DECISION,
    "active": MemoryType.CONTEXT,
    "background": MemoryType.CONTEXT,
    "pointer": MemoryType.REFERENCE,
    "link": MemoryType.REFERENCE,
    "archive": MemoryType.HISTORICAL,
    "past": MemoryType.HISTORICAL,
}


class Status(enum.StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    DELETED = "deleted"
    ARCHIVED = "archived"


class Source(enum.StrEnum):
    """Where a memory came from; drives its TTL (see ``Settings.ttl_days``)."""

    MANUAL = "manual"
    CONVERSATION = "conversation"
    CONSOLIDATION = "consolidation"
    SESSION_SUMMARY = "session_summary"
    TASK_COMPLETION = "task_completion"
    FILE_INDEX = "file_index"
    IMPORT = "import"
    PROMOTION = "promotion"


CATEGORIES = (
    "config",
    "code",
    "person",
    "project",
    "credential",
    "preference",
    "fact",
    "conversation",
    "task",
    "general",
)


def _choices(enum_cls: type[enum.StrEnum]) -> str:
    return ", ".join(member.value for member in enum_cls)


def resolve_type(value: str | MemoryType) -> MemoryType:
    """Canonical type for a name or alias; unknown names raise listing the valid ones."""
    if isinstance(value, MemoryType):
        return value
    if not isinstance(value, str):
        raise InvalidInput("type", f"expected a string, got {type(value).__name__}")
    name = value.strip().lower()
    if name in MemoryType.__members__.values():
        return MemoryType(name)
    if name in TYPE_ALIASES:
        return TYPE_ALIASES[name]
    aliases = ", ".join(f"{a}→{t.value}" for a, t in TYPE_ALIASES.items())
    raise InvalidInput(
        "type",
        f"unknown type {value!r}; valid types: {_choices(MemoryType)} (aliases: {aliases})",
    )


E = TypeVar("E", bound=enum.StrEnum)
T = TypeVar("T")


def resolve_enum(enum_cls: type[E], value: str | E, field_name: str) -> E:
    """Member of ``enum_cls`` named ``value``; anything else raises naming the field."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        try:
            return enum_cls(value.strip().lower())
        except ValueError:
            pass
    raise InvalidInput(field_name, f"unknown value {value!r}; valid: {_choices(enum_cls)}")


@dataclass(frozen=True, slots=True)
class Memory:
    """One row of ``memories``. See DESIGN.md §1 for the meaning of each field."""

    id: str
    scope: str
    kind: Kind
    type: MemoryType
    content: str
    source: str
    status: Status
    created_at: datetime
    updated_at: datetime
    valid_from: datetime
    key: str | None = None
    valid_until: datetime | None = None
    supersedes_id: str | None = None
    supersede_reason: str | None = None
    supersede_kind: str | None = None  # "hard" (new belief) or "soft" (minor correction)
    updated_by: str | None = None
    confidence: float = 1.0
    decay_rate: float = 0.0
    access_count: int = 0
    last_accessed: datetime | None = None
    event_time: datetime | None = None
    expires_at: datetime | None = None
    session_id: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)
    source_ids: tuple[str, ...] = ()
    category: str = "general"
    content_hash: str = ""

    @property
    def is_active(self) -> bool:
        return self.status is Status.ACTIVE

    @property
    def is_superseded(self) -> bool:
        return self.status is Status.SUPERSEDED

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (times as ISO 8601 strings)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class Explanation:
    """How a hit was scored: enough to reproduce the number by hand.

    ``lanes`` maps a lane name to its rank (1-based) and raw score for this memory;
    ``factors`` maps each multiplier applied after fusion to its value; ``candidates``
    is how many memories the lanes found for the query before ranking cut them to the
    limit (corvid's ``totalCandidates``; the same on every hit of one search).
    """

    lanes: Mapping[str, Mapping[str, float]]
    fused: float
    factors: Mapping[str, float]
    matched_terms: tuple[str, ...] = ()
    chunk_seq: int = 0
    notes: tuple[str, ...] = ()
    candidates: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "lanes": {k: dict(v) for k, v in self.lanes.items()},
            "fused": self.fused,
            "factors": dict(self.factors),
            "matched_terms": list(self.matched_terms),
            "chunk_seq": self.chunk_seq,
            "notes": list(self.notes),
            "candidates": self.candidates,
        }


@dataclass(frozen=True, slots=True)
class Entity:
    """A named thing memories mention, canonical within its scope, with the other names
    it goes by. ``type``: person, organization, project, location, tool, concept,
    mention (@handle), hashtag, email, url, date or other."""

    id: int
    scope: str
    name: str  # as first written
    canonical: str  # the lookup key (hivemem.providers.entities.canonical)
    type: str
    mention_count: int  # memories that mention it
    first_seen: datetime
    last_seen: datetime
    aliases: tuple[str, ...] = ()
    protected: bool = False  # decay leaves its memories alone; no job retypes it
    summary: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "name": self.name,
            "canonical": self.canonical,
            "type": self.type,
            "mention_count": self.mention_count,
            "first_seen": self.first_seen.isoformat(),
            "last_seen": self.last_seen.isoformat(),
            "aliases": list(self.aliases),
            "protected": self.protected,
            "summary": self.summary,
        }


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result: the memory, a score in [0, 1] comparable across queries, and why."""

    memory: Memory
    score: float
    explain: Explanation
    snippet: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory.to_dict(),
            "score": self.score,
            "snippet": self.snippet,
            "explain": self.explain.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Related:
    """A memory related to another one, and how much their words overlap (Jaccard): an
    answer of ``ScopedMemory.related`` (``hivemem.write.chains``)."""

    memory: Memory
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory.to_dict(), "score": self.score}


@dataclass(frozen=True, slots=True)
class Query:
    """A search request. Build one directly, or let ``ScopedMemory.search`` build it.

    Filters combine with AND. ``statuses`` defaults to active and superseded (superseded
    hits are flagged by their status and ranked below current ones); ``as_of`` replaces
    the status filter by "was valid at that time".
    """

    text: str
    limit: int = 10
    kinds: tuple[Kind, ...] = ()
    types: tuple[MemoryType, ...] = ()
    tags: tuple[str, ...] = ()  # a hit carries at least one of them
    sessions: tuple[str, ...] = ()
    exclude_sessions: tuple[str, ...] = ()
    since: datetime | None = None  # on event_time, else created_at
    until: datetime | None = None
    statuses: tuple[Status, ...] = (Status.ACTIVE, Status.SUPERSEDED)
    as_of: datetime | None = None
    min_score: float = 0.0
    include_expired: bool = False
    fts_syntax: bool = False  # opt-in: ``text`` is FTS5 query syntax, errors raise
    categories: tuple[str, ...] = ()  # automatic categories (corvid); see ScopedMemory.search
    # The places the caller reads of a longer page (context() asks for headroom): the
    # vector lane's seats go into these; 0: the whole limit (retrieval.fusion.seated).
    seat_page: int = 0


@dataclass(frozen=True, slots=True)
class ListFilter:
    """Filters of ``list``; the same meaning as in ``Query``."""

    kinds: tuple[Kind, ...] = ()
    types: tuple[MemoryType, ...] = ()
    tags: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    exclude_sessions: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    statuses: tuple[Status, ...] = (Status.ACTIVE,)
    as_of: datetime | None = None
    include_expired: bool = True
    key: str | None = None
    categories: tuple[str, ...] = ()


def as_tuple(value: object) -> tuple[Any, ...]:
    """``None`` → (), a single value → (value,), a sequence → tuple. The values are the
    caller's to check (a filter argument may hold anything a user passed)."""
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return (value,)
    return tuple(value)
