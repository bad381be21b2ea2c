"""Latency and throughput of a real store at 10k–1M memories (``hivemem bench``).

For each corpus size N the bench creates a store on a real file, loads N generated
dialogue turns with ``add_episodes``, closes and reopens it (as a store in use is met:
a process that did not create it, the planner statistics in place), then measures what
an agent waits for:

- ``add_episode``: one turn per call, its own transaction (the hot path; DESIGN §2
  targets well under 1 ms);
- ``add_episodes``: batches of ``batch`` turns, per batch and per episode;
- ``search``: ``mem.search(q, limit=10)`` over natural-language questions (the keyword
  lane, access tracking included, exactly as a caller gets it);
- the file size and the load throughput.

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
import platform
import random
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .database import open as open_store

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as work advances (e.g. to drive a bar)."""

DEFAULT_SEED = 20_260_101
LOAD_BATCH = 1_000  # episodes per add_episodes call while loading the corpus
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


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class LatencyStats:
    """Latency of ``count`` timed calls, in milliseconds (nearest-rank percentiles)."""

    count: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, samples_ns: Sequence[int]) -> LatencyStats:
        if not samples_ns:
            return cls(0, 0.0, 0.0, 0.0, 0.0, 0.0)
        ordered = sorted(samples_ns)

        def pct(p: float) -> float:
            index = max(0, math.ceil(p / 100 * len(ordered)) - 1)
            return ordered[index] / 1e6

        return cls(
            count=len(ordered),
            mean_ms=sum(ordered) / len(ordered) / 1e6,
            p50_ms=pct(50),
            p95_ms=pct(95),
            p99_ms=pct(99),
            max_ms=ordered[-1] / 1e6,
        )


@dataclass(frozen=True)
class SizeResult:
    """Everything measured on one store of ``size`` loaded episodes."""

    size: int
    load_seconds: float
    load_episodes_per_s: float
    add_episode: LatencyStats  # one call, one transaction
    add_episodes_batch: LatencyStats  # one call of ``batch_size`` episodes
    batch_size: int
    add_episodes_per_episode_ms: float  # total batched time / episodes
    search: LatencyStats  # mem.search(q, limit=10)
    search_mean_hits: float
    search_empty: int  # questions that found nothing
    db_bytes: int  # the database file after close (WAL checkpointed)
    bytes_per_memory: float


