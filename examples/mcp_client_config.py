"""Getting started with an MCP client (Claude Desktop, Cursor, …): the config it needs,
and the server started exactly as the client will start it.

    python examples/mcp_client_config.py [DB_PATH]

Prints the ``mcpServers`` block that ``hivemem mcp-config`` writes for this install
(absolute paths: a client starts the server without your shell's PATH or venv), then
plays the client: starts that command over stdio, lists the tools, saves a memory and
searches for it. Paste the block into the client's configuration file. Needs
``pip install 'hivemem[mcp]'``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

HIVEMEM = Path(sys.executable).parent / "hivemem"  # this install's command


def client_config(db: Path) -> dict:
    """The block `hivemem mcp-config` prints for a server bound to scope agent-1."""
    args = ["--db", str(db), "--scope", "agent-1", "--shared", "team", "mcp-config"]
    printed = subprocess.run([str(HIVEMEM), *args], capture_output=True, text=True, check=True)
    return json.loads(printed.stdout)


async def play_the_client(server: dict) -> list[str]:
    params = StdioServerParameters(command=server["command"], args=server["args"])
    async with Client(params) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        await client.call_tool("memory_save", {"content": "Never deploy on Fridays"})
        found = await client.call_tool("memory_search", {"query": "can we deploy on friday?"})
        hits = json.loads(found.content[0].text)["results"]
        return [f"tools: {', '.join(names)}", f"search: {hits[0]['snippet']}"]


def main(argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(argv[0]) if argv else Path(folder) / "team.db"
        config = client_config(db.resolve())
        print(json.dumps(config, indent=2))
        for line in anyio.run(play_the_client, config["mcpServers"]["memory"]):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
