"""HiveMem as a LlamaIndex memory block: ``HiveMemMemoryBlock``, a
``llama_index.core.memory.BaseMemoryBlock`` for LlamaIndex's ``Memory``.

    import hivemem
    from llama_index.core.memory import Memory
    from hivemem.integrations.llamaindex import HiveMemMemoryBlock

    block = HiveMemMemoryBlock(memory=hivemem.open("memory.db").scope("assistant"))
    chat_memory = Memory.from_defaults(session_id="monday", memory_blocks=[block])

The mapping (a translation; the library decides what is relevant):

- ``aput`` (the messages LlamaIndex flushes out of its short-term memory) stores each
  message with text as an episode of its ``session_id`` (LlamaIndex sets it on the
  messages; else the block's ``session_id``), role included.
- ``aget`` returns ``ScopedMemory.context``: HiveMem's memory block for a system prompt
  (pinned memories, then those of earlier sessions relevant to the latest messages, then
  the latest reflection) within ``max_tokens``. The current session is left out, as its
  turns are still in LlamaIndex's short-term memory.
"""

from __future__ import annotations

import asyncio
from typing import Any

from . import require

require("llama_index.core.memory", "llamaindex")

from llama_index.core.base.llms.types import ChatMessage, TextBlock  # noqa: E402
from llama_index.core.bridge.pydantic import Field  # noqa: E402
from llama_index.core.memory import BaseMemoryBlock  # noqa: E402

from ..facade.memory import ScopedMemory  # noqa: E402

__all__ = ["HiveMemMemoryBlock"]


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text)


class HiveMemMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for LlamaIndex's ``Memory``, kept by HiveMem."""

    name: str = Field(default="HiveMem", description="The name of the memory block.")
    memory: ScopedMemory = Field(description="The HiveMem scope the block reads and writes.")
    session_id: str = Field(
        default="llamaindex", description="The session of messages that carry none."
    )
    max_tokens: int | None = Field(
        default=None, description="The most tokens the block's text may take."
    )
    context_window: int = Field(
        default=3, description="How many of the latest messages make the query."
    )

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        latest = [_text(m) for m in (messages or [])[-self.context_window :]]
        query = " ".join(t for t in latest if t) or None
        session = block_kwargs.get("session_id") or self._session_of(messages or [])
        return await asyncio.to_thread(
            self.memory.context, query=query, session_id=session, max_tokens=self.max_tokens
        )

    async def _aput(self, messages: list[ChatMessage]) -> None:
        items = [
            {
                "content": text,
                "session_id": str(m.additional_kwargs.get("session_id") or self.session_id),
                "role": str(getattr(m.role, "value", m.role)),
            }
            for m in messages
            if (text := _text(m))
        ]
        if items:
            await asyncio.to_thread(self.memory.add_episodes, items)

    def _session_of(self, messages: list[ChatMessage]) -> str | None:
        for message in reversed(messages):
            session = message.additional_kwargs.get("session_id")
            if session:
                return str(session)
        return None
