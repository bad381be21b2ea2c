"""PostgreSQL writes in few round trips (``store/postgres/writes.py``): a batch of
``add_episodes`` is a handful of statements, not several per memory, and leaves exactly
the rows, chunks, entities, aliases, links and counts that one-by-one writes leave."""

from __future__ import annotations

import dataclasses

import psycopg
import pytest

import hivemem
from hivemem import Conflict

TURNS = [
    "Alice met Bob at Acme Corp in Lisbon on Monday",
    "Acme shipped the release and Alice approved it",  # alias of an entity new above
    "Carol joined Globex Inc last week",
    "Globex and Acme Corp signed the contract with Dave",
    "Bob and Carol visited Lisbon with Alice",
    "nothing to name here, only words about the weather",
    " ".join(f"word{i}" for i in range(700)),  # several chunks
]


def _items(prefix: str) -> list[dict[str, str]]:
    return [
        {"content": t, "session_id": f"{prefix}-s{i // 3}", "role": "user"}
        for i, t in enumerate(TURNS)
    ]


def _picture(store: hivemem.Store, scope: str) -> dict[str, list]:
    q = store._backend._q
    return {
        "memories": q(
            "SELECT content, session_id, category FROM memories WHERE scope = %s ORDER BY seq",
            [scope],
        ),
        "chunks": q(
            "SELECT m.content, c.seq, c.text, c.length, c.terms::text FROM chunks c "
            "JOIN memories m ON m.id = c.memory_id WHERE c.scope = %s ORDER BY c.id",
            [scope],
        ),
        "queued": q(
            "SELECT count(*) FROM vector_queue v JOIN chunks c ON c.id = v.chunk_id "
            "WHERE c.scope = %s",
            [scope],
        ),
        "entities": q(
            "SELECT canonical, type, name, mention_count FROM entities "
            "WHERE scope = %s ORDER BY id",
            [scope],
        ),
        "aliases": q(
            "SELECT a.alias, e.canonical FROM entity_aliases a JOIN entities e "
            "ON e.id = a.entity_id WHERE a.scope = %s ORDER BY 1, 2",
            [scope],
        ),
        "links": q(
            "SELECT m.content, e.canonical, e.type FROM memory_entities me "
            "JOIN memories m ON m.id = me.memory_id JOIN entities e ON e.id = me.entity_id "
            "WHERE m.scope = %s ORDER BY 1, 2, 3",
            [scope],
        ),
        "sessions": q(
            "SELECT session_id, episode_count FROM sessions WHERE scope = %s ORDER BY 1",
            [scope],
        ),
        "categories": q(
            "SELECT m.content, c.confidence FROM memory_categories c "
            "JOIN memories m ON m.id = c.memory_id WHERE m.scope = %s ORDER BY 1",
            [scope],
        ),
    }


def _renamed(picture: dict[str, list], old: str, new: str) -> dict[str, list]:
    return {
        k: [tuple(v.replace(old, new) if isinstance(v, str) else v for v in r) for r in rows]
        for k, rows in picture.items()
    }


def test_a_batch_leaves_what_one_by_one_writes_leave(pg_url, clock):
    with hivemem.open(pg_url, clock=clock, embedder="hash") as store:
        store.scope("one").add_episode(**_items("one")[0])  # an entity known beforehand
        store.scope("batch").add_episode(**_items("batch")[0])
        for item in _items("one")[1:]:
            store.scope("one").add_episode(**item)
        store.scope("batch").add_episodes(_items("batch")[1:])
        store.flush()  # the embedding worker's queue drained in both halves alike
        one, batch = _picture(store, "one"), _picture(store, "batch")
        # Times differ between the halves (the clock ticks per call): each entity's
        # first and last sighting are its linked memories' first and last creation.
        seen = store._backend._q(
            "SELECT e.canonical, e.first_seen = min(m.created_at), "
            "e.last_seen = max(m.created_at), e.mention_count = count(*) FROM entities e "
            "JOIN memory_entities me ON me.entity_id = e.id JOIN memories m "
            "ON m.id = me.memory_id WHERE e.scope = 'batch' GROUP BY e.id"
        )
    assert len(batch["chunks"]) > len(TURNS)  # the long turn has several chunks
    assert batch["entities"] and batch["aliases"] and batch["links"]
    assert ("acme", "acme corp") in batch["aliases"]
    assert _renamed(batch, "batch-s", "one-s") == one
    assert seen and all(row[1:] == (True, True, True) for row in seen), seen


def _counting(monkeypatch) -> list[str]:
    sent: list[str] = []
    execute = psycopg.Connection.execute
    executemany = psycopg.Cursor.executemany

    def counted(self, query, *args, **kwargs):
        sent.append(str(query))
        return execute(self, query, *args, **kwargs)

    def counted_many(self, query, params_seq, *args, **kwargs):
        params_seq = list(params_seq)
        sent.extend(str(query) for _ in params_seq)
        return executemany(self, query, params_seq, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counted)
    monkeypatch.setattr(psycopg.Cursor, "executemany", counted_many)
    return sent


def test_a_batch_of_200_turns_is_a_handful_of_statements(pg_url, clock, monkeypatch):
    with hivemem.open(pg_url, clock=clock, embedder="none") as store:
        mem = store.scope("a")
        items = [
            {
                "content": f"Turn {i}: Alice told Bob about project Zephyr{i % 7} in Oslo",
                "session_id": f"s{i // 20}",
                "role": "user",
            }
            for i in range(200)
        ]
        sent = _counting(monkeypatch)
        mem.add_episodes(items)
        monkeypatch.undo()
        writes = [s for s in sent if not s.lstrip().upper().startswith("SELECT 1")]
        # Rows, chunks and the mention lookup in one pipeline; new entities (Zephyr0-6,
        # Alice, Bob, Oslo: ~3 statements each); links; categories; 10 sessions.
        assert len(writes) <= 60, writes
        assert len(mem.list(limit=500)) == 200


def test_a_refused_row_fails_the_whole_batch_naming_the_first(pg_url, clock):
    with hivemem.open(pg_url, clock=clock, embedder="none") as store:
        mem = store.scope("a")
        a, b = mem.add_episodes(
            [
                {"content": "first", "session_id": "s1", "role": "user"},
                {"content": "second", "session_id": "s1", "role": "user"},
            ]
        )
        fresh = dataclasses.replace(a, id="m-fresh", content="fresh")
        items = [(m, [m.content], ()) for m in (fresh, b, a)]
        refused = f"a memory with id {b.id} already exists"
        with pytest.raises(Conflict, match=refused), store.atomic():
            store.memories.insert_many(items)
        assert [m.content for m in mem.list(limit=10)] == ["second", "first"]
        assert store._backend._q("SELECT count(*) FROM chunks")[0][0] == 2
