"""Getting started from Mem0: change one import, keep the calls.

    python examples/mem0_switch.py [DB_PATH]

``from mem0 import Memory`` becomes ``from hivemem.compat.mem0 import Memory``; ``add``,
``search``, ``get_all``, ``update``, ``history`` and ``delete`` take the same arguments and
return the same shapes. What differs, on purpose: ``add`` never calls an LLM, ``update``
keeps the old version in the history, ``delete`` is soft, and an exact duplicate is
reported as event ``NONE`` instead of stored twice.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hivemem.compat.mem0 import Memory  # was: from mem0 import Memory


def main(argv: list[str]) -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        m = Memory.open(Path(argv[0]) if argv else Path(folder) / "memory.db")
        added = m.add("I live in Berlin", user_id="alice")
        memory_id = added["results"][0]["id"]
        again = m.add("I live in Berlin", user_id="alice")
        lines.append(f"add: {added['results'][0]['event']}, again: {again['results'][0]['event']}")
        m.add([{"role": "user", "content": "I love hiking in the Alps"}], user_id="alice")
        found = m.search("where does alice live?", filters={"user_id": "alice"}, top_k=3)
        lines.append(f"search: {found['results'][0]['memory']}")
        m.update(memory_id, "I live in Munich")
        events = [(h["event"], h["new_memory"]) for h in m.history(memory_id)]
        lines.append(f"history: {events}")
        m.delete_all(user_id="alice")
        lines.append(f"after delete_all: {len(m.get_all(user_id='alice')['results'])} memories")
        m.store.close()  # the HiveMem store underneath
    for line in lines:
        print(line)
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
