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
