"""One evaluation over four suites (``hivemem eval all``), each beside plain BM25.

- **LongMemEval** (``longmemeval``): every question's haystack in its own scope, every
  turn an episode; turn any@k (a ``has_answer`` turn in the top k) and session any@k
  (an answer session among the first k sessions the hits name), per question type.
- **LoCoMo episodes** (``locomo``): every conversation in its own scope, every turn an
  episode; hit@k (an evidence turn in the top k), per category (1-4 make the headline).
- **LoCoMo mixed** (``locomo-mixed``): the same turns, plus the data set's observations
  saved as facts without a session and its session summaries saved as summaries — what a
  store looks like once an agent or the consolidation job has written facts. A hit when
  an evidence turn, or an observation citing one, is in the top k.
- **Paraphrase** (``paraphrase``, bundled): 222 questions whose answer turn shares no
  content word with them, hidden among ~2,000 real dialogue turns in one scope
  (``evaluation/paraphrase.py``); hit@k. Plain BM25 scores 0 by construction.
- **Paraphrase B** (``paraphrase-b``, bundled): 200 more such questions among the same
  turns, held out to confirm what the first set chose; run only when named.

Every table comes from one run: HiveMem's search (p50/p95 per search, query embedding
included, and the query embedding alone), plain BM25 over the same chunks (FTS5's
``bm25`` order of the question's terms, best chunk per memory, no window, no fusion), the
score of the right answer (its 5th percentile over the questions where it is in the top
10: the ``min_score`` that keeps 95% of them), and with ``ablation`` the same questions
with one stage off at a time (and with a 2 kB system prompt before the question). Labels
are used only to score, never to retrieve.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from .. import text as textmod
from ..clock import system_clock
from ..facade.database import open as open_store
from ..retrieval.keyword import best_chunk_per_memory
from ..settings import Settings
from ..store.keyword_query import KeywordQuery
from ..types import Query, Status
from . import dumps
from .locomo import (
    LOCOMO_CATEGORIES,
    SYSTEM_PROMPT_PREAMBLE,
    _percentile,
    load_locomo,
    parse_evidence,
    parse_locomo_time,
    text_table,
)
from .longmemeval import load_longmemeval
from .paraphrase import PAIRS_B_FILE, PAIRS_FILE, load_distractors, load_pairs, placed
from .paraphrase import SCOPE as PARAPHRASE_SCOPE

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Doc:
    content: str
    kind: str  # episode | fact | summary
    labels: tuple[str, ...]  # gold ids this memory counts for
    session: str | None = None  # stored session (episodes only)
    group: str | None = None  # the session it is scored under (LongMemEval)
    role: str | None = None
    when: datetime | None = None


@dataclass(frozen=True)
class Item:
    text: str
    category: str
    gold: tuple[str, ...]
    gold_groups: tuple[str, ...] = ()
    headline: bool = True  # counts in the overall row


@dataclass(frozen=True)
class Unit:
    scope: str
    docs: tuple[Doc, ...]
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Suite:
    name: str
    units: tuple[Unit, ...]
    metrics: tuple[str, ...]  # "hit@k" or "turn@k" / "session@k"
    limit: int  # hits fetched per question


def _hit(metric: str, ranked: Sequence[Doc], item: Item) -> bool:
    kind, k = metric.split("@")
    top = int(k)
    if kind == "session":
        groups: list[str] = []
        for doc in ranked:
            if doc.group is not None and doc.group not in groups:
                groups.append(doc.group)
        return bool(set(groups[:top]) & set(item.gold_groups))
    gold = set(item.gold)
    return any(gold & set(doc.labels) for doc in ranked[:top])


# ----------------------------------------------------------------------------- suites


def locomo_suite(path: str | Path, *, mixed: bool = False) -> Suite:
    """LoCoMo as episodes, or ``mixed`` with observations (facts) and summaries."""
    conversations = load_locomo(path)
    raw = json.loads(Path(path).read_text(encoding="utf-8")) if mixed else []
    units = []
    for index, conv in enumerate(conversations):
        docs = [
            Doc(
                f"{t.speaker}: {t.text}",
                "episode",
                (t.dia_id,),
                session=f"session_{t.session}",
                role=t.speaker,
                when=t.when,
            )
            for t in conv.turns
        ]
        if mixed:
            docs.extend(_locomo_extras(raw[index]))
        valid = {t.dia_id for t in conv.turns}
        items = []
        for q in conv.questions:
            evidence = tuple(e for e in q.evidence if e in valid)
            if evidence:
                name = f"{q.category} {LOCOMO_CATEGORIES[q.category]}"
                items.append(Item(q.text, name, evidence, headline=q.category != 5))
        units.append(Unit(f"locomo:{conv.sample_id}", tuple(docs), tuple(items)))
    name = "LoCoMo mixed" if mixed else "LoCoMo episodes"
    return Suite(name, tuple(units), ("hit@1", "hit@5", "hit@10"), 10)


def _locomo_extras(item: dict[str, Any]) -> list[Doc]:
    conv = item["conversation"]
    docs = []
    for key, by_speaker in sorted(item.get("observation", {}).items()):
        number = key.split("_")[1]
        when = parse_locomo_time(conv.get(f"session_{number}_date_time", ""))
        for facts in by_speaker.values():
            for fact in facts:
                cited = fact[1] if isinstance(fact[1], list) else [fact[1]]
                docs.append(Doc(fact[0], "fact", tuple(parse_evidence(cited)), when=when))
    for key, summary in sorted(item.get("session_summary", {}).items()):
        number = key.split("_")[1]
        when = parse_locomo_time(conv.get(f"session_{number}_date_time", ""))
        if isinstance(summary, str) and summary.strip():
            docs.append(Doc(summary, "summary", (), when=when))
    return docs


def longmemeval_suite(path: str | Path, *, limit_questions: int | None = None) -> Suite:
    dataset = load_longmemeval(path, limit_questions=limit_questions)
    units = []
    for q in dataset.questions:
        docs = tuple(
            Doc(
                t.content,
                "episode",
                (t.key,),
                session=t.session_id,
                group=t.session_id,
                role=t.role,
                when=t.when,
            )
            for t in q.turns
            if t.content.strip()
        )
        item = Item(q.text, q.question_type, q.answer_turns, q.answer_session_ids)
        units.append(Unit(f"lme:{q.question_id}", docs, (item,)))
    return Suite("LongMemEval", tuple(units), ("session@5", "session@10", "turn@5", "turn@10"), 50)


def paraphrase_suite(set_b: bool = False) -> Suite:
    """The bundled paraphrase suite (``evaluation/paraphrase.py``; ``set_b``: its held-out
    set B): one scope holding every answer among ~2,000 real dialogue turns; each
    question's gold is its answer."""
    pairs = load_pairs(name=PAIRS_B_FILE if set_b else PAIRS_FILE)
    docs = tuple(
        Doc(text, "episode", (key,) if key else (), session=session, role="user")
        for session, text, key in placed(pairs, load_distractors())
    )
    items = tuple(Item(p.question, p.domain, (p.key,)) for p in pairs)
    unit = Unit(PARAPHRASE_SCOPE, docs, items)
    return Suite(
        "Paraphrase B" if set_b else "Paraphrase", (unit,), ("hit@1", "hit@5", "hit@10"), 10
    )


