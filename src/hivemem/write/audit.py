"""The audit habits openhive asks of a save (its ``memory_save`` rules):

- **Supersede reasons are searchable context.** "We thought X but actually Y because Z"
  is a lesson in itself, so a hard supersede's reason is indexed with the new version
  (one extra keyword chunk, ``Supersede reason: …``): a search for the reason's words
  finds the version it introduced. Reasons HiveMem writes itself (``expired``,
  ``minor correction``, ``corrected``) are not indexed.
- **A soft, non-blocking type suggestion.** When the content reads like another type
  than the one given ("Never deploy on Fridays" saved as ``context``), the save goes
  through as asked, the suggestion is logged (logger ``hivemem.write.audit``) and the save
  tools return it as ``type_suggestion``. Types are never changed automatically.
- ``updated_by`` is the handle's actor on every write (``ScopedMemory.actor``).
"""

from __future__ import annotations

import logging
import re

from ..text import REASON_PREFIX as REASON_PREFIX
from ..text import reason_chunk
from ..types import Memory, MemoryType

log = logging.getLogger("hivemem.write.audit")


_CUES: list[tuple[MemoryType, re.Pattern[str]]] = [
    (
        MemoryType.LESSON,
        re.compile(
            r"\b(never|always|avoid|don'?t|do not|mistake|lesson|learned|beware|"
            r"caused (an )?incident|pitfall|gotcha)\b",
            re.I,
        ),
    ),
    (
        MemoryType.DECISION,
        re.compile(
            r"\b(we (chose|decided|picked|agreed|will use)|decided to|decision|"
            r"going with|commit(ted)? to)\b",
            re.I,
        ),
    ),
    (
        MemoryType.REFERENCE,
        re.compile(
            r"(https?://|\bdashboard at\b|\bdocs? (are |is )?at\b|\bsee\b.*\bfor\b|"
            r"\bwiki\b|\brunbook\b)",
            re.I,
        ),
    ),
    (
        MemoryType.HISTORICAL,
        re.compile(
            r"\b(completed|finished|was (done|shipped|released)|shipped on|"
            r"happened|last (year|quarter|month))\b",
            re.I,
        ),
    ),
    (
        MemoryType.IDENTITY,
        re.compile(
            r"\b(i am|i'm (also )?responsible|my role|our (team|role) is|we are the)\b", re.I
        ),
    ),
]


def reason_chunks(record: Memory) -> list[str]:
    """The extra keyword chunk that makes a hard supersede's reason searchable (the
    write path, imports and repairs all derive it the same way)."""
    return reason_chunk(record.supersede_reason, record.supersede_kind)


def suggest_type(content: str) -> MemoryType | None:
    """The type ``content`` reads like, by keyword cues, or None when nothing stands out."""
    sample = content[:2000]
    for kind, pattern in _CUES:
        if pattern.search(sample):
            return kind
    return None


def type_suggestion(content: str, given: MemoryType) -> str | None:
    """A soft suggestion when ``content`` reads like another type than ``given``:
    logged, returned as text for the caller to show, never applied."""
    suggested = suggest_type(content)
    if suggested is None or suggested is given:
        return None
    message = (
        f"this reads like a {suggested.value} rather than a {given.value}; kept as "
        f"{given.value} (change it with a new save if you agree)"
    )
    log.info("type suggestion: %s", message)
    return message
