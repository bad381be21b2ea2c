"""The rows of ``add_episode(s)``, built before the write lock is taken: each item
validated, its secrets handled (``credential_policy``), its category, chunks and entity
mentions derived. The facade's ``add_episodes`` then writes them in one transaction.

The batch path's cost is this per-row Python (issue 24: ``add_episodes`` of 1,000 cost 17
times a plain SQLite insert of the same rows), so what a batch repeats is done once:
the allowed fields are one set, a session id or role named again is validated once per
batch, and the category is decided before the row is built (a frozen ``Memory`` of 29
fields copied by ``dataclasses.replace`` to set it cost as much as building it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from .. import text as textmod
from ..errors import InvalidInput
from ..providers.entities import Mention, extract
from ..settings import Settings
from ..types import Kind, Memory, Source
from . import categories, rules
from .categorizer import categorize

FIELDS = frozenset(
    {
        "content",
        "session_id",
        "role",
        "event_time",
        "attributes",
        "tags",
        "type",
        "source",
        "expires_at",
    }
)

Guard = Callable[[dict[str, Any], bool], dict[str, Any]]  # (fields, refresh) -> fields
Row = tuple[Memory, float, list[str], list[Mention]]  # record, sureness, chunks, mentions


def rows(
    items: Iterable[Any],
    *,
    scope: str,
    settings: Settings,
    now: Callable[[], datetime],
    guard: Guard,
    actor: str | None,
    default_expiry: object,
) -> list[Row]:
    """Every item as the row it becomes, or ``InvalidInput`` naming the first bad field
    (``items[i].field`` past the first item). ``guard`` applies the credential policy,
    asking the vault for its values on the first row only; ``default_expiry`` is the
    marker of "the TTL policy's" for an item without ``expires_at``."""
    out: list[Row] = []
    names: dict[tuple[str, Any], str | None] = {}  # (field, given) -> validated

    def name(field: str, value: Any) -> str | None:
        if type(value) is not str:
            return rules.name(value, field, 200)  # raises for anything but text
        known = names.get((field, value))
        if known is None:
            known = names[(field, value)] = rules.name(value, field, 200)
        return known

    for index, item in enumerate(items):
        if index >= settings.max_batch:
            raise InvalidInput("items", f"more than {settings.max_batch} episodes in one batch")
        if not isinstance(item, Mapping):
            raise InvalidInput(f"items[{index}]", "expected a mapping of add_episode fields")
        if not FIELDS.issuperset(item):
            unknown = set(item) - FIELDS
            raise InvalidInput(f"items[{index}]", f"unknown fields {sorted(unknown)}")
        try:
            record, sure = _record(
                item,
                scope=scope,
                settings=settings,
                now=now,
                guard=guard,
                actor=actor,
                session_id=name("session_id", item.get("session_id")),
                role=name("role", item.get("role")),
                refresh=not out,  # the vault's values: read for the first row
                default_expiry=default_expiry,
            )
        except InvalidInput as exc:
            if index == 0 and not out:
                raise
            raise InvalidInput(f"items[{index}].{exc.field}", exc.message) from None
        out.append((record, sure, *derive(record.content, settings)))
    return out


def derive(content: str, settings: Settings) -> tuple[list[str], list[Mention]]:
    """What a memory's row brings along, computed before the write lock: its chunks
    (keyword index) and its entity mentions (regex, tens of microseconds)."""
    chunks = textmod.chunk(content, settings.chunk_tokens, settings.chunk_overlap_tokens)
    return chunks, extract(content)


def _record(
    item: Mapping[str, Any],
    *,
    scope: str,
    settings: Settings,
    now: Callable[[], datetime],
    guard: Guard,
    actor: str | None,
    session_id: str | None,
    role: str | None,
    refresh: bool,
    default_expiry: object,
) -> tuple[Memory, float]:
    """One item's row and its categorizer's confidence: the fields guarded, the
    category of the text as stored, then the row validated and built once."""
    fields = guard(
        {
            "content": item.get("content"),
            "kind": Kind.EPISODE,
            "type": item.get("type") or settings.episode_type,
            "source": item.get("source") or Source.CONVERSATION,
            "tags": item.get("tags"),
            "attributes": item.get("attributes"),
            "event_time": item.get("event_time"),
            "expires_at": item.get("expires_at", default_expiry),
            "session_id": session_id,
            "role": role,
        },
        refresh,
    )
    fields["updated_by"] = fields.get("updated_by") or actor
    content = fields["content"]
    if type(content) is str:  # what the row stores (bytes are decoded by the build)
        fields["category"], sure = categorize(content)
        return rules.build_memory(scope, settings, now(), **fields), sure
    return categories.categorized(rules.build_memory(scope, settings, now(), **fields), given=False)
