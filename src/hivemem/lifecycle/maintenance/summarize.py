"""``summarize``: old memories are archived into summaries.

Active facts older than ``summarize_after_days`` (30), of types context, reference or
historical and not protected (``decay_rate > 0``: confirmed facts stay as they are), are
grouped by key prefix (``deploy.day`` and ``deploy.window`` → ``deploy``; the prefix is
the key up to its first ``.``, ``/``, ``:``, ``-`` or ``_``) and, when keyless, by
category. A group of at least ``summarize_min_group`` (2) becomes one ``summary`` memory
(type ``historical``, ``source_ids`` = its members; at most ``summarize_max_group`` per
summary) and its members are archived, all in one transaction; a group of one is left
alone. The summary's key is corvid's ``summary:{prefix}:{date}`` (the group's key prefix,
or its category for keyless memories; the date of the run), so it is recalled by key;
when that key already names an active memory (a second part of a big group, or a
category named as a key prefix) the next free ``summary:{prefix}:{date}:{n}`` is used.
Archived members stay readable by id and in history; the summary is what search finds.
Identity, lesson and decision memories are never summarized.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import timedelta
from typing import TYPE_CHECKING

from ...types import Kind, Memory, MemoryType, Status
from ...write import rules
from .reflect import fit

if TYPE_CHECKING:  # pragma: no cover
    from . import JobContext

NAME = "summarize"
WRITER = f"maintenance:{NAME}"  # updated_by of what the job writes
HELP = "Archive old memories, grouped by key prefix or category, into one summary per group."
SOURCE = "summary"
TYPES = (MemoryType.CONTEXT, MemoryType.REFERENCE, MemoryType.HISTORICAL)
_PREFIX = re.compile(r"[./:_-]")
_SYSTEM = (
    "Summarise these memories of an AI agent into one compact paragraph that keeps every "
    "name, number, date and decision. Plain text."
)


def group_of(memory: Memory) -> str:
    """``key:<prefix>`` for a keyed memory, else ``category:<category>``."""
    if memory.key:
        return "key:" + _PREFIX.split(memory.key, maxsplit=1)[0].lower()
    return "category:" + memory.category


def free_key(ctx: JobContext, prefix: str) -> str:
    """corvid's ``summary:{prefix}:{date}``, or with ``:{n}`` the first one no active
    memory of the scope holds (inside the write, so two runs cannot take one key)."""
    date = f"{ctx.now:%Y-%m-%d}"
    room = ctx.settings.max_key_chars - len(f"summary::{date}:99")
    base = f"summary:{prefix[: max(1, room)]}:{date}"
    key, n = base, 1
    while ctx.store.memories.by_key([ctx.scope], key) is not None:
        n += 1
        key = f"{base}:{n}"
    return key


def run(ctx: JobContext) -> None:
    s, maint = ctx.settings, ctx.maint
    cutoff = ctx.now - timedelta(days=s.summarize_after_days)
    groups: dict[str, list[Memory]] = defaultdict(list)
    after = ""
    while True:
        page = maint.active(
            ctx.scope,
            [Kind.FACT],
            after=after,
            limit=s.maintenance_batch_size,
            created_before=cutoff,
            types=TYPES,
            protected=False,
        )
        if not page:
            break
        after = page[-1].id
        for memory in page:
            groups[group_of(memory)].append(memory)
    size = max(2, s.summarize_max_group)
    parts = []
    for label, members in sorted(groups.items()):
        members.sort(key=lambda m: (m.created_at, m.id))
        for start in range(0, len(members), size):
            part = members[start : start + size]
            if len(part) >= max(2, s.summarize_min_group):
                parts.append((label, part))
            else:
                ctx.counts["left_alone"] += len(part)
    for index, (label, part) in enumerate(parts):
        _summarize(ctx, label, part)
        ctx.tick(index + 1, len(parts))


def _summarize(ctx: JobContext, label: str, members: list[Memory]) -> None:
    s = ctx.settings
    llm = ctx.llm
    if llm is not None:
        listing = "\n".join(f"- {' '.join(m.content.split())}" for m in members)
        body = str(
            llm.complete(
                [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": listing}]
            )
        ).strip()
        method = f"llm:{llm.identity}"
    else:
        body = "\n".join(f"- {' '.join(m.content.split())}" for m in members)
        method = "extractive"
    first, last = members[0].created_at, members[-1].created_at
    name = label.split(":", 1)[1]
    heading = (
        f"Summary of {len(members)} memories about {name} ({first:%Y-%m-%d} to {last:%Y-%m-%d})"
    )
    with ctx.store.atomic():
        ids = [m.id for m in members]
        still = {m.id for m in ctx.store.memories.get_many([ctx.scope], ids) if m.is_active}
        if len(still) < len(ids):  # another run got here first
            return
        now = ctx.clock()
        record = rules.build_memory(
            ctx.scope,
            s,
            now,
            key=free_key(ctx, name),
            content=fit(f"{heading}:\n{body}", s.max_content_bytes),
            kind=Kind.SUMMARY,
            type=MemoryType.HISTORICAL,
            source=SOURCE,
            source_ids=ids,
            category=members[0].category if label.startswith("category:") else None,
            attributes={"group": label, "members": len(ids), "summarized_by": method},
            updated_by=WRITER,
        )
        ctx.insert(record)
        ctx.maint.retire(
            ctx.scope, ids, Status.ARCHIVED, now, "maintenance:summarize", drop_entities=False
        )
    ctx.counts["summaries"] += 1
    ctx.counts["archived"] += len(members)
