"""``expire``: TTL by source (DESIGN §5).

``expires_at`` comes from the TTL policy of a memory's source at write time
(``ttl_days``: task_completion 7 d, session_summary 3 d, file_index 30 d, manual never).
Search and the context block already hide an expired row (reads filter on
``expires_at``), and ``get`` by id still shows it. This job tidies up after that: a row
``expire_grace_days`` past its expiry is archived (status ``archived``, ``valid_until``
now), its vectors dropped and its entity links removed; it stays readable by id and in
history. Counts: ``archived`` (this run) and ``hidden`` (expired, still in grace).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from ...types import Status

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "expire"
HELP = "Archive memories long past their TTL (expired rows are already hidden from search)."


def run(ctx: JobContext) -> None:
    s, maint, counts = ctx.settings, ctx.maint, ctx.counts
    cutoff = ctx.now - timedelta(days=s.expire_grace_days)
    while True:
        rows = maint.expired(ctx.scope, cutoff, s.maintenance_batch_size)
        if not rows:
            break
        with ctx.store.atomic():
            maint.retire(
                ctx.scope, [m.id for m in rows], Status.ARCHIVED, ctx.clock(), "maintenance:expire"
            )
        counts["archived"] += len(rows)
        ctx.tick(counts["archived"], 0)
    counts["hidden"] = maint.count_expired(ctx.scope, ctx.now)
