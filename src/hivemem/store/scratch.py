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
import re
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
# The tokenizer's token characters: letters and digits, and the combining marks its
# ``remove_diacritics`` strips inside a token ("e\u0301yed" is one token, "eyed"); any
# other mark separates, as ``_`` does (tests/test_keyword_scope.py asks the tokenizer).
DIACRITICS = "\u0300-\u0304\u0306-\u030c\u030f\u0311\u031b\u0323-\u0328\u032d\u032e\u0330\u0331"
_WORD = re.compile(f"(?:[^\\W_]|[{DIACRITICS}])+")
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


@functools.lru_cache(maxsize=65_536)
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


def term_counts(
    texts: Sequence[tuple[int, str]], terms: Sequence[str]
) -> dict[int, dict[str, int]]:
    """For each ``(id, text)``: how often each of ``terms`` (index tokens: porter stems)
    occurs in it, as the keyword index counts. Only the words that could stem to one of
    them are tokenized (``word_stems``, kept): those starting with ``_word_filter``'s
    prefix of a term, and any word with a letter outside ASCII (diacritics are removed
    before stemming). Tokenizing every word of a kilobyte text costs many times more."""
    wanted = set(terms)
    out: dict[int, dict[str, int]] = {rowid: {} for rowid, _ in texts}
    if not wanted:
        return out
    starts, candidates = _word_filter(wanted)
    words_of = {}
    for rowid, text in texts:
        if text.isascii():
            words = candidates.findall(text.lower().replace("_", " "))
        else:  # case folding outside ASCII is the tokenizer's: words as written
            words = [
                w for w in _WORD.findall(text) if not w.isascii() or w.lower().startswith(starts)
            ]
        words_of[rowid] = words
    tokens_of = word_stems({w for words in words_of.values() for w in words})
    for rowid, words in words_of.items():
        found = out[rowid]
        for word in words:
            for token in tokens_of[word]:
                if token in wanted:
                    found[token] = found.get(token, 0) + 1
    return out


def _word_filter(wanted: set[str]) -> tuple[tuple[str, ...], re.Pattern[str]]:
    """The prefixes a word must start with to stem to one of ``wanted`` (index tokens),
    and a pattern finding such words in a lowercased ASCII text whose ``_`` are spaces
    (the tokenizer's separator: ``\\b`` then bounds its words).

    A stem's prefix is the stem less its last two letters, and at least its first two:
    porter rewrites at most the last two letters of what it keeps (bay -> bai, nobility
    -> nobl). A stem of one or two letters keeps its first letter only: its last may be
    a ``y`` made ``i`` (eyed -> ei), and with two letters that was half its prefix."""
    starts = tuple(
        sorted(
            {t[:1] if len(t) <= 2 else t[: max(2, len(t) - 2)] for t in wanted},
            key=lambda t: (-len(t), t),
        )
    )
    return starts, re.compile(r"\b(?:" + "|".join(map(re.escape, starts)) + r")\w*")


def held(texts: Sequence[tuple[int, str]], terms: Sequence[str]) -> dict[int, set[str]]:
    """``matches``, without the scratch index where it is not needed: a term the index
    stores as one token is held by an ASCII text exactly when one of the text's words
    stems to that token (its quoted phrase is that one token); those words are found as
    ``term_counts`` finds them (``_word_filter``; the words' stems are kept). A text with
    a letter outside ASCII, and a term of several tokens (a phrase), are matched in the
    scratch index as before.

    Trigger: the keyword lane's held terms of a wide scope's found chunks and of their
    window's joiners (~90 short texts a search at 20,000 memories). Why: inserting the
    texts into the scratch index tokenizes every word, and each term is a ``MATCH``
    (~0.8 ms a search); the words that can stem to a term are few, their stems kept.
    Outcome: the same sets (tested against ``matches``)."""
    out: dict[int, set[str]] = {rowid: set() for rowid, _ in texts}
    single: dict[str, str] = {}  # term -> its one index token
    phrases: list[str] = []
    for term in terms:
        group = stems(term)
        if len(group) == 1:
            single[term] = group[0]
        else:
            phrases.append(term)
    plain = [(rowid, text) for rowid, text in texts if text.isascii()]
    other = [(rowid, text) for rowid, text in texts if not text.isascii()]
    if single and plain:
        _, candidates = _word_filter(set(single.values()))
        words_of = {
            rowid: candidates.findall(text.lower().replace("_", " ")) for rowid, text in plain
        }
        tokens_of = word_stems({w for words in words_of.values() for w in words})
        for rowid, words in words_of.items():
            found = {token for word in words for token in tokens_of[word]}
            if found:
                out[rowid].update(term for term, token in single.items() if token in found)
    if other:
        for rowid, terms_held in matches(other, terms).items():
            out[rowid] |= terms_held
    if plain and phrases:
        for rowid, terms_held in matches(plain, phrases).items():
            out[rowid] |= terms_held
    return out


_WORD_STEMS: dict[str, tuple[str, ...]] = {}


def word_stems(words: set[str] | Sequence[str]) -> dict[str, tuple[str, ...]]:
    """``stems`` of each of ``words``: the ones not seen before tokenized together, in
    one pass of the scratch index (kept, up to 200,000 words)."""
    out = {w: _WORD_STEMS[w] for w in words if w in _WORD_STEMS}
    new = [w for w in words if w not in out]
    if not new:
        return out
    found: dict[int, list[tuple[int, str]]] = {}
    with _lock:
        conn = _connection()
        conn.execute("BEGIN")
        try:
            conn.executemany(
                "INSERT INTO scratch (rowid, t) VALUES (?, ?)", list(enumerate(new, start=1))
            )
            for doc, term, offset in conn.execute(
                "SELECT doc, term, offset FROM scratch_vocab"
            ).fetchall():
                found.setdefault(doc, []).append((offset, term))
        finally:
            conn.execute("ROLLBACK")
    if len(_WORD_STEMS) > 200_000:
        _WORD_STEMS.clear()
    for i, word in enumerate(new, start=1):
        out[word] = _WORD_STEMS[word] = tuple(t for _, t in sorted(found.get(i, [])))
    return out


def token_lists(texts: Sequence[tuple[int, str]]) -> dict[int, tuple[str, ...]]:
    """``tokens`` of each ``(id, text)`` (whole texts: ~0.7 ms a kilobyte)."""
    return {rowid: tokens(text) for rowid, text in texts}


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
