"""The MCP server: every tool of ``hivemem.tools`` served with the official MCP Python
SDK (``pip install 'hivemem[mcp]'``), over stdio or streamable HTTP.

The server is bound to one scope (and read-only shared scopes) when it starts: the
model never names a scope. Each call goes ``tools.call(mem, name, arguments)`` in a
worker thread; tools that write run at most ``Store.server_writes()`` at once (on SQLite
one: one writer per process, on top of the store's own connection lock), maintenance
tools (``tools.MAINTENANCE``) one at a time beside them, so a consolidation waiting on
an LLM never stalls a write, and reads at most ``Store.server_reads()`` at once (on
SQLite one: side by side they only pass the GIL back and forth, and the writer waits
behind them); several server processes on one database file meet only SQLite's WAL
locking, which the store waits out (``busy_timeout_ms``, then retries). A
``HiveMemError`` becomes a tool error result (``isError``) carrying its class and
message (``TryAgain: … try again`` for a passing failure that outlasted the library's
retries: the model may call the tool again); an unexpected exception becomes one too,
logged, and the server keeps serving.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import __version__
from .. import tools as toolsmod
from ..errors import HiveMemError, MissingDependency
from . import stages
from .stages import timed

if TYPE_CHECKING:  # pragma: no cover
    from mcp.server import Server

    from ..facade.database import Store
    from ..facade.memory import ScopedMemory

log = logging.getLogger(__name__)

INSTALL = "pip install 'hivemem[mcp]'"
INSTRUCTIONS = (
    "Long-term memory that lasts across sessions. Search it (memory_search) before "
    "answering questions about earlier work, people or decisions; save what should be "
    "remembered (memory_save, remember_fact); correct what turns out wrong (correct_fact)."
)


def _sdk() -> tuple[Any, Any, Any]:
    """The SDK's server class, its types module and anyio, or ``MissingDependency``."""
    try:
        import anyio
        import mcp_types
        from mcp.server import Server
    except ImportError:
        raise MissingDependency("the MCP server", INSTALL) from None
    return Server, mcp_types, anyio


def bind(
    store: Store,
    scope: str,
    shared: Sequence[str] = (),
    *,
    lead_of: Sequence[str] | str | None = None,
    agent: str | None = None,
) -> ScopedMemory:
    """The handle a server serves: ``scope``, the ``shared`` scopes read-only, and the
    store's ``learning_scope`` (where ``inject_learning`` writes) among them. Its lead
    rights are ``lead_of`` (default: the ``lead_of`` setting) and it writes as ``agent``
    (default: the ``agent`` setting, else the scope's name)."""
    visible = list(shared)
    learning = store.settings.learning_scope
    if learning and learning != scope and learning not in visible:
        visible.append(learning)
    return store.scope(
        scope,
        shared=visible,
        lead_of=store.settings.lead_of if lead_of is None else lead_of,
        actor=agent or store.settings.agent or None,
    )


def create_server(
    mem: ScopedMemory, tools: Sequence[str] | None = None, *, name: str = "hivemem"
) -> Server:
    """An MCP ``Server`` serving the tools named in ``tools`` (default: every tool of
    the table; ``hivemem.tools.select`` turns a profile into names) over ``mem``. A
    call to a tool the server does not offer (under any of its names) is a tool error."""
    server_cls, types, anyio = _sdk()
    writer = anyio.CapacityLimiter(mem.store.server_writes())  # as the HTTP API's
    maintainer = anyio.CapacityLimiter(1)
    reads = mem.store.server_reads()  # as the HTTP API's (``Store.server_reads``)
    reader = None if reads is None else anyio.CapacityLimiter(reads)
    offered = {n: toolsmod.NAMED[n] for n in (toolsmod.select() if tools is None else tools)}
    listed = [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.parameters,
            annotations=types.ToolAnnotations(
                read_only_hint=not tool.writes,
                destructive_hint=tool.name in toolsmod.DESTRUCTIVE,
                open_world_hint=False,
            ),
        )
        for tool in offered.values()
    ]

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        # An offered tool answers to its other names too (Agent Swarm's memory-search).
        other = toolsmod.NAMED.get(params.name)
        tool = offered.get(params.name) or (
            other if toolsmod.profiles.NAMES.get(params.name) in offered else None
        )
        if tool is None:
            return _error(
                types,
                f"InvalidInput: name: unknown tool {params.name!r}; tools: {', '.join(offered)}",
            )
        if stages.CLOCK is not None:
            stages.CLOCK.request()

        def run() -> dict[str, Any]:
            with timed("library"):
                return toolsmod.call(mem, params.name, params.arguments)

        if tool.name in toolsmod.MAINTENANCE:
            limiter = maintainer
        else:
            limiter = writer if tool.writes else reader
        try:
            result = await anyio.to_thread.run_sync(run, limiter=limiter)
        except HiveMemError as exc:
            return _error(types, f"{type(exc).__name__}: {exc.message}")
        except Exception as exc:  # a bug must not take the server down with it
            log.exception("tool %s failed", params.name)
            return _error(types, f"internal error in {params.name}: {exc}")
        with timed("serialise"):
            text = json.dumps(result, ensure_ascii=False, default=str)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content=json.loads(text),
            )

    return server_cls(
        name,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def _error(types: Any, message: str) -> Any:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def serve_stdio(mem: ScopedMemory, tools: Sequence[str] | None = None) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    _, _, anyio = _sdk()
    from mcp.server.stdio import stdio_server

    server = create_server(mem, tools)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def serve_http(
    mem: ScopedMemory,
    host: str,
    port: int,
    tools: Sequence[str] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until interrupted;
    ``on_ready(url)`` once it listens.

    Each request is answered with one JSON body, not a server-sent event stream (the
    spec lets a server choose; every client reads both): the tools send nothing to the
    client while they run, and the stream cost the server 0.8–1.4 ms of CPU per call
    (``hivemem bench --load --mcp``, framework stage: 2.14–2.78 → 1.36 ms)."""
    _sdk()
    from .serving import run

    app = create_server(mem, tools).streamable_http_app(host=host, json_response=True)
    run(app, host, port, what="the MCP server", on_ready=on_ready)
