"""Validation of everything a caller may write, and the record it becomes.

These functions are pure: they raise ``InvalidInput`` naming the bad field, or return
clean values. The write rules that need the database (keys, supersede, dedup) live in
``hivemem.facade.memory`` and run inside one transaction; nothing here half-writes anything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from uuid6 import uuid7

from .. import text as textmod
from ..arguments import MAX_REF_CHARS, bad_character, storable
from ..arguments import limit as limit
from ..arguments import name as name
from ..clock import parse_time
from ..errors import InvalidInput
from ..settings import Settings
from ..types import CATEGORIES, Kind, Memory, Source, Status, as_tuple, resolve_enum, resolve_type

DEFAULT: Any = object()  # "use the policy" (e.g. the TTL of the source), unlike an explicit None

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SOURCE = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


def valid_content(value: object, settings: Settings, field: str = "content") -> str:
    """Text of a memory: a ``str`` (or UTF-8 ``bytes``), valid UTF-8, no NUL, not blank,
    within ``max_content_bytes``."""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(field, f"not valid UTF-8 (byte {exc.start})") from None
    if not isinstance(value, str):
        raise InvalidInput(field, f"expected text, got {type(value).__name__}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise bad_character(field, exc.start) from None
    if "\x00" in value:
        raise InvalidInput(field, f"contains a NUL character at {value.index(chr(0))}")
    if not value.strip():
        raise InvalidInput(field, "is empty")
    if size > settings.max_content_bytes:
        raise InvalidInput(
            field,
            f"{size} bytes exceeds the limit of {settings.max_content_bytes} "
            "(setting max_content_bytes)",
        )
    return value


def utf8(value: str, field: str) -> str:
    """``value`` unchanged if SQLite can store it (valid UTF-8: no unpaired surrogate)."""
    return storable(value, field)


def valid_source(value: object) -> str:
    if not isinstance(value, str) or not _SOURCE.match(value.strip().lower()):
        raise InvalidInput(
            "source",
            f"expected a lowercase identifier such as 'manual' or 'conversation', got {value!r}",
        )
    return value.strip().lower()


def valid_tags(value: object, settings: Settings) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput("tags", "expected a list of strings")
    if len(value) > settings.max_tags:
        raise InvalidInput("tags", f"{len(value)} tags exceeds the limit of {settings.max_tags}")
    out: list[str] = []
    for tag in value:
        clean = name(tag, "tags", settings.max_tag_chars)
        assert clean is not None
        if clean not in out:
            out.append(clean)
    return tuple(out)


def valid_attributes(
    value: object, settings: Settings, field: str = "attributes"
) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(field, f"expected an object (dict), got {type(value).__name__}")
    if not all(isinstance(k, str) for k in value):
        raise InvalidInput(field, "keys must be strings")
    try:
        encoded = json.dumps(dict(value), ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(field, f"not JSON-serialisable: {exc}") from None
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > settings.max_attributes_bytes:
        raise InvalidInput(
            field, f"{size} bytes exceeds the limit of {settings.max_attributes_bytes}"
        )
    storable(encoded, field)
    return json.loads(encoded)


def unit_interval(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise InvalidInput(field, f"expected a number between 0 and 1, got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(field, f"must be between 0 and 1, got {value}")
    return float(value)


def non_negative(value: object, field: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise InvalidInput(field, f"expected a finite number >= 0, got {value!r}")
    return float(value)


def valid_category(value: object) -> str:
    if not isinstance(value, str) or value.strip().lower() not in CATEGORIES:
        raise InvalidInput(
            "category", f"unknown category {value!r}; valid: {', '.join(CATEGORIES)}"
        )
    return value.strip().lower()


def optional_time(value: object, field: str) -> datetime | None:
    return None if value is None else parse_time(value, field)


def filters(
    settings: Settings,
    kind: Any = None,
    type: Any = None,  # noqa: A002 - the domain's word
    tags: Any = None,
    session_id: Any = None,
    exclude_sessions: Any = None,
    since: Any = None,
    until: Any = None,
    as_of: Any = None,
) -> dict[str, Any]:
    """The filter fields ``ScopedMemory.list`` and ``search`` share (and the inspector's
    pages), validated: the keyword arguments of a ``ListFilter`` or ``Query``."""
    return {
        "kinds": tuple(resolve_enum(Kind, k, "kind") for k in as_tuple(kind)),
        "types": tuple(resolve_type(t) for t in as_tuple(type)),
        "tags": valid_tags(as_tuple(tags), settings),
        "sessions": tuple(name(x, "session_id", 200) for x in as_tuple(session_id)),
        "exclude_sessions": tuple(
            name(x, "exclude_sessions", 200) for x in as_tuple(exclude_sessions)
        ),
        "since": optional_time(since, "since"),
        "until": optional_time(until, "until"),
        "as_of": optional_time(as_of, "as_of"),
    }


def expiry(source_name: str, created: datetime, settings: Settings) -> datetime | None:
    """``expires_at`` from the TTL policy of ``source``; ``None`` = never."""
    days = settings.ttl_days.get(source_name)
    if days is None:
        return None
    return created + timedelta(days=float(days))


def build_memory(
    scope: str,
    settings: Settings,
    now: datetime,
    *,
    content: object,
    key: object = None,
    type: object = None,  # noqa: A002 - the domain's word
    kind: object = Kind.FACT,
    source: object = Source.MANUAL,
    tags: object = None,
    attributes: object = None,
    confidence: object = None,
    decay_rate: object = None,
    event_time: object = None,
    expires_at: object = DEFAULT,
    session_id: object = None,
    role: object = None,
    source_ids: object = None,
    category: object = None,
    updated_by: object = None,
) -> Memory:
    """Validate every field a caller gave and build the active row of ``scope`` it
    becomes, stamped ``now``; raises ``InvalidInput`` naming the first bad field."""
    body = valid_content(content, settings)
    source_name = valid_source(source)
    if expires_at is DEFAULT:
        expires = expiry(source_name, now, settings)
    else:
        expires = optional_time(expires_at, "expires_at")
    ids = as_tuple(source_ids)
    for index, item in enumerate(ids):
        if not isinstance(item, str) or not item or len(item) > MAX_REF_CHARS:
            raise InvalidInput(f"source_ids[{index}]", "expected a memory id")
        storable(item, f"source_ids[{index}]")
    return Memory(
        id=str(uuid7()),
        scope=scope,
        kind=resolve_enum(Kind, kind, "kind"),  # type: ignore[arg-type]
        type=resolve_type(type if type is not None else settings.default_type),  # type: ignore[arg-type]
        key=name(key, "key", settings.max_key_chars, optional=True),
        content=body,
        content_hash=textmod.content_hash(body),
        source=source_name,
        status=Status.ACTIVE,
        valid_from=now,
        created_at=now,
        updated_at=now,
        confidence=1.0 if confidence is None else unit_interval(confidence, "confidence"),
        decay_rate=(
            settings.default_decay_rate
            if decay_rate is None
            else non_negative(decay_rate, "decay_rate")
        ),
        event_time=optional_time(event_time, "event_time"),
        expires_at=expires,
        session_id=name(session_id, "session_id", 200, optional=True),
        role=name(role, "role", 200, optional=True),
        tags=valid_tags(tags, settings),
        attributes=valid_attributes(attributes, settings),
        source_ids=ids,
        category=valid_category(category) if category is not None else "general",
        updated_by=name(updated_by, "updated_by", 200, optional=True),
    )


# openhive's team-name rule (the ``scope_names=slug`` setting): lowercase letters and
# digits in words joined by single hyphens, e.g. ``ops-team``, ``worker-1``.
SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def scope_slug(scope: str, settings: Settings, existing: Any) -> None:
    """Under ``scope_names=slug`` a new scope's name must be a slug (openhive's
    ``SLUG_RE``), else ``InvalidInput``. A scope that already holds rows (``existing()``
    lists the store's scopes; asked only for a name that is no slug) stays readable:
    tightening the rule never locks a team out of its memory."""
    if settings.scope_names != "slug" or SLUG.match(scope) or scope in existing():
        return
    raise InvalidInput(
        "scope",
        f"{scope!r} is not a slug (lowercase letters and digits joined by hyphens, e.g. "
        "'ops-team'): the scope_names setting is 'slug'",
    )


def statuses(value: object) -> tuple[Status, ...]:
    """A status filter (one status or several) as ``Status`` values; an unknown one is
    ``InvalidInput`` naming the valid ones."""
    return tuple(resolve_enum(Status, x, "status") for x in as_tuple(value))
