"""The examples run: examples/agent_loop.py wires the ContextProvider into a chat loop."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import hivemem

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def agent_loop(monkeypatch):
    spec = importlib.util.spec_from_file_location("agent_loop", EXAMPLES / "agent_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "agent_loop", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def test_agent_loop_remembers_across_sessions(agent_loop, db_path, capsys):
    turns = agent_loop.main([str(db_path)], model=agent_loop.fake_model, embedder="hash")
    first, second, later = turns
    assert (first.session_id, later.session_id) == ("monday", "thursday")
    # every turn's system message: the instructions, then the memory block
    for turn in turns:
        assert turn.system.startswith(agent_loop.INSTRUCTIONS + "\n\n## Memory\n")
        assert "- **who**: You are Ada, the release assistant of the payments team." in turn.system
    # what turn 1 said is in the system prompt of a turn in a NEW session, dated
    assert first.user not in first.system and first.user not in second.system
    assert f"user: {first.user}" in later.system
    assert "Relevant from earlier sessions" in later.system
    assert later.reply.startswith("From an earlier conversation I remember:")
    assert later.system in capsys.readouterr().out
    # and every turn was recorded as an episode
    with hivemem.open(db_path, embedder="hash") as store:
        mem = store.scope("payments-assistant")
        episodes = mem.list(kind="episode")
        assert len(episodes) == 2 * len(turns)
        assert {m.session_id for m in episodes} == {"monday", "thursday"}


def test_agent_loop_is_repeatable_on_the_same_store(agent_loop, db_path):
    agent_loop.main([str(db_path)], model=agent_loop.fake_model, embedder="hash")
    again = agent_loop.main([str(db_path)], model=agent_loop.fake_model, embedder="hash")
    assert again[0].system.count("You are Ada") == 1  # the identity save was a no-op
