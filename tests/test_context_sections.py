"""Issue #22: every section of the context block earns its place. Facts saved with
remember_fact (type context, pinned) never crowd out the relevance section; the
relevance section shows only hits above its floor; the latest reflection never repeats
what the block already holds; each seed's recipe (``profile``)."""

from __future__ import annotations

import pytest

import hivemem
from hivemem import InvalidInput
from hivemem.write import facts

TOPICS = [
    "I work at Acme as an engineer",
    "My favourite colour is green",
    "I drink tea every morning",
    "My sister lives in Lyon",
    "I play the piano on weekends",
    "The payments API runs on Postgres 16",
    "We deploy on Tuesdays after the review",
    "I am allergic to peanuts",
    "My laptop is a ThinkPad",
    "I moved to Berlin in 2023",
]


@pytest.fixture
def real(db_path, clock):
    """The bundled model: the floor is about what real scores mean."""
    store = hivemem.open(
        db_path,
        clock=clock,
        embedder="local",
        settings=hivemem.Settings(consolidate_on_session_switch=False),
    )
    yield store.scope("me")
    store.close()


def _sixty_one_facts(mem, clock) -> None:
    facts.remember(mem, "My cat is called Miso")  # the oldest: the last to be pinned
    for i in range(60):
        clock.advance(minutes=1)
        facts.remember(mem, f"{TOPICS[i % 10]} (note {i})")
    mem.store.flush()


def _section(block: str, title: str) -> list[str]:
    lines, out, inside = block.splitlines(), [], False
    for line in lines:
        if line.startswith("### "):
            inside = line.startswith(f"### {title}")
            continue
        if inside and line.strip():
            out.append(line)
    return out


def test_sixty_one_facts_never_crowd_out_the_relevant_one(real, clock):
    _sixty_one_facts(real, clock)
    assert real.search("What is my cat called?")[0].memory.content == "My cat is called Miso"
    block = real.context("What is my cat called?")
    assert "My cat is called Miso" in block
    assert any("Miso" in line for line in _section(block, "Relevant from earlier sessions"))
    # within the budget: 50 entries in all, the pinned ones gave way
    assert sum(line.startswith("- ") for line in block.splitlines()) <= 50
    tight = real.context("What is my cat called?", max_tokens=300)
    assert "Miso" in tight


def test_the_relevance_section_takes_only_hits_above_its_floor(real, clock):
    real.add_episode("I moved to Berlin last spring", session_id="s0", role="user")
    real.add_episode("I am allergic to peanuts", session_id="s1", role="user")
    real.add_episode(
        "The deploy of the payments API failed on Friday", session_id="s2", role="user"
    )
    real.store.flush()
    block = real.context("How did the deploy of the payments API go?", session_id="now")
    relevant = _section(block, "Relevant from earlier sessions")
    assert relevant == ["- [2026-01-01] user: The deploy of the payments API failed on Friday"]
    # nothing about a cat: no memory shares a word and none is near in meaning, so the
    # search is silent (the model's match floor) and the block has no relevance section
    assert real.search("What is my cat called?") == []
    assert real.context("What is my cat called?", session_id="now") == ""
    # without the match floor the search finds the least unrelated turn, scored below
    # the block's floor; that floor is the search's min_score: 0 shows it
    real.settings = real.settings.replace(match_floor=0.0)
    [hit] = real.search("What is my cat called?")
    assert hit.score < 0.05 and "peanuts" in hit.memory.content
    assert real.context("What is my cat called?", session_id="now") == ""
    assert "peanuts" in real.context("What is my cat called?", session_id="now", min_score=0.0)


def test_the_reflection_never_repeats_what_the_block_holds(mem, clock):
    for text in ("We deploy on Tuesdays", "Sam runs the payments API", "Postgres 16 is our DB"):
        mem.save(text, type="context")
    clock.advance(days=1)
    [run] = hivemem.run_job(mem.store, "reflect", mem.name)
    assert run.status == "ok", run
    reflection = mem.list(kind="reflection")[0]
    assert "We deploy on Tuesdays" in reflection.content  # the extractive digest lists them
    block = mem.context()
    assert block.count("We deploy on Tuesdays") == 1
    assert block.count("Sam runs the payments API") == 1
    # a reflection with words of its own keeps them
    clock.advance(days=7)
    mem.save("Deploys went smoothly; keep Tuesdays.\n- We deploy on Tuesdays", kind="reflection")
    block = mem.context()
    assert "Deploys went smoothly" in block and block.count("We deploy on Tuesdays") == 1


def test_profiles_pick_a_seeds_recipe(mem, clock):
    mem.save("You are Ada", type="identity")
    mem.save("The deploy runbook lives in the wiki", type="reference")
    mem.add_episode("the deploy runbook was updated", session_id="s1", role="user")
    mem.save("Weekly: deploys were calm", kind="reflection", type="historical")
    query = "deploy runbook"
    openhive = mem.context(query, profile="openhive")
    assert "You are Ada" in openhive and "runbook" not in openhive and "calm" not in openhive
    assistant = mem.context(query, profile="assistant")
    assert "You are Ada" not in assistant and "calm" in assistant
    assert "wiki" in assistant and "was updated" not in assistant  # facts only
    swarm = mem.context(query, profile="swarm")
    assert "### Relevant Past Knowledge" in swarm and "calm" not in swarm
    assert "You are Ada" in mem.context(query, profile="corvid")
    with pytest.raises(InvalidInput) as err:
        mem.context(query, profile="nope")
    assert err.value.field == "profile"
    with pytest.raises(InvalidInput) as err:
        mem.context(query, min_score=2)
    assert err.value.field == "min_score"


def test_the_store_profile_setting_picks_the_recipe(db_path, clock):
    store = hivemem.open(
        db_path, clock=clock, embedder="hash", settings=hivemem.Settings(profile="openhive")
    )
    mem = store.scope("team")
    mem.save("You are Ada", type="identity")
    mem.add_episode("the deploy runbook was updated", session_id="s1", role="user")
    assert "runbook" not in mem.context("deploy runbook")
    assert "runbook" in mem.context("deploy runbook", profile="hivemem")
    store.close()
