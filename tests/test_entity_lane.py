"""Entities on the write path, ``mem.entity``, aliases, and the entity lane."""

from __future__ import annotations

import pytest

import hivemem
from hivemem import InvalidInput, NotFound, Settings


def test_mentions_become_entities_with_counts_and_links(mem):
    first = mem.add_episode("Caroline went to the LGBTQ support group", session_id="s", role="c")
    second = mem.save("Caroline paints sunsets; mail caroline@example.com")
    mem.save("Nothing named here")
    entity, memories = mem.entity("caroline")
    assert (entity.name, entity.canonical, entity.type) == ("Caroline", "caroline", "person")
    assert entity.mention_count == 2
    assert [m.id for m in memories] == [second.id, first.id]  # newest first
    email, linked = mem.entity("caroline@example.com")
    assert email.type == "email" and [m.id for m in linked] == [second.id]


def test_an_at_mention_joins_the_person_of_the_same_name(mem):
    mem.save("Alice owns the billing service")
    note = mem.save("ask @alice before touching billing")
    entity, memories = mem.entity("Alice")
    assert entity.type == "person" and entity.mention_count == 2
    assert note.id in {m.id for m in memories}


def test_aliases_reach_the_same_entity_from_writes_and_queries(tmp_path, clock):
    settings = Settings(keyword_weight=0.5, entity_weight=0.5)
    with hivemem.open(tmp_path / "e.db", clock=clock, settings=settings, embedder="none") as s:
        mem = s.scope("a")
        painted = mem.save("Melanie painted a sunrise over the lake")
        mem.save("The lake was cold this morning")
        with pytest.raises(NotFound):
            mem.entity("Mel")
        entity = mem.alias("Melanie", "Mel")
        assert entity.aliases == ("mel",)
        assert mem.entity("mel")[0].id == entity.id
        later = mem.save("Mel sold the sunrise painting")  # a new mention under the alias
        assert mem.entity("Melanie")[0].mention_count == 2
        hits = mem.search("what did mel do?")
        assert [h.memory.id for h in hits][:2] == [later.id, painted.id]
        assert hits[1].explain.lanes["entity"]["rank"] >= 1
        assert "keyword" not in hits[1].explain.lanes  # found through the alias alone
        full = s.entities.lookup(["a"], ["mel"])
        bare = s.entities.lookup(["a"], ["mel"], aliases=False)
        assert [e.aliases for e in full] == [("mel",)] and [e.aliases for e in bare] == [()]
        assert [(e.id, e.mention_count) for e in bare] == [(e.id, e.mention_count) for e in full]


def test_entities_are_isolated_by_scope(store):
    a, b = store.scope("a"), store.scope("b")
    a.save("Zoltan runs the night shift")
    with pytest.raises(NotFound):
        b.entity("Zoltan")
    with pytest.raises(NotFound):
        b.alias("Zoltan", "Zol")
    shared = store.scope("c", shared=["a"])
    assert shared.entity("zoltan")[0].scope == "a"


def test_deleted_memories_leave_the_entity_view(mem):
    gone = mem.save("Priya fixed the flaky test")
    kept = mem.save("Priya reviews on Fridays")
    mem.delete(gone.id)
    assert [m.id for m in mem.entity("Priya")[1]] == [kept.id]


def test_bad_entity_names_are_clear_errors(mem):
    mem.save("Olga wrote this")
    for bad in ("", "   ", None):
        with pytest.raises(InvalidInput):
            mem.entity(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        mem.alias("Olga", "!!!")
