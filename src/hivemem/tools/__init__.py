"""One table of tools over the library facade: the MCP server, the HTTP API and the
OpenAI-style function list are all generated from ``TOOLS``.

A tool is a name, a description written for a model, the JSON schema of its arguments
and a small handler ``(mem, args) -> JSON-able dict`` over ``ScopedMemory``. The scope
is bound by the caller (a server's configuration, a token), never an argument: a model
cannot reach another scope by naming it.

``call(mem, name, arguments)`` is the one way in. It resolves the argument aliases
models commonly send (``q`` → ``query``, ``limit`` → ``max_results`` …), validates the
arguments against the schema (an ``InvalidInput`` naming the argument, never a
traceback), runs the handler, and redacts every registered secret from the result's
strings (``store.scrub``). Library errors (``HiveMemError``) pass through for each
front end to translate once.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..arguments import MAX_OFFSET
from ..errors import HiveMemError, InvalidInput
from ..facade.memory import ScopedMemory
from ..lifecycle.context import RECIPES as CONTEXT_PROFILES
from . import handlers as h
from . import profiles
from .handlers import LEARNING_TYPES, memory_dict, store_of
from .schema import (
    ALIASES,
    CATEGORY,
    CONTENT,
    FILTERS,
    ID,
    KEY,
    MAX,
    MINOR,
    MODE,
    REASON,
    SNIPPET,
    SOURCE,
    TAGS,
    TYPE,
    obj,
    resolve_aliases,
    string,
    validate,
)

Handler = Callable[[ScopedMemory, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    """One tool: ``parameters`` is the JSON schema (an object) of its arguments;
    ``writes`` says whether it changes the store (servers serialise those)."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler
    writes: bool


