"""Claude's memory tool with HiveMem behind it: each file under /memories is a memory,
every edit a version in its history.

    pip install 'hivemem[anthropic]'
    python examples/claude_memory_tool.py [DB_PATH]            # replays Claude's calls
    python examples/claude_memory_tool.py DB_PATH --claude     # asks Claude (ANTHROPIC_API_KEY)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import hivemem
from hivemem.integrations.claude import HiveMemMemoryTool

# The tool calls Claude makes when told "I take my coffee black; actually, with oat milk".
FILE = "/memories/coffee.md"
CALLS = [
    {"command": "view", "path": "/memories"},
    {"command": "create", "path": FILE, "file_text": "Takes coffee black\n"},
    {"command": "str_replace", "path": FILE, "old_str": "black", "new_str": "with oat milk"},
]


def ask_claude(tool: HiveMemMemoryTool) -> None:
    import anthropic

    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        tools=[tool],
        messages=[{"role": "user", "content": "I take my coffee black; actually, with oat milk."}],
    )
    print(runner.until_done().content[-1].text)


def main(argv: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(argv[0]) if argv and argv[0] != "--claude" else Path(folder) / "memory.db"
        with hivemem.open(path) as store:
            memory = store.scope("claude")
            tool = HiveMemMemoryTool(memory)
            if "--claude" in argv:
                ask_claude(tool)
            else:
                for call in CALLS:
                    print(tool.call(call).splitlines()[0])
            versions = memory.history(FILE)
            lines = [f"versions: {[v.content.strip() for v in versions]}"]
    print(*lines, sep="\n")
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