# ----------------------------------------------------------------------------- running

ABLATIONS: dict[str, dict[str, Any]] = {
    "- window": {"window_weight": 0.0},
    "- session prior": {"session_weight": 0.0},
    "- neighbours": {"neighbour_weight": 0.0, "previous_weight": 0.0},
    "- entity lane": {"entity_weight": 0.0},
    "- vectors": {"embedder": "none"},
    "- diversity": {"mmr_lambda": 1.0},
    "+ 2 kB system prompt": {},
    "+ deep mode": {},  # search(..., mode="deep"), no LLM
}


@dataclass
class _Tally:
    metrics: tuple[str, ...]
    count: int = 0
    hits: dict[str, int] = field(default_factory=dict)

    def add(self, ranked: Sequence[Doc], item: Item) -> None:
        self.count += 1
        for metric in self.metrics:
            self.hits[metric] = self.hits.get(metric, 0) + _hit(metric, ranked, item)

    def rates(self) -> dict[str, float]:
        return {m: self.hits.get(m, 0) / max(self.count, 1) for m in self.metrics}


@dataclass(frozen=True)
class SuiteReport:
    suite: str
    metrics: tuple[str, ...]
    memories: int
    questions: int
    by_category: dict[str, dict[str, Any]]  # category -> {"hivemem": rates, "bm25": rates, "n"}
    overall: dict[str, Any]
    search_ms_p50: float
    search_ms_p95: float
    embed_ms_p50: float
    bm25_ms_p50: float
    answer_score_p5: float | None  # the min_score keeping 95% of the answers found in top 10
    ablation: dict[str, dict[str, float]]
    ingest_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "memories": self.memories,
            "questions": self.questions,
            "overall": self.overall,
            "by_category": self.by_category,
            "search_ms_p50": round(self.search_ms_p50, 3),
            "search_ms_p95": round(self.search_ms_p95, 3),
            "query_embedding_ms_p50": round(self.embed_ms_p50, 3),
            "bm25_ms_p50": round(self.bm25_ms_p50, 3),
            "answer_score_p5": self.answer_score_p5,
            "ablation": self.ablation,
            "ingest_seconds": round(self.ingest_seconds, 3),
        }


