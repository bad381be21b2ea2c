"""The keyword lane's two SQL plans (rank on the index, then filter; or all in one
statement) give the same chunks, scores and order, whatever the scopes and filters."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

import hivemem
from hivemem import text as textmod
from hivemem.bench import CorpusGenerator
from hivemem.store.sqlite import SQLiteBackend
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
    backend = store.backend
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
