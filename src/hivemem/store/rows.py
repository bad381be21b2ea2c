"""Rows of ``memories`` to ``Memory`` values and back: the column list, the text form of
times and JSON fields, and which fields an update may set. Shared by the SQL of the
SQLite backend and by migrations; no SQL is executed here."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
    return ", ".join("?" for _ in values)


def row_to_memory(row: Sequence[Any]) -> Memory:
    d = dict(zip(COLUMNS, row, strict=True))
    return Memory(
        id=d["id"],
        scope=d["scope"],
        kind=Kind(d["kind"]),
        type=MemoryType(d["type"]),
        key=d["key"],
        content=d["content"],
        content_hash=d["content_hash"],
        source=d["source"],
        status=Status(d["status"]),
        valid_from=from_text(d["valid_from"]),  # type: ignore[arg-type]
        valid_until=from_text(d["valid_until"]),
        supersedes_id=d["supersedes_id"],
        supersede_reason=d["supersede_reason"],
        supersede_kind=d["supersede_kind"],
        updated_by=d["updated_by"],
        confidence=d["confidence"],
        decay_rate=d["decay_rate"],
        access_count=d["access_count"],
        last_accessed=from_text(d["last_accessed"]),
        event_time=from_text(d["event_time"]),
        created_at=from_text(d["created_at"]),  # type: ignore[arg-type]
        updated_at=from_text(d["updated_at"]),  # type: ignore[arg-type]
        expires_at=from_text(d["expires_at"]),
        session_id=d["session_id"],
        role=d["role"],
        tags=tuple(json.loads(d["tags"])),
        attributes=json.loads(d["attributes"]),
        source_ids=tuple(json.loads(d["source_ids"])),
        category=d["category"],
    )


def memory_to_row(m: Memory) -> tuple[Any, ...]:
    values = []
    for column in COLUMNS:
        value = getattr(m, column)
        if column in TIME_FIELDS:
            value = to_text(value) if value is not None else None
        elif column in JSON_FIELDS:
            value = json.dumps(
                list(value) if isinstance(value, tuple) else dict(value),
                ensure_ascii=False,
                sort_keys=True,
            )
        elif hasattr(value, "value"):  # enums
            value = value.value
        values.append(value)
    return tuple(values)


def to_blob(vector: Sequence[float] | np.ndarray) -> bytes:
    """A vector as stored and cached: float32, native byte order (both backends)."""
    return np.asarray(vector, dtype=np.float32).tobytes()