def run_suite(
    suite: Suite,
    settings: Settings | None = None,
    *,
    ablation: bool = False,
    preamble: str = "",
    progress: Progress | None = None,
    keep: Path | None = None,
    dump: IO[str] | None = None,
    now: datetime | None = None,
) -> SuiteReport:
    """Store every unit in its own scope of one temporary store, search every item with
    HiveMem and with plain BM25, and score both (see the module docstring).

    ``keep``: a folder where the suite's store stays after the run, and where a later run
    of the same suite with the same embedder finds it and only searches (LongMemEval
    takes about an hour to store and embed on 2 cores; a ranking experiment needs
    minutes). ``ingest_seconds`` is then 0. ``dump``: a text file that gets one JSON line
    per question of the main run (``hivemem.evaluation.dumps``). ``now``: the searches'
    clock, fixed (decay and recency then give the same scores on every run; the store is
    filled at the real time)."""
    settings = (settings or Settings()).replace(track_access=False)
    notify = progress or (lambda stage, done, total: None)
    with _store_folder(keep) as folder:
        started = time.perf_counter()
        db, labels, built = kept_store(folder, suite, settings, notify)
        memories = len(labels)
        ingest = time.perf_counter() - started if built else 0.0
        main = _search_all(
            db, suite, settings, labels, preamble, notify, "hivemem", bm25=True, dump=dump, now=now
        )
        variants: dict[str, dict[str, float]] = {}
        if ablation:
            for name, change in ABLATIONS.items():
                variant = settings.replace(**change) if change else settings
                text = SYSTEM_PROMPT_PREAMBLE if name.startswith("+ 2 kB") else preamble
                mode = "deep" if name == "+ deep mode" else "fast"
                result = _search_all(
                    db, suite, variant, labels, text, notify, name, mode=mode, now=now
                )
                variants[name] = result["overall"].rates()
    categories = {
        name: {
            "n": tally.count,
            "hivemem": _rounded(tally.rates()),
            "bm25": _rounded(main["bm25"][name].rates()),
        }
        for name, tally in sorted(main["by_category"].items())
    }
    scores = sorted(main["answer_scores"])
    return SuiteReport(
        suite=suite.name,
        metrics=suite.metrics,
        memories=memories,
        questions=main["overall"].count,
        by_category=categories,
        overall={
            "n": main["overall"].count,
            "hivemem": _rounded(main["overall"].rates()),
            "bm25": _rounded(main["bm25_overall"].rates()),
        },
        search_ms_p50=_percentile(main["latencies"], 0.5),
        search_ms_p95=_percentile(main["latencies"], 0.95),
        embed_ms_p50=_percentile(main["embed"], 0.5),
        bm25_ms_p50=_percentile(main["bm25_latencies"], 0.5),
        answer_score_p5=round(scores[int(0.05 * len(scores))], 4) if scores else None,
        ablation={name: _rounded(rates) for name, rates in variants.items()},
        ingest_seconds=ingest,
    )


def _store_folder(keep: Path | None) -> contextlib.AbstractContextManager[str]:
    if keep is None:
        return tempfile.TemporaryDirectory(prefix="hivemem-eval-")
    Path(keep).mkdir(parents=True, exist_ok=True)
    return contextlib.nullcontext(str(keep))


