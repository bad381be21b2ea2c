"""The memory block for the next prompt, and the provider an agent loop calls."""

from __future__ import annotations

import logging
import sys
import types

import pytest

import hivemem
from hivemem.lifecycle import context as contextmod
from hivemem.lifecycle.context import ContextProvider, build_context, estimate_tokens


@pytest.fixture
def store(db_path, clock):
    """The conftest store without consolidation on session switch: these tests decide
    which memories exist (background facts and summaries would join the block)."""
    s = hivemem.open(
        db_path,
        clock=clock,
        embedder="hash",
        settings=hivemem.Settings(consolidate_on_session_switch=False),
    )
    yield s
    s.close()


def words(text: str) -> int:
    """An injected counter: whitespace-separated words (exact and easy to reason about)."""
    return len(text.split())


def bullets(block: str, section: str) -> list[str]:
    """The bullet lines under ``### section`` of a block."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"### {section}"))
    out = []
    for line in lines[start + 1 :]:
        if line.startswith("### "):
            break
        if line.startswith("- "):
            out.append(line)
    return out


def test_context_orders_pinned_then_relevant_then_reflection(mem, clock):
    mem.save("You are Ada, the release assistant", type="identity")
    mem.save("Never deploy on Fridays", type="lesson", key="fridays")
    mem.save("We use Postgres 16", type="decision")
    mem.save("Sprint 12 focuses on search", type="context")
    mem.add_episode("The Berlin office moved to Kreuzberg", session_id="old", role="user")
    clock.advance(days=3)
    mem.add_episode("Berlin weather is grey today", session_id="now", role="user")
    mem.save("This week we shipped search", kind="reflection", type="historical")
    block = mem.context("What about the Berlin office?", session_id="now")
    assert block.startswith("## Memory\n")
    assert block.index("Identity") < block.index("Lessons") < block.index("Decisions")
    assert block.index("Decisions") < block.index("Current context")
    assert block.index("Current context") < block.index("Relevant from earlier sessions")
    assert block.index("Relevant from earlier sessions") < block.index("Latest reflection")
    assert "- **fridays**: Never deploy on Fridays" in block
    # an earlier session's turn: dated, with its speaker
    assert "- [2026-01-01] user: The Berlin office moved to Kreuzberg" in block
    assert "grey today" not in block  # the current session is excluded
    assert block.rstrip().endswith("This week we shipped search")  # the reflection is last


def test_decisions_and_context_are_newest_first(mem, clock):
    for i in range(3):
        mem.save(f"decision {i}", type="decision")
        mem.save(f"context {i}", type="context")
        clock.advance(hours=1)
    block = mem.context()
    assert bullets(block, "Decisions") == ["- decision 2", "- decision 1", "- decision 0"]
    assert bullets(block, "Current context") == ["- context 2", "- context 1", "- context 0"]


def test_identity_is_never_dropped_by_the_budget(mem, caplog):
    mem.save("You are Ada", type="identity")
    for i in range(5):
        mem.save(f"lesson number {i}", type="lesson")
    with caplog.at_level(logging.WARNING, logger="hivemem.lifecycle.context"):
        block = mem.context(max_entries=3)
    assert "You are Ada" in block
    assert sum("lesson number" in line for line in block.splitlines()) == 2
    assert "budget" in caplog.text
    assert len(mem.search("lesson number")) == 5  # over budget, still searchable


def test_identity_alone_over_the_token_budget_is_kept_with_a_warning(mem, caplog):
    mem.save("You are Ada, " + "very " * 40 + "careful", type="identity")
    mem.save("a lesson that cannot fit", type="lesson")
    with caplog.at_level(logging.WARNING, logger="hivemem.lifecycle.context"):
        block = mem.context(max_tokens=10)
    assert "You are Ada" in block
    assert "lesson" not in block
    assert "identity is never dropped" in caplog.text


def test_overflow_follows_priority_and_left_out_memories_stay_typed_and_searchable(mem, clock):
    mem.save("lesson alpha", type="lesson")
    clock.advance(hours=1)
    for i in range(3):
        mem.save(f"decision {i}", type="decision")
        clock.advance(hours=1)
    mem.save("context beta", type="context")
    block = mem.context(max_entries=3)
    # lessons first, then the newest decisions; the oldest decision and all context go
    assert bullets(block, "Lessons") == ["- lesson alpha"]
    assert bullets(block, "Decisions") == ["- decision 2", "- decision 1"]
    assert "decision 0" not in block
    assert "Current context" not in block
    left_out = mem.search("context beta")[0].memory
    assert left_out.content == "context beta"
    assert left_out.type is hivemem.MemoryType.CONTEXT


def test_token_budget_is_respected_with_an_injected_counter(mem, clock):
    mem.save("You are Ada", type="identity")
    for i in range(20):
        mem.save(f"lesson {i} about deploys and the reasons for them", type="lesson")
        clock.advance(minutes=1)
    mem.add_episode("deploys used to fail on Fridays", session_id="old", role="user")
    for budget in (8, 19, 20, 37, 60, 200):  # 8: the identity section alone
        block = build_context(mem, query="deploys", max_tokens=budget, count_tokens=words)
        assert words(block) <= budget, budget
        assert "You are Ada" in block
    # the budget is the whole block: headings count, so 20 words hold fewer bullets
    small = build_context(mem, max_tokens=20, count_tokens=words)
    # "## Memory" + identity section = 8 words, "### Lessons" + one 10-word bullet = 12
    assert small.count("\n- ") == 2


def test_token_budget_is_respected_with_the_default_counter(mem, clock):
    mem.save("You are Ada, the release assistant of team A", type="identity")
    for i in range(30):
        mem.save(f"Lesson {i}: run the migration checks before release {i * 7}", type="lesson")
        clock.advance(minutes=1)
    count = contextmod.default_token_counter()
    for budget in (30, 64, 100, 250):
        block = mem.context(max_tokens=budget)
        assert count(block) <= budget
        assert "You are Ada" in block
    unlimited = mem.context()
    assert count(unlimited) > 250
    assert unlimited.count("\n- ") == 31


def test_eighty_percent_of_the_budget_logs_a_warning(mem, caplog):
    for i in range(4):
        mem.save(f"lesson {i}", type="lesson")
    with caplog.at_level(logging.WARNING, logger="hivemem.lifecycle.context"):
        mem.context(max_entries=10)
    assert caplog.records == []  # 40%: quiet
    with caplog.at_level(logging.WARNING, logger="hivemem.lifecycle.context"):
        block = mem.context(max_entries=5)
    assert block.count("\n- ") == 4  # 80%: all shown, but warned
    assert "80% used by pinned memories" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hivemem.lifecycle.context"):
        build_context(mem, max_tokens=200, count_tokens=words)  # 4 entries, 14 words: quiet
        assert caplog.records == []
        build_context(mem, max_tokens=16, count_tokens=words)
    assert "tokens" in caplog.text


def test_relevant_section_excludes_current_session_pinned_and_inactive(mem, clock):
    mem.save("The Berlin office is in Kreuzberg", type="context", key="office")
    mem.add_episode("We met in the Berlin office on Monday", session_id="s1", role="user")
    for _ in range(2):  # the same text twice: one line
        mem.add_episode("The Berlin office, noted.", session_id="s1", role="assistant")
    old = mem.save("The Berlin office has a rooftop", type="historical", key="roof")
    mem.save(
        "The Berlin office has a garden", type="historical", key="roof", supersede_reason="moved"
    )
    gone = mem.save("The Berlin office had a piano", type="historical")
    mem.delete(gone.id)
    clock.advance(days=2)
    mem.add_episode("Is the Berlin office open today?", session_id="s2", role="user")
    block = mem.context("Berlin office", session_id="s2")
    relevant = bullets(block, "Relevant from earlier sessions")
    text = "\n".join(relevant)
    assert "Monday" in text and "garden" in text
    assert text.count("The Berlin office, noted.") == 1
    assert "Kreuzberg" not in text  # already pinned
    assert old.content not in block and "piano" not in block  # superseded, deleted
    assert "open today" not in block  # the current session
    assert all(line.startswith("- [2026-01-01]") for line in relevant)


def test_relevant_section_is_capped(mem):
    for i in range(30):
        mem.add_episode(f"the deploy number {i} went fine", session_id=f"s{i}", role="user")
    block = build_context(mem, query="deploy", max_relevant=4)
    assert len(bullets(block, "Relevant from earlier sessions")) == 4
    assert "Relevant" not in build_context(mem, query="deploy", max_relevant=0)


def test_latest_reflection_only(mem, clock):
    mem.save("first reflection", kind="reflection", type="historical")
    clock.advance(days=7)
    mem.save("second reflection", kind="reflection", type="historical")
    block = mem.context()
    assert "second reflection" in block and "first reflection" not in block
    assert "### Latest reflection (2026-01-08)" in block


def test_empty_store_gives_empty_block(mem):
    assert mem.context("anything") == ""
    assert mem.context("anything", max_tokens=1) == ""
    mem.add_episode("only a turn of this session", session_id="now", role="user")
    assert mem.context("turn", session_id="now") == ""


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("max_entries", {"max_entries": 0}),
        ("max_entries", {"max_entries": True}),
        ("max_entries", {"max_entries": "50"}),
        ("max_tokens", {"max_tokens": 0}),
        ("max_tokens", {"max_tokens": -5}),
        ("max_tokens", {"max_tokens": 2.5}),
        ("query", {"query": 42}),
        ("session_id", {"session_id": ["s1"]}),
    ],
)
def test_bad_budget_names_the_field(mem, field, kwargs):
    with pytest.raises(hivemem.InvalidInput) as err:
        mem.context(**kwargs)
    assert err.value.field == field
    if field.startswith("max_"):
        with pytest.raises(hivemem.InvalidInput) as err:
            ContextProvider(mem, **kwargs)
        assert err.value.field == field


# ----------------------------------------------------------------------------- provider


def test_provider_gives_the_block_and_a_system_message(mem, clock):
    mem.save("You are Ada", type="identity")
    mem.add_episode("My cat is called Miso", session_id="s1", role="user")
    clock.advance(days=1)
    provider = ContextProvider(mem, max_entries=10, max_tokens=500)
    assert provider("cat", session_id="s2") == mem.context("cat", "s2", 10, 500)
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": [{"type": "text", "text": "what is my cat called?"}]},
    ]
    messages = provider.messages(history, session_id="s2", instructions="You help Sam.")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    system = messages[0]["content"]
    assert system.startswith("You help Sam.\n\nBe brief.\n\n## Memory\n")
    assert "Miso" in system  # found through the last user message
    assert messages[1:] == history[1:]
    assert provider.system_message() == {"role": "system", "content": mem.context().strip()}


def test_provider_constructor_is_cheap(store, monkeypatch):
    monkeypatch.setattr(contextmod, "build_context", None)  # any use would fail
    provider = ContextProvider(store.scope("new"), 5)
    assert repr(provider) == "<hivemem.ContextProvider 'new' max_entries=5 max_tokens=None>"


# ----------------------------------------------------------------------------- counters


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens("Never deploy on Fridays.") == 5
    assert estimate_tokens("internationalisation") == 3  # 20 letters: 1 + 20 // 8
    assert estimate_tokens("release 2026") == 3  # digits: 1 per 3 characters
    assert estimate_tokens("我们使用") == 4  # one per CJK character
    assert estimate_tokens("<|endoftext|>") == 6  # < | endoftext(2) | >


class _FakeEncoding:
    name = "fake_base"

    def encode(self, text, disallowed_special=None):
        assert disallowed_special == ()
        return list(text)


def _fake_tiktoken(monkeypatch, get_encoding):
    """A stand-in for the tiktoken package, at the network edge it must never cross."""
    package = types.ModuleType("tiktoken")
    load = types.ModuleType("tiktoken.load")
    fetched = []

    def read_file(blobpath):
        fetched.append(blobpath)
        return b""

    load.read_file = read_file
    package.load = load
    package.get_encoding = lambda name: get_encoding(load, name)
    monkeypatch.setitem(sys.modules, "tiktoken", package)
    monkeypatch.setitem(sys.modules, "tiktoken.load", load)
    return load, fetched


def test_tiktoken_is_used_when_its_encoding_is_on_disk(monkeypatch):
    def get_encoding(load, name):
        load.read_file("/cache/" + name)  # a local read is allowed
        return _FakeEncoding()

    load, fetched = _fake_tiktoken(monkeypatch, get_encoding)
    counter = contextmod._offline_tiktoken()
    assert counter is not None and counter("abc") == 3
    assert fetched == ["/cache/o200k_base"]
    assert load.read_file.__name__ == "read_file"  # restored


def test_tiktoken_never_downloads(monkeypatch):
    def get_encoding(load, name):
        return load.read_file(f"https://openaipublic.blob.core.windows.net/encodings/{name}")

    load, fetched = _fake_tiktoken(monkeypatch, get_encoding)
    assert contextmod._offline_tiktoken() is None
    assert fetched == []
    assert load.read_file.__name__ == "read_file"


def test_without_tiktoken_the_default_is_the_estimate(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import fails
    assert contextmod._offline_tiktoken() is None
    contextmod.default_token_counter.cache_clear()
    try:
        assert contextmod.default_token_counter() is estimate_tokens
    finally:
        contextmod.default_token_counter.cache_clear()
