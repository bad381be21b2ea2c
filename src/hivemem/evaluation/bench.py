"""Latency and throughput of a real store at 10k–1M memories (``hivemem bench``).

For each corpus size N the bench first loads N generated dialogue turns into a store
without an embedder (the plain-FTS load time and file size; that file is removed). Then
it creates a store on a real file, opened with a vector lane, loads the same turns with
``add_episodes`` while the embedding worker runs beside it (as it does in use), and
``flush()``es the vectors still queued. It reports the load alone, the vectors embedded
by the worker during the load and during the flush, the flush's rate ("vector
indexing", chunks embedded and stored per second, by either thread) and
the load including vectors (load + flush: every turn searchable both ways).

Then the store is closed and reopened (as a store in use is met: a process that did not
create it, the planner statistics in place) and the bench measures what an agent waits
for:

- ``add_episode``: one turn per call, its own transaction (the hot path; DESIGN §2
  targets well under 1 ms), with the worker embedding the new turns in the background;
- ``add_episodes``: batches of ``batch`` turns, per batch and per episode;
- the same writes again on a handle without an embedder, the worker idle (plain FTS);
- searches, the same questions in each mode, each mode warmed up first:
  ``keyword only`` is ``mem.search(q, limit=10)`` on a second handle of the same file
  opened with ``embedder="none"`` (the plain-FTS figure); ``hybrid`` is the same call on
  the handle with the vector lane (keyword, vector and entity lanes, fusion, MMR; access
  tracking included, exactly as a caller gets it); ``vector lane`` times the vector
  index's search alone (binary KNN + exact re-scoring) with the query vector computed
  beforehand;
- the file size, vectors included.

The vectors are made by ``HashEmbedder(384)``: the default model's dimension, so the KNN,
the re-scoring, the index size and the worker's SQL cost what they cost with the model,
which they do not depend on the vectors' quality. The real model would take many
minutes per 100k turns on two cores (five to fifteen where this was written), and its
cost is a property of the model, not of the store: it is measured once per run instead
(``LocalEmbedder``; skip with ``model=False``), and so is each embedder named in
``embedders`` (``hivemem.evaluation.bench_models``): a cold first call (model load),
sentences per second in batches as the worker sends them, ingest with embeddings, and
single-question embedding latency, which is what hybrid search adds to the ``hybrid``
figure with the real model.

The corpus and the questions come from a seeded generator — no data is downloaded and
the same seed gives the same text on every machine. Words follow a Zipf–Mandelbrot law
over a vocabulary of common English words followed by a long tail of made-up ones
(project names, jargon, typos), mixed with function words, people, places and numbers,
in sessions of about 20 turns. Everything is streamed, so a million turns use no more
memory than ten thousand.

Timings use ``time.perf_counter_ns`` after a warm-up; percentiles are nearest-rank.
Benchmarks are commands, not tests: nothing here asserts a number.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .. import text as textmod
from ..errors import HiveMemError
from ..facade.database import Store
from ..facade.database import open as open_store
from ..providers.embed import DEFAULT_MODEL, MODELS, HashEmbedder, LocalEmbedder
from ..settings import Settings
from ..types import Query
from . import bench_models, bench_search
from .bench_report import (
    BenchReport,
    LatencyStats,
    ModelResult,
    SearchStats,
    SizeResult,
    environment,
    format_table,
)
from .bench_ryw import bench_read_your_writes

__all__ = [
    "BenchReport",
    "CorpusGenerator",
    "LatencyStats",
    "ModelResult",
    "SearchStats",
    "SizeResult",
    "Vocabulary",
    "format_table",
    "run_bench",
]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as work advances (e.g. to drive a bar)."""

DEFAULT_SEED = 20_260_101
LOAD_BATCH = 1_000  # episodes per add_episodes call while loading the corpus
EMBED_BATCH_MAX = 4_096  # the largest embed_batch_size: the bulk load's flush
_WARMUP = 20
_SCOPE = "bench"

