"""HiveMem as a LangGraph store: ``HiveMemStore``, a ``langgraph.store.base.BaseStore``.

    import hivemem
    from hivemem.integrations.langgraph import HiveMemStore

    store = HiveMemStore(hivemem.open("memory.db"), index={"fields": ["text"]})
    store.put(("users", "alice"), "food", {"text": "Alice is vegetarian"})
    store.search(("users",), query="what does alice eat?")

The mapping (a translation: every call goes through the library's facade):

- A namespace is a scope: ``("users", "alice")`` is scope ``users.alice`` (LangGraph
  forbids ``.`` in a label, so the name splits back exactly).
- An item is the active memory under its key in that scope. The item's value is kept
  whole in the memory's ``attributes``; the memory's text (what keyword and vector search
  read) is the text at the index ``fields`` (the store's ``index``, or the put's own),
  else the value as JSON. ``put`` on a key that holds an item supersedes it, so the
  memory's ``history`` keeps every earlier value; ``delete`` is HiveMem's soft delete.
- ``search`` with a ``query`` is HiveMem's hybrid search (keyword + the store's
  embedder) over the scopes under the prefix, current versions only; without one it
  lists newest first. ``filter`` is ``hivemem.retrieval.matching`` over the value.
- ``ttl`` (minutes) is the memory's ``expires_at``; reads renew it
  (``ScopedMemory.renew``) as the TTL config's ``refresh_on_read`` says.
- Memories written by other front ends appear as items too: key = the memory's key (or
  its id), value = ``{"content": text}``.
- Semantic search uses the embedder the ``Store`` was opened with, so ``index`` takes
  ``fields`` only; an ``embed`` or ``dims`` there is an ``InvalidInput`` saying so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from . import require

require("langgraph.store.base", "langgraph")

from langgraph.store.base import (  # noqa: E402 - after the dependency check
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    validate_op_namespace,
)

from ..errors import InvalidInput, NotFound  # noqa: E402
from ..facade.database import Store  # noqa: E402
from ..facade.memory import ScopedMemory  # noqa: E402
from ..retrieval.matching import matches, validate  # noqa: E402
from ..types import Memory, Status  # noqa: E402

__all__ = ["HiveMemStore"]

_SEPARATOR = "."
_VALUE, _CREATED, _TTL = "value", "created_at", "ttl_minutes"
_PAGE = 500


class HiveMemStore(BaseStore):
    """A LangGraph ``BaseStore`` over a HiveMem ``Store`` (see the module docstring)."""

    supports_ttl = True

    def __init__(
        self,
        store: Store,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        config: dict[str, Any] = dict(index or {})
        unsupported = sorted(set(config) - {"fields"})
        if unsupported:
            raise InvalidInput(
                "index",
                f"{', '.join(unsupported)} not taken: HiveMem embeds with the embedder the "
                "store was opened with (hivemem.open(..., embedder=...)); give only 'fields'",
            )
        self.store = store
        self.index_fields: list[str] | None = config.get("fields")
        self.ttl_config = ttl

    # ------------------------------------------------------------------ the two batches

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            else:
                raise InvalidInput("op", f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The library is synchronous by design (one core, no async twin): run it off the loop.
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------------ namespaces ↔ scopes

    @staticmethod
    def _scope_name(namespace: Sequence[str]) -> str:
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        return _SEPARATOR.join(namespace)

    @staticmethod
    def _namespace(scope: str) -> tuple[str, ...]:
        return tuple(scope.split(_SEPARATOR))

    def _handle(self, namespace: Sequence[str]) -> ScopedMemory:
        return self.store.scope(self._scope_name(namespace))

    def _scopes_under(self, prefix: Sequence[str]) -> list[str]:
        size = len(prefix)
        return [s for s in self.store.scopes() if self._namespace(s)[:size] == tuple(prefix)]

    # ------------------------------------------------------------------ items

    def _item(self, memory: Memory, score: float | None = None, search: bool = False) -> Item:
        value = memory.attributes.get(_VALUE)
        if not isinstance(value, dict):
            value = {"content": memory.content}
        created = memory.attributes.get(_CREATED)
        fields: dict[str, Any] = {
            "namespace": self._namespace(memory.scope),
            "key": memory.key or memory.id,
            "value": value,
            "created_at": datetime.fromisoformat(created) if created else memory.created_at,
            "updated_at": memory.created_at,  # each put is a new version: its time
        }
        return SearchItem(**fields, score=score) if search else Item(**fields)

    def _current(self, handle: ScopedMemory, key: str) -> Memory | None:
        """The active memory under ``key`` (expired or not), else a keyless memory whose
        id is ``key`` (one another front end wrote)."""
        found = handle.list(key=key, limit=1)
        if found:
            return found[0]
        try:
            memory = handle.get(key)
        except (NotFound, InvalidInput):
            return None
        keyless = memory.key is None and memory.scope == handle.name
        return memory if keyless and memory.status is Status.ACTIVE else None

    def _text(self, value: Mapping[str, Any], index: Any) -> str:
        fields = self.index_fields if index is None else (index or None)
        if fields:
            texts = [t for path in fields for t in get_text_at_path(dict(value), path)]
            text = "\n".join(t for t in texts if t and t.strip())
            if text:
                return text
        return json.dumps(value, ensure_ascii=False, sort_keys=True)

    def _get(self, op: GetOp) -> Item | None:
        handle = self._handle(op.namespace)
        memory = self._current(handle, op.key)
        if memory is None or memory.is_expired(self.store.clock()):
            return None
        if op.refresh_ttl:
            self._refresh(handle.name, [memory])
        return self._item(memory)

    def _put(self, op: PutOp) -> None:
        handle = self._handle(op.namespace)
        current = self._current(handle, op.key)
        if op.value is None:
            if current is not None:
                handle.delete(current.id)
            return None
        if not isinstance(op.value, Mapping):
            raise InvalidInput("value", "expected a mapping (a JSON object)")
        value = dict(op.value)
        now = self.store.clock()
        attributes: dict[str, Any] = {_VALUE: value}
        keep = current is not None and not current.is_expired(now)
        attributes[_CREATED] = (
            current.attributes.get(_CREATED) if keep and current else None
        ) or now.isoformat()
        if op.ttl is not None:
            attributes[_TTL] = op.ttl
        handle.save(
            self._text(value, op.index),
            key=op.key,
            attributes=attributes,
            expires_at=None if op.ttl is None else now + timedelta(minutes=op.ttl),
            supersede_reason="put",
        )
        return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        validate(op.filter)
        scopes = self._scopes_under(op.namespace_prefix)
        if not scopes or op.limit <= 0:
            return []
        handle = self.store.scope(scopes[0], shared=scopes[1:])
        wanted = op.offset + op.limit
        found: list[tuple[Memory, float | None]] = []
        if op.query:
            size = min(1000, wanted if op.filter is None else max(wanted * 4, 100))
            for hit in handle.search(op.query, limit=size, status="active"):
                if matches(self._value(hit.memory), op.filter):
                    found.append((hit.memory, hit.score))
        else:
            offset = 0
            while len(found) < wanted:
                page = handle.list(limit=_PAGE, offset=offset, include_expired=False)
                found += [(m, None) for m in page if matches(self._value(m), op.filter)]
                if len(page) < _PAGE:
                    break
                offset += _PAGE
        chosen = found[op.offset : wanted]
        if op.refresh_ttl:
            for scope in {m.scope for m, _ in chosen}:
                self._refresh(scope, [m for m, _ in chosen if m.scope == scope])
        return [self._item(m, score, search=True) for m, score in chosen]  # type: ignore[misc]

    def _value(self, memory: Memory) -> dict[str, Any]:
        value = memory.attributes.get(_VALUE)
        return value if isinstance(value, dict) else {"content": memory.content}

    def _refresh(self, scope: str, memories: Sequence[Memory]) -> None:
        """Restart the clock of items put with a ``ttl`` (TTL config ``refresh_on_read``)."""
        now = self.store.clock()
        by_ttl: dict[float, list[str]] = {}
        for memory in memories:
            ttl = memory.attributes.get(_TTL)
            if isinstance(ttl, int | float) and memory.expires_at is not None:
                by_ttl.setdefault(float(ttl), []).append(memory.id)
        handle = self.store.scope(scope)
        for ttl, ids in by_ttl.items():
            handle.renew(ids, expires_at=now + timedelta(minutes=ttl))

    # ------------------------------------------------------------------ namespaces

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = [self._namespace(s) for s in self.store.scopes()]
        for condition in op.match_conditions or ():
            spaces = [ns for ns in spaces if _matches_path(condition, ns)]
        if op.max_depth is not None:
            spaces = list({ns[: op.max_depth] for ns in spaces})
        return sorted(set(spaces))[op.offset : op.offset + op.limit]


def _matches_path(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's namespace match: a prefix or suffix, ``*`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        part = namespace[: len(path)]
    elif condition.match_type == "suffix":
        part = namespace[len(namespace) - len(path) :]
    else:
        raise InvalidInput("match_type", f"expected prefix or suffix, got {condition.match_type!r}")
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
