"""Framework adapters: HiveMem as the memory of the agent frameworks.

Each module translates one framework's memory interface into calls on the library
(``hivemem.open``, ``Store``, ``ScopedMemory``, the tool table) and has no behaviour of
its own. Each needs its framework, installed by an extra (``pip install
'hivemem[langgraph]'``); ``import hivemem`` never imports a framework, and importing an
adapter without its framework raises ``MissingDependency`` with that install command.

- ``hivemem.integrations.langgraph``: ``HiveMemStore``, a LangGraph ``BaseStore``;
- ``hivemem.integrations.claude``: ``HiveMemMemoryTool``, Claude's memory tool;
- ``hivemem.integrations.openai_agents``: HiveMem's tools as function tools and
  ``HiveMemSession``, an OpenAI Agents SDK session;
- ``hivemem.integrations.llamaindex``: ``HiveMemMemoryBlock``, a LlamaIndex memory block;
- ``hivemem.integrations.google_adk``: ``HiveMemMemoryService``, a Google ADK memory
  service.

Left out, with the MCP route instead (docs/frameworks.md): AutoGen (autogen-core pins
protobuf 5, HiveMem's onnx needs 6+) and CrewAI (pins mcp < 2, openai < 3).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import MissingDependency


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` (a framework's), or raise ``MissingDependency`` naming the extra
    that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"hivemem.integrations ({module})", f"pip install 'hivemem[{extra}]'"
        ) from None
