"""docs/seeds.md, row by row, checked against the code (issue #22).

``tests/test_project_rules.py`` checks that every test docs/seeds.md cites exists; this
file checks what each row *says*: ``CLAIMS`` maps every row of the five seed tables and
of the issue #14 table to a check that runs the behaviour or reads the value the row
names (a default, a name, a formula, a message), so a row that says more than the code
fails here. A new row without a check fails ``test_every_row_of_docs_seeds_has_a_check``.

Rows marked ``CONTEXT`` are about what the ``context`` branch of issue #22 changes
(openhive and Agent Swarm defaults, the context block, access counting, scope names):
their checks hold on this branch's code and are for the lead to reconcile at merge; the
ones marked ``xfail(strict)`` hold the seed's contract that the context branch makes
true, so they turn into failures (XPASS) that say "remove the mark" once it lands.
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import seeds_claims_more  # noqa: F401 - registers the corvid, swarm, ADR 005, #14 checks
from hivemem.frontends.cli import main
from hivemem.lifecycle.maintenance import ORDER
from seeds_claims import CLAIMS, Check, Ctx, doc_rows

# ------------------------------------------------------------------------------- tests


def _key(check: Check) -> str:
    """The test id: ``context:`` first where the row is the context branch's (see above)."""
    return f"{'context: ' if check.context else ''}{check.section}: {check.rule}"


def test_every_row_of_docs_seeds_has_a_check():
    """Each row of the five seed tables and the issue #14 table has a check here (its
    first cell starts with the check's rule), and each check has its row."""
    rows = doc_rows()
    assert len(rows) >= 140
    unchecked = [
        f"{s}: {r}"
        for s, r, _ in rows
        if not any(c.section == s and r.startswith(c.rule) for c in CLAIMS)
    ]
    assert unchecked == []
    orphans = [
        _key(c)
        for c in CLAIMS
        if not any(s == c.section and r.startswith(c.rule) for s, r, _ in rows)
    ]
    assert orphans == []


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=c.xfail)) if c.xfail else c
        for c in CLAIMS
    ],
    ids=[_key(c)[:70] for c in CLAIMS],
)
def test_the_row_holds(check, tmp_path):
    ctx = Ctx(tmp_path)
    try:
        check.run(ctx)
    finally:
        for store in ctx.opened:
            store.close()


def test_maintain_help_names_every_job():
    """Issue #22: ``maintain --help`` left out the ``resolve`` job."""
    text = " ".join(CliRunner().invoke(main, ["maintain", "--help"]).output.split())
    listed = re.search(r"JOB is one of ([\w ,]+);", text)
    assert listed is not None
    assert [j.strip() for j in listed[1].split(",")] == list(ORDER)
