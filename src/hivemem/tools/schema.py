"""The arguments of the tools: the JSON-schema pieces their parameters are built from,
the aliases models send for them, and the small validator ``call`` runs before a
handler (the subset of JSON schema the tools use; errors are ``InvalidInput`` naming
the argument, with its path for nested ones: ``filters.type``, ``tags[1]``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InvalidInput
from ..types import CATEGORIES, TYPE_ALIASES, Kind, MemoryType, Source

# Names models send for an argument → the argument, where the tool has it.
ALIASES: Mapping[str, str] = {
    "q": "query",
    "search": "query",
    "question": "query",
    "prompt": "query",
    "limit": "max_results",
    "k": "max_results",
    "top_k": "max_results",
    "n": "max_results",
    "text": "content",
    "memory": "content",
    "fact": "content",
    "learning": "content",
    "new_content": "content",
    "correction": "content",
    "memory_id": "id",
    "memoryId": "id",
    "mid": "id",
    "key_or_id": "id",
    "key": "id",  # openhive's memory_delete(key), corvid's recall(key): where no key argument
    "memory_type": "type",
    "reason": "supersede_reason",
    "entity": "name",
    "entity_name": "name",
    "filter": "filters",
}

TYPES = [t.value for t in MemoryType] + list(TYPE_ALIASES)
TYPE_HELP = (
    "Role the memory plays: identity (who/what we are), lesson (a warning or insight), "
    "decision (a commitment), context (current background), reference (a pointer), "
    "historical (past state). Aliases: "
    + ", ".join(f"{a}→{t.value}" for a, t in TYPE_ALIASES.items())
    + "."
)


def string(description: str, max_length: int | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", "minLength": 1, "description": description}
    if max_length:
        out["maxLength"] = max_length
    return {**out, **extra}


def obj(required: list[str] | None = None, **properties: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


ID = string("The memory's id (from a search or list result), or its key.", 200)
KEY = string(
    "Optional short stable name, e.g. 'deploy-policy'. A key holds one current memory; "
    "saving a different text under it needs supersede_reason.",
    200,
)
TYPE = string(TYPE_HELP, enum=TYPES)
TAGS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 100},
    "maxItems": 64,
    "description": "Free tags.",
}
MAX = {
    "type": "integer",
    "minimum": 1,
    "maximum": 100,
    "default": 10,
    "description": "Most results to return.",
}
FILTERS = obj(
    type={**TYPE, "description": "Only memories of this type (aliases accepted)."},
    kind={
        "type": "string",
        "enum": [k.value for k in Kind],
        "description": "Only memories made this way: episode (a dialogue turn), fact, "
        "reflection, summary, note (an indexed file).",
    },
    tags={**TAGS, "description": "Only memories carrying at least one of these tags."},
    session_id=string("Only memories of this session.", 200),
    since=string("Only memories from this time on (ISO 8601)."),
    until=string("Only memories up to this time (ISO 8601)."),
    include_superseded={
        "type": "boolean",
        "default": True,
        "description": "Also return superseded (outdated) versions, flagged and ranked lower.",
    },
    min_score={"type": "number", "minimum": 0, "maximum": 1, "description": "Score floor."},
    category={
        "type": "string",
        "enum": list(CATEGORIES),
        "description": "Only memories of this automatic category; when none is left, "
        "the unfiltered results come back, flagged category_fallback.",
    },
)
CATEGORY = {
    "type": "string",
    "enum": list(CATEGORIES),
    "description": "The memory's category (default: chosen automatically from its words).",
}
SOURCE = string(
    "Where it came from; it sets how long it lives: manual (never expires), "
    "task_completion (7 days), session_summary (3 days), file_index (30 days), "
    "conversation, consolidation, import.",
    enum=[s.value for s in Source if s.value != "promotion"],
)
MODE = {
    "type": "string",
    "enum": ["fast", "deep"],
    "default": "fast",
    "description": "deep: a slower search for when finding everything matters more than "
    "speed (wider candidate lists, query expansion, an LLM re-rank where one is set up).",
}
SNIPPET = {
    "type": "integer",
    "minimum": 10,
    "maximum": 2000,
    "default": 400,
    "description": "About how many tokens of matching text each result's snippet holds.",
}

CONTENT = string("The text to remember: one self-contained statement.")
REASON = string("Why this replaces the current memory under the same key.", 1000)
MINOR = {
    "type": "boolean",
    "default": False,
    "description": "A small wording fix rather than a new belief (keeps usage and confidence).",
}


def resolve_aliases(
    parameters: Mapping[str, Any], arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The arguments under the tool's own names; an alias and its argument both given
    with different values is an error."""
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise InvalidInput("arguments", "expected an object of named arguments")
    properties = parameters.get("properties", {})
    out: dict[str, Any] = {}
    for given, value in arguments.items():
        name = given
        if given not in properties and ALIASES.get(given) in properties:
            name = ALIASES[given]
        if name in out and out[name] != value:
            raise InvalidInput(name, f"given twice with different values (as {given!r})")
        out[name] = value
    return {k: v for k, v in out.items() if v is not None}  # null: the default


_JSON_TYPES: Mapping[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
}


def validate(value: Any, schema: Mapping[str, Any], path: str) -> None:
    """Check ``value`` against the subset of JSON schema the tools use. Enum strings
    match case-insensitively (the library resolves them). Raises ``InvalidInput``."""
    field = path or "arguments"
    kind = schema.get("type")
    if kind and not _JSON_TYPES[kind](value):
        an = "an" if kind[0] in "aeiou" else "a"
        raise InvalidInput(field, f"expected {an} {kind}, got {_shown(value)}")
    if "enum" in schema and str(value).strip().lower() not in schema["enum"]:
        raise InvalidInput(field, f"unknown value {value!r}; valid: {', '.join(schema['enum'])}")
    if kind == "string":
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                field, f"not valid UTF-8 (unpaired surrogate at character {exc.start})"
            ) from None
        if len(value.strip()) < schema.get("minLength", 0):
            raise InvalidInput(field, "must not be empty")
        if len(value) > schema.get("maxLength", math.inf):
            raise InvalidInput(field, f"longer than {schema['maxLength']} characters")
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
        if not low <= value <= high:
            raise InvalidInput(field, f"must be from {low} to {high}, got {value}")
    if kind == "array":
        if len(value) > schema.get("maxItems", math.inf):
            raise InvalidInput(field, f"more than {schema['maxItems']} items")
        for index, item in enumerate(value):
            validate(item, schema.get("items", {}), f"{field}[{index}]")
    if kind == "object":
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if value.get(name) is None:
                raise InvalidInput(_join(path, name), "is required")
        for name, item in value.items():
            if name not in properties:
                if schema.get("additionalProperties", True) is False:
                    known = ", ".join(properties) or "none"
                    raise InvalidInput(
                        _join(path, str(name)), f"unknown argument; arguments: {known}"
                    )
                continue
            if item is not None:
                validate(item, properties[name], _join(path, name))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    kinds = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
    return kinds.get(type(value), type(value).__name__)
