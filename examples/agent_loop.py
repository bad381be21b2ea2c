"""A plain agent loop with HiveMem as its long-term memory.

Before each turn, a ``ContextProvider`` builds the memory block (pinned memories, what
earlier sessions said about the user's message, the latest reflection) and puts it in the
system message; after the turn, both sides are recorded with ``mem.add_episode``. A new
session therefore starts knowing what the earlier ones said.

    python examples/agent_loop.py [DB_PATH]

The model is a deterministic stand-in (no network) unless ``HIVEMEM_EXAMPLE_MODEL`` names
a chat model of an OpenAI-compatible endpoint (``pip install openai``; the client reads
``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``, e.g. ``http://localhost:11434/v1`` for Ollama).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hivemem
from hivemem import ContextProvider, ScopedMemory

Model = Callable[[list[dict[str, Any]]], str]
"""A chat model: OpenAI-style messages in, the assistant's reply out."""

INSTRUCTIONS = "You are a helpful assistant. Use the memory below when it is relevant."

# (session id, the user's messages in that session)
SAMPLE_CONVERSATION: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "monday",
        (
            "Hi, I'm Sam. I run the payments API; it is on Postgres 16.",
            "Heads-up: we never deploy the payments API on a Friday after the March outage.",
        ),
    ),
    ("thursday", ("Can I deploy the payments API tomorrow?",)),
)


@dataclass(frozen=True)
class Turn:
    session_id: str
    user: str
    system: str  # the system message the model saw
    reply: str


def fake_model(messages: list[dict[str, Any]]) -> str:
    """A deterministic stand-in for an LLM: it answers from the first memory of an
    earlier session it finds in the system message, if any."""
    remembered = [
        line[2:] for line in messages[0]["content"].splitlines() if line.startswith("- [")
    ]
    if remembered:
        return f"From an earlier conversation I remember: {remembered[0]}"
    return "Noted."


def openai_model(name: str) -> Model:
    """A chat model of an OpenAI-compatible endpoint (configured by the openai client's
    own environment variables)."""
    from openai import OpenAI

    client = OpenAI()

    def reply(messages: list[dict[str, Any]]) -> str:
        answer = client.chat.completions.create(model=name, messages=messages)  # type: ignore[arg-type]
        return answer.choices[0].message.content or ""

    return reply


def run(
    mem: ScopedMemory,
    conversation: Sequence[tuple[str, Sequence[str]]],
    model: Model,
    provider: ContextProvider | None = None,
) -> list[Turn]:
    """The loop: for each user message, memory block → model → record both turns."""
    provider = provider or ContextProvider(mem, max_entries=50, max_tokens=1500)
    turns = []
    for session_id, user_messages in conversation:
        history: list[dict[str, Any]] = []
        for text in user_messages:
            history.append({"role": "user", "content": text})
            messages = provider.messages(history, session_id=session_id, instructions=INSTRUCTIONS)
            reply = model(messages)
            history.append({"role": "assistant", "content": reply})
            mem.add_episode(text, session_id=session_id, role="user")
            mem.add_episode(reply, session_id=session_id, role="assistant")
            turns.append(Turn(session_id, text, messages[0]["content"], reply))
    return turns


def main(
    argv: Sequence[str] | None = None,
    *,
    model: Model | None = None,
    embedder: str | None = None,
) -> list[Turn]:
    """Run the sample conversation on the store at ``argv[0]`` (default: a temporary
    one), print what the model saw and said each turn, and return the turns."""
    args = list(sys.argv[1:] if argv is None else argv)
    if model is None:  # configuration is read here, at the edge, and nowhere else
        name = os.environ.get("HIVEMEM_EXAMPLE_MODEL")
        model = openai_model(name) if name else fake_model
    with tempfile.TemporaryDirectory() as folder:
        path = Path(args[0]) if args else Path(folder) / "agent.db"
        with hivemem.open(path, embedder=embedder) as store:
            mem = store.scope("payments-assistant")
            mem.save(
                "You are Ada, the release assistant of the payments team.",
                key="who",
                type="identity",
            )
            mem.save("Explain the reason when you advise against a release.", type="lesson")
            turns = run(mem, SAMPLE_CONVERSATION, model)
    for turn in turns:
        print(f"=== session {turn.session_id} | user: {turn.user}")
        print(turn.system)
        print(f"--- assistant: {turn.reply}\n")
    return turns


if __name__ == "__main__":
    main()
