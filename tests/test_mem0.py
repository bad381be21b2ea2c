"""The Mem0-shaped adapter: the call shapes and result shapes Mem0 users rely on."""

from __future__ import annotations

import pytest

from hivemem import InvalidInput, NotFound
from hivemem.compat.mem0 import Memory


@pytest.fixture
def m0(store):
    return Memory(store)


def test_add_text_then_search_with_filters(m0):
    added = m0.add("I live in Berlin", user_id="alice", metadata={"channel": "chat"})
    [result] = added["results"]
    assert result["event"] == "ADD" and result["memory"] == "I live in Berlin"
    found = m0.search("where does she live? Berlin", filters={"user_id": "alice"}, top_k=5)
    [hit] = found["results"]
    assert hit["id"] == result["id"] and hit["memory"] == "I live in Berlin"
    assert hit["user_id"] == "alice" and hit["metadata"] == {"channel": "chat"}
    assert 0 < hit["score"] <= 1
    assert {"id", "memory", "score", "created_at", "updated_at", "metadata"} <= set(hit)


def test_users_are_isolated(m0):
    m0.add("I live in Berlin", user_id="alice")
    assert m0.search("Berlin", user_id="bob")["results"] == []
    assert m0.get_all(user_id="bob")["results"] == []


def test_exact_duplicate_is_reported_not_stored(m0):
    first = m0.add("Likes tea", user_id="u")["results"][0]
    second = m0.add("Likes  tea", user_id="u")["results"][0]
    assert second == {**first, "event": "NONE"}
    assert len(m0.get_all(user_id="u")["results"]) == 1


def test_messages_become_episodes_of_the_run(m0, store):
    out = m0.add(
        [{"role": "user", "content": "I love hiking"}, {"role": "assistant", "content": "Nice!"}],
        user_id="alice",
        agent_id="guide",
        run_id="run-1",
    )
    assert [r["event"] for r in out["results"]] == ["ADD", "ADD"]
    episodes = store.scope("user:alice").list(kind="episode")
    assert {(e.session_id, e.role) for e in episodes} == {("run-1", "user"), ("run-1", "assistant")}
    assert m0.search("hiking", user_id="alice", agent_id="guide")["results"][0]["agent_id"] == (
        "guide"
    )
    assert m0.search("hiking", user_id="alice", agent_id="other")["results"] == []


def test_update_keeps_the_old_id_usable_and_history_shows_the_chain(m0):
    mid = m0.add("I live in Berlin", user_id="alice")["results"][0]["id"]
    m0.update(mid, "I live in Munich")
    assert m0.get(mid)["memory"] == "I live in Munich"
    m0.delete(mid)
    events = [(h["event"], h["old_memory"], h["new_memory"]) for h in m0.history(mid)]
    assert events == [
        ("ADD", None, "I live in Berlin"),
        ("UPDATE", "I live in Berlin", "I live in Munich"),
        ("DELETE", "I live in Munich", None),
    ]
    assert m0.get_all(user_id="alice")["results"] == []


def test_delete_all_is_per_identity(m0):
    m0.add("a fact", user_id="alice")
    m0.add("b fact", user_id="bob")
    assert m0.delete_all(user_id="alice")["message"].startswith("1 ")
    assert m0.get_all(user_id="alice")["results"] == []
    assert len(m0.get_all(user_id="bob")["results"]) == 1


def test_an_identity_is_required_and_bad_input_is_clear(m0):
    with pytest.raises(InvalidInput, match="user_id, agent_id or run_id"):
        m0.add("orphan")
    with pytest.raises(InvalidInput):
        m0.add([{"role": "user"}], user_id="u")
    with pytest.raises(NotFound):
        m0.get("no-such-id")
    with pytest.raises(InvalidInput):
        m0.reset()
