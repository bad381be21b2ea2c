"""BM25 over the visible scopes' chunks, for the chunks FTS5 found.

FTS5's ``bm25()`` reads its statistics (rows, average length, rows holding each phrase)
from the whole index: every tenant's rows. Its order then moved when another scope wrote
(issue 25: a scope-bound token could watch another tenant's writes through the keyword
lane's ranks and raw scores). When the visible scopes do not hold the whole index, the
chunks FTS5 returned are scored again here with FTS5's own formula (k1 1.2, b 0.75,
``idf = ln((N - n + 0.5) / (n + 0.5))``, at least 1e-6; a row's length counts every
column's tokens, the scope key's too) over the visible scopes' statistics:

- N: their chunks (``scope_chunks``, one row a scope);
- n: their chunks holding the phrase (the lane's cached per-scope counts for a plain
  term; a count of the scope-confined MATCH for a phrase of several tokens, cached until
  the file changes);
- the average length: FTS5's per-row sizes (``chunks_fts_docsize``) summed over their
  chunks, cached per scope set until its chunk total moves by more than 1% (one walk of
  the scopes' rows, then a lookup);
- a chunk's length: FTS5's own (``chunks_fts_docsize``); its term frequencies: the
  words of its text that can stem to a query term, through the index's own tokenizer
  (``scratch.term_counts``), for the chunks FTS5 returned only.

Which chunks are scored: when the phrases' per-scope counts (or the scopes' chunks) add
up to at most ``ALL_MATCHES_MAX``, every match of the scopes (then cut to what was
asked), so the choice is the scopes' own too. A store of one scope (and any search whose
scopes hold every chunk) keeps FTS5's numbers unchanged, at no cost. What stays here:
past ``ALL_MATCHES_MAX`` matches in the visible scopes, which chunks FTS5 returns is
still chosen by the whole index's BM25 (docs/retrieval.md) — but the keyword lane asks
this only of scopes past ``termcounts.SMALL`` (chunks × terms): a smaller scope's every
match is scored over its own statistics (``keyword_scope.py``). Cost, measured on 4 scopes of 200
turns of ~1 kB searched one at a time: +1.5 ms CPU a search at limit 10 (6.1 -> 7.6),
+1.4 ms at limit 50 (11.0 -> 12.4); none where the scopes hold the whole index.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import scratch
from ..fts5 import to_fts5
from ..keyword_query import KeywordQuery, Phrase, phrase_tokens, phrases_of
from ..protocols import ChunkMatch
from ..rows import placeholders
from . import termcounts

K1, B = 1.2, 0.75
ALL_MATCHES_MAX = 60  # scopes' matches up to which all are scored here
_TERM_CACHE_MAX = 100_000  # chunks whose term counts are kept


@dataclass(frozen=True)
class ScopeStats:
    """The visible scopes' BM25 statistics for one query's phrases."""

    chunks: int  # N
    average_length: float
    phrases: tuple[tuple[tuple[str, bool], ...], ...]  # each phrase's tokens
    idf: tuple[float, ...]
    matches_at_most: int  # the phrases' chunk counts summed, at most the scopes' chunks


class ScopedBM25:
    """``_scope_stats`` and ``_scoped_bm25`` (a mixin of the backend beside
    ``KeywordStats``)."""

    _read: Any
    _read_memo_raw: Any
    _cache_lock: Any
    _version: Any
    _still: Any
    _scoped_freq: Any
    _scope_lengths: dict[tuple[str, ...], tuple[int, int]]  # keys -> (tokens, chunks)
    _phrase_hits: dict[tuple[Any, tuple[str, ...], str], int]
    _term_cache: dict[tuple[int, int], dict[str, int]]  # (chunk, text hash) -> counts

    def _scope_stats(
        self, read: Any, scopes: Sequence[str], keywords: KeywordQuery
    ) -> ScopeStats | None:
        """The statistics to score ``keywords`` over ``scopes``; None when the scopes
        hold the whole index (FTS5's own numbers are theirs then)."""
        version = self._version()  # (before the reads it keeps counts by: ``_hits``)
        scoped, everything = termcounts.chunk_totals(self._read_memo_raw, scopes)
        if scoped >= everything or scoped == 0:
            return None
        phrases = [p for p in phrases_of(keywords.tree()) if phrase_tokens(p)]
        if not phrases:
            return None
        keys = tuple(sorted({termcounts.scope_key(s) for s in scopes}))
        with self._cache_lock():
            hits = [
                self._hits(read, scopes, keys, p, (scoped, everything), version) for p in phrases
            ]
            avgdl = self._average_length(read, keys, scoped)
        return ScopeStats(
            scoped,
            avgdl,
            tuple(tuple(phrase_tokens(p)) for p in phrases),
            tuple(termcounts.idf(scoped, n) for n in hits),
            min(sum(hits), scoped),
        )

    def _scoped_bm25(
        self, read: Any, stats: ScopeStats, found: list[ChunkMatch]
    ) -> list[ChunkMatch]:
        """``found`` scored by BM25 over the scopes of ``stats``, best first (ties:
        chunk id). A row's length is FTS5's own (``chunks_fts_docsize``, every column);
        the frequency of a phrase of one whole token (every plain query term) is
        counted by ``scratch.term_counts``; the texts of a query with a longer phrase or
        a prefix are tokenized whole."""
        if not found:
            return found
        ids = [m.chunk_id for m in found]
        lengths = {
            row[0]: _varint_sum(row[1])
            for row in read(
                f"SELECT id, sz FROM chunks_fts_docsize WHERE id IN ({placeholders(ids)})", ids
            )
        }
        texts = [(m.chunk_id, m.text) for m in found]
        simple = all(len(p) == 1 and not p[0][1] for p in stats.phrases)
        if simple:
            stems = [p[0][0] for p in stats.phrases]
            counted = self._term_counts(texts, stems)
        else:
            lists = scratch.token_lists(texts)
        out = []
        for match in found:
            if simple:
                tfs = [counted[match.chunk_id].get(stem, 0) for stem in stems]
            else:
                words = lists.get(match.chunk_id, ())
                tfs = [_occurrences(words, p) for p in stats.phrases]
            length = lengths.get(match.chunk_id, 1)
            norm = K1 * (1 - B + B * length / stats.average_length)
            score = 0.0
            for weight, tf in zip(stats.idf, tfs, strict=True):
                if tf:
                    score += weight * tf * (K1 + 1) / (tf + norm)
            out.append(ChunkMatch(match.chunk_id, match.memory_id, match.seq, match.text, score))
        out.sort(key=lambda m: (-m.bm25, m.chunk_id))
        return out

    def _term_counts(
        self, texts: list[tuple[int, str]], stems: list[str]
    ) -> dict[int, dict[str, int]]:
        """``scratch.term_counts``, kept per (chunk, text, stem): a chunk's text never
        changes (its hash guards an id SQLite reused), and a scope's searches share
        many terms."""
        cache = self._term_cache
        out: dict[int, dict[str, int]] = {}
        missing: list[tuple[int, str]] = []
        for chunk_id, text in texts:
            key = (chunk_id, hash(text))
            known = cache.get(key)
            if known is not None and all(stem in known for stem in stems):
                out[chunk_id] = known
            else:
                missing.append((chunk_id, text))
        if missing:
            if len(cache) > _TERM_CACHE_MAX:
                cache.clear()
            for (chunk_id, text), (_, found) in zip(
                missing, scratch.term_counts(missing, stems).items(), strict=True
            ):
                key = (chunk_id, hash(text))
                merged = {**cache.get(key, {}), **{stem: found.get(stem, 0) for stem in stems}}
                cache[key] = out[chunk_id] = merged
        return out

    def _hits(
        self,
        read: Any,
        scopes: Sequence[str],
        keys: tuple[str, ...],
        phrase: Phrase,
        totals: tuple[int, int],
        version: Any,
    ) -> int:
        """Chunks of the scopes holding ``phrase``; ``totals`` (the scopes' chunks, every
        scope's) read under ``version``."""
        scoped, everything = totals
        tokens = phrase_tokens(phrase)
        if len(phrase.pieces) == 1 and len(tokens) == 1 and not tokens[0][1]:
            text = phrase.pieces[0].text
            stem = tokens[0][0]
            counts = self._scoped_freq(
                scopes, [text], {text: [stem]}, (scoped, everything, everything), version
            )
            return int(counts.get(stem, 0))
        expression = to_fts5(KeywordQuery(expression=phrase))
        at = (version, keys, expression)
        kept = self._phrase_hits.get(at)
        if kept is not None:
            return kept
        if len(self._phrase_hits) > 4096:
            self._phrase_hits.clear()
        match = f"{termcounts.scope_filter(scopes)} AND text : ({expression})"
        count = int(read("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", [match])[0][0])
        if self._still(version):  # (outside a snapshot: no commit came before the read)
            self._phrase_hits[at] = count
        return count

    def _average_length(self, read: Any, keys: tuple[str, ...], scoped: int) -> float:
        """The scopes' average row length in tokens (every column, as FTS5 counts)."""
        cached = self._scope_lengths.get(keys)
        if cached is None or abs(cached[1] - scoped) > scoped // 100:
            where = "scope_key : (" + " OR ".join(f'"{key}"' for key in keys) + ")"
            sizes = read(
                "SELECT d.sz FROM chunks_fts CROSS JOIN chunks_fts_docsize d "
                "ON d.id = chunks_fts.rowid WHERE chunks_fts MATCH ?",
                [where],
            )
            cached = (sum(_varint_sum(row[0]) for row in sizes), len(sizes))
            if len(self._scope_lengths) > 1024:
                self._scope_lengths.clear()
            self._scope_lengths[keys] = cached
        tokens, rows = cached
        return tokens / rows if rows and tokens else 1.0


def _occurrences(words: Sequence[str], phrase: Sequence[tuple[str, bool]]) -> int:
    """How often ``phrase`` (tokens, each maybe a prefix) occurs in ``words``."""
    size = len(phrase)
    count = 0
    for start in range(len(words) - size + 1):
        for offset, (token, prefix) in enumerate(phrase):
            word = words[start + offset]
            if not (word.startswith(token) if prefix else word == token):
                break
        else:
            count += 1
    return count


@functools.lru_cache(maxsize=8192)
def _varint_sum(blob: bytes | None) -> int:
    """The sum of the SQLite varints in an FTS5 ``docsize`` blob (a row's tokens per
    column). Kept per blob: a scope's ~600 rows hold ~260 distinct blobs (two or three
    bytes each), and a lookup costs a quarter of the decoding (a scope's first search
    decodes every row's for its average length, ~0.2 ms; a search ~100)."""
    total, value = 0, 0
    for byte in blob or b"":
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            total += value
            value = 0
    return total
