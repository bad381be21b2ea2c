"""The load bench's clients, one per way a server is spoken to (``bench_load``): each
has ``write(scope, content) -> memory id``, ``search(scope, query)`` and
``get(scope, memory_id) -> content | None``, over one keep-alive connection of the
standard library's ``http.client`` (the lightest client at hand: the clients share the
cores with the server). A failed request raises ``LoadError`` (a status other than 200,
or an MCP tool error) or the transport's own ``OSError``/``HTTPException``.

- ``ApiClient``: HiveMem's HTTP API (``/v1/scopes/{scope}/…``) and the bare stack's,
  which answers the same routes;
- ``McpClient``: MCP over streamable HTTP (``serve-mcp --transport http``): a session
  (``initialize``, ``notifications/initialized``), then ``tools/call`` of
  ``memory_save``, ``memory_search`` and ``memory_get``; answers are read from the
  server-sent event or the JSON body. The server is bound to its scope: ``scope`` is
  ignored.
"""

from __future__ import annotations

import http.client
import itertools
import json
from typing import Any

PROTOCOL_VERSION = "2025-06-18"


class LoadError(Exception):
    """A request that reached the server and failed (status, or tool error)."""


class _Connection:
    """One keep-alive HTTP/1.1 connection, reopened after a failure."""

    def __init__(self, port: int, headers: dict[str, str], timeout: float = 60) -> None:
        self.port, self.timeout = port, timeout
        self.headers = {**headers, "Content-Type": "application/json"}
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, http.client.HTTPResponse]:
        if self._conn is None:
            self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        payload = json.dumps(body).encode() if body is not None else None
        try:
            self._conn.request(method, path, payload, {**self.headers, **(headers or {})})
            answer = self._conn.getresponse()
            return answer.status, answer.read(), answer
        except (OSError, http.client.HTTPException):
            self.close()  # the next request opens a new connection
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class ApiClient:
    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self._http = _Connection(port, headers)

    def _ok(self, method: str, path: str, body: Any = None) -> Any:
        status, raw, _ = self._http.request(method, path, body)
        if status != 200:
            raise LoadError(f"{status} {raw.decode('utf-8', 'replace')}")
        return json.loads(raw)

    def write(self, scope: str, content: str) -> str:
        body = self._ok("POST", f"/v1/scopes/{scope}/memories", {"content": content})
        return str(body.get("memory", body)["id"])

    def search(self, scope: str, query: str) -> None:
        self._ok("POST", f"/v1/scopes/{scope}/search", {"query": query, "limit": 10})

    def get(self, scope: str, memory_id: str) -> str | None:
        status, raw, _ = self._http.request("GET", f"/v1/scopes/{scope}/memories/{memory_id}")
        return str(json.loads(raw)["memory"]["content"]) if status == 200 else None

    def close(self) -> None:
        self._http.close()


class McpClient:
    def __init__(self, port: int) -> None:
        self._http = _Connection(port, {"Accept": "application/json, text/event-stream"})
        self._ids = itertools.count(1)
        self._session: dict[str, str] = {}

    def _rpc(self, method: str, params: dict[str, Any], notify: bool = False) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            body["id"] = next(self._ids)
        status, raw, answer = self._http.request("POST", "/mcp", body, self._session)
        if status not in (200, 202):
            raise LoadError(f"{status} {raw.decode('utf-8', 'replace')[:300]}")
        if method == "initialize":
            sid = answer.getheader("mcp-session-id")
            if sid:
                self._session = {"mcp-session-id": sid, "mcp-protocol-version": PROTOCOL_VERSION}
        if notify:
            return None
        message = _message(raw)
        if "error" in message:
            raise LoadError(f"{method}: {message['error']}")
        return message["result"]

    def _tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if not self._session:
            self._rpc(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "hivemem-load", "version": "1"},
                },
            )
            self._rpc("notifications/initialized", {}, notify=True)
        result = self._rpc("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise LoadError(f"{name}: {result['content'][0]['text'][:300]}")
        found = result.get("structuredContent")
        return found if found is not None else json.loads(result["content"][0]["text"])

    def write(self, scope: str, content: str) -> str:
        return str(self._tool("memory_save", {"content": content})["memory"]["id"])

    def search(self, scope: str, query: str) -> None:
        self._tool("memory_search", {"query": query, "limit": 10})

    def get(self, scope: str, memory_id: str) -> str | None:
        try:
            found = self._tool("memory_get", {"id": memory_id})
        except LoadError:
            return None
        return str(found.get("memory", found)["content"])

    def close(self) -> None:
        self._http.close()


def _message(raw: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a streamable-HTTP answer: a JSON body, or the ``data:``
    of its server-sent event."""
    text = raw.decode("utf-8")
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    if not data:
        raise LoadError(f"no message in the answer: {text[:200]}")
    return dict(json.loads(data[-1]))
