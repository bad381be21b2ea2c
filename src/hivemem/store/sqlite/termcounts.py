"""Keyword statistics per scope: how many chunks of a scope hold each index term.

The keyword lane weighs query terms by IDF. Counted over the whole keyword index, one
tenant's writes would move another tenant's scores (and let a scope-bound token probe
what others store), so the counts are kept per scope in ``scope_terms`` (scope, term,
doc): ``term`` is an index term exactly as FTS5 stores it (porter stem, via the scratch
tokenizer of ``store/scratch.py``), ``doc`` the number of the scope's chunks holding it,
and the row with ``term = ''`` counts the scope's chunks. IDF over the visible scopes is
then a sum of a handful of rows, read by primary key.

Writes add their chunks' counts in the same transaction as the chunks. Deletions are
caught by triggers whatever deletes the rows (a purge, a cascade, a repair): the text of
every chunk that goes is queued in ``scope_terms_gone`` with its scope, and ``settle``
subtracts the queue on the next write (the triggers cannot tokenize).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .. import scratch

Connection = Any

SCHEMA = (
    """CREATE TABLE scope_terms (
        scope TEXT NOT NULL,
        term TEXT NOT NULL,
        doc INTEGER NOT NULL,
        PRIMARY KEY (scope, term)
    ) WITHOUT ROWID""",
    """CREATE TABLE scope_terms_gone (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        text TEXT NOT NULL
    )""",
    # A memory deleted with its chunks (ON DELETE CASCADE): its scope is known only here.
    """CREATE TRIGGER scope_terms_memory_bd BEFORE DELETE ON memories BEGIN
        INSERT INTO scope_terms_gone (scope, text)
            SELECT old.scope, c.text FROM chunks c WHERE c.memory_id = old.id;
    END""",
    # A chunk deleted while its memory stays (re-chunking).
    """CREATE TRIGGER scope_terms_chunk_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO scope_terms_gone (scope, text)
            SELECT m.scope, old.text FROM memories m WHERE m.id = old.memory_id;
    END""",
)

_UPSERT = (
    "INSERT INTO scope_terms (scope, term, doc) VALUES (?, ?, ?) "
    "ON CONFLICT (scope, term) DO UPDATE SET doc = doc + excluded.doc"
)


_WORD = re.compile(r"[^\W_]+")


def doc_counts(texts: Sequence[str]) -> dict[str, int]:
    """How many of ``texts`` hold each index term. Words are split on what FTS5's
    unicode61 tokenizer treats as separators (anything but letters and digits), and each
    distinct word is stemmed once by FTS5 itself (``scratch.stems``, cached): the
    keyword index's own terms at ~10 µs a chunk instead of a scratch index per write."""
    counts: dict[str, int] = {}
    for text in texts:
        held: set[str] = set()
        for word in set(_WORD.findall(text.lower())):
            held.update(scratch.stems(word))
        for term in held:
            counts[term] = counts.get(term, 0) + 1
    return counts


def add(conn: Connection, scope: str, texts: Sequence[str], sign: int = 1) -> None:
    """Count ``texts`` (chunks of ``scope``) in (``sign`` 1) or out (-1)."""
    if not texts:
        return
    counts = doc_counts(texts)
    rows = [(scope, "", sign * len(texts))]
    rows.extend((scope, term, sign * n) for term, n in counts.items())
    conn.executemany(_UPSERT, rows)


def settle(conn: Connection) -> int:
    """Subtract the chunks the triggers queued as deleted; returns how many."""
    gone = conn.execute("SELECT id, scope, text FROM scope_terms_gone ORDER BY id").fetchall()
    if not gone:
        return 0
    by_scope: dict[str, list[str]] = {}
    for _, scope, text in gone:
        by_scope.setdefault(scope, []).append(text)
    for scope, texts in by_scope.items():
        add(conn, scope, texts, sign=-1)
    conn.execute("DELETE FROM scope_terms_gone WHERE id <= ?", (gone[-1][0],))
    conn.execute("DELETE FROM scope_terms WHERE doc <= 0")
    return len(gone)


def backfill(conn: Connection) -> None:
    """Count every chunk already stored (the migration that creates the table)."""
    last = ""
    while True:
        rows = conn.execute(
            "SELECT m.scope, c.text, m.id FROM memories m JOIN chunks c ON c.memory_id = m.id "
            "WHERE m.id IN (SELECT id FROM memories WHERE id > ? ORDER BY id LIMIT 500)",
            (last,),
        ).fetchall()
        if not rows:
            return
        by_scope: dict[str, list[str]] = {}
        for scope, text, _ in rows:
            by_scope.setdefault(scope, []).append(text)
        for scope, texts in by_scope.items():
            add(conn, scope, texts)
        last = max(r[2] for r in rows)


def per_term(stems: Mapping[str, Sequence[str]], counts: Mapping[str, int]) -> dict[str, int]:
    """A query term's count is its most frequent stem's."""
    return {
        term: max((counts.get(s, 0) for s in group), default=0) for term, group in stems.items()
    }


def read(
    conn: Connection, scopes: Sequence[str], stems: Mapping[str, Sequence[str]]
) -> tuple[int, dict[str, int]]:
    """(chunks in ``scopes``, chunks holding each query term) summed over ``scopes``;
    ``stems`` maps each term to its index stems."""
    wanted = sorted({"", *(s for group in stems.values() for s in group)})
    scope_marks = ", ".join("?" * len(scopes))
    term_marks = ", ".join("?" * len(wanted))
    rows = conn.execute(
        f"SELECT term, SUM(doc) FROM scope_terms WHERE scope IN ({scope_marks}) "
        f"AND term IN ({term_marks}) GROUP BY term",
        [*scopes, *wanted],
    ).fetchall()
    counts = {term: int(n) for term, n in rows}
    return max(0, counts.pop("", 0)), per_term(stems, counts)
