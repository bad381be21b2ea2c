"""``categorize``: give rows written before categorize-on-save their category and its
confidence. The classifier is the write path's (``hivemem.write.categorizer``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...write.categorizer import _RULES as _RULES
from ...write.categorizer import categorize

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "categorize"
HELP = "Give rows written before categorize-on-save their category and its confidence."


def run(ctx: JobContext) -> dict[str, int]:
    """Backfill: rows without a recorded confidence get one; a caller's category (not
    ``general``) is kept with confidence 1.0, ``general`` rows are categorized."""
    maint, counts = ctx.maint, {"categorized": 0, "kept": 0}
    while True:
        batch = maint.uncategorized(ctx.scope, ctx.settings.maintenance_batch_size)
        if not batch:
            return counts
        with ctx.store.atomic():
            for memory in batch:
                if memory.category != "general":
                    maint.set_category(ctx.scope, memory.id, None, 1.0)
                    counts["kept"] += 1
                else:
                    category, confidence = categorize(memory.content, memory.kind)
                    maint.set_category(ctx.scope, memory.id, category, confidence)
                    counts["categorized"] += 1
        ctx.tick(counts["categorized"] + counts["kept"], 0)