@dataclass(frozen=True)
class BenchReport:
    """The results per corpus size, with what is needed to compare runs."""

    results: tuple[SizeResult, ...]
    queries: int
    writes: int
    batch: int
    seed: int
    environment: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (``hivemem bench --json``): dicts, lists, numbers, text."""
        data = dataclasses.asdict(self)
        data["results"] = list(data["results"])
        return data


# ----------------------------------------------------------------------------- running


def run_bench(
    sizes: Sequence[int] = (10_000, 100_000),
    queries: int = 200,
    writes: int = 2000,
    batch: int = 100,
    path: str | Path | None = None,
    progress: Progress | None = None,
    *,
    seed: int = DEFAULT_SEED,
) -> BenchReport:
    """Benchmark a fresh store per size in ``sizes`` (see the module docstring).

    ``path`` is a folder for the database files (kept, one per size, named
    ``bench-<size>.db``; an existing file of that name is replaced); by default a
    temporary folder that is removed afterwards. ``writes`` single-episode writes and
    about as many batched ones (``writes // batch`` batches, at least one) are measured
    after the load, so the store holds a little more than ``size`` memories by the time
    ``queries`` searches run. ``progress`` gets ``(stage, done, total)`` as work
    advances.
    """
    for name, value in (("queries", queries), ("writes", writes), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
        raise ValueError(f"sizes must be whole numbers >= 1, got {sizes!r}")
    generator = CorpusGenerator(seed)
    questions = generator.questions(queries + _WARMUP)  # the last ones only warm up
    results = []
    if path is None:
        with tempfile.TemporaryDirectory(prefix="hivemem-bench-") as folder:
            for size in sizes:
                results.append(
                    _bench_one(Path(folder), size, generator, questions, writes, batch, progress)
                )
    else:
        folder = Path(path).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        for size in sizes:
            results.append(_bench_one(folder, size, generator, questions, writes, batch, progress))
    return BenchReport(
        results=tuple(results),
        queries=queries,
        writes=writes,
        batch=batch,
        seed=seed,
        environment=_environment(),
    )


def _bench_one(
    folder: Path,
    size: int,
    generator: CorpusGenerator,
    questions: Sequence[str],
    writes: int,
    batch: int,
    progress: Progress | None,
) -> SizeResult:
    db = folder / f"bench-{size}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    notify = progress or (lambda stage, done, total: None)
    store = open_store(db)
    try:
        mem = store.scope(_SCOPE)
        stage = f"load {size:,}"
        notify(stage, 0, size)
        items = generator.episodes(size)
        started = time.perf_counter_ns()
        done = 0
        while done < size:
            chunk = list(itertools.islice(items, min(LOAD_BATCH, size - done)))
            mem.add_episodes(chunk)
            done += len(chunk)
            notify(stage, done, size)
        load_ns = time.perf_counter_ns() - started
    finally:
        store.close()

    # Measured on the reopened store (see the module docstring): the close above runs
    # PRAGMA optimize, which leaves the planner statistics a store in use has.
    store = open_store(db)
    try:
        mem = store.scope(_SCOPE)
        fresh = generator.episodes(writes + _WARMUP + max(1, writes // batch) * batch, size)
        for item in itertools.islice(fresh, _WARMUP):
            mem.add_episode(item["content"], item["session_id"], item["role"])
        single = []
        stage = "add_episode"
        for n, item in enumerate(itertools.islice(fresh, writes), start=1):
            content, session_id, role = item["content"], item["session_id"], item["role"]
            t0 = time.perf_counter_ns()
            mem.add_episode(content, session_id, role)
            single.append(time.perf_counter_ns() - t0)
            if n % 100 == 0 or n == writes:
                notify(stage, n, writes)

        batches = max(1, writes // batch)
        batched = []
        stage = "add_episodes"
        for n in range(1, batches + 1):
            items_batch = list(itertools.islice(fresh, batch))
            t0 = time.perf_counter_ns()
            mem.add_episodes(items_batch)
            batched.append(time.perf_counter_ns() - t0)
            notify(stage, n, batches)

        measured, warmup = questions[:-_WARMUP], questions[-_WARMUP:]
        for question in warmup:
            mem.search(question, limit=10)
        timings, hit_counts = [], []
        stage = "search"
        for n, question in enumerate(measured, start=1):
            t0 = time.perf_counter_ns()
            hits = mem.search(question, limit=10)
            timings.append(time.perf_counter_ns() - t0)
            hit_counts.append(len(hits))
            if n % 20 == 0 or n == len(measured):
                notify(stage, n, len(measured))
        total_memories = size + _WARMUP + writes + batches * batch
    finally:
        store.close()
    db_bytes = sum(
        os.path.getsize(f"{db}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{db}{suffix}")
    )
    load_s = load_ns / 1e9
    return SizeResult(
        size=size,
        load_seconds=round(load_s, 3),
        load_episodes_per_s=round(size / load_s, 1) if load_s > 0 else 0.0,
        add_episode=LatencyStats.of(single),
        add_episodes_batch=LatencyStats.of(batched),
        batch_size=batch,
        add_episodes_per_episode_ms=sum(batched) / (batches * batch) / 1e6,
        search=LatencyStats.of(timings),
        search_mean_hits=sum(hit_counts) / len(hit_counts),
        search_empty=sum(1 for c in hit_counts if c == 0),
        db_bytes=db_bytes,
        bytes_per_memory=round(db_bytes / total_memories, 1),
    )


def _environment() -> dict[str, str]:
    from .store.sqlite import DRIVER_NAME, sqlite_driver

    return {
        "python": platform.python_version(),
        "sqlite": sqlite_driver.sqlite_version,
        "driver": DRIVER_NAME,
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "cpus": str(os.cpu_count() or 0),
    }


# ----------------------------------------------------------------------------- output


def format_table(report: BenchReport) -> str:
    """The report as a fixed-width text table, one column per corpus size."""
    results = report.results

    def ms(value: float) -> str:
        return f"{value:.3f}" if value < 10 else f"{value:.1f}"

    rows: list[tuple[str, list[str]]] = [
        ("memories loaded", [f"{r.size:,}" for r in results]),
        ("load throughput (episodes/s)", [f"{r.load_episodes_per_s:,.0f}" for r in results]),
        ("load time (s)", [f"{r.load_seconds:.1f}" for r in results]),
        ("add_episode p50 (ms)", [ms(r.add_episode.p50_ms) for r in results]),
        ("add_episode p95 (ms)", [ms(r.add_episode.p95_ms) for r in results]),
        ("add_episode p99 (ms)", [ms(r.add_episode.p99_ms) for r in results]),
        (
            f"add_episodes x{report.batch} p50 (ms)",
            [ms(r.add_episodes_batch.p50_ms) for r in results],
        ),
        (
            f"add_episodes x{report.batch} p95 (ms)",
            [ms(r.add_episodes_batch.p95_ms) for r in results],
        ),
        ("add_episodes per episode (ms)", [ms(r.add_episodes_per_episode_ms) for r in results]),
        ("search p50 (ms)", [ms(r.search.p50_ms) for r in results]),
        ("search p95 (ms)", [ms(r.search.p95_ms) for r in results]),
        ("search p99 (ms)", [ms(r.search.p99_ms) for r in results]),
        ("search mean hits", [f"{r.search_mean_hits:.1f}" for r in results]),
        ("searches with no hit", [str(r.search_empty) for r in results]),
        ("db file (MB)", [f"{r.db_bytes / 1e6:.1f}" for r in results]),
        ("bytes per memory", [f"{r.bytes_per_memory:,.0f}" for r in results]),
    ]
    header = ("", [f"N={r.size:,}" for r in results])
    label_width = max(len(label) for label, _ in [header, *rows])
    widths = [max(len(values[i]) for _, values in [header, *rows]) + 2 for i in range(len(results))]
    lines = [
        label.ljust(label_width) + "".join(f"{v:>{w}}" for v, w in zip(values, widths, strict=True))
        for label, values in [header, *rows]
    ]
    env = report.environment
    lines.append(
        f"\n{report.writes} single writes, {report.writes // report.batch or 1} batches of "
        f"{report.batch}, {report.queries} searches (limit 10); seed {report.seed}; "
        f"Python {env.get('python')}, SQLite {env.get('sqlite')} ({env.get('driver')}), "
        f"{env.get('cpus')} CPUs, {env.get('platform')}"
    )
    return "\n".join(lines)
