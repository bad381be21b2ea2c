"""Counts of a store or of some of its scopes (``Backend.stats``): by status, kind and
type, expired, sessions, and two times — when the latest memory was recorded and when
consolidation last ran (ADR 005's ``memory_stats``). Portable SQL, shared by both
backends: ``db`` is a backend's ``?``-accepting statement runner (``_read``,
``_scope_clause``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..clock import from_text, to_text


def scope_stats(db: Any, scopes: Sequence[str] | None, now: datetime) -> dict[str, Any]:
    if scopes is None:
        where, params = "1 = 1", []
    else:
        where, params = db._scope_clause(scopes)
    rows = db._read(
        f"SELECT m.status, m.kind, m.type, COUNT(*) FROM memories m WHERE {where} "
        "GROUP BY m.status, m.kind, m.type",
        params,
    )
    by_status: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for status, kind, mtype, count in rows:
        by_status[status] = by_status.get(status, 0) + count
        if status == "active":
            by_kind[kind] = by_kind.get(kind, 0) + count
            by_type[mtype] = by_type.get(mtype, 0) + count
    expired = db._read(
        f"SELECT COUNT(*) FROM memories m WHERE {where} AND m.status = 'active' "
        "AND m.expires_at IS NOT NULL AND m.expires_at <= ?",
        [*params, to_text(now)],
    )[0][0]
    sessions, consolidated = db._read(
        f"SELECT COUNT(*), MAX(m.consolidated_at) FROM sessions m WHERE {where}", params
    )[0]
    latest = db._read(f"SELECT MAX(m.created_at) FROM memories m WHERE {where}", params)
    runs = db._read(  # a consolidate run over these scopes, or over every scope
        "SELECT MAX(m.finished_at) FROM maintenance_runs m WHERE m.job = 'consolidate' "
        f"AND m.status = 'ok' AND (m.scope IS NULL OR {where})",
        params,
    )
    last_run = max((t for t in (consolidated, runs[0][0]) if t), default=None)
    return {
        "total": sum(by_status.values()),
        "by_status": by_status,
        "active_by_kind": by_kind,
        "active_by_type": by_type,
        "expired": expired,
        "sessions": sessions,
        "latest_record_at": _iso(latest[0][0]),
        "last_consolidation_at": _iso(last_run),
    }


def _iso(stamp: str | None) -> str | None:
    """A stored time as ISO 8601 (the form every result uses), or None."""
    return from_text(stamp).isoformat() if stamp else None
