"""`make demo`: create a store, save and search a few memories, print the context block.

Runs on the embedded default (one SQLite file, no network, no model). The store is
written to a temporary folder unless a path is given: ``python -m hivemem.demo PATH``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import hivemem


def run(path: Path) -> None:
    with hivemem.open(path) as store:
        mem = store.scope("team-a", shared=["swarm"])
        print(f"store: {store.location}\n")

        mem.save("You are Ada, the release assistant of team A", type="identity", key="who")
        mem.save("Never deploy on Fridays", key="deploy-lesson", type="warning")
        mem.save(
            "We deploy every weekday, Fridays included, before 15:00",
            key="deploy-lesson",
            supersede_reason="CI is reliable now; Fridays are fine before 15:00",
        )
        mem.save("Postgres 16 is the production database", type="decision")
        mem.add_episodes(
            [
                {"content": "I moved to Berlin last spring", "session_id": "s1", "role": "user"},
                {
                    "content": "How do you like Berlin so far?",
                    "session_id": "s1",
                    "role": "assistant",
                },
                {
                    "content": "Love it, the office is in Kreuzberg",
                    "session_id": "s1",
                    "role": "user",
                },
            ]
        )

        print("history of 'deploy-lesson':")
        for version in mem.history("deploy-lesson"):
            reason = f"  (reason: {version.supersede_reason})" if version.supersede_reason else ""
            print(f"  [{version.status.value:10}] {version.content}{reason}")

        for question in ("where did the user move to?", "when can we deploy on Friday?"):
            print(f"\nsearch: {question}")
            for hit in mem.search(question, limit=3):
                flag = " (superseded)" if hit.memory.is_superseded else ""
                terms = ", ".join(hit.explain.matched_terms)
                print(f"  {hit.score:.2f}  {hit.memory.content}{flag}   [matched: {terms}]")

        print("\ncontext block for the next prompt:\n")
        print(mem.context("Which office is in Berlin?", session_id="s2"))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args:
        run(Path(args[0]))
        return
    with tempfile.TemporaryDirectory() as folder:
        run(Path(folder) / "demo.db")


if __name__ == "__main__":
    main()