def _kept_paths(folder: str, suite: Suite, settings: Settings) -> tuple[Path, Path]:
    """The store and its labels for ``suite``: named by a digest of every document and
    question and of the embedder, so a changed data file or model never reuses a store
    built from another (what else the store was built with is the caller's to keep
    constant: delete the folder to rebuild)."""
    digest = hashlib.sha256()
    embedder = (settings.embedder, settings.embed_model, settings.embed_dimensions)
    digest.update(repr((suite.name, suite.limit, embedder)).encode())
    for unit in suite.units:
        digest.update(repr((unit.scope, unit.docs, unit.items)).encode())
    name = f"{suite.name.lower().replace(' ', '-')}-{digest.hexdigest()[:12]}"
    return Path(folder) / f"{name}.db", Path(folder) / f"{name}.labels.json"


def kept_store(
    folder: str, suite: Suite, settings: Settings, notify: Progress
) -> tuple[Path, dict[str, Doc], bool]:
    """The suite's store in ``folder`` and each memory id's document, built only where
    it is missing; ``built`` says whether any work was done.

    A store is complete once its labels file exists. The labels are first written beside
    it as ``<name>.stored.json``, once every document is stored and before the final
    embedding, and renamed when every chunk has its vector: a run stopped during that
    embedding (an hour for LongMemEval with a large model on 2 cores) is finished by the
    next run, from the queue it left, instead of being built again from nothing. The
    queue is embedded in its order, in the same fixed batches, so a finished store holds
    the vectors an unbroken run would have."""
    db, saved = _kept_paths(folder, suite, settings)
    stored = saved.with_name(saved.name.replace(".labels.json", ".stored.json"))
    if saved.exists() and db.exists():
        return db, _read_labels(saved), False
    if stored.exists() and db.exists():
        labels = _read_labels(stored)
        with open_store(db, settings=settings.replace(embed_in_background=False)) as store:
            notify(f"{suite.name}: embedding", 0, 1)
            store.flush()
    else:
        for stale in (db, saved, stored, *db.parent.glob(db.name + "-*")):
            stale.unlink(missing_ok=True)
        _, labels = _ingest(db, suite, settings, notify, labels_file=stored)
    stored.replace(saved)
    return db, labels, True


def _write_labels(path: Path, labels: dict[str, Doc]) -> None:
    rows = {
        memory_id: {
            "content": d.content,
            "kind": d.kind,
            "labels": list(d.labels),
            "session": d.session,
            "group": d.group,
            "role": d.role,
            "when": d.when.isoformat() if d.when else None,
        }
        for memory_id, d in labels.items()
    }
    partial = path.with_name(path.name + ".partial")  # a run stopped mid-write leaves
    partial.write_text(json.dumps(rows), encoding="utf-8")  # no truncated labels behind
    os.replace(partial, path)


def _read_labels(path: Path) -> dict[str, Doc]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return {
        memory_id: Doc(
            r["content"],
            r["kind"],
            tuple(r["labels"]),
            session=r["session"],
            group=r["group"],
            role=r["role"],
            when=datetime.fromisoformat(r["when"]) if r["when"] else None,
        )
        for memory_id, r in rows.items()
    }


def _rounded(rates: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in rates.items()}


