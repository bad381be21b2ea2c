"""The keyword lane's two SQL plans (rank on the index, then filter; or all in one
statement) give the same chunks, scores and order, whatever the scopes and filters."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

import hivemem
from hivemem import text as textmod
from hivemem.evaluation.bench import CorpusGenerator
from hivemem.store.sqlite.backend import SQLiteBackend
from hivemem.types import Query, Status


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    generator = CorpusGenerator(seed=3)
    items = generator.episodes(1_400)
    s = hivemem.open(tmp_path_factory.mktemp("plans") / "memory.db")
    for name, count in (("big", 1_000), ("small", 300), ("tiny", 100)):
        s.scope(name).add_episodes(list(itertools.islice(items, count)))
    tiny = s.scope("tiny")
    for i, item in enumerate(itertools.islice(items, 40)):
        memory = tiny.save(item["content"], key=f"k{i % 10}", supersede_reason="newer")
        if i % 7 == 0:
            tiny.delete(memory.id)
    yield s
    s.close()


QUERIES = [
    Query(text="x"),
    Query(text="x", statuses=(Status.ACTIVE,)),
    Query(text="x", sessions=("s0000003", "s0000010")),
    Query(text="x", tags=("t",)),
    Query(text="x", limit=3),
]


@pytest.mark.parametrize("scopes", [("big",), ("tiny",), ("tiny", "small"), ("small", "big")])
def test_both_plans_agree(store, monkeypatch, scopes):
    backend = store._backend
    now = store.clock()
    questions = CorpusGenerator(seed=3).questions(25)
    for question, template in itertools.product(questions, QUERIES):
        query = dataclasses.replace(template, text=question)
        terms = textmod.query_terms(question)
        limit = query.limit * 3
        fast = backend.keyword_search(scopes, query, terms, limit, now)
        with monkeypatch.context() as patch:
            patch.setattr(SQLiteBackend, "_rank_then_filter", lambda *a: None)
            one_statement = backend.keyword_search(scopes, query, terms, limit, now)
        assert fast == one_statement, (scopes, question, template)
        assert all(backend.get(scopes, m.memory_id) is not None for m in fast)


def test_terms_past_the_budget_are_searched_newest_first_and_still_ranked(tmp_path, clock):
    settings = hivemem.Settings(
        keyword_match_budget=3, window_weight=0, session_weight=0, neighbour_weight=0
    )
    with hivemem.open(tmp_path / "n.db", clock=clock, settings=settings, embedder="none") as s:
        mem = s.scope("a")
        old = [mem.save(f"the weekly report number {i}") for i in range(100)]
        both = mem.save("the weekly report on the budget")
        mem.save("another weekly note")
        backend, now = s.keyword, clock()
        query = Query(text="weekly", limit=10)
        found = backend.keyword_search(["a"], query, ["weekly"], 10, now, newest_first=True)
        assert len(found) == 10
        # the best 10 by BM25 among the newest 4 x 10 matches: none of the 62 older ones
        older = {m.id for m in old[:62]}
        assert not {m.memory_id for m in found} & older
        assert [m.bm25 for m in found] == sorted((m.bm25 for m in found), reverse=True)
        ranked = backend.keyword_search(["a"], query, ["weekly"], 10, now)
        assert [m.bm25 for m in ranked][0] >= [m.bm25 for m in found][0]
        hits = mem.search("weekly report budget")  # 'weekly' and 'report' exceed the budget
        assert hits[0].memory.id == both.id
