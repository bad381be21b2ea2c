"""Which tools a server offers, and the other names tools answer to.

ADR 005's lesson: 13 tools cluttered the prompt and confused the agent. So a server
offers a chosen set: a profile named for the system its agents were written for, or an
explicit comma-separated list of tool names (``serve-mcp --tools``,
``openai_functions(profile=…)``, ``GET /v1/tools?profile=…``).

``NAMES`` maps the names other systems use to HiveMem's tool: Agent Swarm's hyphenated
``memory-search`` is ``memory_search`` under another name (same arguments, same
answer). A profile lists the names its agents call.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InvalidInput

# other name -> the tool it is
NAMES: Mapping[str, str] = {
    "memory-search": "memory_search",
    "memory-get": "memory_get",
    "memory-delete": "memory_delete",
    "inject-learning": "inject_learning",
}

# ADR 005 §5: the 5 core tools and the 2 optional ones.
CORE = [
    "search_memory",
    "remember_fact",
    "correct_fact",
    "confirm_fact",
    "memory_stats",
    "get_entity_info",
    "memory_consolidate",
]

PROFILES: Mapping[str, list[str]] = {
    "core": CORE,
    "adr005": CORE,
    # The assistant extension's Orchestrator tools (consolidation runs on its schedule).
    "assistant": CORE[:6],
    # openhive's memory_* tools.
    "openhive": ["memory_save", "memory_search", "memory_list", "memory_delete"],
    # corvid-agent's MemoryManager: save, recall, search (with a category), list by
    # category, related memories.
    "corvid": ["memory_save", "memory_get", "memory_search", "memory_list", "memory_related"],
    # Agent Swarm's MCP tools.
    "swarm": ["memory-search", "memory-get", "memory-delete", "inject-learning", "add_task_result"],
}


def select(spec: str | None, known: Mapping[str, object], everything: list[str]) -> list[str]:
    """The tool names ``spec`` stands for: ``None``/``"all"`` → ``everything``; a
    profile name → its list; else a comma-separated list of tool names (each a tool of
    ``known``). Unknown names raise ``InvalidInput`` listing the choices."""
    if spec is None or not str(spec).strip() or str(spec).strip().lower() == "all":
        return list(everything)
    if not isinstance(spec, str):
        raise InvalidInput("tools", "expected a profile name or a comma-separated list")
    wanted = spec.strip()
    if wanted.lower() in PROFILES:
        return list(PROFILES[wanted.lower()])
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InvalidInput(
            "tools",
            f"unknown tool or profile {unknown[0]!r}; profiles: all, {', '.join(PROFILES)}; "
            f"tools: {', '.join(known)}",
        )
    return list(dict.fromkeys(names))
