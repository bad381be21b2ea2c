"""ADR 005's ``remember_fact(content, confidence=1.0, entity_names=[])``: the agent saves
a fact it judges important, says how sure it is, and names the entities it is about.

The fact is saved as any fact is (write rules, dedup, regex entities); the names given
are linked as well, each resolved to the scope's entity by canonical name or alias, or
made (an email, URL or date is typed as such by the regex rules; any other name is a
``person``-typed name entity until typed entities land). ``get_entity_info`` then finds
the fact under each name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..providers.entities import EntityType, Mention, canonical, extract
from ..types import Kind, Memory, as_tuple
from . import rules

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle

MAX_NAMES = 32


def mentions(names: Sequence[str] | str | None) -> list[Mention]:
    """The entity names given, as mentions (checked: text, at most 200 characters)."""
    out: dict[tuple[str, str], Mention] = {}
    values = as_tuple(names)
    if len(values) > MAX_NAMES:
        raise InvalidInput("entity_names", f"more than {MAX_NAMES} names")
    for index, value in enumerate(values):
        name = rules.name(value, f"entity_names[{index}]", 200)
        assert name is not None
        found = [m for m in extract(name) if m.name == name]
        mention = found[0] if found else Mention(name, canonical(name), EntityType.PERSON)
        if not any(ch.isalnum() for ch in mention.canonical):
            raise InvalidInput(f"entity_names[{index}]", "expected a name with letters or digits")
        out.setdefault((mention.canonical, mention.type.value), mention)
    return list(out.values())


def remember(
    mem: ScopedHandle,
    content: str,
    *,
    confidence: float | None = None,
    entity_names: Sequence[str] | None = None,
    **save_options: Any,
) -> Memory:
    """Save ``content`` as a fact of ``mem`` with its confidence, linked to the named
    entities. Other options go to ``ScopedMemory.save`` (key, type, tags, source …)."""
    named = mentions(entity_names)  # checked before anything is written
    memory = mem.save(content, kind=Kind.FACT, confidence=confidence, **save_options)
    if named:
        mem.store.entities.link(memory.scope, memory.id, named, memory.created_at)
    return memory
