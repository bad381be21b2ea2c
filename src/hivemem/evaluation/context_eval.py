"""How often the context block holds the evidence (``hivemem eval context``).

For every question of a suite (LoCoMo episodes, LoCoMo mixed, LongMemEval, paraphrase; stored as
``hivemem eval all`` stores them) the block ``mem.context(question)`` builds at the
default budget (50 entries, no token cap; ``max_tokens`` to cap) is scored: *in block*
when one of its memories is evidence for the question (an evidence turn, or a fact
citing one). Beside it, plain BM25's top hits over the same memories, as bullets of the
same form, within the same tokens as that question's block (so a block left short by the
relevance floor gives BM25 as little room): what a block of search hits without pinning,
floor or fusion would hold. Each relevance floor given (``min_score``) is a column of
its own; BM25's budget follows the first. Tokens are counted by ``estimate_tokens``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..facade.database import open as open_store
from ..lifecycle.context import MIN_SCORE, bullet, context_block, estimate_tokens
from ..settings import Settings
from .locomo import text_table
from .suites import (
    Doc,
    Progress,
    Suite,
    _bm25,
    _store_folder,
    kept_store,
)

_HEADER = "## Memory\n\n### Relevant from earlier sessions\n"


@dataclass(frozen=True)
class ContextReport:
    suite: str
    floors: tuple[float, ...]
    max_entries: int
    max_tokens: int | None
    max_relevant: int | None
    questions: int
    by_category: dict[
        str, dict[str, Any]
    ]  # name -> {"n", "block": {floor: rate}, "bm25", "tokens"}
    overall: dict[str, Any]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "floors": list(self.floors),
            "max_entries": self.max_entries,
            "max_tokens": self.max_tokens,
            "max_relevant": self.max_relevant,
            "questions": self.questions,
            "overall": self.overall,
            "by_category": self.by_category,
            "seconds": round(self.seconds, 1),
        }


class _Count:
    def __init__(self, floors: tuple[float, ...]) -> None:
        self.n = 0
        self.block = dict.fromkeys(floors, 0)
        self.tokens = dict.fromkeys(floors, 0)
        self.bm25 = 0

    def add(self, found: dict[float, tuple[bool, int]], bm25: bool) -> None:
        self.n += 1
        for floor, (hit, tokens) in found.items():
            self.block[floor] += hit
            self.tokens[floor] += tokens
        self.bm25 += bm25

    def to_dict(self) -> dict[str, Any]:
        n = max(self.n, 1)
        return {
            "n": self.n,
            "block": {str(f): round(v / n, 4) for f, v in self.block.items()},
            "tokens": {str(f): round(v / n, 1) for f, v in self.tokens.items()},
            "bm25": round(self.bm25 / n, 4),
        }


def run_context_suite(
    suite: Suite,
    settings: Settings | None = None,
    *,
    floors: tuple[float, ...] = (MIN_SCORE,),
    max_entries: int = 50,
    max_tokens: int | None = None,
    max_relevant: int | None = None,
    progress: Progress | None = None,
    keep: Path | None = None,
) -> ContextReport:
    """Store ``suite`` (or reuse the kept store ``hivemem eval all --keep`` left) and
    score the block of every question (see the module docstring)."""
    settings = (settings or Settings()).replace(track_access=False)
    notify = progress or (lambda stage, done, total: None)
    floors = tuple(dict.fromkeys(floors)) or (MIN_SCORE,)
    started = time.perf_counter()
    overall = _Count(floors)
    by_category: dict[Any, _Count] = {}
    with _store_folder(keep) as folder:
        db, labels, _ = kept_store(folder, suite, settings, notify)
        total = sum(len(u.items) for u in suite.units)
        done = 0
        with open_store(db, settings=settings) as store:
            for unit in suite.units:
                mem = store.scope(unit.scope)
                for item in unit.items:
                    done += 1
                    gold = set(item.gold)
                    found, budget = {}, 0
                    for floor in floors:
                        block = context_block(
                            mem,
                            query=item.text,
                            max_entries=max_entries,
                            max_tokens=max_tokens,
                            max_relevant=max_relevant,
                            min_score=floor,
                            count_tokens=estimate_tokens,
                        )
                        ids = [m["id"] for s in block.sections for m in s["memories"]]
                        found[floor] = (_evidence(ids, labels, gold), block.tokens)
                        if floor == floors[0]:
                            budget = block.tokens
                    plain = _bm25(store, unit.scope, item.text, 50)
                    bm25 = _evidence(_fill(mem, plain, budget), labels, gold)
                    by_category.setdefault(item.category, _Count(floors)).add(found, bm25)
                    if item.headline:
                        overall.add(found, bm25)
                    notify(f"{suite.name}: context", done, total)
    return ContextReport(
        suite=suite.name,
        floors=floors,
        max_entries=max_entries,
        max_tokens=max_tokens,
        max_relevant=max_relevant,
        questions=overall.n,
        by_category={k: v.to_dict() for k, v in sorted(by_category.items())},
        overall=overall.to_dict(),
        seconds=time.perf_counter() - started,
    )


def _evidence(ids: list[str], labels: dict[str, Doc], gold: set[str]) -> bool:
    return any(gold & set(labels[i].labels) for i in ids if i in labels)


def _fill(mem: Any, ranked: list[str], budget: int) -> list[str]:
    """BM25's hits, best first, as bullets while they fit in ``budget`` tokens (one
    that does not fit is skipped and a smaller one after it may still fit, as in the
    block)."""
    used = estimate_tokens(_HEADER)
    out = []
    for memory_id in ranked:
        cost = estimate_tokens(bullet(mem.get(memory_id), dated=True) + "\n")
        if used + cost <= budget:
            out.append(memory_id)
            used += cost
    return out


def format_context(report: ContextReport) -> str:
    floors = [str(f) for f in report.floors]
    header = (
        "category",
        *[f"in block (floor {f}, tokens)" for f in floors],
        f"BM25 in the tokens of floor {floors[0]}",
        "n",
    )
    rows: list[tuple[str, ...]] = [header]
    for name, values in [*report.by_category.items(), ("overall", report.overall)]:
        rows.append(
            (
                name,
                *[f"{values['block'][f]:.3f} ({values['tokens'][f]:.0f})" for f in floors],
                f"{values['bm25']:.3f}",
                str(values["n"]),
            )
        )
    cap = f", max_tokens {report.max_tokens}" if report.max_tokens else ", no token cap"
    if report.max_relevant is not None:
        cap += f", max_relevant {report.max_relevant}"
    lines = [
        f"{report.suite}: evidence in the context block, {report.questions} questions "
        f"(max_entries {report.max_entries}{cap})"
    ]
    lines += text_table(rows)
    lines.append(f"{report.seconds:.0f} s")
    return "\n".join(lines)
