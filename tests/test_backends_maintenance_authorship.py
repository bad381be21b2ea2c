"""A maintenance job that changes a derived number (decay's confidence, the confidence a
contradiction lowers) writes neither a version nor an author (issue #25, item 3): found
on main, after `hivemem --scope agent-1 maintain` the active version of `deploy-rule`
read `updated_by maintenance:decay`, and the inspector's timeline "soft supersede · by
maintenance:decay · why: minor correction". Who wrote the text stays visible in
``history``, the inspector's detail and exports. Both backends."""

from __future__ import annotations

import io
import json

import pytest

from hivemem import run_job
from hivemem.lifecycle import inspection
from hivemem.lifecycle.portability import export_jsonl


def authorship(mem, key):
    return [(m.id, m.status.value, m.updated_by, m.updated_at) for m in mem.history(key)]


def exported_authors(store) -> dict[str, str]:
    out = io.StringIO()
    export_jsonl(store, out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    return {r["id"]: r["updated_by"] for r in rows if "updated_by" in r}


def test_decay_keeps_the_texts_author_and_makes_no_version(any_store, clock):
    alice = any_store.scope("agent-1", actor="alice")
    bob = any_store.scope("agent-1", actor="bob")
    alice.save("Never deploy on Fridays", key="deploy-rule", kind="fact")
    bob.correct(alice.get("deploy-rule").id, "Never deploy on a Friday", minor=True)
    before = authorship(alice, "deploy-rule")
    assert [row[1:3] for row in before] == [("superseded", "bob"), ("active", "bob")]
    exported_before = exported_authors(any_store)
    clock.advance(days=40)

    [result] = run_job(any_store, "decay", scope="agent-1")
    assert result.counts["decayed"] == 1  # the number did change

    assert authorship(alice, "deploy-rule") == before  # same versions, authors, times
    current = alice.get("deploy-rule")
    assert current.confidence < 1.0 and current.updated_by == "bob"
    chain = inspection.detail(alice, current.id).chain
    assert [(m.updated_by, m.supersede_reason) for m in chain] == [
        ("bob", None),  # who superseded it (set_status), as before the run
        ("bob", "minor correction"),
    ]
    assert exported_authors(any_store) == exported_before


def test_a_first_decay_pass_that_changes_nothing_writes_no_author(any_store):
    mem = any_store.scope("agent-1", actor="alice")
    mem.save("Never deploy on Fridays", key="deploy-rule", kind="fact")
    run_job(any_store, "decay", scope="agent-1")
    assert mem.get("deploy-rule").updated_by == "alice"


def test_a_contradiction_lowers_confidence_but_keeps_the_author(any_store, clock):
    mem = any_store.scope("team-a", actor="carol")
    old = mem.save("Alice lives in Berlin", kind="fact")
    mem.add_episodes(
        [{"content": "Alice moved to Munich last month.", "session_id": "s-new", "role": "user"}]
    )
    clock.advance(hours=1)
    result = mem.consolidate(session_id="s-new")
    assert result.counts["conflicts"] == 1
    lowered = mem.get(old.id)
    assert lowered.confidence == pytest.approx(0.3)
    assert (lowered.updated_by, lowered.updated_at) == (old.updated_by, old.updated_at)
    assert lowered.updated_by == "carol"