# ----------------------------------------------------------------------------- vocabulary


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Frequent content words of everyday and work conversation, most frequent first; the
# generator's Zipf ranks start here and continue into the made-up tail.
_COMMON = _words("""
time work day people thing way meeting project plan week team call today tomorrow idea
problem question help email report data code issue change update note list file
morning night home office money price order client customer user task bug test release
deploy server database model budget goal result review design feature document version
family friend kid dog cat car trip flight hotel dinner lunch coffee book movie music game
doctor health job school class birthday weekend holiday party gift house room city
weather rain summer winter spring autumn month year hour minute phone message photo
think want need like make take go come see look use find give try ask feel start
leave call keep move pay buy send share fix build write read run check plan cook
good new great little big small long old different important early late bad quick
happy busy tired ready sure free fine nice hard easy best right wrong main next last
schedule deadline sprint ticket branch merge commit backlog roadmap launch customer
invoice contract vendor quote demo slide agenda minutes priority estimate risk
password account login config setting cluster node cache queue pipeline metric alert
dashboard latency error crash outage incident backup restore migration schema index
garden kitchen recipe pasta bread salad soup pizza wine beer tea breakfast market
gym run swim yoga bike hike walk beach park mountain lake river island museum concert
train bus taxi ticket passport visa luggage airport station map direction address
allergy medicine appointment dentist vitamin sleep stress headache exercise diet
""")

_FUNCTION = _words("""
the to and a of i it that you is in we for on was this with be have but so just
not are at my do can about if they me what all there one or like will would get from
as your he she his her our them then really also think know well yeah maybe because
when up out some more an been had how no which were by could should going any
""")

_NAMES = _words("""
Alice Bob Carol Dave Emma Frank Grace Hannah Ivan Julia Kevin Laura Mohamed Nina Omar
Priya Quentin Rosa Sam Tara Umar Vera Wei Xavier Yuki Zoe Aisha Bruno Chen Diego Elena
Fatima Goran Hiro Ingrid Jamal Kofi Lena Mateo Noor Olga Pablo Rahul Sofia Tomas Ursula
""")

_PLACES = _words("""
Paris London Berlin Tokyo Lisbon Madrid Rome Vienna Prague Oslo Dublin Chicago Boston
Seattle Denver Austin Toronto Montreal Sydney Melbourne Nairobi Lagos Cairo Mumbai
Bangalore Singapore Seoul Osaka Lima Bogota Santiago Amsterdam Zurich Warsaw Athens
""")

_OPENERS = (
    "I think",
    "Just so you know,",
    "Remember that",
    "{name} told me",
    "Yesterday in {place},",
    "Quick update:",
    "Honestly,",
    "Can you check whether",
    "Last week",
    "For the record,",
    "{name} and I agreed that",
    "Next time we are in {place},",
    "Note to self:",
    "So basically",
    "",
)
_QUESTION_OPENERS = (
    "What did {name} say about",
    "When did we talk about",
    "Do you remember",
    "Where was",
    "What do we know about",
    "Who mentioned",
    "How much was",
    "Why did we change",
    "Can you find",
    "What was decided about",
    "Did anyone mention",
    "",
)
_ROLES = ("user", "assistant")
_SYLLABLES = _words(
    "ka ri to mu sen dal vor pex lin qua zo bri tan mel os ur gra fen dor ix ly ve "
    "no sha kri pol tem rax ni wu jo bel cor dis fa gen hol kel mor nex pra sil tor vin"
)


@dataclass(frozen=True)
class Vocabulary:
    """Content words by rank (common words first, then a made-up tail) with cumulative
    weights for a Zipf–Mandelbrot law: rank ``r`` appears with probability proportional
    to ``1 / (r + offset) ** exponent``. The offset stands for the function words that
    hold the top ranks of real text (they are drawn separately). With the defaults the
    commonest content words are in 8–12% of turns and a question's terms together match
    ~10% of turns at the median, ~27% at p95 (LoCoMo's dialogue: "time" in 6.5%, its
    questions 6% and 14%): searches here are, if anything, heavier than on real talk."""

    words: tuple[str, ...]
    cum_weights: tuple[float, ...]
    head: int  # how many words count as "common" for question generation

    @classmethod
    def build(
        cls, seed: int, size: int = 30_000, exponent: float = 1.0, offset: float = 20.0
    ) -> Vocabulary:
        rng = random.Random(seed ^ 0x5EED)
        words = list(dict.fromkeys(_COMMON))
        seen = set(words) | set(_FUNCTION)
        while len(words) < size:
            made = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
            if made not in seen:
                seen.add(made)
                words.append(made)
        cum = itertools.accumulate(1.0 / (r + offset) ** exponent for r in range(1, size + 1))
        return cls(tuple(words), tuple(cum), head=min(300, size))


