"""The reliability suite (docs/reliability.md): every test in this folder carries the
``reliability`` mark, so ``make reliability`` (``pytest -m reliability`` with
``HIVEMEM_RELIABILITY_LONG=1``) runs exactly these, in their long form; ``make test`` runs
them in their fast form. The summary prints what the fuzzers tried."""

from __future__ import annotations

from pathlib import Path

import pytest

from .hostile import EXAMPLES, LONG, TALLY

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.reliability)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    if not TALLY:
        return
    form = "long" if LONG else "fast"
    terminalreporter.section(f"reliability fuzz ({form} form, {EXAMPLES} examples per test)")
    for surface, outcomes in sorted(TALLY.items()):
        shown = ", ".join(f"{name} {n}" for name, n in outcomes.most_common())
        terminalreporter.write_line(f"{surface}: {sum(outcomes.values())} calls ({shown})")
    failed = [
        r.nodeid for r in terminalreporter.stats.get("failed", []) if "/test_fuzz_" in r.nodeid
    ]
    terminalreporter.write_line(f"unexpected exceptions (failed fuzz tests): {len(failed)}")
