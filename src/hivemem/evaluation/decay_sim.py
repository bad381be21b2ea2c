"""A year of use, simulated: what each confidence-decay configuration prunes and what a
search still finds (``hivemem eval decay``; the measurement behind the ``decay_*``
defaults, docs/maintenance.md).

The workload (deterministic for a seed): every day ``facts_per_day`` new facts, each
named by two made-up words no other fact uses, so a search for those words has exactly
one right answer. Each fact has a usage pattern drawn at creation:

- ``core`` (10 %): searched once a week for the rest of the year — knowledge in use;
- ``burst`` (30 %): searched on days 1, 3, 7 and 14 after it was made, then never —
  a task's context;
- ``once`` (60 %): never searched again — most of what an agent writes.

Searches go through ``ScopedMemory.search``, so they bump access counts and times as in
real use. The ``decay`` job runs every ``decay_every`` days (the result depends only on
the time of the run, not on how often it ran; pruning is only as late as the interval).
At the end of the year the store is reopened without access tracking and every fact is
searched once: ``kept`` is the share still active (not pruned), ``found`` the share in
the top 5 of its own search — per pattern, and for facts made in the last 30 days.
Keyword search only (no embedder): model quality is not what is measured.
"""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..facade.database import open as open_store
from ..lifecycle.maintenance import run_job
from ..settings import Settings
from ..types import Kind

PATTERNS = (("core", 0.1), ("burst", 0.3), ("once", 0.6))
BURST_DAYS = (1, 3, 7, 14)


@dataclass(frozen=True, slots=True)
class Profile:
    """One decay configuration, as settings."""

    name: str
    formula: str
    rate: float
    decay_from: str
    exponent: float = 0.8
    note: str = ""

    def settings(self, base: Settings) -> Settings:
        return base.replace(
            decay_formula=self.formula,
            default_decay_rate=self.rate,
            decay_from=self.decay_from,
            decay_exponent=self.exponent,
        )


PROFILES = (
    Profile("exp-0.01-created", "exponential", 0.01, "created", note="HiveMem's former default"),
    Profile("exp-0.1-access", "exponential", 0.1, "last_access", note="assistant seed"),
    Profile("power-0.1-created", "power", 0.1, "created", note="ADR 005's formula"),
    Profile("power-0.1-access", "power", 0.1, "last_access", note="ADR formula, from access"),
    Profile("exp-0.01-access", "exponential", 0.01, "last_access", note="HiveMem's default"),
    Profile("exp-0.02-access", "exponential", 0.02, "last_access"),
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one profile left after the simulated year."""

    profile: str
    note: str
    facts: int
    pruned: int
    kept: dict[str, float] = field(default_factory=dict)  # share still active, by pattern
    found: dict[str, float] = field(default_factory=dict)  # share found in its top 5
    recent_found: float = 0.0  # facts made in the last 30 days, found in their top 5

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)
        return self.now


def _word(rng: random.Random) -> str:
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    return "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(3)) + "x"


def simulate(
    profiles: tuple[Profile, ...] = PROFILES,
    *,
    days: int = 365,
    facts_per_day: int = 3,
    decay_every: int = 7,
    seed: int = 7,
    settings: Settings | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[Outcome]:
    """Run the workload once per profile, each in a fresh temporary store."""
    base = (settings or Settings()).replace(
        consolidate_on_session_switch=False, decay_prune_below=Settings().decay_prune_below
    )
    return [
        _one(p, days, facts_per_day, decay_every, seed, p.settings(base), progress)
        for p in profiles
    ]


def _one(
    profile: Profile,
    days: int,
    per_day: int,
    every: int,
    seed: int,
    settings: Settings,
    progress: Callable[[str, int, int], None] | None,
) -> Outcome:
    rng = random.Random(seed)
    clock = _Clock(datetime(2025, 1, 1, 9, 0, tzinfo=UTC))
    facts: list[tuple[str, str, str, int]] = []  # (id, query, pattern, day made)
    searches: dict[int, list[int]] = {}  # day -> indexes of facts searched that day
    used: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="hivemem-decay-") as folder:
        path = Path(folder) / "decay.db"
        with open_store(path, settings=settings, clock=clock, embedder="none") as store:
            mem = store.scope("sim")
            for day in range(days):
                clock.now = datetime(2025, 1, 1, 9, 0, tzinfo=UTC) + timedelta(days=day)
                for _ in range(per_day):
                    first, second = _word(rng), _word(rng)
                    while first in used or second in used:
                        first, second = _word(rng), _word(rng)
                    used.update((first, second))
                    pattern = rng.choices([p for p, _ in PATTERNS], [w for _, w in PATTERNS])[0]
                    made = mem.save(
                        f"{first.title()} {second} is the codename of work item {len(facts)}",
                        kind=Kind.FACT,
                    )
                    index = len(facts)
                    facts.append((made.id, f"{first} {second}", pattern, day))
                    later = (
                        range(day + 7, days, 7)
                        if pattern == "core"
                        else [day + d for d in BURST_DAYS]
                        if pattern == "burst"
                        else []
                    )
                    for when in later:
                        searches.setdefault(when, []).append(index)
                for index in searches.pop(day, []):
                    mem.search(facts[index][1], limit=5)
                if day % every == every - 1:
                    run_job(store, "decay", "sim", trigger="simulation")
                if progress is not None:
                    progress(profile.name, day + 1, days)
            clock.now = datetime(2025, 1, 1, 9, 0, tzinfo=UTC) + timedelta(days=days)
            run_job(store, "decay", "sim", trigger="simulation")
        quiet = settings.replace(track_access=False)
        with open_store(path, settings=quiet, clock=clock, embedder="none") as store:
            mem = store.scope("sim")
            total: Counter[str] = Counter()
            kept: Counter[str] = Counter()
            found: Counter[str] = Counter()
            recent = recent_found = 0
            for memory_id, query, pattern, day in facts:
                total[pattern] += 1
                alive = mem.get(memory_id).status.value == "active"
                kept[pattern] += alive
                hit = alive and memory_id in [h.memory.id for h in mem.search(query, limit=5)]
                found[pattern] += hit
                if day >= days - 30:
                    recent += 1
                    recent_found += hit
    pruned = sum(total.values()) - sum(kept.values())
    return Outcome(
        profile=profile.name,
        note=profile.note,
        facts=len(facts),
        pruned=pruned,
        kept={p: round(kept[p] / total[p], 3) if total[p] else 0.0 for p, _ in PATTERNS},
        found={p: round(found[p] / total[p], 3) if total[p] else 0.0 for p, _ in PATTERNS},
        recent_found=round(recent_found / recent, 3) if recent else 0.0,
    )


def format_table(outcomes: list[Outcome]) -> str:
    """The outcomes as a markdown table (the one in docs/maintenance.md)."""
    lines = [
        "| profile | facts | pruned | core kept / found | burst kept | once kept "
        "| last 30 d found |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        name = f"{o.profile} ({o.note})" if o.note else o.profile
        lines.append(
            f"| {name} | {o.facts} | {o.pruned / o.facts:.0%} "
            f"| {o.kept['core']:.0%} / {o.found['core']:.0%} | {o.kept['burst']:.0%} "
            f"| {o.kept['once']:.0%} | {o.recent_found:.0%} |"
        )
    return "\n".join(lines)
