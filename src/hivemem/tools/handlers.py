"""The handlers of the tools: each parses nothing (``call`` validated the arguments),
calls the facade once or twice and shapes the result as JSON. Logic belongs in the
library, not here."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..facade.memory import ScopedMemory
from ..lifecycle import context, inspection
from ..retrieval import snippets
from ..types import Hit, Memory
from ..write import audit, categories, facts
from ..write.learning import CATEGORIES as LEARNING_TYPES

__all__ = ["LEARNING_TYPES", "brief", "memory_dict", "store_of"]


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
        "category": memory.category,
        "tags": list(memory.tags),
        "created_at": memory.created_at.isoformat(),
    }


def store_of(mem: ScopedMemory) -> Any:
    return mem.store


# ---------------------------------------------------------------------------- handlers


def _saved(mem: ScopedMemory, memory: Memory, asked_type: str | None) -> dict[str, Any]:
    """What a save tool answers: the memory, what it supersedes, its category with the
    categorizer's confidence (corvid), and a soft type suggestion (openhive)."""
    category, confidence = categories.of(mem, memory)
    out = {
        "memory": memory_dict(memory),
        "supersedes_id": memory.supersedes_id,
        "category": category,
        "category_confidence": confidence,
    }
    suggestion = audit.type_suggestion(memory.content, memory.type) if asked_type else None
    if suggestion:
        out["type_suggestion"] = suggestion
    return out