def _ingest(
    db: Path, suite: Suite, settings: Settings, notify: Progress, *, labels_file: Path | None = None
) -> tuple[int, dict[str, Doc]]:
    """Store every document; returns the count and each memory id's document, which
    are also written to ``labels_file`` (when given) before the final embedding.

    Every chunk is embedded by the final flush, in the queue's order, not by the
    background worker as it is written: the bundled models quantise each batch's
    activations together, so a text's vector moves with its batch companions, and the
    worker's batches depend on how the threads happened to run. Built in the background,
    two builds of one suite differed by a few questions (paraphrase hit@1 .063 and .072,
    docs/retrieval.md), as much as the configurations being compared."""
    labels: dict[str, Doc] = {}
    settings = settings.replace(embed_in_background=False)
    with open_store(db, settings=settings) as store:
        for done, unit in enumerate(suite.units, start=1):
            mem = store.scope(unit.scope)
            episodes = [d for d in unit.docs if d.kind == "episode"]
            for batch in _by_session(episodes, settings.max_batch):
                stored = mem.add_episodes(
                    {"content": d.content, "session_id": d.session, "role": d.role or "unknown"}
                    | ({"event_time": d.when} if d.when else {})
                    for d in batch
                )
                labels.update({m.id: d for m, d in zip(stored, batch, strict=True)})
            for doc in unit.docs:
                if doc.kind != "episode":
                    memory = mem.save(doc.content, kind=doc.kind, event_time=doc.when)
                    if memory.id in labels:  # the same text saved twice is one memory
                        doc = replace(doc, labels=(*labels[memory.id].labels, *doc.labels))
                    labels[memory.id] = doc
            notify(f"{suite.name}: storing", done, len(suite.units))
        store.session_worker.wait()  # consolidation on session switch, when it is on
        _label_derived(store, suite, labels)
        if labels_file is not None:
            _write_labels(labels_file, labels)
        notify(f"{suite.name}: embedding", 0, 1)
        store.flush()
    return len(labels), labels


def _by_session(episodes: Sequence[Doc], most: int) -> Iterator[list[Doc]]:
    """The episodes in runs of one session each (at most ``most``), in order: a dialogue
    arrives session by session, so each new session is a session switch (which
    ``consolidate_on_session_switch`` acts on) as it is for a live agent."""
    run: list[Doc] = []
    for doc in episodes:
        if run and (doc.session != run[-1].session or len(run) >= most):
            yield run
            run = []
        run.append(doc)
    if run:
        yield run


def _label_derived(store: Any, suite: Suite, labels: dict[str, Doc]) -> None:
    """Memories the store wrote itself while the suite was stored (consolidated facts and
    session summaries, with ``consolidate_on_session_switch``) count for the documents
    they were drawn from (``source_ids``), as LoCoMo mixed's observations count for the
    turns they cite; one drawn from nothing labelled counts for nothing (a miss where it
    ranks), so they are never skipped when scored."""
    for unit in suite.units:
        derived = [m for m in store.iter_memories([unit.scope]) if m.id not in labels]
        for _ in range(2):  # summaries cite facts, facts cite turns
            for memory in derived:
                sources = [labels[s] for s in memory.source_ids if s in labels]
                labels[memory.id] = Doc(
                    memory.content,
                    memory.kind.value,
                    tuple(dict.fromkeys(g for d in sources for g in d.labels)),
                    group=next((d.group for d in sources if d.group), None),
                )


def _search_all(
    db: Path,
    suite: Suite,
    settings: Settings,
    labels: dict[str, Doc],
    preamble: str,
    notify: Progress,
    stage: str,
    *,
    bm25: bool = False,
    mode: str = "fast",
    dump: IO[str] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "overall": _Tally(suite.metrics),
        "by_category": {},
        "bm25": {},
        "bm25_overall": _Tally(suite.metrics),
        "latencies": [],
        "embed": [],
        "bm25_latencies": [],
        "answer_scores": [],
    }
    total = sum(len(u.items) for u in suite.units)
    done = 0
    clock = system_clock if now is None else (lambda: now)
    with open_store(db, settings=settings, clock=clock) as store:
        for unit in suite.units:
            mem = store.scope(unit.scope)
            for item in unit.items:
                done += 1
                text = preamble + item.text
                started = time.perf_counter()
                hits = mem.search(text, limit=suite.limit, mode=mode)
                out["latencies"].append((time.perf_counter() - started) * 1000)
                if dump is not None:
                    dumps.write(dump, suite.name, unit.scope, item.text, hits)
                ranked = [labels[h.memory.id] for h in hits if h.memory.id in labels]
                gold = set(item.gold)
                for hit in hits[:10]:
                    doc = labels.get(hit.memory.id)
                    if doc is not None and gold & set(doc.labels):
                        out["answer_scores"].append(hit.score)
                        break
                out["by_category"].setdefault(item.category, _Tally(suite.metrics)).add(
                    ranked, item
                )
                if item.headline:
                    out["overall"].add(ranked, item)
                if bm25:
                    if store.indexer.enabled:
                        started = time.perf_counter()
                        store.indexer.embed_query(textmod.query_focus(item.text))
                        out["embed"].append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    plain = _bm25(store, unit.scope, item.text, suite.limit)
                    out["bm25_latencies"].append((time.perf_counter() - started) * 1000)
                    ranked_plain = [labels[i] for i in plain if i in labels]
                    out["bm25"].setdefault(item.category, _Tally(suite.metrics)).add(
                        ranked_plain, item
                    )
                    if item.headline:
                        out["bm25_overall"].add(ranked_plain, item)
                notify(f"{suite.name}: {stage}", done, total)
    return out


