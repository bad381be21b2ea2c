"""The run log of the maintenance jobs (``maintenance_runs``, migration
``0007_maintenance``): what each run of each job did, when, and how it ended. Portable
SQL, shared by both backends (through their ``?``-accepting ``_read``/``_write``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..clock import from_text, to_text
from .protocols import RunRecord


class RunLogStatements:
    """Reads and writes of the run log (the backend's connection and lock)."""

    def __init__(self, backend: Any) -> None:
        self._db = backend

    def start_run(self, job: str, scope: str | None, trigger: str, when: datetime) -> int:
        with self._db.atomic():
            row = self._db._write(
                "INSERT INTO maintenance_runs (job, scope, trigger, started_at, status) "
                "VALUES (?, ?, ?, ?, 'running') RETURNING id",
                [job, scope, trigger, to_text(when)],
            ).fetchone()
        return int(row[0])

    def finish_run(
        self,
        run_id: int,
        when: datetime,
        status: str,
        counts: Mapping[str, Any],
        error: str | None,
    ) -> None:
        with self._db.atomic():
            self._db._write(
                "UPDATE maintenance_runs SET finished_at = ?, status = ?, counts = ?, error = ? "
                "WHERE id = ?",
                [to_text(when), status, json.dumps(dict(counts), sort_keys=True), error, run_id],
            )

    def runs(
        self, job: str | None = None, scope: str | None = None, limit: int = 50
    ) -> list[RunRecord]:
        """The newest runs first, of one job and/or scope when given."""
        where, params = ["1 = 1"], []
        if job is not None:
            where.append("job = ?")
            params.append(job)
        if scope is not None:
            where.append("scope = ?")
            params.append(scope)
        rows = self._db._read(
            "SELECT id, job, scope, trigger, started_at, finished_at, status, counts, error "
            f"FROM maintenance_runs WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            RunRecord(
                r[0],
                r[1],
                r[2],
                r[3],
                from_text(r[4]),
                from_text(r[5]),
                r[6],
                json.loads(r[7]),
                r[8],
            )
            for r in rows
        ]

    def last_started(self, job: str, trigger: str | None = None) -> datetime | None:
        """When the newest run of ``job`` (by ``trigger``, when given) started."""
        where, params = (
            ("job = ? AND trigger = ?", [job, trigger]) if trigger else ("job = ?", [job])
        )
        row = self._db._read(f"SELECT MAX(started_at) FROM maintenance_runs WHERE {where}", params)
        return from_text(row[0][0]) if row and row[0][0] else None
