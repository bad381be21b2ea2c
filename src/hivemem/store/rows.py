"""Rows of ``memories`` to ``Memory`` values and back: the column list, the text form of
times and JSON fields, and which fields an update may set. Shared by the SQL of the
SQLite backend and by migrations; no SQL is executed here."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from typing import Any

import numpy as np

from ..clock import from_text, to_text
from ..types import Kind, Memory, MemoryType, Status

COLUMNS = [
    "id",
    "scope",
    "kind",
    "type",
    "key",
    "content",
    "content_hash",
    "source",
    "status",
    "valid_from",
    "valid_until",
    "supersedes_id",
    "supersede_reason",
    "supersede_kind",
    "updated_by",
    "confidence",
    "decay_rate",
    "access_count",
    "last_accessed",
    "event_time",
    "created_at",
    "updated_at",
    "expires_at",
    "session_id",
    "role",
    "tags",
    "attributes",
    "source_ids",
    "category",
]
SELECT = ", ".join(f"m.{c}" for c in COLUMNS)
INSERT = f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
TIME_FIELDS = {
    "valid_from",
    "valid_until",
    "last_accessed",
    "event_time",
    "created_at",
    "updated_at",
    "expires_at",
}
JSON_FIELDS = {"tags", "attributes", "source_ids"}
UPDATABLE = {
    "confidence",
    "decay_rate",
    "tags",
    "attributes",
    "category",
    "expires_at",
    "updated_by",
    "type",
}


def placeholders(values: Sequence[Any]) -> str:
    return _placeholders(len(values))


@functools.lru_cache(maxsize=512)
def _placeholders(count: int) -> str:
    return ", ".join("?" * count)


_KINDS = {k.value: k for k in Kind}
_TYPES = {t.value: t for t in MemoryType}
_STATUSES = {s.value: s for s in Status}


def _json_list(text: str) -> tuple[Any, ...]:
    return () if text == "[]" else tuple(json.loads(text))


def _json_object(text: str) -> dict[str, Any]:
    return {} if text == "{}" else json.loads(text)


def row_to_memory(row: Sequence[Any]) -> Memory:
    # Unpacked by position (a row of another length raises), enums and the empty JSON
    # defaults by lookup: search reads ~60 rows per query, and this was ~10 µs a row.
    (
        id_,
        scope,
        kind,
        type_,
        key,
        content,
        content_hash,
        source,
        status,
        valid_from,
        valid_until,
        supersedes_id,
        supersede_reason,
        supersede_kind,
        updated_by,
        confidence,
        decay_rate,
        access_count,
        last_accessed,
        event_time,
        created_at,
        updated_at,
        expires_at,
        session_id,
        role,
        tags,
        attributes,
        source_ids,
        category,
    ) = row
    return Memory(
        id=id_,
        scope=scope,
        kind=_KINDS.get(kind) or Kind(kind),
        type=_TYPES.get(type_) or MemoryType(type_),
        key=key,
        content=content,
        content_hash=content_hash,
        source=source,
        status=_STATUSES.get(status) or Status(status),
        valid_from=from_text(valid_from),
        valid_until=from_text(valid_until),
        supersedes_id=supersedes_id,
        supersede_reason=supersede_reason,
        supersede_kind=supersede_kind,
        updated_by=updated_by,
        confidence=confidence,
        decay_rate=decay_rate,
        access_count=access_count,
        last_accessed=from_text(last_accessed),
        event_time=from_text(event_time),
        created_at=from_text(created_at),
        updated_at=from_text(updated_at),
        expires_at=from_text(expires_at),
        session_id=session_id,
        role=role,
        tags=_json_list(tags),
        attributes=_json_object(attributes),
        source_ids=_json_list(source_ids),
        category=category,
    )


def memory_to_row(m: Memory) -> tuple[Any, ...]:
    """The values of ``INSERT`` for ``m``: times as stored text, JSON fields as sorted
    JSON, enums as their values (once per write: a plan per column, and each time
    formatted once though ``valid_from``, ``created_at`` and ``updated_at`` share it)."""
    times: dict[datetime, str] = {}
    values = []
    for column, how in _ROW_PLAN:
        value = getattr(m, column)
        if value is None:
            pass
        elif how == "time":
            text = times.get(value)
            if text is None:
                text = times[value] = to_text(value)
            value = text
        elif how == "json":
            if not value:
                value = "[]" if isinstance(value, tuple | list) else "{}"
            else:
                value = json.dumps(
                    list(value) if isinstance(value, tuple) else dict(value),
                    ensure_ascii=False,
                    sort_keys=True,
                )
        elif isinstance(value, Enum):
            value = value.value
        values.append(value)
    return tuple(values)


_ROW_PLAN = [
    (c, "time" if c in TIME_FIELDS else "json" if c in JSON_FIELDS else "plain") for c in COLUMNS
]


def to_blob(vector: Sequence[float] | np.ndarray) -> bytes:
    """A vector as stored and cached: float32, native byte order (both backends)."""
    return np.asarray(vector, dtype=np.float32).tobytes()
