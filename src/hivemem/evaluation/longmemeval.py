"""Retrieval evaluation on LongMemEval (Wu et al. 2024), beside LoCoMo in ``evaluation``.

Every question brings its own haystack of dated chat sessions. Each haystack is loaded
into its own scope of one temporary store (every turn an episode with its session, role
and date), then the question is searched. Scores are *recall_any at k*: at turn level a
hit when any turn marked ``has_answer`` is among the top k turns; at session level a hit
when any of ``answer_session_ids`` is among the top k sessions, sessions ranked by where
their first turn appears in the hits. Abstention questions (``*_abs``) have no evidence
and are skipped. Labels are used only to score, never to retrieve.
"""

from __future__ import annotations

import gzip
import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..facade.database import open as open_store
from ..settings import Settings
from .locomo import _percentile, text_table

KS = (5, 10)
SEARCH_LIMIT = 50
REQUIRED_KEYS = (
    "question_id",
    "question_type",
    "question",
    "answer_session_ids",
    "haystack_session_ids",
    "haystack_sessions",
)
_WEEKDAY = re.compile(r"\([A-Za-z]+\)")
_DATE_FORMATS = ("%Y/%m/%d %H:%M", "%Y/%m/%d", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def parse_lme_date(value: Any) -> datetime | None:
    """``"2023/05/20 (Sat) 02:21"`` → aware UTC datetime; the weekday is ignored, the time
    is optional, ISO 8601 is accepted too, and anything unreadable is None."""
    if not isinstance(value, str):
        return None
    text = " ".join(_WEEKDAY.sub(" ", value).split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class LmeTurn:
    key: str  # "<session_id>:<index in session>"
    session_id: str
    role: str
    content: str
    when: datetime | None
    has_answer: bool


@dataclass(frozen=True)
class LmeQuestion:
    question_id: str
    question_type: str
    text: str
    answer_session_ids: tuple[str, ...]
    turns: tuple[LmeTurn, ...]

    @property
    def answer_turns(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.turns if t.has_answer)


@dataclass(frozen=True)
class LmeDataset:
    questions: tuple[LmeQuestion, ...]
    abstentions: int  # "_abs" questions skipped (within the questions read)


def _parse_question(path: str | Path, index: int, item: Any) -> LmeQuestion:
    def bad(message: str) -> InvalidInput:
        return InvalidInput("path", f"{path}: question {index}: {message}")

    if not isinstance(item, dict):
        raise bad(f"expected an object, got {type(item).__name__}")
    for key in REQUIRED_KEYS:
        if key not in item:
            raise bad(f"missing key {key!r}")
    session_ids = item["haystack_session_ids"]
    sessions = item["haystack_sessions"]
    dates = item.get("haystack_dates") or []
    for key in ("answer_session_ids", "haystack_session_ids", "haystack_sessions"):
        if not isinstance(item[key], list):
            raise bad(f"{key!r} is not a list")
    if not isinstance(dates, list):
        raise bad("'haystack_dates' is not a list")
    if len(session_ids) != len(sessions):
        raise bad(f"{len(session_ids)} haystack_session_ids but {len(sessions)} haystack_sessions")
    turns = []
    for number, (session_id, session) in enumerate(zip(session_ids, sessions, strict=True)):
        if not isinstance(session, list):
            raise bad(f"haystack_sessions[{number}] is not a list of turns")
        when = parse_lme_date(dates[number]) if number < len(dates) else None
        for position, turn in enumerate(session):
            if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
                raise bad(f"haystack_sessions[{number}][{position}] has no text 'content'")
            turns.append(
                LmeTurn(
                    key=f"{session_id}:{position}",
                    session_id=str(session_id),
                    role=str(turn.get("role") or "unknown"),
                    content=turn["content"],
                    when=when,
                    has_answer=bool(turn.get("has_answer")),
                )
            )
    return LmeQuestion(
        question_id=str(item["question_id"]),
        question_type=str(item["question_type"]),
        text=str(item["question"]),
        answer_session_ids=tuple(str(s) for s in item["answer_session_ids"]),
        turns=tuple(turns),
    )


def load_longmemeval(path: str | Path, *, limit_questions: int | None = None) -> LmeDataset:
    """Read LongMemEval's published JSON (gzipped when the name ends in ``.gz``): the
    first ``limit_questions`` questions that are not abstentions (all when None). Raises
    ``InvalidInput`` naming what is wrong."""
    try:
        if str(path).endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                data = json.load(handle)
        else:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, EOFError) as exc:
        raise InvalidInput("path", f"cannot read {path} as LongMemEval JSON: {exc}") from None
    if not isinstance(data, list):
        raise InvalidInput(
            "path", f"{path}: expected a JSON list of questions, got {type(data).__name__}"
        )
    questions: list[LmeQuestion] = []
    abstentions = 0
    for index, item in enumerate(data):
        if limit_questions is not None and len(questions) >= limit_questions:
            break
        if isinstance(item, dict) and str(item.get("question_id", "")).endswith("_abs"):
            abstentions += 1
            continue
        questions.append(_parse_question(path, index, item))
    return LmeDataset(tuple(questions), abstentions)


@dataclass
class _Tally:
    questions: int = 0
    turn_questions: int = 0
    turn_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))
    session_hits: dict[int, int] = field(default_factory=lambda: dict.fromkeys(KS, 0))

    def add(self, turns: Sequence[str], sessions: Sequence[str], question: LmeQuestion) -> None:
        self.questions += 1
        answers = set(question.answer_session_ids)
        for k in KS:
            self.session_hits[k] += bool(answers & set(sessions[:k]))
        gold = set(question.answer_turns)
        if gold:  # no has_answer turn: scored at session level only
            self.turn_questions += 1
            for k in KS:
                self.turn_hits[k] += bool(gold & set(turns[:k]))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": self.questions, "turn_questions": self.turn_questions}
        for k in KS:
            out[f"turn_recall_any@{k}"] = round(self.turn_hits[k] / max(self.turn_questions, 1), 4)
        for k in KS:
            out[f"session_recall_any@{k}"] = round(self.session_hits[k] / max(self.questions, 1), 4)
        return out


