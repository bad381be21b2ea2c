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
from dataclasses import dataclass
from typing import Any

from ..arguments import MAX_OFFSET
from ..core import ScopedMemory
from ..errors import HiveMemError, InvalidInput
from . import handlers as h
from .handlers import LEARNING_TYPES, memory_dict, store_of
from .schema import (
    ALIASES,
    CONTENT,
    FILTERS,
    ID,
    KEY,
    MAX,
    MINOR,
    REASON,
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
            ),
            h.memory_save,
            True,
        ),
        _tool(
            "memory_search",
            """Search long-term memory with a natural-language query (keyword and semantic
            search combined). Returns the best matches with a snippet, a score in [0, 1],
            their type, and whether each is current or superseded by a newer version.
            Use memory_get with an id for the full text.""",
            obj(
                ["query"],
                query=string("What to look for, in plain words.", 4000),
                max_results=MAX,
                filters={**FILTERS, "description": "Optional filters, combined with AND."},
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
            """List current memories, newest first, optionally of one type, kind or tag.""",
            obj(
                type=FILTERS["properties"]["type"],
                kind=FILTERS["properties"]["kind"],
                tags=FILTERS["properties"]["tags"],
                max_results={**MAX, "default": 20},
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
            deletion is recorded; memory_get still shows the row.""",
            obj(["id"], id=ID),
            h.memory_delete,
            True,
        ),
        _tool(
            "remember_fact",
            """Remember a fact learned in this conversation (about the user, the project,
            the world). Saying the same fact twice stores it once.""",
            obj(
                ["content"],
                content=CONTENT,
                key=KEY,
                type=TYPE,
                supersede_reason=REASON,
                tags=TAGS,
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
            status, kind and type, expired, sessions.""",
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
            """Turn the dialogue of finished sessions (or of one session) into lasting
            facts now, instead of waiting for the scheduled job.""",
            obj(session_id=string("Only this session (ended or not).", 200)),
            h.memory_consolidate,
            True,
        ),
        _tool(
            "inject_learning",
            """For a lead agent: record a learning every worker of the team will see, in
            the team's shared scope. Categories: mistake-pattern (an error to avoid),
            best-practice (a way that works), codebase-knowledge (how the code is laid
            out), preference (how the team or user wants things done).""",
            obj(
                ["content", "category"],
                content=string("The learning, stated so a worker can act on it."),
                category={
                    "type": "string",
                    "enum": list(LEARNING_TYPES),
                    "description": "What kind of learning it is.",
                },
                key=KEY,
                supersede_reason=REASON,
                tags=TAGS,
            ),
            h.inject_learning,
            True,
        ),
    )
}


def openai_functions() -> list[dict[str, Any]]:
    """Every tool as an OpenAI-style function definition (``tools=`` of a chat call);
    a fresh copy each time, so a caller's changes never reach the table."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": copy.deepcopy(t.parameters),
            },
        }
        for t in TOOLS.values()
    ]


def tool_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a tool's arguments (a copy)."""
    return copy.deepcopy(_lookup(name).parameters)


def _lookup(name: object) -> Tool:
    if not isinstance(name, str) or name not in TOOLS:
        raise InvalidInput("name", f"unknown tool {name!r}; tools: {', '.join(TOOLS)}")
    return TOOLS[name]


def call(mem: ScopedMemory, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run tool ``name`` with ``arguments`` on ``mem``: aliases resolved, arguments
    validated, secrets redacted from the result (and from a library error's message)."""
    tool = _lookup(name)
    args = resolve_aliases(tool.parameters, arguments)
    validate(args, tool.parameters, "")
    scrub = store_of(mem).scrub
    try:
        result = tool.handler(mem, args)
    except HiveMemError as exc:
        exc.message = scrub(exc.message)
        exc.args = (exc.message,)
        raise
    return _scrubbed(result, scrub)


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
    "LEARNING_TYPES",
    "TOOLS",
    "Tool",
    "call",
    "memory_dict",
    "openai_functions",
    "resolve_aliases",
    "tool_schema",
    "validate",
]