def memory_save(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    memory = mem.save(
        a["content"],
        key=a.get("key"),
        type=a.get("type"),
        supersede_reason=a.get("supersede_reason"),
        minor=a.get("minor", False),
        tags=a.get("tags"),
        source=a.get("source", "manual"),
        category=a.get("category"),
    )
    return _saved(mem, memory, a.get("type"))


def memory_search(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    f = a.get("filters") or {}
    hits = mem.search(
        a["query"],
        a.get("max_results", mem.settings.search_limit),
        type=f.get("type"),
        kind=f.get("kind"),
        tags=f.get("tags"),
        session_id=f.get("session_id"),
        since=f.get("since"),
        until=f.get("until"),
        status=None if f.get("include_superseded", True) else "active",
        min_score=f.get("min_score", 0.0),
        category=f.get("category"),
        mode=a.get("mode", "fast"),
    )
    return search_answer(mem, a["query"], hits, a.get("snippet_tokens", snippets.DEFAULT_TOKENS))


def search_answer(mem: ScopedMemory, query: str, hits: list[Hit], tokens: int) -> dict[str, Any]:
    """openhive's answer: per result ``key``, ``snippet`` (~``tokens`` tokens of the
    matching chunk), ``score``, ``type``, ``is_active``, ``source`` (``hybrid`` when the
    semantic lane found it, else ``keyword``); ``search_mode`` on top, and corvid's
    ``total_candidates`` (memories the lanes found before the cut to the limit). Where
    a memory came from (its ``source`` field) is ``origin``."""
    reason = mem.store.indexer.disabled
    skipped = [n for h in hits for n in h.explain.notes if n.startswith("vector lane skipped")]
    reason = reason or (skipped[0] if skipped else None)
    results = []
    for hit, passage in zip(hits, snippets.passages(mem, hits, tokens), strict=True):
        m = hit.memory
        results.append(
            {
                "id": m.id,
                "key": m.key,
                "snippet": passage,
                "score": hit.score,
                "type": m.type.value,
                "is_active": m.is_active,
                "source": "hybrid" if "vector" in hit.explain.lanes else "keyword",
                "kind": m.kind.value,
                "status": m.status.value,
                "superseded": m.is_superseded,
                "origin": m.source,
                "category": m.category,
                "scope": m.scope,
                "created_at": m.created_at.isoformat(),
            }
        )
    out: dict[str, Any] = {
        "query": query,
        "search_mode": "keyword" if reason else "hybrid",
        "search_mode_reason": reason,
        "count": len(results),
        "total_candidates": hits[0].explain.candidates if hits else 0,
        "results": results,
    }
    if categories.fell_back(hits):
        out["category_fallback"] = True
        out["notes"] = [categories.FALLBACK_NOTE]
    return out


# ADR 005's kinds are episode | fact | preference | reflection: its preference is a fact
# the categorizer files under the category of that name.
PREFERENCE = "preference"


def search_memory(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    """ADR 005: ``search_memory(query, kind=None, tag=None, limit=10)``."""
    kind, category = a.get("kind"), a.get("category")
    if kind == PREFERENCE:
        if category not in (None, PREFERENCE):
            raise InvalidInput("category", "kind 'preference' is the category 'preference'")
        kind, category = "fact", PREFERENCE
    hits = mem.search(
        a["query"],
        a.get("limit", mem.settings.search_limit),
        kind=kind,
        tags=[a["tag"]] if a.get("tag") else None,
        category=category,
        mode=a.get("mode", "fast"),
    )
    return search_answer(mem, a["query"], hits, a.get("snippet_tokens", snippets.DEFAULT_TOKENS))


def memory_get(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return {"memory": memory_dict(mem.get(a["id"]))}


def memory_list(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    """openhive's ``memory_list``: the current (active, unexpired) entries; one row past
    the page says whether there are ``more`` (then ``next_offset`` reads them), and
    ``total`` how many current entries pass the filters in all."""
    limit, offset = a.get("max_results", LIST_LIMIT), a.get("offset", 0)
    memories = mem.list(
        type=a.get("type"),
        kind=a.get("kind"),
        tags=a.get("tags"),
        limit=limit + 1,
        offset=offset,
        category=a.get("category"),
        include_expired=False,
    )
    more = len(memories) > limit
    total = inspection.current_count(
        mem, type=a.get("type"), kind=a.get("kind"), tags=a.get("tags"), category=a.get("category")
    )
    out: dict[str, Any] = {
        "count": min(len(memories), limit),
        "total": total,
        "more": more,
        "memories": [brief(m) for m in memories[:limit]],
    }
    if more:
        out["next_offset"] = offset + limit
    return out


LIST_LIMIT = 100  # memory_list's page: every active entry of a team's memory, as the seed


def memory_delete(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    memory = mem.delete(a["id"])
    return {"deleted": True, "memory": brief(memory)}


def remember_fact(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    """ADR 005: ``remember_fact(content, confidence=1.0, entity_names=[])``."""
    memory = facts.remember(
        mem,
        a["content"],
        confidence=a.get("confidence"),
        entity_names=a.get("entity_names"),
        key=a.get("key"),
        type=a.get("type"),
        supersede_reason=a.get("supersede_reason"),
        tags=a.get("tags"),
        source=a.get("source", "manual"),
    )
    return _saved(mem, memory, a.get("type"))


def _own_id(mem: ScopedMemory, id_or_key: str) -> str:
    """The id of the own scope's active memory under a key, else the value as an id
    (a key of a led scope is resolved by the library's rights)."""
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
    )
    return {"memory": memory_dict(memory), "supersedes_id": memory.supersedes_id}


def confirm_fact(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return {"memory": memory_dict(mem.confirm(_own_id(mem, a["id"])))}


def memory_stats(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return mem.stats()


def get_entity_info(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    entity, memories = mem.entity(a["name"], limit=a.get("max_results", 20))
    return {"entity": entity.to_dict(), "memories": [brief(m) for m in memories]}


def memory_consolidate(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    """ADR 005's consolidate(): ``ScopedMemory.consolidate_cycle``."""
    runs = [r.to_dict() for r in mem.consolidate_cycle(a.get("session_id"), trigger="tool")]
    return {"result": runs[0], "runs": runs}


def memory_related(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    related = mem.related(_own_id(mem, a["id"]), limit=a.get("max_results", 10))
    return {"related": [{"score": r.score, "memory": brief(r.memory)} for r in related]}


def inject_learning(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    options = {
        name: a[name]
        for name in ("key", "supersede_reason", "topic", "confidence", "corroborated", "domains")
        if name in a
    }
    memory = mem.inject_learning(
        a["content"],
        a["category"],
        to=a.get("target_scope"),
        tags=a.get("tags"),
        verified=a.get("verified"),
        **options,
    )
    category = a["category"].strip().lower()
    return {"memory": memory_dict(memory), "scope": memory.scope, "category": category}


def memory_purge(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    return {"purged": mem.purge(a["id"], dry_run=a.get("dry_run", False)).to_dict()}


def memory_purge_all(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    if a["confirm"] != mem.name:
        raise InvalidInput("confirm", f"give the scope's name ({mem.name!r}) to erase it")
    return {"purged": mem.purge_all(dry_run=a.get("dry_run", False)).to_dict()}


def add_task_result(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    """Agent Swarm's task completions: a finished or failed task's output, kept 7 days."""
    memory = mem.add_task_result(
        a["output"],
        status=a.get("status", "completed"),
        task_id=a.get("task_id"),
        error=a.get("error"),
        session_id=a.get("session_id"),
        tags=a.get("tags"),
    )
    return {"memory": memory_dict(memory), "supersedes_id": memory.supersedes_id}


def memory_context(mem: ScopedMemory, a: dict[str, Any]) -> dict[str, Any]:
    """The memory block for the next prompt (``ScopedMemory.context``), with its
    sections."""
    return context.context_block(
        mem,
        query=a.get("query"),
        session_id=a.get("session_id"),
        max_entries=a.get("max_entries", 50),
        max_tokens=a.get("max_tokens"),
        profile=a.get("profile"),
        max_relevant=a.get("max_relevant"),
        min_score=a.get("min_score"),
    ).to_dict()
