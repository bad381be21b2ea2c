"""Which URL serves which tool, and the OpenAPI of each route, generated from the tool
registry (``hivemem.tools``): a tool's JSON schema becomes the route's request body (or
its query parameters for GET and DELETE), so the HTTP API and the tools cannot drift.

Every tool is served twice: as a REST resource where one fits (``REST_ROUTES``) and as
``POST /v1/scopes/{scope}/tools/{name}`` with the tool's arguments as the body, the form
an agent holding the function definitions (``GET /v1/tools``) calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import STATUSES

PREFIX = "/v1/scopes/{scope}"

# tool -> (method, path under PREFIX, {path placeholder: tool argument})
REST_ROUTES: dict[str, tuple[str, str, dict[str, str]]] = {
    "memory_save": ("POST", "/memories", {}),
    "memory_list": ("GET", "/memories", {}),
    "memory_get": ("GET", "/memories/{id}", {"id": "id"}),
    "memory_delete": ("DELETE", "/memories/{id}", {"id": "id"}),
    "memory_search": ("POST", "/search", {}),
    "remember_fact": ("POST", "/facts", {}),
    "correct_fact": ("POST", "/memories/{id}/correct", {"id": "id"}),
    "confirm_fact": ("POST", "/memories/{id}/confirm", {"id": "id"}),
    "memory_stats": ("GET", "/stats", {}),
    "get_entity_info": ("GET", "/entities/{name}", {"name": "name"}),
    "memory_consolidate": ("POST", "/consolidate", {}),
    "inject_learning": ("POST", "/learnings", {}),
    "search_memory": ("POST", "/search_memory", {}),
    "memory_related": ("GET", "/memories/{id}/related", {"id": "id"}),
    "memory_purge": ("POST", "/memories/{id}/purge", {"id": "id"}),
    "memory_purge_all": ("POST", "/purge", {}),
    "add_task_result": ("POST", "/tasks", {}),
    "memory_context": ("POST", "/context", {}),
}

_ERROR_STATUSES = (400, 401, 403, 404, 409, 413, 422, 500, 501, 503, 507)


@dataclass(frozen=True)
class Route:
    tool: str
    method: str
    path: str  # the full path, with {scope}
    operation_id: str
    path_args: Mapping[str, str] = field(default_factory=dict)  # placeholder -> argument

    def openapi(self, tool: Any, error_ref: Mapping[str, Any]) -> dict[str, Any]:
        """The route's OpenAPI: parameters, request body and every response."""
        schema = tool.parameters
        properties: dict[str, Any] = dict(schema.get("properties", {}))
        required = [r for r in schema.get("required", []) if r not in self.path_args.values()]
        parameters: list[dict[str, Any]] = [
            _path_param("scope", {"type": "string", "minLength": 1, "maxLength": 200}, "scope")
        ]
        for placeholder, argument in self.path_args.items():
            prop = {"type": "string", "minLength": 1, **properties.pop(argument, {})}
            parameters.append(_path_param(placeholder, prop, argument))
        parameters.append(
            {
                "name": "shared",
                "in": "query",
                "required": False,
                "description": "A shared scope to read as well (the token must grant it "
                "read). Repeatable.",
                "schema": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "style": "form",
                "explode": True,
            }
        )
        extra: dict[str, Any] = {"parameters": parameters}
        if self.method == "POST":
            body = {**schema, "properties": properties}
            if required:
                body["required"] = required
            else:
                body.pop("required", None)
            extra["requestBody"] = {
                "required": bool(required),
                "content": {"application/json": {"schema": body}},
            }
        else:
            for name, prop in properties.items():
                if _query_friendly(prop):
                    param = {
                        "name": name,
                        "in": "query",
                        "required": name in required,
                        "description": prop.get("description", ""),
                        "schema": prop,
                    }
                    if prop.get("type") == "array":
                        param.update(style="form", explode=True)
                    parameters.append(param)
        responses: dict[str, Any] = {
            "200": {
                "description": "The tool's result",
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        }
        if self.tool == "memory_context":  # Accept: text/markdown gives the block alone
            responses["200"]["content"]["text/markdown"] = {"schema": {"type": "string"}}
        for status in _ERROR_STATUSES:
            responses[str(status)] = {
                "description": STATUSES[status][1],
                "content": {"application/json": {"schema": dict(error_ref)}},
            }
        extra["responses"] = responses
        return extra


def _path_param(name: str, schema: Mapping[str, Any], argument: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": schema.get("description", f"the {argument}"),
        "schema": {k: v for k, v in schema.items() if k != "description"},
    }


def _query_friendly(prop: Mapping[str, Any]) -> bool:
    """Scalars and arrays of scalars travel in a query string; objects do not."""
    kind = prop.get("type")
    if kind == "array":
        return (prop.get("items") or {}).get("type") in {"string", "integer", "number", "boolean"}
    return kind in {"string", "integer", "number", "boolean"}


def operations(tools: Mapping[str, Any]) -> list[Route]:
    """Every route: the REST form of each tool that has one (when its path arguments are
    arguments of the tool), then the tool form of every tool."""
    routes = []
    for name, tool in tools.items():
        rest = REST_ROUTES.get(name)
        properties = tool.parameters.get("properties", {})
        if rest and all(arg in properties for arg in rest[2].values()):
            method, path, path_args = rest
            routes.append(Route(name, method, PREFIX + path, name, path_args))
    for name in tools:
        routes.append(Route(name, "POST", f"{PREFIX}/tools/{name}", f"tool_{name}"))
    return routes