class CorpusGenerator:
    """Deterministic conversational text: episodes (as ``add_episodes`` items) and
    questions, both drawn from one ``Vocabulary`` and one seed."""

    def __init__(self, seed: int = DEFAULT_SEED, vocabulary: Vocabulary | None = None) -> None:
        self.seed = seed
        self.vocab = vocabulary or Vocabulary.build(seed)
        self._function_cum = tuple(
            itertools.accumulate(1.0 / r for r in range(1, len(_FUNCTION) + 1))
        )
        self._head_set = frozenset(self.vocab.words[: self.vocab.head])

    def _content(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.vocab.words, cum_weights=self.vocab.cum_weights, k=k)

    def sentence(self, rng: random.Random) -> str:
        """One turn of 10–40 words: an opener, then content and function words mixed
        about half and half, with the odd name, place or number."""
        length = rng.randint(10, 40)
        opener = rng.choice(_OPENERS).format(name=rng.choice(_NAMES), place=rng.choice(_PLACES))
        words = opener.split()
        content = self._content(rng, length)
        function = rng.choices(_FUNCTION, cum_weights=self._function_cum, k=length)
        for i in range(max(0, length - len(words))):
            roll = rng.random()
            if roll < 0.45:
                words.append(function[i])
            elif roll < 0.50:
                words.append(rng.choice(_NAMES))
            elif roll < 0.53:
                words.append(rng.choice(_PLACES))
            elif roll < 0.57:
                words.append(str(rng.choice((rng.randint(2, 31), rng.randint(10, 5000)))))
            else:
                words.append(content[i])
            if roll > 0.97 and i < length - 2:
                words[-1] += ","
        text = " ".join(words)
        return text[0].upper() + text[1:] + rng.choice(".....!?")

    def episodes(self, count: int, start: int = 0) -> Iterator[dict[str, Any]]:
        """``count`` turns as ``add_episodes`` items, numbered from ``start``: sessions of
        about 20 turns, roles alternating, event times a minute apart. Lazy."""
        rng = random.Random(f"{self.seed}:episodes:{start}")
        epoch = datetime(2025, 1, 1, tzinfo=UTC)
        session, left, turn = start // 20, 0, 0
        for n in range(start, start + count):
            if left == 0:
                session += 1
                left, turn = rng.randint(8, 32), 0
            yield {
                "content": self.sentence(rng),
                "session_id": f"s{session:07d}",
                "role": _ROLES[turn % 2],
                "event_time": epoch + timedelta(minutes=n),
            }
            left -= 1
            turn += 1

    def questions(self, count: int) -> list[str]:
        """``count`` natural-language questions of 2–8 content words plus question and
        function words: a third only common words, a third with one or two rare ones, a
        third naming a person, place or number."""
        rng = random.Random(f"{self.seed}:questions")
        head = self.vocab.head
        out = []
        for n in range(count):
            k = rng.randint(2, 8)
            common = [w for w in self._content(rng, 4 * k) if w in self._head_set][:k]
            while len(common) < k:
                common.append(self.vocab.words[rng.randrange(head)])
            mix = n % 3
            if mix == 1:
                for i in range(rng.randint(1, min(2, k))):
                    rank = _rare_rank(rng, head, len(self.vocab.words))
                    common[i] = self.vocab.words[rank]
                rng.shuffle(common)
            elif mix == 2:
                common[0] = rng.choice((*_PLACES, *_NAMES))
                if k > 2 and rng.random() < 0.5:
                    common[1] = str(rng.randint(2, 500))
            opener = rng.choice(_QUESTION_OPENERS).format(name=rng.choice(_NAMES))
            glue = rng.choice((" and ", " ", " with the ", " in the ", " for "))
            body = " the " + " ".join(common[: k // 2]) + glue + " ".join(common[k // 2 :])
            question = (opener + body).strip() + "?"
            out.append(question[0].upper() + question[1:])
        return out


def _rare_rank(rng: random.Random, head: int, size: int) -> int:
    """A tail rank, log-uniform between ``head`` and ``size``: rare words that still
    occur in big corpora, and some that occur nowhere."""
    return min(size - 1, int(math.exp(rng.uniform(math.log(head), math.log(size)))))


# ----------------------------------------------------------------------------- running

VECTOR_DIMENSION = 384  # the default model's (LocalEmbedder.DIMENSION): same KNN cost


def run_bench(
    sizes: Sequence[int] = (10_000, 100_000),
    queries: int = 200,
    writes: int = 2000,
    batch: int = 100,
    path: str | Path | None = None,
    progress: Progress | None = None,
    *,
    seed: int = DEFAULT_SEED,
    settings: Settings | None = None,
    model: bool = True,
    model_sentences: int = 1000,
    model_queries: int = 100,
    bulk_load: bool = False,
    embedders: Sequence[str] = (),
    embed_api_key: str | None = None,
) -> BenchReport:
    """Benchmark a fresh store per size in ``sizes`` (see the module docstring).

    ``path`` is a folder for the database files (kept, one per size, named
    ``bench-<size>.db``; an existing file of that name is replaced); by default a
    temporary folder that is removed afterwards. ``writes`` single-episode writes and
    about as many batched ones (``writes // batch`` batches, at least one) are measured
    after the load, so the store holds a little more than ``size`` memories by the time
    ``queries`` searches per mode run. ``settings`` apply to every handle (the
    ``embedder`` setting aside: the bench chooses its embedders). With ``model`` the real
    embedding model is measured once, on ``model_sentences`` corpus turns and
    ``model_queries`` questions. ``progress`` gets ``(stage, done, total)`` as work
    advances.

    ``bulk_load`` loads each corpus once instead of twice (see ``_load_bulk``): the
    set-up of a large size takes half the time or less; what is timed afterwards is the
    same, on a store holding the same rows, keyword index and vectors.

    ``embedders``: names the ``embedder`` setting takes (``local-mpnet``, ``onnx``,
    ``openai`` …), each made with its ``embed_*`` settings from ``settings``
    (``embed_api_key`` for ``openai``) and timed like the bundled models, with or without
    ``model``; one that cannot be timed is one line in ``embedder_failures``
    (``hivemem.evaluation.bench_models``).
    """
    names = bench_models.check_names(embedders)
    counts = (
        ("queries", queries),
        ("writes", writes),
        ("batch", batch),
        ("model_sentences", model_sentences),
        ("model_queries", model_queries),
    )
    for name, value in counts:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
        raise ValueError(f"sizes must be whole numbers >= 1, got {sizes!r}")
    # The measured corpus stays what was loaded: no background consolidation of its
    # sessions (it would add facts and compete for the write lock mid-measurement).
    settings = (settings or Settings()).replace(consolidate_on_session_switch=False)
    notify = progress or _quiet
    generator = CorpusGenerator(seed)
    # The model first: a missing model fails the run before minutes of loading.
    models = (
        tuple(
            _bench_model(generator, model_sentences, model_queries, settings, notify, model=name)
            for name in bundled_models()
        )
        if model
        else ()
    )
    named, failures = (
        bench_models.time_named(
            names,
            list(generator.episodes(model_sentences)),
            generator.questions(model_queries),
            settings,
            notify,
            embed_api_key,
        )
        if names
        else ((), ())
    )
    ryw = bench_read_your_writes(generator, settings, notify) if model else None
    model_result = models[0] if models else None
    questions = generator.questions(queries + _WARMUP)  # the last ones only warm up
    results = []
    with tempfile.TemporaryDirectory(prefix="hivemem-bench-") as scratch:
        folder = Path(scratch) if path is None else Path(path).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        for size in sizes:
            results.append(
                _bench_one(
                    folder, size, generator, questions, writes, batch, settings, notify, bulk_load
                )
            )
    return BenchReport(
        results=tuple(results),
        model=model_result,
        read_your_writes=ryw,
        models=models,
        embedders=named,
        embedder_failures=failures,
        vector_embedder=HashEmbedder(VECTOR_DIMENSION).identity,
        queries=queries,
        writes=writes,
        batch=batch,
        seed=seed,
        bulk_load=bulk_load,
        settings_changed=_settings_changed(settings),
        environment=environment(),
    )


def _quiet(stage: str, done: int, total: int) -> None:
    return None


def _settings_changed(settings: Settings) -> dict[str, Any]:
    defaults = Settings()
    fixed = {"embedder", "consolidate_on_session_switch"}  # set by the bench itself
    return {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(Settings)
        if f.name not in fixed and getattr(settings, f.name) != getattr(defaults, f.name)
    }


def _open_with_vectors(db: Path, settings: Settings) -> Store:
    store = open_store(db, settings=settings, embedder=HashEmbedder(VECTOR_DIMENSION))
    if not store.indexer.enabled:
        reason = store.indexer.disabled
        store.close()
        raise HiveMemError(f"hivemem bench measures the vector lane, which is off: {reason}")
    return store


def _bench_one(
    folder: Path,
    size: int,
    generator: CorpusGenerator,
    questions: Sequence[str],
    writes: int,
    batch: int,
    settings: Settings,
    notify: Progress,
    bulk_load: bool = False,
) -> SizeResult:
    db = folder / f"bench-{size}.db"
    _remove(db)
    if bulk_load:
        plain, load = _load_bulk(db, size, generator, settings, notify)
    else:
        plain = _load_keyword_only(folder, size, generator, settings, notify)
        load = _load(db, size, generator, settings, notify)

    # Measured on the reopened store (see the module docstring): the close above runs
    # PRAGMA optimize, which leaves the planner statistics a store in use has.
    store = _open_with_vectors(db, settings)
    keyword_store: Store | None = None
    try:
        mem = store.scope(_SCOPE)
        single, batched = _time_writes(mem, generator, size, writes, batch, "", notify)
        store.flush()  # the worker is idle from here: the keyword-only writes meet none
        keyword_store = open_store(db, settings=settings, embedder="none")
        written = size + _WARMUP + writes + len(batched) * batch
        plain_single, plain_batched = _time_writes(
            keyword_store.scope(_SCOPE), generator, written, writes, batch, " keyword only", notify
        )
        store.flush()  # the searches meet an index holding every vector
        measured, warmup = questions[:-_WARMUP], questions[-_WARMUP:]
        keyword_mem = keyword_store.scope(_SCOPE)
        keyword = _time_calls(
            "search keyword only",
            lambda q: len(keyword_mem.search(q, limit=10)),
            measured,
            warmup,
            notify,
        )
        hybrid = _time_calls(
            "search hybrid", lambda q: len(mem.search(q, limit=10)), measured, warmup, notify
        )
        lane = _time_vector_lane(store, settings, measured, warmup, notify)
        cost = bench_search.measure(lambda q: mem.search(q, limit=10), store, measured)
    finally:
        if keyword_store is not None:
            keyword_store.close()
        store.close()
    batches = len(batched)
    total_memories = size + 2 * (_WARMUP + writes + batches * batch)
    db_bytes = _file_bytes(db)
    load_s, flush_s = load["load_ns"] / 1e9, load["flush_ns"] / 1e9
    return SizeResult(
        size=size,
        load_seconds=round(load_s, 3),
        load_episodes_per_s=_rate(size, load_s),
        keyword_only_load_seconds=round(plain["load_ns"] / 1e9, 3),
        keyword_only_load_episodes_per_s=_rate(size, plain["load_ns"] / 1e9),
        keyword_only_db_bytes=plain["db_bytes"],
        vectors_embedded_during_load=load["before_flush"],
        vector_flush_seconds=round(flush_s, 3),
        vectors_embedded_during_flush=load["vectors"] - load["before_flush"],
        vector_indexing_per_s=_rate(load["vectors"] - load["before_flush"], flush_s),
        load_incl_vectors_seconds=round(load_s + flush_s, 3),
        load_incl_vectors_episodes_per_s=_rate(size, load_s + flush_s),
        vectors=load["vectors"],
        add_episode=LatencyStats.of(single),
        add_episodes_batch=LatencyStats.of(batched),
        batch_size=batch,
        add_episodes_per_episode_ms=sum(batched) / (batches * batch) / 1e6,
        add_episode_keyword_only=LatencyStats.of(plain_single),
        add_episodes_batch_keyword_only=LatencyStats.of(plain_batched),
        search_keyword_only=keyword,
        search_hybrid=hybrid,
        vector_lane=lane,
        search_cost=cost,
        db_bytes=db_bytes,
        bytes_per_memory=round(db_bytes / total_memories, 1),
    )


def _file_bytes(db: Path) -> int:
    return sum(
        os.path.getsize(f"{db}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{db}{suffix}")
    )


def _remove(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-embed"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _load_keyword_only(
    folder: Path, size: int, generator: CorpusGenerator, settings: Settings, notify: Progress
) -> dict[str, int]:
    """The same load into a store without an embedder (the plain-FTS figures): its
    time and its file size after close; the file is removed."""
    db = folder / f"bench-{size}-keyword-only.db"
    _remove(db)
    load_ns = _add_corpus_to(db, size, generator, settings, notify)
    db_bytes = _file_bytes(db)
    _remove(db)
    return {"load_ns": load_ns, "db_bytes": db_bytes}


def _add_corpus_to(
    db: Path, size: int, generator: CorpusGenerator, settings: Settings, notify: Progress
) -> int:
    """The corpus into a store without an embedder at ``db``, closed after; the time in
    ns (the close, which writes the planner statistics, excluded)."""
    store = open_store(db, settings=settings, embedder="none")
    try:
        return _add_corpus(store, size, generator, f"load {size:,} keyword only", notify)
    finally:
        store.close()


def _add_corpus(
    store: Store, size: int, generator: CorpusGenerator, stage: str, notify: Progress
) -> int:
    """``size`` corpus turns by ``add_episodes`` of ``LOAD_BATCH``; the time in ns."""
    mem = store.scope(_SCOPE)
    notify(stage, 0, size)
    items = generator.episodes(size)
    started = time.perf_counter_ns()
    done = 0
    while done < size:
        chunk = list(itertools.islice(items, min(LOAD_BATCH, size - done)))
        mem.add_episodes(chunk)
        done += len(chunk)
        notify(stage, done, size)
    return time.perf_counter_ns() - started


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def _load(
    db: Path, size: int, generator: CorpusGenerator, settings: Settings, notify: Progress
) -> dict[str, int]:
    """Load the corpus with the worker embedding beside it, then flush the rest.
    Returns the load and flush times (ns) and the vector counts before and after the
    flush: the split tells what the worker did during the load, whichever thread
    embedded during the flush."""
    store = _open_with_vectors(db, settings)
    try:
        load_ns = _add_corpus(store, size, generator, f"load {size:,}", notify)
        vectors = store.vectors
        before_flush = vectors.count()
        pending = vectors.pending_count()
        stage = f"vectors {size:,}"
        notify(stage, 0, pending)
        started = time.perf_counter_ns()
        store.flush()
        flush_ns = time.perf_counter_ns() - started
        notify(stage, pending, pending)
        return {
            "load_ns": load_ns,
            "flush_ns": flush_ns,
            "before_flush": before_flush,
            "vectors": vectors.count(),
        }
    finally:
        store.close()


def _load_bulk(
    db: Path, size: int, generator: CorpusGenerator, settings: Settings, notify: Progress
) -> tuple[dict[str, int], dict[str, int]]:
    """The set-up of ``bulk_load``: one load instead of two. The corpus goes into the
    bench's file through ``add_episodes`` on a store without an embedder (the keyword-only
    figures: its load time, and the file's size after close). Every chunk was queued for
    its vector in the same transaction, as every write queues it; the file is then
    reopened with the hash embedder, the background worker off, and ``flush()`` embeds
    the whole queue in batches of the largest ``embed_batch_size`` (the vector indexing
    figures) — what opening a store with a new embedder does. The rows, keyword index and
    vectors are those of the other load; no vector is embedded during the load."""
    load_ns = _add_corpus_to(db, size, generator, settings, notify)
    db_bytes = _file_bytes(db)
    bulk = settings.replace(embed_in_background=False, embed_batch_size=EMBED_BATCH_MAX)
    store = _open_with_vectors(db, bulk)
    try:
        vectors = store.vectors
        pending = vectors.pending_count()
        stage = f"vectors {size:,}"
        notify(stage, 0, pending)
        started = time.perf_counter_ns()
        store.flush(lambda done, total: notify(stage, done, total))
        flush_ns = time.perf_counter_ns() - started
        notify(stage, pending, pending)
        load = {"load_ns": load_ns, "flush_ns": flush_ns, "before_flush": 0}
        load["vectors"] = vectors.count()
    finally:
        store.close()
    return {"load_ns": load_ns, "db_bytes": db_bytes}, load


def _time_writes(
    mem: Any,
    generator: CorpusGenerator,
    start: int,
    writes: int,
    batch: int,
    label: str,
    notify: Progress,
) -> tuple[list[int], list[int]]:
    """Single and batched writes (ns each), after a warm-up; new turns numbered on from
    ``start``."""
    batches = max(1, writes // batch)
    fresh = generator.episodes(writes + _WARMUP + batches * batch, start)
    for item in itertools.islice(fresh, _WARMUP):
        mem.add_episode(item["content"], item["session_id"], item["role"])
    single = []
    for n, item in enumerate(itertools.islice(fresh, writes), start=1):
        content, session_id, role = item["content"], item["session_id"], item["role"]
        t0 = time.perf_counter_ns()
        mem.add_episode(content, session_id, role)
        single.append(time.perf_counter_ns() - t0)
        if n % 100 == 0 or n == writes:
            notify(f"add_episode{label}", n, writes)
    batched = []
    for n in range(1, batches + 1):
        items_batch = list(itertools.islice(fresh, batch))
        t0 = time.perf_counter_ns()
        mem.add_episodes(items_batch)
        batched.append(time.perf_counter_ns() - t0)
        notify(f"add_episodes{label}", n, batches)
    return single, batched


def _time_calls(
    stage: str,
    call: Callable[[Any], int],
    measured: Sequence[Any],
    warmup: Sequence[Any],
    notify: Progress,
) -> SearchStats:
    """``call(item)`` (returning how many results) over ``warmup``, then timed over
    ``measured``."""
    for item in warmup:
        call(item)
    timings, counts = [], []
    for n, item in enumerate(measured, start=1):
        t0 = time.perf_counter_ns()
        counts.append(call(item))
        timings.append(time.perf_counter_ns() - t0)
        if n % 20 == 0 or n == len(measured):
            notify(stage, n, len(measured))
    return SearchStats.of(timings, counts)


def _time_vector_lane(
    store: Store,
    settings: Settings,
    measured: Sequence[str],
    warmup: Sequence[str],
    notify: Progress,
) -> SearchStats:
    """The vector index's search as the pipeline calls it (same fetch and pool), the
    query vectors computed beforehand. A question whose vector is empty (no content
    word) is left out, as the pipeline leaves the lane out for it."""
    indexer, index = store.indexer, store.vectors
    assert indexer.identity is not None
    identity = indexer.identity
    fetch = 10 * settings.candidate_multiplier
    now = store.clock()

    def prepare(questions: Sequence[str]) -> list[tuple[Query, Any]]:
        prepared = [
            (Query(text=q, limit=10), indexer.embed_query(textmod.query_focus(q)))
            for q in questions
        ]
        return [(query, vector) for query, vector in prepared if vector is not None]

    def call(item: tuple[Query, Any]) -> int:
        query, vector = item
        return len(
            index.search([_SCOPE], vector, query, fetch, now, identity, settings.vector_pool)
        )

    return _time_calls("vector lane", call, prepare(measured), prepare(warmup), notify)


def bundled_models() -> list[str]:
    """The bundled models, the default first."""
    return [DEFAULT_MODEL, *sorted(set(MODELS) - {DEFAULT_MODEL})]


def _bench_model(
    generator: CorpusGenerator,
    sentences: int,
    queries: int,
    settings: Settings,
    notify: Progress,
    *,
    model: str = DEFAULT_MODEL,
) -> ModelResult:
    """A bundled model (``LocalEmbedder``), timed as ``bench_models.time_embedder``
    does: a cold first call, corpus turns in batches of ``embed_batch_size`` (as the
    worker sends them), single questions, and the same turns ingested with embeddings
    (add_episodes into a fresh store, then flush: memories stored and embedded per
    second)."""
    return bench_models.time_embedder(
        LocalEmbedder(model=model),
        list(generator.episodes(sentences)),
        generator.questions(queries),
        settings,
        notify,
    )
