"""The call shapes Mem0 users know, as a thin adapter over ``ScopedMemory``.

    from hivemem.compat.mem0 import Memory
    m = Memory.open("memory.db")            # or Memory(store)
    m.add("I live in Berlin", user_id="alice")
    m.search("where does alice live?", filters={"user_id": "alice"}, top_k=5)

Mapping (nothing here re-implements a rule; every call goes through the facade):

- Identity → scope: ``user_id`` gives scope ``user:<id>``; without it ``agent_id`` gives
  ``agent:<id>``; with neither, ``run_id`` gives ``run:<id>``. At least one is required,
  as in Mem0. The other ids are stored in ``attributes`` and filter exactly.
- ``add(text)`` saves one fact; ``add([{"role", "content"}, …])`` stores each message as
  an episode of session ``run_id`` (or a new session id). No LLM runs on this path
  (``infer`` is accepted and ignored): facts are drawn from episodes later, by
  consolidation. An exact duplicate of an existing fact is reported with event ``NONE``.
- ``expiration_date`` (``YYYY-MM-DD`` or a full time) is the memories' ``expires_at``:
  they leave search and lists after it. ``filters`` beyond the ids match the
  ``metadata`` given on ``add`` (``hivemem.retrieval.matching``: equality or ``$gt``,
  ``$in`` … operators).
- ``update`` is a correction (a new version superseding the old); ``delete`` is soft;
  ``delete_all(user_id=…, purge=True)`` erases a user's data for good.
  Ids stay usable: an old id resolves to the current version of its chain.
- Results are ``{"results": [...]}`` with ``id``, ``memory``, ``score``, ``created_at``,
  ``updated_at``, ``metadata`` plus the ids, as Mem0 returns them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from uuid6 import uuid7

from .. import arguments
from ..errors import InvalidInput, NotFound
from ..facade.database import Store
from ..facade.database import open as open_store
from ..facade.memory import ScopedMemory
from ..retrieval import matching
from ..types import Memory as Record
from ..types import Status
from ..write.rules import DEFAULT as _DEFAULT

_ID_FIELDS = ("user_id", "agent_id", "run_id")
_META_KEY = "metadata"


class Memory:
    """A Mem0-style client over a HiveMem ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @classmethod
    def open(cls, path: str | Path | None = None) -> Memory:
        return cls(open_store(path))

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _ids(filters: Mapping[str, Any] | None, **given: str | None) -> dict[str, str]:
        ids = {k: v for k, v in given.items() if v is not None}
        for name, value in (filters or {}).items():
            if name in _ID_FIELDS and value is not None:
                ids.setdefault(name, value)
        for name, value in ids.items():
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(name, "expected a non-empty string")
        if not ids:
            raise InvalidInput("user_id", "at least one of user_id, agent_id or run_id is required")
        return ids

    def _handle(self, ids: Mapping[str, str]) -> ScopedMemory:
        for name in _ID_FIELDS:
            if name in ids:
                return self.store.scope(f"{name.removesuffix('_id')}:{ids[name]}")
        raise AssertionError("unreachable: _ids guarantees one id")

    @staticmethod
    def _extra(ids: Mapping[str, str], handle: ScopedMemory) -> dict[str, str]:
        """The ids not already implied by the scope: stored and filtered as attributes."""
        return {k: v for k, v in ids.items() if not handle.name.startswith(k[:-3] + ":")}

    def _resolve(
        self,
        filters: Mapping[str, Any] | None,
        user_id: str | None,
        agent_id: str | None,
        run_id: str | None,
    ) -> tuple[ScopedMemory, dict[str, str]]:
        """The handle of the identity given, and the ids that filter within its scope."""
        ids = self._ids(filters, user_id=user_id, agent_id=agent_id, run_id=run_id)
        handle = self._handle(ids)
        return handle, self._extra(ids, handle)

    @staticmethod
    def _matches(
        record: Record, extra: Mapping[str, str], filters: Mapping[str, Any] | None = None
    ) -> bool:
        if not all(record.attributes.get(k) == v for k, v in extra.items()):
            return False
        wanted = {k: v for k, v in (filters or {}).items() if k not in _ID_FIELDS}
        return not wanted or matching.matches(record.attributes.get(_META_KEY) or {}, wanted)

    def scope_for(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> str:
        """The scope the identity given lives in (``user:<id>`` …): what a server checks
        its caller may reach before calling."""
        return self._resolve(filters, user_id, agent_id, run_id)[0].name

    def scope_of(self, memory_id: str) -> str:
        """The scope holding ``memory_id`` (``NotFound`` when none of the identity
        scopes does)."""
        return self._current(memory_id)[0].name

    @staticmethod
    def _wanted(top_k: Any, limit: Any, default: int) -> int:
        """How many results: ``top_k`` (Mem0's newer name) or ``limit``, else ``default``."""
        for field, value in (("top_k", top_k), ("limit", limit)):
            if value is not None:
                return arguments.limit(value, field, maximum=1000)
        return default

    @staticmethod
    def _expiry(expiration_date: str | None) -> Any:
        """``expires_at`` for ``expiration_date``: a date alone means the end of that
        day (UTC); ``None`` keeps the TTL policy."""
        if expiration_date is None:
            return _DEFAULT
        if not isinstance(expiration_date, str):
            raise InvalidInput("expiration_date", "expected a date (YYYY-MM-DD) or a time")
        text = expiration_date.strip()
        return f"{text}T23:59:59.999999+00:00" if len(text) == 10 else text

    def _format(self, record: Record, score: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": record.id,
            "memory": record.content,
            "hash": record.content_hash,
            "metadata": dict(record.attributes.get(_META_KEY, {})) or None,
            "created_at": record.created_at.isoformat(),
            "updated_at": record.updated_at.isoformat(),
        }
        if score is not None:
            out["score"] = score
        for name in _ID_FIELDS:
            value = record.attributes.get(name)
            if value is None:
                prefix = name.removesuffix("_id") + ":"
                value = record.scope[len(prefix) :] if record.scope.startswith(prefix) else None
            if value is not None:
                out[name] = value
        if record.role:
            out["role"] = record.role
        return out

    def _current(self, memory_id: str) -> tuple[ScopedMemory, Record]:
        """The handle owning ``memory_id`` and the current version of its chain."""
        if not isinstance(memory_id, str) or not memory_id:
            raise InvalidInput("memory_id", "expected a memory id")
        for scope in self.store.scopes():
            if not any(scope.startswith(n.removesuffix("_id") + ":") for n in _ID_FIELDS):
                continue
            handle = self.store.scope(scope)
            try:
                chain = handle.history(memory_id)
            except NotFound:
                continue
            live = [m for m in chain if m.status is Status.ACTIVE]
            return handle, (live[-1] if live else chain[-1])
        raise NotFound(f"no memory {memory_id!r}")

    # ------------------------------------------------------------------ Mem0 API

    def add(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,  # accepted for compatibility; no LLM runs on the write path
        expiration_date: str | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        ids = self._ids(None, user_id=user_id, agent_id=agent_id, run_id=run_id)
        expires_at = self._expiry(expiration_date)
        handle = self._handle(ids)
        attributes: dict[str, Any] = {**self._extra(ids, handle)}
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInput("metadata", "expected an object")
        if metadata:
            attributes[_META_KEY] = dict(metadata)
        if isinstance(messages, str):
            started = self.store.clock()
            record = handle.save(
                messages, attributes=attributes, source="conversation", expires_at=expires_at
            )
            event = "ADD" if record.created_at >= started else "NONE"  # NONE: exact duplicate
            return {"results": [{"id": record.id, "memory": record.content, "event": event}]}
        if not isinstance(messages, Sequence):
            raise InvalidInput("messages", "expected a string or a list of {role, content}")
        session = run_id or f"mem0-{uuid7()}"
        items = []
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping) or "content" not in message:
                raise InvalidInput(f"messages[{index}]", "expected {role, content}")
            items.append(
                {
                    "content": message["content"],
                    "session_id": session,
                    "role": message.get("role") or "user",
                    "attributes": attributes,
                    "expires_at": expires_at,
                }
            )
        records = handle.add_episodes(items)
        return {"results": [{"id": r.id, "memory": r.content, "event": "ADD"} for r in records]}

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        top_k: int | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        handle, extra = self._resolve(filters, user_id, agent_id, run_id)
        wanted = self._wanted(top_k, limit, 10)
        matching.validate(filters)
        narrowed = extra or any(k not in _ID_FIELDS for k in filters or {})
        hits = handle.search(
            query, limit=min(1000, wanted * (3 if narrowed else 1)), min_score=threshold or 0.0
        )
        results = [
            self._format(h.memory, h.score)
            for h in hits
            if h.memory.is_active and self._matches(h.memory, extra, filters)
        ]
        return {"results": results[:wanted]}

    def get(self, memory_id: str) -> dict[str, Any]:
        _, record = self._current(memory_id)
        return self._format(record)

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        top_k: int | None = None,
        limit: int | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        handle, extra = self._resolve(filters, user_id, agent_id, run_id)
        wanted = self._wanted(top_k, limit, 100)
        matching.validate(filters)
        listed = handle.list(limit=10_000, include_expired=False)
        records = [r for r in listed if self._matches(r, extra, filters)]
        return {"results": [self._format(r) for r in records[:wanted]]}

    def update(self, memory_id: str, data: str) -> dict[str, Any]:
        handle, record = self._current(memory_id)
        new = handle.correct(record.id, data, reason="updated")
        return {"message": "Memory updated successfully!", "id": new.id}

    def delete(self, memory_id: str) -> dict[str, Any]:
        handle, record = self._current(memory_id)
        handle.delete(record.id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        purge: bool = False,
        **_: Any,
    ) -> dict[str, Any]:
        """Soft-delete every memory of the identity; ``purge=True`` erases them for good
        instead (``hivemem.write.purge``: rows, index entries, vectors; for a whole user, also
        the scope's sessions and vault) — a user's right to erasure."""
        handle, extra = self._resolve(None, user_id, agent_id, run_id)
        if purge:
            if not extra:
                report = handle.purge_all()
            else:
                ids = [r.id for r in handle.list(limit=10_000) if self._matches(r, extra)]
                for memory_id in ids:
                    handle.purge(memory_id, vacuum=memory_id == ids[-1])
                report = None
            count = report.counts["memories"] if report else len(ids)
            return {"message": f"{count} memories erased for good"}
        if extra:
            count = 0
            for record in handle.list(limit=10_000):
                if self._matches(record, extra):
                    handle.delete(record.id)
                    count += 1
        else:
            count = handle.delete_all()
        return {"message": f"{count} memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """One entry per version, oldest first, in Mem0's history shape."""
        handle, record = self._current(memory_id)
        chain = handle.history(record.id)
        out = []
        previous: Record | None = None
        for version in chain:
            out.append(self._history_entry(chain[0].id, previous, version, "UPDATE"))
            previous = version
        out[0]["event"] = "ADD"
        last = chain[-1]
        if last.status is Status.DELETED:
            out.append(self._history_entry(chain[0].id, last, last, "DELETE"))
        return out

    @staticmethod
    def _history_entry(
        root: str, previous: Record | None, version: Record, event: str
    ) -> dict[str, Any]:
        return {
            "id": version.id,
            "memory_id": root,
            "old_memory": previous.content if previous else None,
            "new_memory": None if event == "DELETE" else version.content,
            "event": event,
            "created_at": version.created_at.isoformat(),
            "updated_at": version.updated_at.isoformat(),
            "is_deleted": event == "DELETE",
        }

    def reset(self) -> None:
        raise InvalidInput(
            "reset", "not supported: HiveMem never drops data; use delete_all per user"
        )
