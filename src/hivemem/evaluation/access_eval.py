"""Does counting searches as accesses let a ranking reinforce itself? (``hivemem eval
access``, the measurement behind the ``access_counts`` setting.)

A suite is stored as ``hivemem eval all`` stores it (or its kept store is copied, never
changed). Every question is then searched twice in a row, the second pass after the
first pass's accesses were written: with ``access_counts=search`` each hit of the first
pass carries an access boost into the second (up to ``max_access_boost``), with ``get``
nothing a search returns is counted. The hit rates of both passes, side by side, say
what the self-reinforcement costs or gains on questions asked again.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..facade.database import open as open_store
from ..settings import Settings
from .locomo import text_table
from .suites import (
    Progress,
    Suite,
    _store_folder,
    _Tally,
    kept_store,
)

MODES = ("get", "search")


@dataclass(frozen=True)
class AccessReport:
    suite: str
    metrics: tuple[str, ...]
    questions: int
    rates: dict[str, dict[str, dict[str, float]]]  # mode -> pass -> metric -> rate
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "questions": self.questions,
            "rates": self.rates,
            "seconds": round(self.seconds, 1),
        }


def run_access_suite(
    suite: Suite,
    settings: Settings | None = None,
    *,
    progress: Progress | None = None,
    keep: Path | None = None,
) -> AccessReport:
    """Both passes under each of ``MODES``, each on a fresh copy of the suite's store."""
    base = settings or Settings()
    notify = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    rates: dict[str, dict[str, dict[str, float]]] = {}
    count = 0
    with _store_folder(keep) as folder:
        db, labels, _ = kept_store(folder, suite, base.replace(track_access=False), notify)
        for mode in MODES:
            with tempfile.TemporaryDirectory(prefix="hivemem-access-") as scratch:
                copy = Path(scratch) / db.name
                with open_store(db, settings=base.replace(track_access=False)) as store:
                    store.flush_access()  # nothing queued; closing checkpoints the WAL
                for part in (db, *db.parent.glob(db.name + "-*")):
                    shutil.copy2(part, Path(scratch) / part.name)
                counted = base.replace(track_access=True, access_counts=mode)
                rates[mode] = {}
                with open_store(copy, settings=counted) as store:
                    for number in (1, 2):
                        overall = _Tally(suite.metrics)
                        for unit in suite.units:
                            mem = store.scope(unit.scope)
                            for item in unit.items:
                                hits = mem.search(item.text, limit=suite.limit)
                                ranked = [
                                    labels[h.memory.id] for h in hits if h.memory.id in labels
                                ]
                                if item.headline:
                                    overall.add(ranked, item)
                        store.flush_access()
                        rates[mode][f"pass {number}"] = {
                            m: round(v, 4) for m, v in overall.rates().items()
                        }
                        count = overall.count
                        notify(f"{suite.name}: access {mode}", number, 2)
    return AccessReport(suite.name, suite.metrics, count, rates, time.perf_counter() - started)


def format_access(report: AccessReport) -> str:
    rows: list[tuple[str, ...]] = [("access_counts", "pass", *report.metrics)]
    for mode, passes in report.rates.items():
        for name, values in passes.items():
            rows.append((mode, name, *[f"{values[m]:.3f}" for m in report.metrics]))
    lines = [
        f"{report.suite}: every question searched twice, {report.questions} questions "
        "(the second pass after the first pass's accesses)"
    ]
    lines += text_table(rows)
    lines.append(f"{report.seconds:.0f} s")
    return "\n".join(lines)
