"""LlamaIndex's Memory with HiveMem as its long-term block: Monday's turns, flushed out
of the short-term memory, are in Thursday's system prompt when they are relevant.

    pip install 'hivemem[llamaindex]'
    python examples/llamaindex_memory.py [DB_PATH]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

import hivemem
from hivemem.integrations.llamaindex import HiveMemMemoryBlock

MONDAY = [
    ("user", "I take my coffee with oat milk, never cow milk."),
    ("assistant", "Noted: oat milk in your coffee."),
    ("user", "Our staging database is Postgres 16 on db-stage-2."),
    ("assistant", "Got it, staging runs Postgres 16."),
]


def main(argv: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(argv[0]) if argv else Path(folder) / "memory.db"
        with hivemem.open(path) as store:
            block = HiveMemMemoryBlock(memory=store.scope("assistant"))
            monday = Memory.from_defaults(
                session_id="monday", memory_blocks=[block], token_limit=40, token_flush_size=20
            )
            for role, text in MONDAY:  # older turns flush into the block as episodes
                monday.put(ChatMessage(role=role, content=text))
            store.flush()  # (their vectors; keyword search has them already)
            thursday = Memory.from_defaults(session_id="thursday", memory_blocks=[block])
            system = thursday.get(input="What milk goes in my coffee?")[0].content
            lines = [line for line in system.splitlines() if "oat milk" in line][:1]
    print(*lines, sep="\n")
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
