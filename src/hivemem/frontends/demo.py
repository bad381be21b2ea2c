"""`make demo`: HiveMem's ideas in one screen.

It saves a few typed memories (one superseded by a newer belief) and a short dialogue
into a new store, searches it and prints why each hit ranked where it did, then the
memory block an agent would put in its next prompt, with the query behind it.

Everything is local: one SQLite file in a temporary folder (or ``python -m hivemem.frontends.demo
PATH``), the bundled embedding model (offline, loaded from the installed package), no
LLM and no network. The output is the same on every run: the store runs on a fixed
clock, and every write is embedded (``wait=True``) before the first search.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import hivemem

QUESTIONS = ("when can we deploy on Friday?", "where did the user move to?")
CONTEXT_QUERY = "Which office is in Berlin?"
_LANES = {"keyword": "words", "vector": "meaning", "entity": "names", "context": "beside a hit"}
LEGEND = (
    "  (why: words = share of the question's terms, meaning = the embedding model, "
    "names = shared entities;\n   then factors: superseded, session prior, diversity, decay)"
)


class DemoClock:
    """A clock that starts on a fixed morning and moves one second per reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def why(hit: hivemem.Hit) -> str:
    """One line: what each lane found, and every factor that moved the score."""
    e = hit.explain
    parts = []
    for lane, values in e.lanes.items():
        score = values.get("score", values.get("coverage", 0.0))
        if score < 0.005:
            continue
        terms = f" [{', '.join(e.matched_terms)}]" if lane == "keyword" and e.matched_terms else ""
        parts.append(f"{_LANES.get(lane, lane)} {score:.2f}{terms}")
    factors = [f"{name} x{value:.2f}" for name, value in e.factors.items() if value < 0.995]
    return "; ".join(parts) + (" -> " + ", ".join(factors) if factors else "")


def _saved(memory: hivemem.Memory, note: str = "") -> str:
    what = f"{memory.type.value} {memory.key}" if memory.key else memory.type.value
    return f"  + {what:<22} {memory.content}{note}"


def run(path: Path, show_path: bool = True) -> None:
    with hivemem.open(path, clock=DemoClock()) as store:
        mem = store.scope("team-a")
        where = store.location if show_path else "a new file in a temporary folder"
        print(f"store: {where} (scope team-a)\n\nsaved:")
        firsts = [
            ("You are Ada, the release assistant of team A", "identity", "who"),
            ("Never deploy on Fridays", "warning", "deploy-lesson"),
        ]
        for text, kind, key in firsts:
            print(_saved(mem.save(text, wait=True, type=kind, key=key)))
        newer = mem.save(
            "We deploy every weekday, Fridays included, before 15:00",
            key="deploy-lesson",
            supersede_reason="CI is reliable now",
            wait=True,
        )
        print(_saved(newer, f"  (supersedes the one above: {newer.supersede_reason})"))
        print(
            _saved(mem.save("Postgres 16 is the production database", type="decision", wait=True))
        )
        turns: list[dict[str, Any]] = [
            {"content": "I moved to Berlin last spring", "role": "user"},
            {"content": "How do you like Berlin so far?", "role": "assistant"},
            {"content": "Love it, the office is in Kreuzberg", "role": "user"},
        ]
        for turn in mem.add_episodes([{**t, "session_id": "s1"} for t in turns], wait=True):
            print(f"  + episode s1 {turn.role:<12} {turn.content}")

        for n, question in enumerate(QUESTIONS):
            print(f"\nsearch: {question!r}")
            if n == 0:
                print(LEGEND)
            for hit in mem.search(question, limit=3):
                flag = "  [superseded]" if hit.memory.is_superseded else ""
                print(f"  {hit.score:.2f}  {hit.memory.content}{flag}")
                print(f"        {why(hit)}")

        print(f"\ncontext block for the next prompt (query {CONTEXT_QUERY!r}, session s2):\n")
        print(mem.context(CONTEXT_QUERY, session_id="s2"))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args:
        run(Path(args[0]))
        return
    with tempfile.TemporaryDirectory() as folder:
        run(Path(folder) / "demo.db", show_path=False)


if __name__ == "__main__":
    main()