def _tool(name: str, description: str, parameters: dict, handler: Handler, writes: bool) -> Tool:
    return Tool(name, " ".join(description.split()), parameters, handler, writes)


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        _tool(
            "memory_save",
            """Save something to long-term memory so it can be found in later sessions.
            Give a key to name it; if the key already holds a different memory the save is
            refused with the current text, unless supersede_reason says why it replaces it
            (the old version stays in the history).""",
            obj(
                ["content"],
                content=CONTENT,
                key=KEY,
                type=TYPE,
                supersede_reason=REASON,
                minor=MINOR,
                tags=TAGS,
                source=SOURCE,
                category=CATEGORY,
            ),
            h.memory_save,
            True,
        ),
        _tool(
            "memory_search",
            """Search long-term memory with a natural-language query (keyword and semantic
            search combined). Returns the best matches, each with its key, a snippet of
            the matching text (about 400 tokens), a score in [0, 1], its type, whether it
            is current (is_active) or superseded, and source: hybrid (found by meaning)
            or keyword. search_mode says which search ran. Use memory_get for the full
            text.""",
            obj(
                ["query"],
                query=string("What to look for, in plain words.", 4000),
                max_results=MAX,
                filters={**FILTERS, "description": "Optional filters, combined with AND."},
                snippet_tokens=SNIPPET,
                mode=MODE,
            ),
            h.memory_search,
            False,
        ),
        _tool(
            "memory_get",
            """Read one memory in full by its id (or key), whatever its status: current,
            superseded, deleted or expired.""",
            obj(["id"], id=ID),
            h.memory_get,
            False,
        ),
        _tool(
            "memory_list",
            """List current memories (active, not expired), newest first, optionally of
            one type, kind, tag or category. total counts every current memory that
            passes the filters; more says whether there are more than max_results;
            next_offset reads the next page.""",
            obj(
                type=FILTERS["properties"]["type"],
                kind=FILTERS["properties"]["kind"],
                tags=FILTERS["properties"]["tags"],
                category=FILTERS["properties"]["category"],
                max_results={**MAX, "default": h.LIST_LIMIT},
                offset={
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_OFFSET,
                    "default": 0,
                    "description": "Skip.",
                },
            ),
            h.memory_list,
            False,
        ),
        _tool(
            "memory_delete",
            """Delete a memory (by id or key) so it no longer appears in search. The
            deletion is recorded; memory_get still shows the row. A lead may delete in
            the shared scope it leads; others are refused.""",
            obj(["id"], id=ID),
            h.memory_delete,
            True,
        ),
        _tool(
            "remember_fact",
            """Remember a fact learned in this conversation (about the user, the project,
            the world). Say how sure you are (confidence) and which people, projects or
            things it is about (entity_names). Saying the same fact twice stores it
            once.""",
            obj(
                ["content"],
                content=CONTENT,
                confidence={
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "default": 1.0,
                    "description": "How sure you are, from 0 to 1.",
                },
                entity_names={
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 200},
                    "maxItems": 32,
                    "description": "Names of the people, projects or things it is about.",
                },
                key=KEY,
                type=TYPE,
                supersede_reason=REASON,
                tags=TAGS,
                source=SOURCE,
            ),
            h.remember_fact,
            True,
        ),
        _tool(
            "correct_fact",
            """Correct a memory that is wrong or outdated: stores the corrected text as a
            new version linked to the old one, which is kept as superseded.""",
            obj(
                ["id", "content"],
                id=ID,
                content=string("The corrected text, in full."),
                supersede_reason=string("Why it was wrong (default: 'corrected').", 1000),
                minor=MINOR,
            ),
            h.correct_fact,
            True,
        ),
        _tool(
            "confirm_fact",
            """Confirm a memory is true: its confidence becomes 1 and it no longer fades
            with time.""",
            obj(["id"], id=ID),
            h.confirm_fact,
            True,
        ),
        _tool(
            "memory_stats",
            """Counts of the memories in this session's scope (and its shared scopes): by
            status, kind (episodes, facts …) and type, expired, sessions; when the latest
            memory was recorded and when consolidation last ran.""",
            obj(),
            h.memory_stats,
            False,
        ),
        _tool(
            "get_entity_info",
            """Everything memory holds about a named person, project, place or thing: the
            entity (with its aliases) and the current memories that mention it.""",
            obj(
                ["name"],
                name=string("The entity's name or one of its aliases.", 200),
                max_results={**MAX, "default": 20},
            ),
            h.get_entity_info,
            False,
        ),
        _tool(
            "memory_consolidate",
            """Consolidate memory now instead of waiting for the schedule: extract lasting
            facts from the dialogue of finished sessions (or of one session), checking
            each against duplicates and contradicting facts (a contradicted fact drops to
            confidence 0.3), and write a summary of each finished session; then decay
            confidence and
            prune facts faded below the floor; then write the weekly reflection when
            one is due. Slow with an LLM: use sparingly.""",
            obj(session_id=string("Only this session (ended or not).", 200)),
            h.memory_consolidate,
            True,
        ),
        _tool(
            "inject_learning",
            """For a lead agent: record a learning every worker of the team will see, in
            the team's shared scope (or, with target_scope, in one worker's own memory).
            Only a lead of that scope may. Categories: mistake-pattern (an error to
            avoid), best-practice (a way that works), codebase-knowledge (how the code is
            laid out), preference (how the team or user wants things done). With a
            topic, the entry is keyed learn:{topic}:{hash} and tagged with its evidence
            (confidence, corroborated, domains, verified).""",
            obj(
                ["content", "category"],
                content=string("The learning, stated so a worker can act on it."),
                category={
                    "type": "string",
                    "enum": list(LEARNING_TYPES),
                    "description": "What kind of learning it is.",
                },
                target_scope=string("A worker's scope to teach instead of the team.", 200),
                key=KEY,
                supersede_reason=REASON,
                tags=TAGS,
                topic=string("A research topic: the key becomes learn:{topic}:{hash}.", 200),
                confidence=string("How sure the finding is.", enum=["high", "medium", "low"]),
                corroborated={
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 1000,
                    "description": "How many independent domains corroborate it.",
                },
                domains={
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": 253},
                    "maxItems": 64,
                    "description": "The corroborating root domains.",
                },
                verified=string("When it was last verified (ISO date).", 40),
            ),
            h.inject_learning,
            True,
        ),
        _tool(
            "search_memory",
            """Search long-term memory (keyword, semantic and entity search fused). The
            main retrieval tool: use it before answering about earlier conversations,
            people, projects or preferences. kind narrows to episode (dialogue), fact,
            preference (a fact about what someone prefers), reflection, summary or note;
            tag to memories carrying that tag.""",
            obj(
                ["query"],
                query=string("What to look for, in plain words.", 4000),
                kind={
                    **FILTERS["properties"]["kind"],
                    "enum": [*FILTERS["properties"]["kind"]["enum"], h.PREFERENCE],
                },
                tag=string("Only memories carrying this tag, e.g. 'work'.", 100),
                limit={**MAX, "description": "Most results to return."},
                category=FILTERS["properties"]["category"],
                snippet_tokens=SNIPPET,
                mode=MODE,
            ),
            h.search_memory,
            False,
        ),
        _tool(
            "memory_related",
            """Memories related to one memory (by id or key): those sharing the most
            words with it, best first, as the cross-reference job found them.""",
            obj(["id"], id=ID, max_results={**MAX, "default": 10}),
            h.memory_related,
            False,
        ),
        _tool(
            "memory_purge",
            """Erase a memory for good (by id or key): every version of it, its index
            entries, vectors and entity links. Unlike memory_delete nothing is kept but
            an audit record without the content. Irreversible: for data that must be
            forgotten (privacy, a secret saved by mistake).""",
            obj(
                ["id"],
                id=ID,
                dry_run={"type": "boolean", "default": False, "description": "Only report."},
            ),
            h.memory_purge,
            True,
        ),
        _tool(
            "memory_purge_all",
            """Erase everything this scope holds, for good: memories, their index
            entries, vectors, entities, sessions, vault, run log and the tokens bound to
            this scope alone. Irreversible; confirm with the scope's name.""",
            obj(
                ["confirm"],
                confirm=string("The scope's name, to confirm.", 200),
                dry_run={"type": "boolean", "default": False, "description": "Only report."},
            ),
            h.memory_purge_all,
            True,
        ),
        _tool(
            "add_task_result",
            """Record what a finished or failed task produced so later tasks can learn
            from it (kept 7 days). For a failed task, say what went wrong in error: the
            next attempt will find it.""",
            obj(
                ["output"],
                output=string("The task's output or result, in full."),
                status=string("How the task ended.", enum=["completed", "failed"]),
                task_id=string("The task's id: a rerun replaces its earlier result.", 200),
                error=string("What went wrong (failed tasks).", 4000),
                session_id=string("The session the task ran in.", 200),
                tags=TAGS,
            ),
            h.add_task_result,
            True,
        ),
        _tool(
            "memory_context",
            """The memory block for your next prompt, in markdown: the pinned memories
            (identity, lessons, decisions, current context), the memories of earlier
            sessions most relevant to query, and the latest reflection, within a budget
            of entries and tokens. Call it before answering and put block in your
            context.""",
            obj(
                query=string("The user's message or the task: what the block is for.", 4000),
                session_id=string("The current session (its turns are left out).", 200),
                max_entries={
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10000,
                    "default": 50,
                    "description": "Most memories in the block.",
                },
                max_tokens={
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10**9,
                    "description": "Most tokens in the block, headings included.",
                },
                profile=string(
                    "A seed's recipe: hivemem (all three sections), openhive (pinned "
                    "only), assistant (facts and the reflection), swarm (relevant past "
                    "knowledge), corvid (as hivemem). Default: the server's profile.",
                    enum=list(CONTEXT_PROFILES),
                ),
                max_relevant={
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 1000,
                    "description": "Most memories in the relevance section.",
                },
                min_score={
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "Relevance floor: hits scoring below it are left out.",
                },
            ),
            h.memory_context,
            False,
        ),
    )
}

