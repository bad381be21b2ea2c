"""Entities as a scope handle sees them: find one by any of its names, read its profile,
name it again (alias), describe it (type, summary, protected). ``ScopedMemory``
delegates here; validation happens here, once, for every front end.

A protected entity (ADR 005's ``protected = 1``): the decay job leaves the facts linked
to it alone, alias resolution never merges a namesake of another type into it, and no
job retypes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import arguments
from ..errors import Conflict, InvalidInput, NotFound
from ..providers.entities import ENTITY_TYPE_ALIASES, EntityType, entity_type, lookup_keys
from ..providers.entities import canonical as canonical_name
from ..types import Entity, ListFilter, Memory, Status

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle


def find(mem: ScopedHandle, name: object, *, own_only: bool = False) -> Entity:
    """The entity ``name`` names: own scope first, then the most mentioned."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name", "expected an entity name")
    arguments.storable(name, "name")
    scopes = [mem.name] if own_only else list(mem.visible)
    matches = mem.store.entities.lookup(scopes, lookup_keys(name))
    if not matches:
        raise NotFound(f"no entity {name!r} visible from scope {mem.name!r}")
    matches.sort(key=lambda e: (e.scope != mem.name, -e.mention_count, e.id))
    return matches[0]


def profile(mem: ScopedHandle, name: str, limit: int) -> tuple[Entity, list[Memory]]:
    """The entity and its active memories, newest first (not yet scrubbed)."""
    found = find(mem, name)
    store = mem.store
    links = store.entities.linked(
        mem.visible,
        [found.id],
        ListFilter(statuses=(Status.ACTIVE,)),
        mem.store.clock(),
        arguments.limit(limit),
    )
    return found, store.memories.get_many(mem.visible, [m for m, _ in links])


def alias(mem: ScopedHandle, name: str, other: str) -> Entity:
    clean = canonical_name(arguments.name(other, "alias", 200) or "")
    if not any(ch.isalnum() for ch in clean):
        raise InvalidInput("alias", "expected a name with letters or digits")
    found = find(mem, name, own_only=True)
    mem.store.entities.add_alias(mem.name, found.id, clean)
    return find(mem, name, own_only=True)


def _type(value: object) -> EntityType:
    """An entity type by name or alias (ADR 005's ``org``); else ``InvalidInput`` listing
    them."""
    found = entity_type(value) if isinstance(value, str) else None
    if found is None:
        valid = ", ".join(t.value for t in EntityType)
        aliases = ", ".join(f"{a} → {t.value}" for a, t in ENTITY_TYPE_ALIASES.items())
        raise InvalidInput("type", f"unknown value {value!r}; valid: {valid} (aliases: {aliases})")
    return found


def describe(
    mem: ScopedHandle,
    name: str,
    *,
    type: str | None = None,  # noqa: A002 - the domain's word
    summary: str | None = None,
    protected: bool | None = None,
) -> Entity:
    """Set an entity's type, summary and/or protected flag (own scope)."""
    found = find(mem, name, own_only=True)
    kind = _type(type).value if type is not None else None
    text = arguments.name(summary, "summary", 2000, optional=True)
    if protected is not None and not isinstance(protected, bool):
        raise InvalidInput("protected", "expected true or false")
    if not mem.store.entities.describe(
        mem.name, found.id, type=kind, summary=text, protected=protected
    ):
        raise Conflict(f"scope {mem.name!r} already has a {kind} named {found.canonical!r}")
    return find(mem, name, own_only=True)
