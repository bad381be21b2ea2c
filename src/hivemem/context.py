"""The memory section of the next prompt (DESIGN §4).

Order: pinned memories by priority — identity (never dropped), lesson, decision (newest
first), context (newest first) — up to ``max_entries``; then memories from earlier
sessions relevant to ``query`` (the current session excluded); then the latest
reflection. Each entry is one markdown bullet. Entries over the budget are left out of
the block but keep their type and stay searchable.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .types import Kind, Memory, MemoryType

if TYPE_CHECKING:
    from .core import ScopedMemory

log = logging.getLogger(__name__)

PINNED = (MemoryType.IDENTITY, MemoryType.LESSON, MemoryType.DECISION, MemoryType.CONTEXT)
_TITLES = {
    MemoryType.IDENTITY: "Identity",
    MemoryType.LESSON: "Lessons",
    MemoryType.DECISION: "Decisions",
    MemoryType.CONTEXT: "Current context",
}
_PINNED_KINDS = (Kind.FACT, Kind.NOTE, Kind.SUMMARY)


def _bullet(memory: Memory) -> str:
    text = " ".join(memory.content.split())
    label = f"**{memory.key}**: " if memory.key else ""
    return f"- {label}{text}"


def build_context(
    mem: ScopedMemory,
    *,
    query: str | None = None,
    session_id: str | None = None,
    max_entries: int = 50,
) -> str:
    sections: list[str] = []
    used = 0
    shown: set[str] = set()
    for memory_type in PINNED:
        entries = mem.list(type=memory_type, kind=_PINNED_KINDS, include_expired=False, limit=1000)
        if memory_type is not MemoryType.IDENTITY:
            entries = entries[: max(0, max_entries - used)]
        if not entries:
            continue
        used += len(entries)
        shown.update(m.id for m in entries)
        sections.append(f"### {_TITLES[memory_type]}\n" + "\n".join(_bullet(m) for m in entries))
    if used >= 0.8 * max_entries:
        log.warning("context budget %d/%d entries used by pinned memories", used, max_entries)
    if query and query.strip():
        room = max(0, max_entries - used)
        hits = mem.search(query, limit=min(room, 1000), exclude_sessions=session_id) if room else []
        relevant = [h.memory for h in hits if h.memory.id not in shown and h.memory.is_active]
        if relevant:
            lines = []
            for memory in relevant:
                when = (memory.event_time or memory.created_at).date().isoformat()
                lines.append(f"- [{when}] {' '.join(memory.content.split())}")
            sections.append("### Relevant from earlier sessions\n" + "\n".join(lines))
    reflections = mem.list(kind=Kind.REFLECTION, limit=1)
    if reflections:
        sections.append("### Latest reflection\n" + reflections[0].content.strip())
    if not sections:
        return ""
    return "## Memory\n\n" + "\n\n".join(sections) + "\n"
