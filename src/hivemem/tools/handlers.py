"""The handlers of the tools: each parses nothing (``call`` validated the arguments),
calls the facade once or twice and shapes the result as JSON. Logic belongs in the
library, not here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import ScopedMemory
from ..errors import InvalidInput
from ..types import Kind, Memory, MemoryType

LEARNING_TYPES: Mapping[str, MemoryType] = {
    "mistake-pattern": MemoryType.LESSON,
    "best-practice": MemoryType.LESSON,
    "codebase-knowledge": MemoryType.CONTEXT,
    "preference": MemoryType.DECISION,
}


def memory_dict(memory: Memory) -> dict[str, Any]:
    """A memory as a tool returns it: every field but the content hash, plus flags."""
    out = memory.to_dict()
    out.pop("content_hash", None)
    out["is_active"] = memory.is_active
    out["superseded"] = memory.is_superseded
    return out


def brief(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "key": memory.key,
        "type": memory.type.value,
        "kind": memory.kind.value,
        "content": memory.content,
        "status": memory.status.value,
        "is_active": memory.is_active,
        "superseded": memory.is_superseded,
        "source": memory.source,
        "scope": memory.scope,
        "tags": list(memory.tags),
        "created_at": memory.created_at.isoformat(),
    }


def store_of(mem: ScopedMemory) -> Any:
    return mem.store


# ---------------------------------------------------------------------------- handlers


def memory_save(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    memory = mem.save(
        a["content"],
        key=a.get("key"),
        type=a.get("type"),
        supersede_reason=a.get("supersede_reason"),
        minor=a.get("minor", False),
        tags=a.get("tags"),
    )
    return {"memory": memory_dict(memory), "supersedes_id": memory.supersedes_id}


def memory_search(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    f = a.get("filters") or {}
    hits = mem.search(
        a["query"],
        a.get("max_results", 10),
        type=f.get("type"),
        kind=f.get("kind"),
        tags=f.get("tags"),
        session_id=f.get("session_id"),
        since=f.get("since"),
        until=f.get("until"),
        status=None if f.get("include_superseded", True) else "active",
        min_score=f.get("min_score", 0.0),
    )
    reason = mem.store.indexer.disabled
    skipped = [n for h in hits for n in h.explain.notes if n.startswith("vector lane skipped")]
    reason = reason or (skipped[0] if skipped else None)
    results = []
    for hit in hits:
        m = hit.memory
        results.append(
            {
                "id": m.id,
                "key": m.key,
                "snippet": hit.snippet or m.content[:300],
                "score": hit.score,
                "type": m.type.value,
                "kind": m.kind.value,
                "status": m.status.value,
                "is_active": m.is_active,
                "superseded": m.is_superseded,
                "source": m.source,
                "scope": m.scope,
                "created_at": m.created_at.isoformat(),
            }
        )
    return {
        "query": a["query"],
        "mode": "keyword-only" if reason else "hybrid",
        "mode_reason": reason,
        "count": len(results),
        "results": results,
    }


def memory_get(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return {"memory": memory_dict(mem.get(a["id"]))}


def memory_list(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    memories = mem.list(
        type=a.get("type"),
        kind=a.get("kind"),
        tags=a.get("tags"),
        limit=a.get("max_results", 20),
        offset=a.get("offset", 0),
    )
    return {"count": len(memories), "memories": [brief(m) for m in memories]}


def memory_delete(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    memory = mem.delete(a["id"], updated_by=mem.name)
    return {"deleted": True, "memory": brief(memory)}


def remember_fact(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    memory = mem.save(
        a["content"],
        key=a.get("key"),
        type=a.get("type"),
        kind=Kind.FACT,
        supersede_reason=a.get("supersede_reason"),
        tags=a.get("tags"),
        updated_by=mem.name,
    )
    return {"memory": memory_dict(memory), "supersedes_id": memory.supersedes_id}


def _own_id(mem: ScopedMemory, id_or_key: str) -> str:
    """The id of the own scope's active memory under a key, else the value as an id."""
    try:
        by_key = [m for m in mem.list(key=id_or_key, limit=10) if m.scope == mem.name]
    except InvalidInput:  # not a valid key: the library judges it as an id
        return id_or_key
    return by_key[0].id if by_key else id_or_key


def correct_fact(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    memory = mem.correct(
        _own_id(mem, a["id"]),
        a["content"],
        reason=a.get("supersede_reason"),
        minor=a.get("minor", False),
        updated_by=mem.name,
    )
    return {"memory": memory_dict(memory), "supersedes_id": memory.supersedes_id}


def confirm_fact(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return {"memory": memory_dict(mem.confirm(_own_id(mem, a["id"]), updated_by=mem.name))}


def memory_stats(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return mem.stats()


def get_entity_info(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    entity, memories = mem.entity(a["name"], limit=a.get("max_results", 20))
    return {"entity": entity.to_dict(), "memories": [brief(m) for m in memories]}


def memory_consolidate(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return {"result": mem.consolidate(a.get("session_id")).to_dict()}


def inject_learning(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    target = mem.settings.learning_scope
    if not target:
        raise InvalidInput(
            "learning_scope",
            "no shared learning scope is configured: start the server with "
            "--learning-scope NAME (or set HIVEMEM_LEARNING_SCOPE)",
        )
    if target != mem.name and target not in mem.shared:
        raise InvalidInput(
            "learning_scope",
            f"{target!r} is not a scope of this session (scope {mem.name!r}, shared "
            f"{list(mem.shared)}); bind it as a shared scope",
        )
    category = a["category"].strip().lower()
    lead = store_of(mem).scope(target)
    memory = lead.save(
        a["content"],
        key=a.get("key"),
        type=LEARNING_TYPES[category],
        supersede_reason=a.get("supersede_reason"),
        tags=["learning", category, *(a.get("tags") or [])],
        attributes={"learning_category": category, "injected_by": mem.name},
        updated_by=mem.name,
    )
    return {"memory": memory_dict(memory), "scope": target, "category": category}
