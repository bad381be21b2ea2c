"""The small-scope keyword statement where the scopes hold the whole index (one tenant).

``keyword_scope`` leaves the scope keys' phrase out of each term's MATCH there (it would
match every row, and FTS5's bm25 walks its doclist to weigh it). What must hold: FTS5
gives exactly the rows and floats the confined MATCH gives, and the rows' own filter
still keeps another scope's chunks out even if the scope counts were wrong.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlean as sqlite3

import hivemem
from hivemem import text as textmod
from hivemem.store.sqlite import termcounts
from hivemem.types import Query

TURNS = [
    "we moved the staging database to host kestrel last week",
    "the kestrel migration broke the nightly backup job",
    "Anna fixed the backup job with a new cron schedule",
    "the release train leaves on Thursday after the backup",
    "nobody remembers why the staging host is called kestrel",
    "the cron schedule runs at two in the morning",
]
MATCH = "chunks_fts MATCH ?"
QUESTIONS = ["kestrel backup", "when does the cron schedule run", "staging host release"]


def _fill(store: hivemem.Store, scope: str, copies: int = 20) -> None:
    store.scope(scope).add_episodes(
        [
            {"content": f"{text} ({n})", "session_id": f"s{n}", "role": "user"}
            for n in range(copies)
            for text in TURNS
        ]
    )


def _term_matches(store: hivemem.Store, question: str, scope: str) -> list[str]:
    """The per-term MATCH expressions of the small-scope statement of one search."""
    backend = store._backend
    read = backend._read
    seen: list[str] = []

    def traced(sql: str, params: Any = (), **kwargs: Any) -> Any:
        if sql.startswith("WITH h (t, id, s)"):
            seen.extend(p for p in params if isinstance(p, str) and "text : " in p)
        return read(sql, params, **kwargs)

    backend._read = traced
    try:
        store.scope(scope).search(question, limit=10)
    finally:
        del backend._read
    return seen


def test_one_tenant_matches_each_term_unconfined_with_the_same_rows_and_floats(
    tmp_path: Path,
) -> None:
    path = tmp_path / "one.db"
    with hivemem.open(path, embedder="none") as store:
        _fill(store, "team")
        assert _term_matches(store, "kestrel backup", "team") == [
            'text : "kestrel"',
            'text : "backup"',
        ]
    key = termcounts.scope_filter(["team"])
    conn = sqlite3.connect(path)
    try:
        compared = 0
        for question in QUESTIONS:
            for word in question.split():
                plain = f'text : "{word}"'
                sql = f"SELECT rowid, bm25(chunks_fts, 1.0, 0.0) FROM chunks_fts WHERE {MATCH}"
                alone = conn.execute(sql, [plain]).fetchall()
                confined = conn.execute(sql, [f"{key} AND {plain}"]).fetchall()
                assert alone == confined, word
                compared += bool(alone)
        assert compared >= 6
    finally:
        conn.close()


def test_the_one_tenant_plan_is_taken_only_when_the_scopes_hold_everything(
    tmp_path: Path,
) -> None:
    with hivemem.open(tmp_path / "two.db", embedder="none") as store:
        _fill(store, "team")
        alone = _term_matches(store, "kestrel backup", "team")
        _fill(store, "other", copies=2)
        shared = _term_matches(store, "kestrel backup", "team")
    key = termcounts.scope_filter(["team"])
    assert alone == ['text : "kestrel"', 'text : "backup"']
    assert shared == [f'{key} AND text : "kestrel"', f'{key} AND text : "backup"']


def test_wrong_scope_counts_never_let_another_scopes_rows_through(tmp_path: Path) -> None:
    """Should ``scope_chunks`` say the scopes hold everything while another scope has
    chunks (a count gone wrong), the MATCH is unconfined, and the rows' filter is what
    keeps the other scope out."""
    path = tmp_path / "drift.db"
    with hivemem.open(path, embedder="none") as store:
        _fill(store, "team", copies=5)
        secret = store.scope("other").save("kestrel backup codes are in the red binder")
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "DELETE FROM scope_chunks WHERE scope_key = ?", [termcounts.scope_key("other")]
        )
        conn.commit()
    finally:
        conn.close()
    with hivemem.open(path, embedder="none") as store:
        assert _term_matches(store, "red binder", "team") == ['text : "red"', 'text : "binder"']
        for question in [*QUESTIONS, "red binder codes", "kestrel backup codes"]:
            hits = store.scope("team").search(question, limit=50)
            assert secret.id not in {h.memory.id for h in hits}
            assert all(h.memory.scope == "team" for h in hits)
        assert [h.memory.id for h in store.scope("other").search("red binder")] == [secret.id]


def _views(store: hivemem.Store, question: str, scope: str) -> tuple[Any, list[str]]:
    """``keyword_scope``'s view of ``question``'s terms in ``scope`` (no read view: no
    counts kept from an earlier search), and the statements it ran."""
    backend = store._backend
    read = backend._read
    seen: list[str] = []

    def traced(sql: str, params: Any = (), **kwargs: Any) -> Any:
        seen.append(sql)
        return read(sql, params, **kwargs)

    terms = textmod.query_terms(question, 16)
    backend._read = traced
    try:
        view = backend.keyword_scope(
            [scope], terms, Query(text=question, limit=10), datetime.now(UTC)
        )
    finally:
        del backend._read
    return view, seen


def _vocab(path: Path, stems: list[str]) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            f"SELECT term, doc FROM chunks_vocab WHERE term IN ({', '.join('?' * len(stems))})",
            stems,
        ).fetchall()
    finally:
        conn.close()
    return {stem: dict(rows).get(stem, 0) for stem in stems}


def test_one_tenant_counts_its_terms_from_its_own_matches(tmp_path: Path) -> None:
    """Unconfined, each term's matches are its rows in the whole index: the statement
    leaves ``chunks_vocab`` out and its counts are exactly ``chunks_vocab``'s."""
    path = tmp_path / "own.db"
    with hivemem.open(path, embedder="none") as store:
        _fill(store, "team")
        for gone in store.scope("team").list(limit=3):  # FTS5 delete markers too
            store.scope("team").purge(gone.id)
        checked = 0
        for question in [*QUESTIONS, "kestrel schedule nightly thursday absent"]:
            view, statements = _views(store, question, "team")
            assert not any("chunks_vocab" in sql for sql in statements), question
            stems = sorted(view._vocab)
            assert dict(view._vocab) == _vocab(path, stems)
            assert view.stats.postings == view.stats.doc_freq
            checked += sum(1 for n in view._vocab.values() if n)
        assert checked >= 8
        # A second tenant: confined MATCHes, whose counts are the scope's: asked again.
        _fill(store, "other", copies=2)
        view, statements = _views(store, "kestrel backup", "team")
        assert any("chunks_vocab" in sql for sql in statements)
        assert dict(view._vocab) == _vocab(path, sorted(view._vocab))


def test_a_term_shaped_like_a_scope_key_is_counted_by_chunks_vocab(tmp_path: Path) -> None:
    """A scope key's token is in every row's key column and in no text: counted from
    the text matches it would seem absent, so such a term keeps ``chunks_vocab``."""
    path = tmp_path / "key.db"
    key = termcounts.scope_key("team")
    with hivemem.open(path, embedder="none") as store:
        _fill(store, "team", copies=3)
        view, statements = _views(store, f"kestrel {key}", "team")
        assert any("chunks_vocab" in sql for sql in statements)
        assert view._vocab[key] == len(TURNS) * 3
        assert dict(view._vocab) == _vocab(path, sorted(view._vocab))
