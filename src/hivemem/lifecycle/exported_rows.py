"""One exported memory line as a ``Memory``: every field validated with the rules of the
write path (``hivemem.lifecycle.portability`` imports files of them; ``rescue`` reads
them back from damaged stores)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .. import text as textmod
from ..clock import to_text
from ..errors import InvalidInput
from ..settings import Settings
from ..types import Kind, Memory, Status, resolve_enum, resolve_type
from ..write import rules

_REQUIRED = (
    "id",
    "scope",
    "kind",
    "type",
    "content",
    "source",
    "status",
    "created_at",
    "updated_at",
    "valid_from",
)
_FIELDS = frozenset(Memory.__dataclass_fields__)


def memory_from_dict(
    value: Mapping[str, Any], settings: Settings, *, scope: str | None = None
) -> Memory:
    """A ``Memory`` from one exported object, every field validated with the rules of
    the write path. ``scope`` overrides the row's own scope. Raises ``InvalidInput``
    naming the first bad field."""
    unknown = sorted(set(value) - _FIELDS)
    if unknown:
        raise InvalidInput(unknown[0], "unknown field (written by a newer HiveMem?)")
    for name in _REQUIRED:
        if value.get(name) is None and not (name == "scope" and scope is not None):
            raise InvalidInput(name, "is required")
    body = rules.valid_content(value["content"], settings)
    return Memory(
        id=_name(value, "id", 200),  # type: ignore[arg-type]
        scope=scope or _name(value, "scope", settings.max_scope_chars),  # type: ignore[arg-type]
        kind=resolve_enum(Kind, _text(value, "kind"), "kind"),
        type=resolve_type(_text(value, "type")),
        key=_name(value, "key", settings.max_key_chars, optional=True),
        content=body,
        content_hash=textmod.content_hash(body),
        source=rules.valid_source(value["source"]),
        status=resolve_enum(Status, _text(value, "status"), "status"),
        valid_from=_time(value, "valid_from"),  # type: ignore[arg-type]
        valid_until=_time(value, "valid_until"),
        supersedes_id=_name(value, "supersedes_id", 200, optional=True),
        supersede_reason=_name(value, "supersede_reason", 1000, optional=True),
        supersede_kind=_supersede_kind(value.get("supersede_kind")),
        updated_by=_name(value, "updated_by", 200, optional=True),
        confidence=rules.unit_interval(value.get("confidence", 1.0), "confidence"),
        decay_rate=rules.non_negative(value.get("decay_rate", 0.0), "decay_rate"),
        access_count=_count(value.get("access_count", 0)),
        last_accessed=_time(value, "last_accessed"),
        event_time=_time(value, "event_time"),
        created_at=_time(value, "created_at"),  # type: ignore[arg-type]
        updated_at=_time(value, "updated_at"),  # type: ignore[arg-type]
        expires_at=_time(value, "expires_at"),
        session_id=_name(value, "session_id", 200, optional=True),
        role=_name(value, "role", 200, optional=True),
        tags=rules.valid_tags(value.get("tags"), settings),
        attributes=rules.valid_attributes(value.get("attributes"), settings),
        source_ids=_id_list(value.get("source_ids")),
        category=rules.valid_category(value.get("category", "general")),
    )


def _text(value: Mapping[str, Any], name: str) -> str:
    raw = value[name]
    if not isinstance(raw, str):
        raise InvalidInput(name, f"expected text, got {type(raw).__name__}")
    return raw


def _name(
    value: Mapping[str, Any], name: str, max_chars: int, *, optional: bool = False
) -> str | None:
    return rules.name(value.get(name), name, max_chars, optional=optional)


def _time(value: Mapping[str, Any], name: str) -> datetime | None:
    raw = value.get(name)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidInput(name, f"expected an ISO 8601 time, got {type(raw).__name__}")
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(name, f"cannot read {raw!r} as an ISO 8601 time") from None
    try:
        parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
        to_text(parsed)  # the stored form must exist (years 1..9999 in UTC)
    except (OverflowError, ValueError):
        raise InvalidInput(name, f"{raw!r} is out of range") from None
    return parsed


def _supersede_kind(raw: object) -> str | None:
    if raw is None or raw in ("hard", "soft"):
        return raw
    raise InvalidInput("supersede_kind", f"expected 'hard', 'soft' or null, got {raw!r}")


def _count(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise InvalidInput("access_count", f"expected a whole number >= 0, got {raw!r}")
    return raw


def _id_list(raw: object) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, list):
        raise InvalidInput("source_ids", "expected a list of memory ids")
    return tuple(rules.name(item, "source_ids", 200) for item in raw)  # type: ignore[misc]


__all__ = ["memory_from_dict"]
