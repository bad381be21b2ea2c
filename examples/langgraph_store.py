"""A LangGraph graph with HiveMem as its long-term store: what one thread learns, another
thread (a later conversation) recalls.

    pip install 'hivemem[langgraph]'
    python examples/langgraph_store.py [DB_PATH]

The node takes LangGraph's ``store`` as usual; ``HiveMemStore`` puts each item as a keyed
memory of scope ``users.<id>`` (every put kept in its history) and answers ``search``
with HiveMem's hybrid search.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

import hivemem
from hivemem.integrations.langgraph import HiveMemStore


class State(TypedDict, total=False):
    user: str
    message: str
    reply: str


def respond(state: State, *, store: BaseStore) -> State:
    namespace = ("users", state["user"])
    message = state["message"]
    if message.startswith("remember: "):
        fact = message.removeprefix("remember: ")
        store.put(namespace, f"fact-{len(store.search(namespace, limit=100))}", {"text": fact})
        return {"reply": "Noted."}
    hits = store.search(namespace, query=message, limit=1)
    return {"reply": f"I recall: {hits[0].value['text']}" if hits else "Nothing yet."}


def main(argv: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(argv[0]) if argv else Path(folder) / "memory.db"
        with hivemem.open(path) as memory:
            store = HiveMemStore(memory, index={"fields": ["text"]})
            graph = StateGraph(State).add_node("respond", respond)
            app = graph.add_edge(START, "respond").add_edge("respond", END).compile(store=store)
            said = [
                app.invoke({"user": "ada", "message": "remember: I drink oat milk in my coffee"}),
                app.invoke({"user": "ada", "message": "what do I drink in my coffee?"}),
                app.invoke({"user": "bob", "message": "what do I drink in my coffee?"}),
            ]
            lines = [turn["reply"] for turn in said]
            lines.append(f"namespaces: {store.list_namespaces()}")
    for line in lines:
        print(line)
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
