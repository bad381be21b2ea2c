"""``decay``: Ebbinghaus forgetting of facts.

Each unprotected active fact (``decay_rate > 0``; confirmed facts have 0 and are never
touched, nor are facts linked to a protected entity) has
``confidence = base × f(decay_rate, days)``, where ``days`` runs from its anchor (its
creation, or the last time someone else set its confidence; with ``decay_from =
last_access``, its last access when that is later: a fact in use is refreshed) and
``f`` is the ``decay_formula``:

- ``exponential``: ``exp(−rate × days)``
- ``power`` (the ADR's): ``exp(−rate × days^decay_exponent)`` (0.8 by default)

The base and anchor are kept in ``decay_state``, so the result depends on the time of the
run alone, never on how often it ran: two runs at the same time leave the same state.
When someone else changed the confidence since the last run (a conflict found by
consolidation), that value becomes the new base from now. Use is not reinforcement here:
access counts already raise a memory's rank at search time (``max_access_boost``). A fact that falls
below ``decay_prune_below`` is soft-deleted, its vectors and entity links removed.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from ...errors import InvalidInput
from ...types import Kind, Status

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "decay"
HELP = "Decay the confidence of facts over time; soft-delete those that fall below the floor."
FORMULAS = ("exponential", "power")
DECAY_FROM = ("created", "last_access")
_EPSILON = 1e-6  # smaller changes are not written (a rerun a moment later changes nothing)


def factor(formula: str, rate: float, days: float, exponent: float = 0.8) -> float:
    """The share of confidence left after ``days`` at ``rate`` per day."""
    days = max(0.0, days)
    if formula == "exponential":
        return math.exp(-rate * days)
    if formula == "power":
        return math.exp(-rate * days**exponent)
    raise InvalidInput(
        "decay_formula", f"unknown formula {formula!r}; valid: {', '.join(FORMULAS)}"
    )


def _days(since: datetime, now: datetime) -> float:
    return (now - since).total_seconds() / 86_400


def run(ctx: JobContext) -> None:
    s, maint, counts = ctx.settings, ctx.maint, ctx.counts
    factor(s.decay_formula, 0.0, 0.0)  # an unknown formula fails before anything is written
    if s.decay_from not in DECAY_FROM:
        raise InvalidInput(
            "decay_from", f"unknown value {s.decay_from!r}; valid: {', '.join(DECAY_FROM)}"
        )
    from_access = s.decay_from == "last_access"
    after = ""
    while True:
        rows = maint.decaying(ctx.scope, [Kind.FACT], after, s.maintenance_batch_size)
        if not rows:
            return
        after = rows[-1].memory.id
        with ctx.store.atomic():
            now = ctx.clock()
            prune = []
            for row in rows:
                memory = row.memory
                fresh = row.base is None
                rebased = not fresh and abs(memory.confidence - (row.applied or 0.0)) > _EPSILON
                if fresh:  # first sight: it has been decaying since it was made
                    base, anchor = memory.confidence, memory.created_at
                elif rebased:  # changed by someone else since the last run: a new start
                    base, anchor = memory.confidence, now
                else:
                    base, anchor = float(row.base or 0.0), row.anchor or memory.created_at
                start = anchor
                if from_access and memory.last_accessed and memory.last_accessed > start:
                    start = memory.last_accessed  # in use: its curve starts again
                value = base * factor(
                    s.decay_formula, memory.decay_rate, _days(start, now), s.decay_exponent
                )
                changed = abs(value - memory.confidence) > _EPSILON
                if value < s.decay_prune_below:
                    prune.append(memory.id)
                elif fresh or rebased or changed:
                    maint.set_decay(
                        ctx.scope,
                        memory.id,
                        base,
                        anchor,
                        value if changed else memory.confidence,
                        now,
                    )
                    counts["decayed"] += int(changed)
            if prune:
                maint.retire(ctx.scope, prune, Status.DELETED, now, "maintenance:decay")
                counts["pruned"] += len(prune)
            counts["checked"] += len(rows)
        ctx.tick(counts["checked"], 0)
