"""Retrieval evaluation on public long-memory benchmarks (``hivemem eval``).

LoCoMo (Maharana et al., ACL 2024): each conversation is loaded into its own scope, every
turn an episode with its session and date (image turns carry their caption), and every QA
item's question is searched. A question is a *hit at k* when one of its evidence turns is
among the top k memories; *recall at k* is the share of its evidence turns found there.
Labels are used only to score, never to retrieve.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..facade.database import open as open_store
from ..settings import Settings

LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
KS = (1, 5, 10)

_DIA = re.compile(r"D:?(\d+):0*(\d+)")


def parse_evidence(items: Iterable[Any]) -> list[str]:
    """Evidence ids, repaired as FORMATS.md describes: several ids packed into one string
    (``"D8:6; D9:17"``), ``"D:11:26"``, zero padding (``"D30:05"``); ``"D"`` dropped."""
    out: list[str] = []
    for item in items:
        for session, turn in _DIA.findall(str(item)):
            ident = f"D{int(session)}:{int(turn)}"
            if ident not in out:
                out.append(ident)
    return out


def parse_locomo_time(value: str) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` → aware UTC datetime (None when unreadable)."""
    try:
        return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    when: datetime | None


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read LoCoMo's published JSON (see ``shared/eval/FORMATS.md``)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput("path", f"cannot read {path} as LoCoMo JSON: {exc}") from None
    if not isinstance(data, list):
        raise InvalidInput("path", f"{path}: expected a JSON list of conversations")
    conversations = []
    for item in data:
        conv = item["conversation"]
        turns = []
        sessions = sorted(
            int(k.split("_")[1])
            for k, v in conv.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        for number in sessions:
            when = parse_locomo_time(conv.get(f"session_{number}_date_time", ""))
            for turn in conv[f"session_{number}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [shares an image: {turn['blip_caption']}]"
                turns.append(Turn(turn["dia_id"], number, turn["speaker"], text, when))
        questions = tuple(
            Question(q["question"], int(q["category"]), tuple(parse_evidence(q["evidence"])))
            for q in item["qa"]
        )
        conversations.append(Conversation(item["sample_id"], tuple(turns), questions))
    return conversations


@dataclass
class _Tally:
    count: int = 0
    hits: dict[int, int] = field(default_factory=lambda: {k: 0 for k in KS})
    recall: dict[int, float] = field(default_factory=lambda: {k: 0.0 for k in KS})

    def add(self, ranked: Sequence[str], evidence: Sequence[str]) -> None:
        self.count += 1
        gold = set(evidence)
        for k in KS:
            top = set(ranked[:k])
            if gold & top:
                self.hits[k] += 1
            self.recall[k] += len(gold & top) / len(gold)

    def as_dict(self) -> dict[str, Any]:
        n = max(self.count, 1)
        out: dict[str, Any] = {"questions": self.count}
        for k in KS:
            out[f"hit@{k}"] = round(self.hits[k] / n, 4)
        for k in KS:
            out[f"recall@{k}"] = round(self.recall[k] / n, 4)
        return out


@dataclass(frozen=True)
class EvalReport:
    dataset: str
    by_category: dict[str, dict[str, Any]]
    overall: dict[str, Any]  # categories 1-4
    overall_all: dict[str, Any]  # categories 1-5
    memories: int
    ingest_seconds: float
    embed_seconds: float
    search_ms_p50: float
    search_ms_p95: float
    skipped_questions: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "overall_cat1_4": self.overall,
            "overall_all": self.overall_all,
            "by_category": self.by_category,
            "memories": self.memories,
            "ingest_seconds": round(self.ingest_seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "search_ms_p50": round(self.search_ms_p50, 3),
            "search_ms_p95": round(self.search_ms_p95, 3),
            "skipped_questions": self.skipped_questions,
        }


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# What agents paste before a question (LESSONS 10): a system prompt of ~2 kB.
SYSTEM_PROMPT_PREAMBLE = (
    "You are a helpful assistant with long-term memory. Always answer truthfully, cite "
    "the memories you use, and keep answers short. The user is a software engineer who "
    "works on distributed systems and likes concise explanations. Follow the company "
    "style guide: no emojis, British spelling, numbered steps for procedures. " * 6
)[:2000] + "\n\nUser question: "


def eval_locomo(
    path: str | Path,
    *,
    limit: int = 10,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
    preamble: str = "",
) -> EvalReport:
    """Load every conversation into its own scope of a fresh store, query every QA item,
    and score the ranked turns against the evidence. ``preamble`` is put before every
    question (e.g. ``SYSTEM_PROMPT_PREAMBLE``: what recall costs when an agent sends its
    system prompt along)."""
    conversations = load_locomo(path)
    settings = (settings or Settings()).replace(
        track_access=False,
        consolidate_on_session_switch=False,  # retrieval of the turns only
    )
    tallies = {c: _Tally() for c in LOCOMO_CATEGORIES}
    main, everything = _Tally(), _Tally()
    latencies: list[float] = []
    skipped = 0
    memories = 0
    ingest = embedding = 0.0
    total_questions = sum(len(c.questions) for c in conversations)
    done = 0
    with (
        tempfile.TemporaryDirectory() as folder,
        open_store(Path(folder) / "locomo.db", settings=settings) as store,
    ):
        for conv in conversations:
            mem = store.scope(f"locomo:{conv.sample_id}")
            started = time.perf_counter()
            stored = mem.add_episodes(
                {
                    "content": f"{t.speaker}: {t.text}",
                    "session_id": f"session_{t.session}",
                    "role": t.speaker,
                    "event_time": t.when,
                    "attributes": {"dia_id": t.dia_id},
                }
                for t in conv.turns
            )
            ingest += time.perf_counter() - started
            started = time.perf_counter()
            store.flush()
            embedding += time.perf_counter() - started
            memories += len(stored)
            valid = {t.dia_id for t in conv.turns}
            for question in conv.questions:
                done += 1
                evidence = [e for e in question.evidence if e in valid]
                if not evidence:
                    skipped += 1
                    continue
                started = time.perf_counter()
                hits = mem.search(preamble + question.text, limit=limit)
                latencies.append((time.perf_counter() - started) * 1000)
                ranked = [h.memory.attributes.get("dia_id", "") for h in hits]
                tallies[question.category].add(ranked, evidence)
                everything.add(ranked, evidence)
                if question.category != 5:
                    main.add(ranked, evidence)
                if progress:
                    progress(done, total_questions)
    return EvalReport(
        dataset=str(path),
        by_category={f"{c} {name}": tallies[c].as_dict() for c, name in LOCOMO_CATEGORIES.items()},
        overall=main.as_dict(),
        overall_all=everything.as_dict(),
        memories=memories,
        ingest_seconds=ingest,
        embed_seconds=embedding,
        search_ms_p50=_percentile(latencies, 0.5),
        search_ms_p95=_percentile(latencies, 0.95),
        skipped_questions=skipped,
    )


def text_table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns, a rule under the first row (the header)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def format_report(report: EvalReport) -> str:
    rows = [("category", *[f"hit@{k}" for k in KS], *[f"R@{k}" for k in KS], "n")]
    for name, values in [
        *report.by_category.items(),
        ("overall 1-4", report.overall),
        ("overall 1-5", report.overall_all),
    ]:
        rows.append(
            (
                name,
                *[f"{values[f'hit@{k}']:.3f}" for k in KS],
                *[f"{values[f'recall@{k}']:.3f}" for k in KS],
                str(values["questions"]),
            )
        )
    lines = text_table(rows)
    lines.append("")
    lines.append(
        f"{report.memories} memories ingested in {report.ingest_seconds:.2f} s, "
        f"embedded in {report.embed_seconds:.2f} s; "
        f"search p50 {report.search_ms_p50:.2f} ms, p95 {report.search_ms_p95:.2f} ms; "
        f"{report.skipped_questions} questions without valid evidence skipped"
    )
    return "\n".join(lines)
