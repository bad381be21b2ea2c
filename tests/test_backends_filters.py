"""Filters mean the same on both backends (issue #13: the category filter was ignored by
the PostgreSQL store, which returned every category)."""

from __future__ import annotations


def test_the_category_filter_keeps_only_that_category(any_mem):
    code = any_mem.save("the parser module of the heron project", category="code")
    person = any_mem.save("Anna leads the heron project", category="person")
    hits = any_mem.search("heron project", category="code")
    assert [h.memory.id for h in hits] == [code.id]
    both = any_mem.search("heron project", category=["code", "person"])
    assert {h.memory.id for h in both} == {code.id, person.id}


def test_stats_say_when_the_latest_memory_came_and_consolidation_last_ran(any_store):
    """The counts are the same statements on both backends (the PostgreSQL store had
    no ``latest_record_at`` nor ``last_consolidation_at``)."""
    import hivemem

    mem = any_store.scope("team-a")
    assert mem.stats()["latest_record_at"] is None
    mem.add_episode("we moved the deploy to Tuesday", "s1", "user")
    latest = mem.stats()["latest_record_at"]
    assert latest is not None and mem.stats()["last_consolidation_at"] is None
    hivemem.run_job(any_store, "consolidate", "team-a")
    stats = mem.stats()
    assert stats["last_consolidation_at"] is not None
    assert stats["sessions"] == 1 and stats["total"] >= 1