@dataclass(frozen=True)
class LmeReport:
    dataset: str
    overall: dict[str, Any]
    by_type: dict[str, dict[str, Any]]
    turns: int
    ingest_seconds: float  # add_episodes
    embed_seconds: float  # flush: until every turn has its vector
    search_ms_p50: float
    search_ms_p95: float
    abstention_skipped: int
    turn_level_skipped: int  # questions without a has_answer turn

    @property
    def turns_per_second(self) -> float:
        """Turns made searchable (stored and embedded) per second."""
        seconds = self.ingest_seconds + self.embed_seconds
        return self.turns / seconds if seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "overall": self.overall,
            "by_type": self.by_type,
            "turns": self.turns,
            "ingest_seconds": round(self.ingest_seconds, 3),
            "embed_seconds": round(self.embed_seconds, 3),
            "ingest_turns_per_s": round(self.turns_per_second, 1),
            "search_ms_p50": round(self.search_ms_p50, 3),
            "search_ms_p95": round(self.search_ms_p95, 3),
            "abstention_skipped": self.abstention_skipped,
            "turn_level_skipped": self.turn_level_skipped,
        }


def _ranked(hits: Sequence[Any], session_of: dict[str, str]) -> tuple[list[str], list[str]]:
    """Turn keys in hit order, and sessions in the order their first turn appears."""
    turns: list[str] = []
    sessions: list[str] = []
    for hit in hits:
        key = str(hit.memory.attributes.get("turn", ""))
        if key not in session_of or key in turns:
            continue
        turns.append(key)
        if session_of[key] not in sessions:
            sessions.append(session_of[key])
    return turns, sessions


def eval_longmemeval(
    path: str | Path,
    *,
    limit_questions: int | None = None,
    settings: Settings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LmeReport:
    """Load each question's haystack into its own scope of one temporary store, search the
    question (top ``SEARCH_LIMIT``), and score turns and sessions against the labels."""
    dataset = load_longmemeval(path, limit_questions=limit_questions)
    settings = (settings or Settings()).replace(
        track_access=False,
        consolidate_on_session_switch=False,  # retrieval of the turns only
    )
    overall = _Tally()
    by_type: dict[str, _Tally] = {}
    latencies: list[float] = []
    turns_stored = 0
    ingest = embedding = 0.0
    with (
        tempfile.TemporaryDirectory() as folder,
        open_store(Path(folder) / "longmemeval.db", settings=settings) as store,
    ):
        for done, question in enumerate(dataset.questions, start=1):
            mem = store.scope(f"lme:{question.question_id}")
            # Blank turns cannot be stored (and hold nothing to find); their keys stay unused.
            episodes = [
                {
                    "content": t.content,
                    "session_id": t.session_id,
                    "role": t.role,
                    "event_time": t.when,
                    "attributes": {"turn": t.key},
                }
                for t in question.turns
                if t.content.strip()
            ]
            started = time.perf_counter()
            for start in range(0, len(episodes), settings.max_batch):
                mem.add_episodes(episodes[start : start + settings.max_batch])
            ingest += time.perf_counter() - started
            started = time.perf_counter()
            store.flush()
            embedding += time.perf_counter() - started
            turns_stored += len(episodes)
            started = time.perf_counter()
            hits = mem.search(question.text, limit=SEARCH_LIMIT)
            latencies.append((time.perf_counter() - started) * 1000)
            ranked = _ranked(hits, {t.key: t.session_id for t in question.turns})
            overall.add(*ranked, question)
            by_type.setdefault(question.question_type, _Tally()).add(*ranked, question)
            if progress:
                progress(done, len(dataset.questions))
    return LmeReport(
        dataset=str(path),
        overall=overall.as_dict(),
        by_type={name: by_type[name].as_dict() for name in sorted(by_type)},
        turns=turns_stored,
        ingest_seconds=ingest,
        embed_seconds=embedding,
        search_ms_p50=_percentile(latencies, 0.5),
        search_ms_p95=_percentile(latencies, 0.95),
        abstention_skipped=dataset.abstentions,
        turn_level_skipped=overall.questions - overall.turn_questions,
    )


def format_lme_report(report: LmeReport) -> str:
    columns = [f"turn R@{k}" for k in KS] + [f"session R@{k}" for k in KS]
    keys = [f"turn_recall_any@{k}" for k in KS] + [f"session_recall_any@{k}" for k in KS]
    rows = [("question type", *columns, "n", "n turn")]
    for name, values in [*report.by_type.items(), ("overall", report.overall)]:
        rows.append(
            (
                name,
                *[f"{values[key]:.3f}" for key in keys],
                str(values["questions"]),
                str(values["turn_questions"]),
            )
        )
    lines = text_table(rows)
    lines.append("")
    lines.append(
        f"{report.turns} turns ingested at {report.turns_per_second:.0f} turns/s "
        f"(stored in {report.ingest_seconds:.2f} s, embedded in {report.embed_seconds:.2f} s); "
        f"search p50 {report.search_ms_p50:.2f} ms, p95 {report.search_ms_p95:.2f} ms; "
        f"{report.abstention_skipped} abstention questions skipped; "
        f"{report.turn_level_skipped} without a has_answer turn scored by session only"
    )
    return "\n".join(lines)
