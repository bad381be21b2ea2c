"""The keyword index's postings as rows (``keyword_postings``, migration 0018).

One row per (lexeme, chunk): the chunk's scope, the lexeme's term frequency (its
positions in the chunk's ``terms``) and the chunk's length, under one b-tree on
(lexeme, scope, chunk_id) that includes the rest. What it saves, measured at 100k
memories (docs/postgres.md, Performance):

- a term's chunk count (``term_stats``) is an index-only range count (~0.8 ms for a
  term in 1,800 chunks) instead of a GIN bitmap scan that visits every matching
  chunk's heap page (~9 ms);
- plain terms are scored (BM25) from the index alone; only the chunks read until the
  page is full touch the ``chunks`` heap (the other plan reads every match's row).

Kept by statement triggers on ``chunks`` (insert, delete, an update of ``terms``,
``length`` or ``scope``, truncate), so every write path — single and batched writes,
re-chunking, purge, import, copy, cascades from ``memories`` — keeps it without a line
of its own, inside the writer's transaction. Rows are per chunk, so concurrent writers
never touch the same row (no lock waits, no deadlocks between writers). The cost: ~20
index entries per chunk on the write path, and ~2.4 kB per 25-word memory on disk.

``check`` compares the table with what the chunks say (doctor); ``rebuild`` derives it
again from the chunks (``doctor --repair``, ``rebuild_keyword_index``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .database import PostgresDatabase

# The postings a chunk makes, as the triggers write them.
DERIVED = (
    "SELECT u.lexeme, c.scope, c.id, cardinality(u.positions), c.length "
    "FROM chunks c, unnest(c.terms) u"
)


def check(db: PostgresDatabase) -> str | None:
    """None when the postings are the chunks' (same number of rows, and the same sums of
    chunk ids, term frequencies and lengths), else what differs."""
    have = db._q(
        "SELECT COUNT(*), COALESCE(SUM(chunk_id), 0), COALESCE(SUM(tf), 0), "
        "COALESCE(SUM(length), 0) FROM keyword_postings"
    )[0]
    want = db._q(
        "SELECT COUNT(*), COALESCE(SUM(d.id), 0), COALESCE(SUM(d.tf), 0), "
        f"COALESCE(SUM(d.length), 0) FROM ({DERIVED}) AS d(lexeme, scope, id, tf, length)"
    )[0]
    if tuple(have) == tuple(want):
        return None
    return (
        f"keyword postings differ from the chunks' terms ({have[0]} rows, the chunks make "
        f"{want[0]})"
    )


def rebuild(db: PostgresDatabase) -> None:
    """Derive every posting from the chunks again, in one transaction (a chunk another
    writer commits meanwhile keeps the postings its own trigger wrote)."""
    with db.atomic():
        db._x("DELETE FROM keyword_postings")
        db._x(
            "INSERT INTO keyword_postings (lexeme, scope, chunk_id, tf, length) "
            f"{DERIVED} ON CONFLICT DO NOTHING"
        )
