"""The keyword side of ``SQLiteBackend``: the two plans of ``keyword_search`` (see its
docstring), and the term statistics and matched terms of the keyword lane. Mixins of the
backend, kept apart so the data-access module stays under 800 lines. They issue SQL
through the backend's own ``_read`` and so belong to the one data-access layer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...types import Query
from .. import scratch
from ..protocols import ChunkMatch, TermStats
from ..rows import placeholders
from . import termcounts
from .neighbours import ONCE
from .termcounts import BM25

_RANK_PAGE_MAX = 4096  # widest FTS-only page before keyword_search filters in one statement
_NEWEST_PAGE = 4  # newest-first keyword search reads this many times the rows it returns


class KeywordPlans:
    """``_keyword_plans`` and its first plan, ``_rank_then_filter``."""

    _read: Any

    def _keyword_plans(
        self,
        query: Query,
        match: str,
        filters: str,
        filter_params: list[Any],
        limit: int,
        newest_first: bool,
    ) -> list[ChunkMatch]:
        """The two plans of ``keyword_search`` (see there)."""
        found = None
        if not (query.sessions or query.tags):
            found = self._rank_then_filter(match, filters, filter_params, limit, newest_first)
        if found is None:
            # Newest first: FTS5 walks the doclists by rowid and scores only the rows
            # it returns; ordered by score, it must score every match first.
            order = "c.id DESC" if newest_first else "score DESC, c.id"
            rows = self._read(
                f"SELECT c.id, c.memory_id, c.seq, c.text, -{BM25} AS score "
                "FROM chunks_fts CROSS JOIN chunks c ON c.id = chunks_fts.rowid "
                "CROSS JOIN memories m ON m.id = c.memory_id "
                f"WHERE chunks_fts MATCH ? AND {filters} "
                f"ORDER BY {order} LIMIT ?",
                [match, *filter_params, limit * (_NEWEST_PAGE if newest_first else 1)],
                raw=True,
            )
            rows.sort(key=lambda r: (-r[4], r[0]))
            found = [ChunkMatch(r[0], r[1], r[2], r[3], r[4]) for r in rows[:limit]]
        return found

    def _rank_then_filter(
        self,
        match: str,
        filters: str,
        filter_params: Sequence[Any],
        limit: int,
        newest_first: bool = False,
    ) -> list[ChunkMatch] | None:
        """The first plan of ``keyword_search``; ``None`` when the filters keep so few of
        the best-ranked chunks that the one-statement plan is the cheaper way."""
        page = limit * (_NEWEST_PAGE if newest_first else 1)
        order = "rowid DESC" if newest_first else "score DESC, rowid"
        while True:
            # One statement: the page ranked on the index alone (materialised first, so
            # only its rows are joined), each row with its chunk and whether it passes.
            rows = self._read(
                f"WITH r (id, score) AS {ONCE}(SELECT rowid, -{BM25} AS score "
                f"FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY {order} LIMIT ?) "
                "SELECT r.id, r.score, c.memory_id, c.seq, c.text, "
                f"CASE WHEN m.id IS NOT NULL AND {filters} THEN 1 ELSE 0 END FROM r "
                "LEFT JOIN chunks c ON c.id = r.id LEFT JOIN memories m ON m.id = c.memory_id",
                [match, page, *filter_params],
                raw=True,
            )
            ranked = sorted(((r[0], r[1]) for r in rows), key=lambda r: (-r[1], r[0]))
            if not ranked:
                return []
            passed = {r[0]: (r[0], r[2], r[3], r[4]) for r in rows if r[5]}
            if len(passed) >= limit or len(ranked) < page:  # enough, or every match seen
                out = []
                for chunk_id, score in ranked:
                    row = passed.get(chunk_id)
                    if row is not None:
                        out.append(ChunkMatch(row[0], row[1], row[2], row[3], score))
                        if len(out) == limit:
                            break
                return out
            # Trigger: filters dropped too many. Why: a wider page is one more ranking
            # pass. Outcome: widen to what the observed pass rate needs, or give up.
            needed = page * 2 * limit // max(1, len(passed)) if passed else _RANK_PAGE_MAX + 1
            if needed > _RANK_PAGE_MAX:
                return None
            page = max(page * 4, needed)


class KeywordStats:
    """``term_stats`` and ``matched_terms`` (see ``store/termcounts.py``)."""

    _read: Any
    _read_memo: Any
    _lock: Any
    _cache_lock: Any
    _doc_freq: dict[str, tuple[int, int]]
    _scope_freq: dict[tuple[tuple[str, ...], str], tuple[int, int]]
    _postings: termcounts.Postings
    _version: Any
    _still: Any

    def _stems(self, terms: Sequence[str]) -> dict[str, list[str]]:
        """Each term as the keyword index tokenizes it (porter stems)."""
        return {term: list(scratch.stems(term)) for term in terms}

    def term_stats(self, terms: Sequence[str], scopes: Sequence[str] | None = None) -> TermStats:
        """Document frequencies of ``terms`` (a term's count is its most frequent stem's).

        With ``scopes`` the frequencies and the chunk total are those of these scopes
        (``store/termcounts.py``: scores never depend on other tenants; when the scopes
        hold the whole index, its own counts), and ``postings`` are the whole index's
        (what an unconfined MATCH walks, for plan choices). Counts are cached per stem:
        counting a stem's chunks walks its postings list (~0.2 ms for a common term at
        100k chunks); a cached count is reused until the index (or, per scope, the
        scopes' chunks) has grown or shrunk by more than 1% since it was read."""
        if not terms:
            return TermStats(0, {})
        stems = self._stems(terms)
        with self._cache_lock():
            version = self._version()  # (before the reads: ``_scoped_freq`` keeps by it)
            total = self._read_memo("SELECT COALESCE(MAX(id), 0) FROM chunks")[0][0]
            scoped: dict[str, int] | None = None
            if scopes is not None:  # first: fresh whole-index counts also serve postings
                scoped_total, everything = termcounts.chunk_totals(self._read_memo, scopes)
                scoped = self._scoped_freq(
                    scopes, terms, stems, (scoped_total, everything, total), version
                )
            tolerance = max(50, total // 100)
            freq: dict[str, int] = {}
            stale = []
            for stem in sorted({s for group in stems.values() for s in group}):
                cached = self._doc_freq.get(stem)
                if cached is not None and abs(total - cached[1]) <= tolerance:
                    freq[stem] = cached[0]
                else:
                    stale.append(stem)
            if stale:
                freq.update(self._vocab_counts(stale, total))
        postings = termcounts.per_term(stems, freq)
        if scoped is None:
            return TermStats(total, postings, postings)
        return TermStats(scoped_total, termcounts.per_term(stems, scoped), postings)

    def _vocab_counts(self, stems: Sequence[str], total: int) -> dict[str, int]:
        """Whole-index chunk counts of ``stems`` (``chunks_vocab``), noted in the
        postings cache at index size ``total``."""
        rows = dict(
            self._read(
                f"SELECT term, doc FROM chunks_vocab WHERE term IN ({placeholders(stems)})",
                list(stems),
            )
        )
        if len(self._doc_freq) > 50_000:
            self._doc_freq.clear()
        out = {stem: int(rows.get(stem, 0)) for stem in stems}
        for stem, n in out.items():
            self._doc_freq[stem] = (n, total)
        return out

    def _scoped_freq(
        self,
        scopes: Sequence[str],
        terms: Sequence[str],
        stems: dict[str, list[str]],
        totals: tuple[int, int, int],
        version: Any,
    ) -> dict[str, int]:
        """Chunks of ``scopes`` holding each stem of ``terms``: the whole index's counts
        (``chunks_vocab``) when the scopes hold every chunk, else counted in the keyword
        index (``termcounts.count``); cached per (scopes, stem) until the scopes' chunk
        total has moved by more than 1% since (so exact below 100 chunks). ``totals``:
        the scopes' chunks, every scope's and the index's size, read under ``version``;
        counts read across a later commit (outside a snapshot) are not kept beside them
        (``_still``: one stored with an older total held more chunks than the scope)."""
        scoped_total, everything, total = totals
        key = tuple(sorted(set(scopes)))
        tolerance = scoped_total // 100
        out: dict[str, int] = {}
        stale: dict[str, str] = {}  # stem -> the word to count it by
        for term in terms:
            group = stems[term]
            for stem, word in zip(group, termcounts.words_of(term, group) or group, strict=True):
                cached = self._scope_freq.get((key, stem))
                if cached is not None and abs(scoped_total - cached[1]) <= tolerance:
                    out[stem] = cached[0]
                else:
                    stale[stem] = word
        if not stale:
            return out
        if scoped_total == everything:  # the visible scopes hold the whole index
            fresh = self._vocab_counts(list(stale), total)
        elif scoped_total * len(stale) <= termcounts.SMALL:  # rows kept for matched_terms
            keys = [termcounts.scope_key(s) for s in scopes]
            fresh = {
                stem: len(self._postings.rows(self._read, version, keys, w, self._still))
                for stem, w in stale.items()
            }
        else:
            fresh = {stem: termcounts.count(self._read, scopes, w) for stem, w in stale.items()}
        if not self._still(version):
            return {**out, **fresh}
        if len(self._scope_freq) > 50_000:
            self._scope_freq.clear()
        for stem, n in fresh.items():
            self._scope_freq[(key, stem)] = (n, scoped_total)
        return {**out, **fresh}

    def matched_terms(
        self,
        chunk_ids: Sequence[int],
        terms: Sequence[str],
        texts: Mapping[int, str] | None = None,
    ) -> dict[int, set[str]]:
        """Which of ``terms`` each chunk matches, as the keyword index would decide (FTS5
        phrase match of the quoted term). Chunks of small scopes: asked of the index,
        per term over their scopes' rows (``termcounts.matched_in_index``). Otherwise
        the chunks' texts are matched as the same tokenizer matches them (``scratch.held``:
        their words' stems, else a scratch index): asking the big index per chunk makes
        FTS5 seek every term's whole doclist once per chunk (about a millisecond each at
        100k chunks). ``texts``: those the caller read with the chunks (the others are
        read here)."""
        out: dict[int, set[str]] = {cid: set() for cid in chunk_ids}
        if not chunk_ids or not terms:
            return out
        ids = list(chunk_ids)
        with self._cache_lock():
            found = self._postings.matched(
                self._read_memo, self._version(), ids, terms, self._still
            )
        if found is not None:
            for cid, held in found.items():
                out[cid] |= held
            return out
        given = texts or {}
        known = [(cid, given[cid]) for cid in dict.fromkeys(ids) if cid in given]
        missing = [cid for cid in ids if cid not in given]
        if missing:
            known += self._read(
                f"SELECT id, text FROM chunks WHERE id IN ({placeholders(missing)})", missing
            )
        for cid, terms_held in scratch.held(known, terms).items():
            out[cid] |= terms_held
        return out
