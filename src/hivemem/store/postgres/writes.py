"""Many memories in few round trips (``PostgresBackend.insert_many``).

A PostgreSQL write pays a network round trip per statement, where SQLite pays a function
call. Writing the memories of one ``add_episodes`` call one by one cost about four
statements each (row, chunks, mention lookup, mention links), so a 1,000-turn batch was
~4,000 round trips. Here the whole batch is:

1. pipelined together (one round trip): one statement inserting the rows (a multi-row
   ``INSERT … ON CONFLICT DO NOTHING RETURNING id``, in the given order, so ``seq``
   follows it) and then the chunks of the rows written, from arrays, with their place in
   the vector queue; and one lookup of every distinct mention by canonical name and by
   alias;
2. the mentions no entity answered at first (new entities, or an alias a new entity of
   this batch brings), step by step in the memories' order, as one-by-one inserts would
   meet them (``entities._resolve_one``);
3. one statement linking every (memory, entity) pair and counting the new links per
   entity, locking the entity rows in id order.

The results are the one-by-one path's: the same rows, chunk ids in the same order, the
same entities (a mention found by name or by an existing alias at first is found the same
way one by one: an entity created earlier in the batch has a higher id, and the alias
lookup takes the lowest), the same mention counts and ``last_seen``. A refused row (an id
that exists, a second active row for a key) raises the same ``Conflict`` for the first
refused memory in order; the caller's transaction is then rolled back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ... import text as textmod
from ...clock import to_text
from ...errors import Conflict
from .. import scratch
from ..rows import COLUMNS, memory_to_row
from .entities import _resolve_one
from .keyword import tsvector_text

if TYPE_CHECKING:  # pragma: no cover
    from ...providers.entities import Mention
    from ...types import Memory
    from .database import PostgresDatabase

ROWS_PER_STATEMENT = 1_000  # 29 parameters a row: PostgreSQL takes at most 65,535

# A batch of at least this many memories, and at least a tenth of the table's rows as
# last counted, refreshes the statistics of the tables a search plans over, in the
# batch's own transaction (ANALYZE may run in one, and counts its uncommitted rows).
# Why: autovacuum analyzes a table a minute or more after it grew, and until then the
# planner plans a search over a freshly loaded scope from the statistics of an empty
# or much smaller table (an in-process replay of the load bench's shape: 7.95-9.25 ms
# of database CPU a search before autovacuum came, 4.85-5.10 ms after an ANALYZE).
# SKIP_LOCKED: a table another session is analyzing is left to it, never waited on.
ANALYZE_MIN_ROWS = 500
_ANALYZE = "ANALYZE (SKIP_LOCKED) memories, chunks, keyword_postings, entities, memory_entities"

_ROW = "(" + ", ".join("%s" for _ in COLUMNS) + ")"

# The rows, then the chunks of the rows written (a refused row's chunks would collide
# with the existing memory's), each with its place in the vector queue: one statement.
_ROWS_AND_CHUNKS = (
    "WITH written AS ({rows} ON CONFLICT DO NOTHING RETURNING id), "
    "added AS (INSERT INTO chunks (memory_id, scope, seq, text, text_hash, length, terms) "
    "SELECT t.memory_id, t.scope, t.seq, t.text, t.hash, t.length, t.terms::tsvector "
    "FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[], %s::text[], %s::int[], "
    "%s::text[]) WITH ORDINALITY AS t(memory_id, scope, seq, text, hash, length, terms, ord) "
    "WHERE t.memory_id = ANY(ARRAY(SELECT id FROM written)) ORDER BY t.ord RETURNING id), "
    "queued AS (INSERT INTO vector_queue (chunk_id) SELECT id FROM added) "
    "SELECT id FROM written"
)

_LOOKUP = (
    "SELECT (SELECT e.id FROM entities e WHERE e.scope = m.s AND e.canonical = m.c "
    "AND e.type = m.t), (SELECT a.entity_id FROM entity_aliases a JOIN entities e "
    "ON e.id = a.entity_id WHERE a.scope = m.s AND a.alias = m.c "
    "AND (e.protected = 0 OR e.type = m.t) ORDER BY a.entity_id LIMIT 1) "
    "FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS m(s, c, t, n) "
    "ORDER BY m.n"
)

_LINK = (
    "WITH pairs AS (SELECT * FROM unnest(%s::text[], %s::bigint[], %s::text[]) "
    "AS p(memory_id, entity_id, at)), "
    "linked AS (INSERT INTO memory_entities (memory_id, entity_id) "
    "SELECT memory_id, entity_id FROM pairs ON CONFLICT DO NOTHING "
    "RETURNING memory_id, entity_id), "
    'counts AS (SELECT l.entity_id, count(*) AS n, max(p.at COLLATE "C") AS at '
    "FROM linked l JOIN pairs p USING (memory_id, entity_id) GROUP BY l.entity_id), "
    "locked AS (SELECT e.id, c.n, c.at FROM entities e JOIN counts c ON c.entity_id = e.id "
    "ORDER BY e.id FOR NO KEY UPDATE OF e) "
    "UPDATE entities e SET mention_count = e.mention_count + locked.n, "
    "last_seen = GREATEST(e.last_seen, locked.at) FROM locked WHERE e.id = locked.id"
)

Item = tuple["Memory", Sequence[str], Sequence["Mention"]]


def insert_many(db: PostgresDatabase, items: Sequence[Item]) -> None:
    """Inside a write: insert ``items`` (memory, chunks, mentions) as ``insert`` would one
    by one (see the module docstring), then refresh the searched tables' statistics when
    the batch is big beside them (``_ANALYZE``)."""
    for start in range(0, len(items), ROWS_PER_STATEMENT):
        _insert_group(db, items[start : start + ROWS_PER_STATEMENT])
    if len(items) >= ANALYZE_MIN_ROWS:
        counted = db._x("SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass")
        if len(items) * 10 >= max(0.0, float(counted.fetchone()[0])):
            db._defer(_ANALYZE)  # with the commit's round trip, inside the transaction


def _insert_group(db: PostgresDatabase, items: Sequence[Item]) -> None:
    conn = db._writer()
    db._flush()
    rows_sql = _ROWS_AND_CHUNKS.format(
        rows=f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES " + ", ".join(_ROW for _ in items)
    )
    row_params = [value for memory, _, _ in items for value in memory_to_row(memory)]
    chunk_params = _chunk_arrays(db, items)
    keys = sorted(
        {(memory.scope, m.canonical, m.type.value) for memory, _, ms in items for m in ms}
    )
    with conn.pipeline():
        inserted = conn.execute(rows_sql, [*row_params, *chunk_params])
        found = (
            conn.execute(
                _LOOKUP, [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]]
            )
            if keys
            else None
        )
        written = {row[0] for row in inserted.fetchall()}
        known = found.fetchall() if found is not None else []
    if len(written) < len(items):
        _refused(db, items, written)
    db.entities.added += len(items)
    if keys:
        _link(db, items, dict(zip(keys, known, strict=True)))


def _chunk_arrays(db: PostgresDatabase, items: Sequence[Item]) -> list[list[Any]]:
    arrays: list[list[Any]] = [[], [], [], [], [], [], []]
    ids: set[str] = set()
    for memory, pieces, _ in items:
        if memory.id in ids:
            continue  # an id twice in the batch: refused below, its chunks never written
        ids.add(memory.id)
        for seq, piece in enumerate(pieces):
            tokens = scratch.tokens(piece)
            arrays[0].append(memory.id)
            arrays[1].append(memory.scope)
            arrays[2].append(seq)
            arrays[3].append(piece)
            arrays[4].append(textmod.content_hash(piece))
            arrays[5].append(len(tokens))
            arrays[6].append(tsvector_text(tokens))
    with db._stats_lock:
        db._size_added += len(arrays[0])
    return arrays


def _refused(db: PostgresDatabase, items: Sequence[Item], written: set[str]) -> None:
    """``Conflict`` for the first memory not written (or an id twice in the batch)."""
    seen: set[str] = set()
    for memory, _, _ in items:
        if memory.id in seen:
            raise Conflict(f"a memory with id {memory.id} already exists")  # twice here
        seen.add(memory.id)
        if memory.id in written:
            continue
        if db._q("SELECT 1 FROM memories WHERE id = %s", [memory.id]):
            raise Conflict(f"a memory with id {memory.id} already exists")
        raise Conflict(f"key {memory.key!r} already has an active memory in scope {memory.scope!r}")


def _link(
    db: PostgresDatabase, items: Sequence[Item], known: dict[tuple[str, str, str], Any]
) -> None:
    memory_ids: list[str] = []
    entity_ids: list[int] = []
    stamps: list[str] = []
    for memory, _, mentions in items:
        when = to_text(memory.created_at)
        ids: list[int] = []
        for mention in sorted(mentions, key=lambda m: (m.canonical, m.type.value)):
            by_name, by_alias = known[(memory.scope, mention.canonical, mention.type.value)]
            entity_id = by_name if by_name is not None else by_alias
            if entity_id is None:
                entity_id = _resolve_one(db, memory.scope, mention, when)
                # Found by name from here on, as a later memory's own lookup would.
                known[(memory.scope, mention.canonical, mention.type.value)] = (entity_id, None)
            if entity_id not in ids:
                ids.append(entity_id)
        memory_ids += [memory.id] * len(ids)
        entity_ids += ids
        stamps += [when] * len(ids)
    if entity_ids:  # nothing reads its result: sent with the next statement
        db._defer(_LINK, [memory_ids, entity_ids, stamps])
