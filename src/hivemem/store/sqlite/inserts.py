"""New rows of the SQLite store, inside the caller's transaction: the row, its chunks
(whose triggers fill the keyword index, the per-scope counts and the vector queue), its
entity links and its session's count. The backend's ``insert``, ``insert_many`` and
``note_session`` call these.

The write path's cost is its statements (issue 24: a write against a plain SQLite insert
of a row and its FTS5 row). Here a batch goes in as one ``executemany`` of its rows and
one of its chunks. The insertion order (``seq``, migration 0014) is the table's rowid
since 0026: a row inserted alone takes the next one (MAX + 1) from SQLite itself, with no
index of its own to enter; a batch reads the last number once and numbers its rows.

A chunk's ``text_hash`` (the embedding cache's key) is the hash of its text; a memory
short enough to be one chunk is its own chunk, whose hash its row already holds
(``content_hash``: the same function of the same string), so it is not hashed twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import text as textmod
from ...clock import to_text
from ...errors import Conflict
from ...providers.entities import Mention
from ...types import Memory
from ..rows import INSERT, memory_to_row
from . import termcounts
from .database import IntegrityError
from .entities import link_many, link_mentions

WRITER_STATEMENTS = 512  # prepared statements the writer connection keeps (default 128)

SEQ_INSERT = INSERT.replace(") VALUES (", ", seq) VALUES (").removesuffix(")") + ", ?)"
CHUNK_INSERT = (
    "INSERT INTO chunks (memory_id, seq, text, text_hash, scope_key) VALUES (?, ?, ?, ?, ?)"
)

Item = tuple[Memory, Sequence[str], Sequence[Mention]]


def insert_one(
    conn: Any, memory: Memory, chunks: Sequence[str], mentions: Sequence[Mention] = ()
) -> None:
    """One row, its chunks and its entity links."""
    try:
        conn.execute(INSERT, memory_to_row(memory))  # seq: the next rowid
    except IntegrityError as exc:
        raise conflict(exc, memory) from None
    conn.executemany(CHUNK_INSERT, chunk_rows([(memory, chunks)]))
    if mentions:
        link_mentions(
            conn, memory.scope, memory.id, mentions, to_text(memory.created_at), fresh=True
        )


def insert_many(conn: Any, items: Sequence[Item]) -> None:
    """The rows in one ``executemany``, their chunks in another, then their mentions
    (``link_many``: each name resolved once, each entity's count updated once). A row
    that breaks a constraint (a key with an active row, an id taken) rolls the bulk
    statement back to its savepoint and the rows go in one by one, so the error names
    the row as ``insert_one`` does."""
    if len(items) < 2:
        for memory, chunks, mentions in items:
            insert_one(conn, memory, chunks, mentions)
        return
    conn.execute("SAVEPOINT bulk_insert")
    last = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()[0]
    try:
        conn.executemany(
            SEQ_INSERT,
            [(*memory_to_row(m), last + n) for n, (m, _, _) in enumerate(items, 1)],
        )
    except IntegrityError:
        conn.execute("ROLLBACK TO bulk_insert")
        conn.execute("RELEASE bulk_insert")
        for memory, chunks, mentions in items:
            insert_one(conn, memory, chunks, mentions)
        return
    conn.execute("RELEASE bulk_insert")
    conn.executemany(CHUNK_INSERT, chunk_rows([(m, chunks) for m, chunks, _ in items]))
    link_many(
        conn,
        [(m.scope, m.id, mentions, to_text(m.created_at)) for m, _, mentions in items if mentions],
        fresh=True,
    )


def note_session(
    conn: Any, scope: str, session_id: str, when: str, last: str, episodes: int
) -> bool:
    """Count a session's episodes, written between ``when`` and ``last``; True when the
    session is new (no row, or a row of no episodes: a restored backup's). A known
    session, the hot path's case, is one ``UPDATE``: an upsert ``RETURNING`` its count
    cost 13-22 µs against 2, timed alone (issue 24; in a turn less: its statement
    journal had FTS5 flush there)."""
    if conn.execute(
        "UPDATE sessions SET last_event_at = MAX(last_event_at, ?), started_at = "
        "MIN(started_at, ?), episode_count = episode_count + ? "
        "WHERE scope = ? AND session_id = ? AND episode_count > 0",
        (last, when, episodes, scope, session_id),
    ).rowcount:
        return False
    conn.execute(
        "INSERT INTO sessions (scope, session_id, started_at, last_event_at, episode_count) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, session_id) DO UPDATE SET "
        "last_event_at = MAX(last_event_at, excluded.last_event_at), "
        "started_at = MIN(started_at, excluded.started_at), "
        "episode_count = episode_count + excluded.episode_count",
        (scope, session_id, when, last, episodes),
    )
    return True


def chunk_rows(items: Sequence[tuple[Memory, Sequence[str]]]) -> list[tuple[Any, ...]]:
    """The ``CHUNK_INSERT`` rows of memories' chunks (the scope key computed once per
    scope); the one chunk that is the memory's text, the very string, takes the row's
    ``content_hash``."""
    keys: dict[str, str] = {}
    rows: list[tuple[Any, ...]] = []
    for memory, pieces in items:
        key = keys.get(memory.scope)
        if key is None:
            key = keys[memory.scope] = termcounts.scope_key(memory.scope)
        if len(pieces) == 1 and pieces[0] is memory.content and memory.content_hash:
            rows.append((memory.id, 0, pieces[0], memory.content_hash, key))
            continue
        rows.extend((memory.id, i, p, textmod.content_hash(p), key) for i, p in enumerate(pieces))
    return rows


def conflict(exc: Exception, memory: Memory) -> Exception:
    """The constraint a row broke, as the caller's error (another: the driver's own)."""
    message = str(exc)
    if "memories.scope, memories.key" in message:
        return Conflict(
            f"key {memory.key!r} already has an active memory in scope {memory.scope!r}"
        )
    if "memories.id" in message:
        return Conflict(f"a memory with id {memory.id} already exists")
    return exc
