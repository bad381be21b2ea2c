"""A batch links its mentions in one pass (``store.sqlite.entities.link_many``): a name
is resolved once per batch and each entity's count and last sighting are updated once.
The entities, their aliases and the links must be those of the same turns written one
by one (LoCoMo's turns where the evaluation data is on disk, and turns that reach one
entity by an alias, a namesake of another type and a repeated name)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlean as sqlite3

import hivemem
from locomo_turns import locomo_turns

TURNS = [
    "Caroline met Melanie at the Acme Corp office in Berlin.",
    "@caroline says hi to Melanie and #python fans",
    "Caroline and Caroline's sister went to Berlin on 8 May 2023.",
    "Jordan (the river) and Jordan the friend; Melanie again, and Berlin.",
    "email caroline@example.com or see https://example.com/caroline",
    "Nobody is named here.",
]


def _state(path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {
            "entities": conn.execute(
                "SELECT id, scope, canonical, type, name, mention_count, first_seen, "
                "last_seen FROM entities ORDER BY id"
            ).fetchall(),
            "aliases": conn.execute(
                "SELECT scope, alias, entity_id FROM entity_aliases ORDER BY 1, 2, 3"
            ).fetchall(),
            "links": conn.execute(
                "SELECT m.seq, me.entity_id FROM memory_entities me "
                "JOIN memories m ON m.id = me.memory_id ORDER BY 1, 2"
            ).fetchall(),
        }
    finally:
        conn.close()


@pytest.mark.parametrize("source", ["turns", "locomo"])
def test_a_batch_links_what_the_same_turns_written_one_by_one_link(tmp_path, source):
    texts = TURNS * 3 if source == "turns" else locomo_turns()[:600]
    fixed = datetime(2026, 11, 28, tzinfo=UTC)
    one, many = tmp_path / "one.db", tmp_path / "many.db"
    with hivemem.open(one, clock=lambda: fixed, embedder="none") as store:
        mem = store.scope("s")
        for i, text in enumerate(texts):
            mem.add_episode(text, f"session-{i // 50}", "user")
    with hivemem.open(many, clock=lambda: fixed, embedder="none") as store:
        store.scope("s").add_episodes(
            [
                {"content": text, "session_id": f"session-{i // 50}", "role": "user"}
                for i, text in enumerate(texts)
            ]
        )
    batched, single = _state(many), _state(one)
    assert batched["links"] and batched == single
    assert any(row[5] > 1 for row in batched["entities"])  # counted once per batch


def test_each_entity_counts_its_links_and_was_last_seen_at_its_latest_memory(tmp_path, clock):
    with hivemem.open(tmp_path / "m.db", clock=clock, embedder="none") as store:
        store.scope("s").add_episodes(
            [{"content": t, "session_id": "a", "role": "user"} for t in TURNS * 3]
        )
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        rows = conn.execute(
            "SELECT e.mention_count, e.last_seen, COUNT(*), MAX(m.created_at) FROM entities e "
            "JOIN memory_entities me ON me.entity_id = e.id JOIN memories m ON m.id = "
            "me.memory_id GROUP BY e.id"
        ).fetchall()
    finally:
        conn.close()
    assert rows and all(count == links and seen == latest for count, seen, links, latest in rows)
    assert len({seen for _, seen, _, _ in rows}) > 1
