"""FTS5's own tokenizer and matcher on a private in-memory database.

The keyword lane needs two answers that only FTS5 can give exactly: how the index
tokenizes a query term (its porter stems, for document frequencies), and which query
terms a handful of found chunks match (for the coverage score). Asking the store's big
index the second question per chunk is slow (FTS5 seeks each term's whole doclist once
per chunk: about a millisecond per chunk at 100k chunks), and both would otherwise
write scratch rows on the store's connection, inside or outside the caller's
transaction. A private ``:memory:`` FTS5 table with the same tokenizer answers both in
microseconds and never touches a store. Thread-safe.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

from .. import text as textmod

try:  # pragma: no cover - the same driver choice as hivemem.store.sqlite.backend
    import sqlean as sqlite_driver
except ImportError:  # pragma: no cover
    import sqlite3 as sqlite_driver

# Must stay the tokenizer of ``chunks_fts`` (migration 0002_chunks_fts): the answers here
# are the index's answers only because both tokenize alike.
TOKENIZE = "porter unicode61 remove_diacritics 2"

_lock = threading.Lock()
_conn: Any = None


def _connection() -> Any:
    global _conn
    if _conn is None:
        conn = sqlite_driver.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE scratch USING fts5 (t, tokenize = '{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE scratch_vocab USING fts5vocab(scratch, 'instance')")
        conn.execute("CREATE VIRTUAL TABLE scratch_rows USING fts5vocab(scratch, 'row')")
        _conn = conn
    return _conn


@functools.lru_cache(maxsize=16_384)
def stems(term: str) -> tuple[str, ...]:
    """``term`` as the keyword index stores it: its tokens, porter-stemmed, in order.
    A pure function of the term (cached)."""
    return tokens(term)


def tokens(text: str) -> tuple[str, ...]:
    """``text`` as the keyword index tokenizes it, in order (uncached: whole chunks; the
    PostgreSQL backend builds its tsvectors from these, so both backends index alike)."""
    with _lock:
        conn = _connection()
        conn.execute("BEGIN")
        try:
            conn.execute("INSERT INTO scratch (rowid, t) VALUES (1, ?)", (text,))
            rows = conn.execute("SELECT term FROM scratch_vocab ORDER BY offset").fetchall()
        finally:
            conn.execute("ROLLBACK")
    return tuple(r[0] for r in rows)


def doc_counts(texts: Sequence[str]) -> dict[str, int]:
    """For the index terms of ``texts``: how many of the texts hold each (FTS5's own
    tokenizer, so the counts are the keyword index's)."""
    with _lock:
        conn = _connection()
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO scratch (t) VALUES (?)", [(t,) for t in texts])
            rows = conn.execute("SELECT term, doc FROM scratch_rows").fetchall()
        finally:
            conn.execute("ROLLBACK")
    return dict(rows)


def matches(texts: Sequence[tuple[int, str]], terms: Sequence[str]) -> dict[int, set[str]]:
    """For each ``(id, text)``, the ``terms`` whose quoted FTS5 phrase matches the text:
    exactly what ``MATCH '"term"'`` on the keyword index says of that chunk."""
    out: dict[int, set[str]] = {i: set() for i, _ in texts}
    with _lock:
        conn = _connection()
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO scratch (rowid, t) VALUES (?, ?)", texts)
            for term in terms:
                for (rowid,) in conn.execute(
                    "SELECT rowid FROM scratch WHERE scratch MATCH ?", (textmod.fts_quote(term),)
                ):
                    out[rowid].add(term)
        finally:
            conn.execute("ROLLBACK")
    return out


def filter(texts: Sequence[tuple[int, str]], match: str) -> set[int]:  # noqa: A001
    """The ids of those ``(id, text)`` that the FTS5 query ``match`` matches (what
    ``MATCH`` on the keyword index says of each: for what another backend's index
    cannot decide by itself, e.g. NEAR)."""
    if not texts or not match:
        return set()
    with _lock:
        conn = _connection()
        conn.execute("BEGIN")
        try:
            conn.executemany("INSERT INTO scratch (rowid, t) VALUES (?, ?)", texts)
            found = {
                r[0]
                for r in conn.execute("SELECT rowid FROM scratch WHERE scratch MATCH ?", (match,))
            }
        finally:
            conn.execute("ROLLBACK")
    return found