def _bm25(store: Any, scope: str, question: str, limit: int) -> list[str]:
    """Plain BM25: FTS5's ``bm25`` order of the chunks holding any of the question's
    terms, best chunk per memory; no coverage, window, fusion or adjustment."""
    terms = textmod.query_terms(question)
    if not terms:
        return []
    query = Query(text=question, limit=limit, statuses=(Status.ACTIVE,))
    found = store.keyword.keyword_search(
        [scope], query, KeywordQuery.any_of(terms), limit * 4, store.clock()
    )
    return [m.memory_id for m in best_chunk_per_memory(found)][:limit]


# ----------------------------------------------------------------------------- output


def format_suite(report: SuiteReport) -> str:
    metrics = report.metrics
    header = ("category", *metrics, *[f"BM25 {m}" for m in metrics], "n")
    rows: list[tuple[str, ...]] = [header]
    for name, values in [*report.by_category.items(), ("overall", report.overall)]:
        rows.append(
            (
                name,
                *[f"{values['hivemem'][m]:.3f}" for m in metrics],
                *[f"{values['bm25'][m]:.3f}" for m in metrics],
                str(values["n"]),
            )
        )
    lines = [f"{report.suite}: {report.memories} memories, {report.questions} questions"]
    lines += text_table(rows)
    floor = "n/a" if report.answer_score_p5 is None else f"{report.answer_score_p5:.3f}"
    lines.append(
        f"search p50 {report.search_ms_p50:.1f} ms, p95 {report.search_ms_p95:.1f} ms "
        f"(query embedding alone p50 {report.embed_ms_p50:.1f} ms); "
        f"BM25 p50 {report.bm25_ms_p50:.1f} ms; right answer's score p5 {floor} "
        f"(min_score keeping 95% of answers found in the top 10); "
        f"stored and embedded in {report.ingest_seconds:.0f} s"
    )
    if report.ablation:
        base = report.overall["hivemem"]
        rows = [("ablation", *metrics)]
        rows.append(("all stages", *[f"{base[m]:.3f}" for m in metrics]))
        for name, rates in report.ablation.items():
            rows.append(
                (name, *[f"{rates[m]:.3f} ({100 * (rates[m] - base[m]):+.1f})" for m in metrics])
            )
        lines.append("")
        lines += text_table(rows)
    return "\n".join(lines)


def suites_for(
    locomo: str | Path | None,
    longmemeval: str | Path | None,
    limit_questions: int | None,
    *,
    paraphrase: bool = True,
    paraphrase_b: bool = False,
) -> Iterator[Suite]:
    """The suites of ``hivemem eval all``, in table order (LongMemEval first, the bundled
    paraphrase suite, then its set B where asked for)."""
    if longmemeval is not None:
        yield longmemeval_suite(longmemeval, limit_questions=limit_questions)
    if locomo is not None:
        for mixed in (False, True):
            suite = locomo_suite(locomo, mixed=mixed)
            if limit_questions is not None:
                suite = replace(suite, units=_first_items(suite.units, limit_questions))
            yield suite
    for wanted, set_b in ((paraphrase, False), (paraphrase_b, True)):
        if wanted:
            suite = paraphrase_suite(set_b)
            if limit_questions is not None:
                suite = replace(suite, units=_first_items(suite.units, limit_questions))
            yield suite


def _first_items(units: Sequence[Unit], count: int) -> tuple[Unit, ...]:
    """Every unit (the store is the same), but only ``count`` questions in all, spread
    over the units in turn so each conversation is asked something."""
    out = []
    per_unit = max(1, count // max(1, len(units)))
    for unit in units:
        stride = max(1, len(unit.items) // per_unit)
        out.append(replace(unit, items=unit.items[::stride][:per_unit]))
    return tuple(out)
