"""Each question's ranked hits, written by ``hivemem eval all --dump FILE``, and a
comparison of two such files: the proof that a change to the search path left every
result as it was.

A dump is JSON lines, one per question of the main run, in the order asked::

    {"suite": "LoCoMo episodes", "scope": "...", "question": "...",
     "ids": ["<memory id>", ...], "scores": [0.71, ...]}

Memory ids are made when a store is filled, so two dumps compare only when both runs
searched the same store: fill it once with ``--keep DIR`` and run both with that
``--keep DIR`` (the second run only searches). ``python -m hivemem.evaluation.dumps
BEFORE AFTER`` prints per suite the questions compared, those whose ranked ids differ,
and the largest score difference; it exits 1 when a ranking differs, a score moved by
more than ``--tolerance`` (1e-9) or the two files do not hold the same questions.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

TOLERANCE = 1e-9


def write(out: IO[str], suite: str, scope: str, question: str, hits: Sequence[Any]) -> None:
    """One question's line (``hits``: ``Hit`` values, best first)."""
    record = {
        "suite": suite,
        "scope": scope,
        "question": question,
        "ids": [h.memory.id for h in hits],
        "scores": [h.score for h in hits],
    }
    out.write(json.dumps(record, ensure_ascii=False) + "\n")


def read(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@dataclass
class SuiteDiff:
    """One suite's comparison."""

    suite: str
    questions: int = 0
    ranking_differs: int = 0
    max_score_diff: float = 0.0


def compare(
    before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
) -> tuple[list[SuiteDiff], list[str]]:
    """Per suite, how ``after`` differs from ``before``; and the problems that make
    them incomparable (questions missing or in another order)."""
    problems = []
    if len(before) != len(after):
        problems.append(f"{len(before)} questions before, {len(after)} after")
    out: dict[str, SuiteDiff] = {}
    for old, new in zip(before, after, strict=False):
        key = (old["suite"], old["scope"], old["question"])
        if key != (new["suite"], new["scope"], new["question"]):
            problems.append(f"question {key} before, {new['question']!r} after")
            break
        diff = out.setdefault(old["suite"], SuiteDiff(old["suite"]))
        diff.questions += 1
        if old["ids"] != new["ids"]:
            diff.ranking_differs += 1
            continue
        for a, b in zip(old["scores"], new["scores"], strict=True):
            diff.max_score_diff = max(diff.max_score_diff, abs(a - b))
    return list(out.values()), problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hivemem.evaluation.dumps")
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = parser.parse_args(argv)
    diffs, problems = compare(read(args.before), read(args.after))
    print("| suite | questions | ranked ids differ | max score difference |")
    print("|---|---|---|---|")
    for d in diffs:
        print(f"| {d.suite} | {d.questions} | {d.ranking_differs} | {d.max_score_diff:.3g} |")
    for problem in problems:
        print(f"not comparable: {problem}")
    bad = problems or any(d.ranking_differs or d.max_score_diff > args.tolerance for d in diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
