"""tests/repeats.py: a test_backends_* module beside its source module adds only its
PostgreSQL runs; each run it leaves out is one its source module makes (the plugin
deselects a run only when its twin's node id is collected)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_backends_module_beside_its_source_keeps_only_its_postgresql_runs():
    # test_http: tests on db_path (parametrized by backend), tests without a backend, and
    # a schemathesis test (a wrapper whose __module__ is the plugin's)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"),
            *("tests/test_http.py", "tests/test_backends_http.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    nodes = [line for line in done.stdout.splitlines() if "::" in line]
    source = [n for n in nodes if n.startswith("tests/test_http.py::")]
    kept = [n for n in nodes if n.startswith("tests/test_backends_http.py::")]
    assert kept and all(re.search(r"(\[|-)postgres(\]|-)", n) for n in kept), kept
    # each source test has exactly one repeat there (its SQLite run or its only run)
    counted = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", done.stdout)
    assert counted, done.stdout[-500:]
    assert int(counted[3]) == len(source) and int(counted[2]) == 2 * len(source) + len(kept)
    assert any("fuzz" in n for n in source)
    assert not any("fuzz" in n for n in kept)