# Every name a tool answers to (``profiles.NAMES``: Agent Swarm's hyphenated names) as
# its own entry, so MCP, HTTP and function lists can offer it under that name.
NAMED: dict[str, Tool] = {
    **TOOLS,
    **{
        other: replace(
            TOOLS[name],
            name=other,
            description=f"{TOOLS[name].description} (Also known as {name}.)",
        )
        for other, name in profiles.NAMES.items()
    },
}

DESTRUCTIVE = frozenset({"memory_delete", "memory-delete", "memory_purge", "memory_purge_all"})
# Tools that run maintenance jobs (LLM calls, many batches, seconds to minutes): servers
# run them one at a time on a thread of their own beside the writer, not on it. Each job
# commits per batch (``hivemem.lifecycle.maintenance``), so other writes go on between
# its batches instead of waiting for the whole run.
MAINTENANCE = frozenset({"memory_consolidate"})


def select(spec: str | None = None) -> list[str]:
    """The tool names a server offers for ``spec``: ``None`` or ``all`` (every tool of
    ``TOOLS``), a profile (``core``, ``adr005``, ``assistant``, ``openhive``,
    ``corvid``, ``swarm``) or a comma-separated list of names (``docs/tools.md``)."""
    return profiles.select(spec, NAMED, list(TOOLS))


def openai_functions(profile: str | None = None) -> list[dict[str, Any]]:
    """The tools of ``profile`` (default: every tool; see ``select``) as OpenAI-style
    function definitions (``tools=`` of a chat call); a fresh copy each time, so a
    caller's changes never reach the table."""
    return [
        {
            "type": "function",
            "function": {
                "name": NAMED[name].name,
                "description": NAMED[name].description,
                "parameters": copy.deepcopy(NAMED[name].parameters),
            },
        }
        for name in select(profile)
    ]


def tool_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a tool's arguments (a copy)."""
    return copy.deepcopy(_lookup(name).parameters)


def _lookup(name: object) -> Tool:
    if not isinstance(name, str) or name not in NAMED:
        raise InvalidInput("name", f"unknown tool {name!r}; tools: {', '.join(NAMED)}")
    return NAMED[name]


def call(mem: ScopedMemory, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run tool ``name`` with ``arguments`` on ``mem``: aliases resolved, arguments
    validated, secrets redacted from the result (and from a library error's message)."""
    tool = _lookup(name)
    args = resolve_aliases(tool.parameters, arguments)
    validate(args, tool.parameters, "")
    store = store_of(mem)
    try:
        result = tool.handler(mem, args)
    except HiveMemError as exc:
        exc.message = store.scrub(exc.message)
        exc.args = (exc.message,)
        raise
    scrubber = store.scrubber
    if not scrubber.holds_secrets():  # asked once, not once per string of the result
        return result
    return _scrubbed(result, lambda text: scrubber.scrub(text, refresh=False))


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {k: _scrubbed(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, scrub) for v in value]
    return value


__all__ = [
    "ALIASES",
    "DESTRUCTIVE",
    "LEARNING_TYPES",
    "NAMED",
    "TOOLS",
    "Tool",
    "call",
    "memory_dict",
    "openai_functions",
    "resolve_aliases",
    "select",
    "tool_schema",
    "validate",
]
