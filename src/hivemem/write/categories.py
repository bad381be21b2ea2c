"""Categories as a filter (corvid-agent's memory module).

Every memory gets an automatic category on save (``hivemem.write.categorizer``: keyword
rules, with a confidence; no cue at all gives ``general`` at confidence 0). ``list`` and
``search`` filter on it (``category=``), and the tools take it too. corvid's rule for
search: when the category filter removes every candidate, the filter is dropped and
the unfiltered result is returned — and HiveMem says so, in each hit's explanation
(``FALLBACK_NOTE``) and in the tools' answer (``category_fallback``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..types import CATEGORIES, Hit, Memory, as_tuple
from .categorizer import categorize
from .rules import valid_category

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle

FALLBACK_NOTE = "category filter matched nothing: unfiltered results"

__all__ = [
    "CATEGORIES",
    "FALLBACK_NOTE",
    "categorized",
    "fell_back",
    "of",
    "unfiltered",
    "valid",
]


def valid(category: str | Sequence[str] | None) -> tuple[str, ...]:
    """The categories asked for, checked (``InvalidInput`` lists the valid ones)."""
    return tuple(dict.fromkeys(valid_category(c) for c in as_tuple(category)))


def unfiltered(hits: list[Hit], wanted: Sequence[str]) -> list[Hit]:
    """Hits of the search without its category filter, each noting the fallback."""
    note = f"{FALLBACK_NOTE} (asked: {', '.join(wanted)})"
    return [replace(h, explain=replace(h.explain, notes=(note, *h.explain.notes))) for h in hits]


def fell_back(hits: Sequence[Hit]) -> bool:
    """Whether these hits came from the category fallback."""
    return any(n.startswith(FALLBACK_NOTE) for h in hits[:1] for n in h.explain.notes)


def of(mem: ScopedHandle, memory: Memory) -> tuple[str, float]:
    """A memory's category and how sure the categorizer was (1.0: given by the caller;
    0.0: no keyword matched, ``general``), as corvid's ``save`` returns them."""
    sure = mem.store.job_state.categories([memory.scope], [memory.id])
    return memory.category, float(sure.get(memory.id, 0.0))


def categorized(record: Memory, *, given: bool) -> tuple[Memory, float]:
    """The record with its automatic category (keyword rules, microseconds; a category
    the caller gave is kept, with confidence 1.0), and the categorizer's confidence."""
    if given:
        return record, 1.0
    category, confidence = categorize(record.content, record.kind)
    return replace(record, category=category), confidence
