"""The OpenAI Agents SDK with HiveMem: its tools as the agent's function tools, and a
Session whose turns are episodes (searchable, consolidated into facts later).

    pip install 'hivemem[openai-agents]'
    python examples/openai_agents_session.py [DB_PATH]           # what the Runner would do
    python examples/openai_agents_session.py DB_PATH --openai    # runs the agent (OPENAI_API_KEY)
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from agents import Agent, Runner, set_tracing_disabled

import hivemem
from hivemem.integrations.openai_agents import HiveMemSession, function_tools


def main(argv: list[str]) -> list[str]:
    set_tracing_disabled(True)  # traces would go to OpenAI: off unless you want them
    with tempfile.TemporaryDirectory() as folder:
        path = Path(argv[0]) if argv and argv[0] != "--openai" else Path(folder) / "memory.db"
        with hivemem.open(path) as store:
            memory = store.scope("agent-1")
            tools = {t.name: t for t in function_tools(memory, "memory_save,memory_search")}
            session = HiveMemSession(memory, "chat-1")
            if "--openai" in argv:
                agent = Agent(name="assistant", model="gpt-4.1-mini", tools=list(tools.values()))
                said = "Remember: our staging database is Postgres 16 on db-stage-2."
                print(Runner.run_sync(agent, said, session=session).final_output)
            else:  # the turn and the tool call a Runner makes, without a model
                turn = {"role": "user", "content": "Remember: staging is Postgres 16 on db-stage-2"}
                asyncio.run(session.add_items([turn]))
                fact = json.dumps({"content": "Staging is Postgres 16 on db-stage-2"})
                asyncio.run(tools["memory_save"].on_invoke_tool(None, fact))
            found = asyncio.run(tools["memory_search"].on_invoke_tool(None, '{"query": "staging"}'))
            items = asyncio.run(session.get_items())
            best = json.loads(found)["results"][0]["snippet"]
            lines = [f"session items: {len(items)}", f"found: {best}"]
    print(*lines, sep="\n")
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
