"""Every search has a bounded cost, opt-in FTS5 syntax included.

Found on main: ``search('deploy ' * 14_300, fts_syntax=True)`` and long random word
salads with ``fts_syntax=True`` ran past 5 s (minutes on a shared machine). An FTS5 query
now holds at most ``max_query_terms`` words (checked before SQLite sees it), and its
statements stop past ``fts_time_limit_ms``. The tests assert outcomes, not timings: a
limit of 0 ms stops any FTS5 statement at SQLite's first progress check, whatever the
machine's speed.
"""

from __future__ import annotations

import random

import pytest

import hivemem
from hivemem import InvalidInput, Settings


@pytest.fixture
def busy(db_path, clock):
    """A store of 600 turns over 300 distinct w-words: prefix terms expand widely."""
    rnd = random.Random(11)
    words = [f"w{i}" for i in range(300)] + ["deploy", "friday", "rollback"]

    def open_with(**changes):
        return hivemem.open(
            db_path, clock=clock, embedder="hash", settings=Settings().replace(**changes)
        )

    with open_with() as store:
        store.scope("A").add_episodes(
            {
                "content": " ".join(rnd.choice(words) for _ in range(40)),
                "session_id": f"s{i % 7}",
                "role": "user",
            }
            for i in range(600)
        )
    return open_with


def test_an_fts_query_of_many_words_is_refused_before_it_runs(busy):
    with busy() as store:
        mem = store.scope("A")
        for text in ["deploy " * 14_300, " ".join(f"w{i}" for i in range(33))]:
            with pytest.raises(InvalidInput, match="at most 32 words") as caught:
                mem.search(text, fts_syntax=True)
            assert caught.value.field == "query"
        assert mem.search("deploy " * 32, fts_syntax=True)  # at the limit: it runs
        assert mem.search("deploy " * 14_300)  # natural language: focus and 32 terms


def test_a_costly_fts_query_stops_at_the_time_limit(busy):
    with busy(fts_time_limit_ms=0) as store:
        mem = store.scope("A")
        with pytest.raises(InvalidInput, match="stopped after") as caught:
            mem.search(" OR ".join(["w*"] * 32), fts_syntax=True)
        assert caught.value.field == "query"
        # The limit covers the caller's own syntax only, and it does not linger on the
        # connection: natural-language searches and later statements run in full.
        assert mem.search("w1 w2 deploy friday")
        assert len(mem.list(limit=500)) == 500


def test_the_same_costly_query_runs_within_a_generous_limit(busy):
    with busy(fts_time_limit_ms=600_000) as store:
        hits = store.scope("A").search("w1* OR deploy", fts_syntax=True)
        assert hits and all(h.memory.scope == "A" for h in hits)


def test_a_query_longer_than_any_memory_is_refused(busy):
    with busy(max_content_bytes=1000) as store:
        with pytest.raises(InvalidInput, match="longer than the limit") as caught:
            store.scope("A").search("deploy " * 200)
        assert caught.value.field == "query"
