"""`make demo` prints the same thing every time, and what it prints teaches the product:
what was saved, why each hit ranked, and the query behind the context block (issue 12,
item 2). It runs as `make demo` does: a fresh process with the bundled model."""

from __future__ import annotations

import os
import subprocess
import sys


def _demo() -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    done = subprocess.run(
        [sys.executable, "-m", "hivemem.frontends.demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    assert done.stderr == "", done.stderr
    return done.stdout


def test_demo_output_is_identical_in_two_runs_and_explains_itself():
    first, second = _demo(), _demo()
    assert first == second
    lines = first.splitlines()
    assert lines[0] == "store: a new file in a temporary folder (scope team-a)"
    assert "  + lesson deploy-lesson   Never deploy on Fridays" in lines
    assert any("supersedes the one above: CI is reliable now" in line for line in lines)
    top = lines.index("search: 'when can we deploy on Friday?'")
    hit = lines[top + 3]
    assert hit.startswith("  0.") and "Fridays included" in hit  # the newer belief wins
    assert lines[top + 4].strip().startswith("words 1.00 [deploy, friday]; meaning 0.")
    superseded = next(line for line in lines if line.endswith("[superseded]"))
    below = lines[lines.index(superseded) + 1]
    assert "superseded x0.50" in below
    assert (
        "context block for the next prompt (query 'Which office is in Berlin?', session s2):"
        in lines
    )
    assert "- **deploy-lesson**: We deploy every weekday, Fridays included, before 15:00" in lines
    assert "- [2026-03-02] user: Love it, the office is in Kreuzberg" in lines


def test_demo_docstring_names_the_model_it_uses():
    import hivemem.frontends.demo

    doc = hivemem.frontends.demo.__doc__ or ""
    assert "no model" not in doc and "bundled embedding model" in doc
