"""Getting started with an OpenAI-style tool loop: the model gets HiveMem's tools
(``hivemem.tools.openai_functions()``), each tool call it makes runs through
``hivemem.tools.call()``, and the result goes back as a ``tool`` message.

    python examples/openai_tool_loop.py [DB_PATH]

The model here is scripted (no network, no API key): it saves what the user tells it,
then searches when asked. Swap ``scripted_model`` for a real client, e.g.
``openai.OpenAI().chat.completions.create(model=..., messages=..., tools=TOOLS)``:
the loop does not change.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import hivemem
from hivemem import tools

TOOLS = tools.openai_functions()  # what tools= of a chat completion takes


def scripted_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A stand-in for a chat model: one tool call per user message, then an answer."""
    last = messages[-1]
    if last["role"] == "tool":
        result = json.loads(last["content"])
        hits = result.get("results")
        text = f"I found: {hits[0]['snippet']}" if hits else "Saved."
        return {"role": "assistant", "content": text}
    text = last["content"]
    if text.endswith("?"):
        call = {"name": "memory_search", "arguments": json.dumps({"query": text, "limit": 3})}
    else:
        call = {"name": "memory_save", "arguments": json.dumps({"content": text})}
    return {"role": "assistant", "tool_calls": [{"id": f"call{len(messages)}", "function": call}]}


def turn(mem: hivemem.ScopedMemory, messages: list[dict[str, Any]], user: str) -> str:
    messages.append({"role": "user", "content": user})
    while True:
        reply = scripted_model(messages)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]
        for call in reply["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            result = tools.call(mem, call["function"]["name"], arguments)
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )


def main(argv: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(argv[0]) if argv else Path(folder) / "memory.db"
        with hivemem.open(db) as store:
            mem = store.scope("agent-1")
            messages: list[dict[str, Any]] = [{"role": "system", "content": "You remember."}]
            answers = [
                turn(mem, messages, "Our staging database is Postgres 16 on db-stage-2."),
                turn(mem, messages, "Which database runs staging?"),
            ]
    for answer in answers:
        print(answer)
    return answers


if __name__ == "__main__":
    main(sys.argv[1:])
