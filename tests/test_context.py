"""The memory block for the next prompt."""

from __future__ import annotations

import logging


def test_context_orders_pinned_then_relevant_then_reflection(mem):
    mem.save("You are Ada, the release assistant", type="identity")
    mem.save("Never deploy on Fridays", type="lesson", key="fridays")
    mem.save("We use Postgres 16", type="decision")
    mem.save("Sprint 12 focuses on search", type="context")
    mem.add_episode("The Berlin office moved to Kreuzberg", session_id="old", role="user")
    mem.add_episode("Berlin weather is grey today", session_id="now", role="user")
    mem.save("This week we shipped search", kind="reflection", type="historical")
    block = mem.context("What about the Berlin office?", session_id="now")
    assert block.index("Identity") < block.index("Lessons") < block.index("Decisions")
    assert block.index("Decisions") < block.index("Current context")
    assert block.index("Current context") < block.index("Relevant from earlier sessions")
    assert block.index("Relevant from earlier sessions") < block.index("Latest reflection")
    assert "**fridays**: Never deploy on Fridays" in block
    assert "Kreuzberg" in block
    assert "grey today" not in block  # the current session is excluded


def test_identity_is_never_dropped_by_the_budget(mem, caplog):
    mem.save("You are Ada", type="identity")
    for i in range(5):
        mem.save(f"lesson number {i}", type="lesson")
    with caplog.at_level(logging.WARNING, logger="hivemem.context"):
        block = mem.context(max_entries=3)
    assert "You are Ada" in block
    assert sum("lesson number" in line for line in block.splitlines()) == 2
    assert "budget" in caplog.text
    assert len(mem.search("lesson number")) == 5  # over budget, still searchable


def test_empty_store_gives_empty_block(mem):
    assert mem.context("anything") == ""
