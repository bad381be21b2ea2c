"""Entity statements both backends share (portable SQL through the backend's
``?``-accepting ``_read``/``_write``): a new entity's aliases, ``describe`` (a mixin both
entity indexes inherit) and the ``Entity`` of a row."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..clock import from_text
from ..providers.entities import without_legal_form
from ..types import Entity

if TYPE_CHECKING:  # pragma: no cover
    from ..providers.entities import Mention


def aliases_of_new(mention: Mention) -> list[str]:
    """A new entity's aliases: its canonical name, and for an organisation also the name
    without its legal form ("acme corp" is also "acme")."""
    out = [mention.canonical]
    short = without_legal_form(mention.canonical) if mention.type.value == "organization" else None
    return [*out, short] if short else out


def entity_rows(rows: Sequence[Sequence[Any]]) -> list[Entity]:
    """Rows of (id, scope, name, canonical, type, mention_count, first_seen, last_seen,
    aliases as a JSON list, protected, summary) as entities; the canonical name is not
    repeated among the aliases."""
    return [
        Entity(
            id=r[0],
            scope=r[1],
            name=r[2],
            canonical=r[3],
            type=r[4],
            mention_count=r[5],
            first_seen=from_text(r[6]),
            last_seen=from_text(r[7]),
            aliases=tuple(sorted(a for a in json.loads(r[8]) if a != r[3])),
            protected=bool(r[9]),
            summary=r[10],
        )
        for r in rows
    ]


class Describes:
    """``describe`` for an entity index whose backend runs ``?`` statements (both do)."""

    _db: Any

    def describe(
        self,
        scope: str,
        entity_id: int,
        *,
        type: str | None = None,  # noqa: A002 - the domain's word
        summary: str | None = None,
        protected: bool | None = None,
    ) -> bool:
        """Set an entity's type, summary and/or protected flag (own scope). Returns False
        when the scope already has an entity of that name with that type."""
        with self._db.atomic():
            if type is not None:
                taken = self._db._read(
                    "SELECT 1 FROM entities e WHERE e.scope = ? AND e.type = ? AND e.id != ? "
                    "AND e.canonical = (SELECT canonical FROM entities WHERE id = ?)",
                    [scope, type, entity_id, entity_id],
                )
                if taken:
                    return False
            sets, params = [], []
            for column, value in (("type", type), ("summary", summary), ("protected", protected)):
                if value is not None:
                    sets.append(f"{column} = ?")
                    params.append(int(value) if isinstance(value, bool) else value)
            if sets:
                self._db._write(
                    f"UPDATE entities SET {', '.join(sets)} WHERE scope = ? AND id = ?",
                    [*params, scope, entity_id],
                )
        return True
