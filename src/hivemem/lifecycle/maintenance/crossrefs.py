"""``crossrefs``: related memories, by word overlap.

For each active fact, note, summary or reflection not seen yet, the keyword index
proposes memories of the same scope that share words with it; those whose word Jaccard
(``similarity.words``) is above ``crossref_min_jaccard`` (0.05) are kept, best first, at
most ``crossref_max`` (10), in ``cross_refs``. Each memory is done once (a newer memory
finds the older ones it relates to; ``mem.related(id)`` reads links both ways), so a
rerun changes nothing. Episodes are left out: there are many, and consolidation turns
them into facts.

corvid updates cross-references on save: ``ScopedMemory.save`` calls ``on_save`` after
its commit (setting ``crossrefs_on_save``, on by default), which links the new memory in
a short transaction of its own and marks it done, so ``related`` answers at once and the
job only catches what other writers made (consolidation, summaries, imports) or a save
that crashed between its commit and its links.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from ...errors import HiveMemError
from ...types import Kind, Memory
from ...types import Related as Related
from .similarity import candidates, jaccard, words

if TYPE_CHECKING:  # pragma: no cover
    from ...store.handles import StoreHandle
    from . import JobContext

NAME = "crossrefs"
HELP = "Link each memory to up to 10 related ones (word overlap), for mem.related(id)."
KINDS = (Kind.FACT, Kind.NOTE, Kind.SUMMARY, Kind.REFLECTION)
log = logging.getLogger(__name__)


def related_to(ctx: JobContext, memory: Memory) -> list[tuple[str, float]]:
    return _related(ctx.store, ctx.scope, memory, ctx.now)


def on_save(store: StoreHandle, memory: Memory) -> int:
    """corvid's cross-reference update on save: link ``memory`` (just committed) to the
    related memories of its scope and mark it done for the job; the number of links.

    Fails open: the save it follows is committed, so a failure here (a full disk, a
    lock held too long) must not be reported as the save's. It is logged, and the memory
    is left unmarked for the ``crossrefs`` job (tests/test_disk_full.py: a save whose
    links could not be written raised, though its row was stored)."""
    s = store.settings
    if not s.crossrefs_on_save or memory.kind not in KINDS or not memory.is_active:
        return 0
    try:
        pairs = _related(store, memory.scope, memory, store.clock())  # reads outside the lock
        with store.atomic():
            store.job_state.set_related(memory.scope, memory.id, pairs)
            store.job_state.mark(NAME, [memory.id], store.clock())
    except HiveMemError as exc:
        log.warning("cross-references of %s left to the %s job: %s", memory.id, NAME, exc)
        return 0
    return len(pairs)


def _related(
    store: StoreHandle, scope: str, memory: Memory, now: datetime
) -> list[tuple[str, float]]:
    s = store.settings
    mine = words(memory.content)
    found = candidates(store, scope, memory.content, KINDS, now, 5 * s.crossref_max)
    scored = []
    for other in found:
        if other.id == memory.id:
            continue
        score = jaccard(mine, words(other.content))
        if score > s.crossref_min_jaccard:
            scored.append((other.id, round(score, 4)))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[: s.crossref_max]


def run(ctx: JobContext) -> None:
    maint, counts = ctx.maint, ctx.counts
    while True:
        batch = maint.unmarked(ctx.scope, NAME, KINDS, ctx.settings.maintenance_batch_size)
        if not batch:
            return
        links = {m.id: related_to(ctx, m) for m in batch}  # reads before the write lock
        with ctx.store.atomic():
            for memory_id, pairs in links.items():
                maint.set_related(ctx.scope, memory_id, pairs)
                counts["links"] += len(pairs)
            maint.mark(NAME, list(links), ctx.clock())
        counts["memories"] += len(batch)
        ctx.tick(counts["memories"], 0)
