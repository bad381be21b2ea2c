"""The keyword lane of a small scope in one statement (issue 24, step 1 of the plan in
docs/retrieval.md "What one search costs").

Where the visible scopes hold few chunks (chunks × query terms at most
``termcounts.SMALL``: a conversation, a LongMemEval haystack), the lane used to ask the
index in many small statements: each term's document frequency, the FTS5 page ranked by
BM25, the rows and their filters, the chunks' lengths, which terms each found chunk
holds, the scopes' sizes, and it tokenized the found chunks' texts again to count each
term in them (``scratch.term_counts``, ~5 ms on the first query of a scope of
kilobyte-long turns). ``keyword_scope`` asks one statement instead: for every query term,
the scopes' chunks that match it (the quoted term, confined to the scopes, as
``termcounts.Postings`` read them; unconfined where the scopes hold the whole index)
with FTS5's own ``bm25`` of that one term; each such chunk's memory, sequence, text,
FTS5 length and whether it passes the query's filters; the whole index's row count per
term stem (``chunks_vocab``) and FTS5's averages record.
Where the stems' whole-index counts are already kept (``term_stats``' cache), the terms
the lane will search for are known before the statement (``choose``): only their
matches get FTS5's score and their rows, the other terms' matches just say which chunks
hold them (a common term matches most of a scope); should the fresh counts choose
otherwise, or the lane search the other terms too, those are asked then (``_ensure``).
The stems' ``chunks_vocab`` counts, exact, are kept per version of the file: a search
whose stems were all read since the last write leaves them out (``_exact_vocab``), and
so does one whose MATCHes are unconfined (one tenant): each term's matches are then its
rows in the whole index, ``chunks_vocab``'s very count (a stem shaped like a scope key's
token excepted: that column holds it in every row).
Everything the lane asked before is then worked out from these rows (``ScopeView``), with
the same arithmetic, so the results are the same (the dump comparison of the evaluation
suites is the gate, docs/retrieval.md), but for the side channel below:

- a term's document frequency in the scopes: how many chunks matched it;
- which terms a chunk holds: the terms it matched (the phrase match of ``Postings``);
- FTS5's BM25 of the lane's query (``"a" OR "b"``) for a chunk: the sum, in the query's
  order, of its single-term scores (FTS5 adds each phrase's part in that order, and a
  phrase a row lacks adds exactly 0);
- how often a term occurs in a chunk (the scoped BM25's term frequency,
  ``scoped_bm25.py``): FTS5's single-term score solved for it, ``tf = s·K / (idf·(k1+1)
  − s)`` with FTS5's own idf, length and average (all in the rows above), rounded, and
  checked by recomputing the score; any check that fails counts the texts as before.

One thing differs, on purpose (issue 25's side channel): where the scopes do not hold
the whole index, *every* match of the scopes is scored over their own statistics (the
scoped BM25) and the best are kept, where ``keyword_search`` scores all only up to
``ALL_MATCHES_MAX`` matches and past that keeps the whole index's BM25 best. So for a
small scope which chunks are kept no longer depends on other tenants' rows. (Which
query terms find candidates still follows the whole index's postings, the plan budget
of ``selective_terms``, as before.)

Not answered here (``None``, the caller asks the backend as before): a caller's FTS5
syntax, a term the index splits into several tokens, newest-first searches (terms so
common their postings pass ``keyword_match_budget``). A scope too big for the one
statement (``WideView``) asks the term statistics and the FTS5 page as before, its held
terms of the texts at hand directly (``scratch.held``), and its window in one statement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ... import text as textmod
from ...types import Query
from .. import scratch
from ..keyword_query import KeywordQuery
from ..protocols import ChunkMatch, TermStats
from ..rows import placeholders
from . import neighbours, termcounts
from .neighbours import ONCE
from .scoped_bm25 import K1, B, _varint_sum

_RAW_BM25 = "bm25(chunks_fts, 1.0, 0.0)"  # FTS5's sign: lower is better
_CHECK = 1e-9  # relative difference a recomputed single-term score may show
_VOCAB_MAX = 50_000  # stems' exact counts kept for one version of the file


class KeywordScope:
    """``keyword_scope`` (a mixin of the backend beside ``KeywordStats``)."""

    _read: Any
    _read_memo: Any
    _cache_lock: Any
    _doc_freq: dict[str, tuple[int, int]]
    _scope_clause: Any
    _filter_sql: Any
    _average_length: Any
    _term_counts: Any
    _role: Any
    _version: Any
    _pool: Any
    _vocab_seen: tuple[Any, dict[str, int]] | None = None  # (version, stem -> rows)
    term_stats: Any

    def keyword_scope(
        self,
        scopes: Sequence[str],
        terms: Sequence[str],
        query: Query,
        now: datetime,
        choose: Callable[[Mapping[str, int]], Sequence[str]] | None = None,
    ) -> ScopeView | WideView | None:
        """The keyword lane's reads for ``terms`` in ``scopes``: a small scope's in one
        statement (``ScopeView``, module docstring), a bigger one's as before but with
        the window in one statement (``WideView``); None where neither applies (the
        caller asks as before). ``choose(postings)``: the terms the lane will search
        for, given the whole index's counts (``selective_terms``)."""
        terms = list(terms)
        if not terms or len(set(terms)) != len(terms):
            return None
        # (not the raw reads of ``keyword_search``: nothing here is a caller's syntax,
        # so a driver error is a damaged file, ``StoreError``)
        scoped, everything = termcounts.chunk_totals(self._read_memo, scopes)
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = (" AND ".join([clause, *where]), [*params, *extra])
        if scoped * len(terms) > termcounts.SMALL:
            return WideView(self, terms, self.term_stats(terms, scopes), filters)
        stems: list[str] = []
        for term in terms:
            group = scratch.stems(term)
            if len(group) != 1 or termcounts.words_of(term, group) != [term]:
                return None  # counted by another word than itself (KeywordStats)
            stems.append(group[0])
        if scoped == 0:
            return None
        # Trigger: the scopes hold every chunk of the index (one tenant). Why: the scope
        # keys' phrase then matches every row, yet FTS5's bm25 walks its doclist once per
        # term to weigh it (at weight 0): ~0.7 ms a search at 2,000 memories. Outcome:
        # the same rows and the same floats (the phrase added exactly 0), and the rows'
        # own filter (``m.scope``) still decides what is returned.
        confine = f"{termcounts.scope_filter(scopes)} AND " if scoped < everything else ""
        matches = [f"{confine}text : {textmod.fts_quote(term)}" for term in terms]
        scored = set(range(len(terms)))
        known = self._known_postings(stems) if choose is not None else None
        if choose is not None and known is not None:
            # Trigger: the stems' index counts are cached. Why: the terms that will find
            # candidates are then known, and FTS5's BM25 and the rows are needed for
            # their matches only (a common term's other matches just hold it).
            # Outcome: the others' matches without them (asked later if ever needed).
            wanted = set(choose({t: known[s] for t, s in zip(terms, stems, strict=True)}))
            scored = {i for i, t in enumerate(terms) if t in wanted}
        unique = sorted(set(stems))
        version = self._view_version()
        vocab = self._exact_vocab(version, unique)
        # Trigger: the MATCHes are unconfined (one tenant) and no stem has a scope key's
        # shape. Why: each term's matches are then its rows in the whole index, which is
        # what ``chunks_vocab`` counts (rows holding the stem; the scope key column holds
        # keys only), and counting them there walks each doclist once more (~0.3 ms a
        # search at 2,000 memories, every search while writes keep the file moving).
        # Outcome: the stems' counts are the statement's own (``ScopeView``).
        own = vocab is None and not confine and not any(map(termcounts.KEY_SHAPE.fullmatch, unique))
        sql, params = _matrix_sql(matches, scored, filters)
        if vocab is None and not own:
            sql += (
                "UNION ALL SELECT -2, NULL, doc, term, NULL, NULL, NULL, NULL FROM chunks_vocab "
                f"WHERE term IN ({placeholders(unique)}) "
            )
            params += unique
        rows = self._read(
            sql + "UNION ALL SELECT -3, NULL, NULL, NULL, NULL, NULL, block, NULL "
            "FROM chunks_fts_data WHERE id = 1",
            params,
        )
        view = ScopeView(
            self,
            scopes,
            terms,
            stems,
            (scoped, everything),
            (filters, matches, scored),
            rows,
            vocab,
            own,
        )
        if vocab is None:
            self._keep_vocab(version, {stem: view._vocab.get(stem, 0) for stem in unique})
            self._note_postings(view._vocab, unique)
        return view

    def _view_version(self) -> Any:
        """The file's version where this thread reads in a search's read view (its
        snapshot's counter and this connection's commits: no statement), else None."""
        role = self._role
        if self._pool is None or role.writing or role.reader is None or role.version is None:
            return None  # (without a read pool the version is a statement: keep nothing)
        return self._version()

    def _exact_vocab(self, version: Any, stems: Sequence[str]) -> dict[str, int] | None:
        """The whole index's row count of each of ``stems`` (``chunks_vocab``) as read
        under this very ``version`` of the file, or None when one was not.

        Trigger: a search in a read view whose stems an earlier search read under the
        same version (nothing written since). Why: counting a stem in ``chunks_vocab``
        walks its whole doclist (~0.2 ms a search over real long turns), and the counts
        are exact until the file changes (unlike ``_doc_freq``'s, which may be 1% old:
        FTS5's idf, which ``ScopeView._solved`` inverts, uses the exact ones). Outcome:
        the statement leaves ``chunks_vocab`` out."""
        if version is None:
            return None
        with self._cache_lock():
            seen = self._vocab_seen
            if seen is None or seen[0] != version:
                return None
            counts = seen[1]
            if any(stem not in counts for stem in stems):
                return None
            return {stem: counts[stem] for stem in stems}

    def _keep_vocab(self, version: Any, vocab: Mapping[str, int]) -> None:
        """``vocab``, read under ``version``, kept for ``_exact_vocab``."""
        if version is None:
            return
        with self._cache_lock():
            seen = self._vocab_seen
            if seen is None or seen[0] != version or len(seen[1]) > _VOCAB_MAX:
                seen = self._vocab_seen = (version, {})
            seen[1].update(vocab)

    def _known_postings(self, stems: Sequence[str]) -> dict[str, int] | None:
        """The stems' whole-index counts as ``term_stats`` keeps them (fresh within 1%
        of the index's size), or None when one is not kept."""
        with self._cache_lock():
            total = self._read_memo("SELECT COALESCE(MAX(id), 0) FROM chunks")[0][0]
            tolerance = max(50, total // 100)
            out = {}
            for stem in stems:
                cached = self._doc_freq.get(stem)
                if cached is None or abs(total - cached[1]) > tolerance:
                    return None
                out[stem] = cached[0]
        return out

    def _note_postings(self, vocab: Mapping[str, int], stems: Sequence[str]) -> None:
        """The fresh counts of ``keyword_scope`` noted where ``term_stats`` keeps them."""
        with self._cache_lock():
            total = self._read_memo("SELECT COALESCE(MAX(id), 0) FROM chunks")[0][0]
            if len(self._doc_freq) > 50_000:
                self._doc_freq.clear()
            for stem in stems:
                self._doc_freq[stem] = (vocab.get(stem, 0), total)

    def _window(
        self, memory_ids: Sequence[str], filters: tuple[str, list[Any]]
    ) -> tuple[dict[str, list[tuple[str, bool]]], list[tuple[str, int, int, str]]]:
        """``session_neighbours`` of ``memory_ids`` and, in the same statement, every
        chunk of the passing neighbours that are not among them, as (memory, sequence,
        chunk id, text) in memory and chunk order (as ``memory_chunks``): the window's
        joiners. (Tuples: only each joiner's first chunk becomes a ``ChunkMatch``.)"""
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}, []
        rows = self._read(
            neighbours.pairs_sql(ids, filters[0])
            + "SELECT 0, anchor, before, before IN ok, after, after IN ok FROM pairs "
            "UNION ALL SELECT 1, c.memory_id, c.id, c.seq, c.text, NULL FROM chunks c "
            "WHERE c.memory_id IN ok AND c.memory_id NOT IN (SELECT anchor FROM pairs)",
            [*ids, *filters[1]],
        )
        pairs = neighbours.sides([r[1:] for r in rows if r[0] == 0])
        chunks = sorted((r[1], r[3], r[2], r[4]) for r in rows if r[0] == 1)
        return pairs, chunks


def _matrix_sql(
    matches: Sequence[str], scored: set[int], filters: tuple[str, list[Any]], every: bool = True
) -> tuple[str, list[Any]]:
    """The per-term matches (``t``, ``id``, FTS5's single-term bm25 for the terms in
    ``scored``, else NULL; of every term, or of ``scored`` only) and the rows of the
    chunks with a score, as the first part of a compound SELECT of eight columns; its
    parameters."""
    asked = range(len(matches)) if every else sorted(scored)
    per_term = " UNION ALL ".join(
        f"SELECT {i}, rowid, {_RAW_BM25 if i in scored else 'NULL'} "
        "FROM chunks_fts WHERE chunks_fts MATCH ?"
        for i in asked
    )
    sql = (
        f"WITH h (t, id, s) AS {ONCE}({per_term}) "
        "SELECT t, id, s, NULL, NULL, NULL, NULL, NULL FROM h "
        "UNION ALL SELECT -1, c.id, NULL, c.memory_id, c.seq, c.text, d.sz, "
        f"CASE WHEN {filters[0]} THEN 1 ELSE 0 END FROM chunks c "
        "CROSS JOIN memories m ON m.id = c.memory_id "
        "LEFT JOIN chunks_fts_docsize d ON d.id = c.id "
        "WHERE c.id IN (SELECT id FROM h WHERE s IS NOT NULL) "
    )
    return sql, [*(matches[i] for i in asked), *filters[1]]


class Window:
    """The keyword lane's window reads: each candidate's passing session neighbours,
    and for the neighbours that were no candidate (the joiners) the query terms their
    chunks hold (a bit mask over the view's terms, bit i for ``terms[i]``) and their
    first chunk."""

    __slots__ = ("first", "held", "pairs")

    def __init__(
        self,
        pairs: dict[str, list[tuple[str, bool]]],
        held: dict[str, int],
        first: dict[str, ChunkMatch],
    ) -> None:
        self.pairs, self.held, self.first = pairs, held, first


def _mask_of(terms: Sequence[str], held: set[str]) -> int:
    """``held`` as a bit mask over ``terms`` (bit i for ``terms[i]``)."""
    mask = 0
    for i, term in enumerate(terms):
        if term in held:
            mask |= 1 << i
    return mask


def _joined(
    chunks: list[tuple[str, int, int, str]], held: Callable[[int], int]
) -> tuple[dict[str, int], dict[str, ChunkMatch]]:
    """The joiners' chunks (``_window``'s, in memory and chunk order) as each memory's
    held terms (the union of its chunks' masks, ``held(chunk id)``) and first chunk."""
    masks: dict[str, int] = {}
    first: dict[str, ChunkMatch] = {}
    for memory_id, seq, chunk_id, text in chunks:
        known = masks.get(memory_id)
        if known is None:
            first[memory_id] = ChunkMatch(chunk_id, memory_id, seq, text, 0.0)
            masks[memory_id] = held(chunk_id)
        else:
            masks[memory_id] = known | held(chunk_id)
    return masks, first


class WideView:
    """A scope too big for one statement of every term's matches: the term statistics,
    the FTS5 page and its rows are asked as before (``search`` is None); the held terms
    come from the texts at hand (``scratch.held``: what ``matched_terms`` does past
    ``termcounts.SMALL``, without asking the chunks' scopes first), and the window is
    one statement."""

    def __init__(
        self,
        backend: KeywordScope,
        terms: list[str],
        stats: TermStats,
        filters: tuple[str, list[Any]],
    ) -> None:
        self._backend, self.terms, self.stats, self._filters = backend, terms, stats, filters

    def search(self, keywords: KeywordQuery, limit: int) -> list[ChunkMatch] | None:
        return None

    def matched(self, chunk_ids: Sequence[int], texts: Mapping[int, str]) -> dict[int, set[str]]:
        """Which terms each chunk's quoted-phrase match finds (``scratch.held``)."""
        found = scratch.held([(cid, texts[cid]) for cid in dict.fromkeys(chunk_ids)], self.terms)
        return {cid: found[cid] for cid in chunk_ids}

    def masks(self, chunk_ids: Sequence[int], texts: Mapping[int, str]) -> dict[int, int]:
        """``matched`` as bit masks over ``terms``."""
        return {
            cid: _mask_of(self.terms, held) for cid, held in self.matched(chunk_ids, texts).items()
        }

    def window(self, memory_ids: Sequence[str]) -> Window:
        pairs, chunks = self._backend._window(memory_ids, self._filters)
        held = self.masks([c[2] for c in chunks], {c[2]: c[3] for c in chunks})
        return Window(pairs, *_joined(chunks, held.__getitem__))


class ScopeView:
    """The rows of ``keyword_scope``, answering what the lane asked the backend
    (``stats``, ``search``, ``masks``, ``window``) with the same arithmetic."""

    def __init__(
        self,
        backend: KeywordScope,
        scopes: Sequence[str],
        terms: list[str],
        stems: list[str],
        totals: tuple[int, int],
        asked: tuple[tuple[str, list[Any]], list[str], set[int]],
        rows: list[Any],
        vocab: Mapping[str, int] | None = None,
        own: bool = False,
    ) -> None:
        """``vocab``: the stems' whole-index counts where the statement left them out
        (``_exact_vocab``); else they are its rows tagged -2, or (``own``: its MATCHes
        are unconfined) each term's own count of matches."""
        self._backend = backend
        self._filters, self._matches, self._scored = asked[0], asked[1], set(asked[2])
        scoped, everything = totals
        self._keys = tuple(sorted({termcounts.scope_key(s) for s in scopes}))
        self.terms = terms
        self._stems = stems
        self._index = {t: i for i, t in enumerate(terms)}
        self._scoped, self._everything = scoped, everything
        self._counts = [0] * len(terms)  # term -> chunks holding it
        self._scores: list[dict[int, float]] = [{} for _ in terms]  # -> chunk -> -bm25
        # chunk -> (memory, sequence, text, FTS5 length, passes the filters)
        self._chunks: dict[int, tuple[str, int, str, int, bool]] = {}
        self._mask: dict[int, int] = {}  # chunk -> the terms it holds, as bits
        self._averages: bytes | None = None
        counts = self._take(rows, first=True)
        if own:
            counts = {stem: self._counts[i] for i, stem in enumerate(stems)}
        self._vocab: Mapping[str, int] = counts if vocab is None else vocab
        freq = {t: self._counts[i] for i, t in enumerate(terms)}
        postings = {t: self._vocab.get(s, 0) for t, s in zip(terms, stems, strict=True)}
        self.stats = TermStats(scoped, postings if scoped == everything else freq, postings)

    def _take(self, rows: list[Any], first: bool = False) -> dict[str, int]:
        """The per-term matches (tags >= 0) and the chunks' rows (-1) of ``rows``, in
        one pass (~300 rows a search over real long turns); of the ``first`` statement
        also each term's matches as bits and counts (asked of every term there, once),
        the stems' index counts (-2, returned) and FTS5's averages record (-3)."""
        mask, counts, scores, chunks = self._mask, self._counts, self._scores, self._chunks
        vocab: dict[str, int] = {}
        for tag, chunk_id, value, memory_id, seq, text, blob, ok in rows:
            if tag >= 0:
                if first:
                    mask[chunk_id] = mask.get(chunk_id, 0) | 1 << tag
                    counts[tag] += 1
                if value is not None:
                    scores[tag][chunk_id] = -value
            elif tag == -1:
                length = 1 if blob is None else _varint_sum(blob)
                chunks[chunk_id] = (memory_id, seq, text, length, bool(ok))
            elif tag == -2:  # (-2, _, count, stem, …)
                vocab[memory_id] = int(value)
            elif tag == -3:  # (-3, …, the averages record, _)
                self._averages = blob
        return vocab

    def _ensure(self, chosen: Sequence[int]) -> None:
        """FTS5's scores and the rows of the matches of ``chosen`` terms, asked now for
        those that ``keyword_scope`` left out (one statement, only when one is)."""
        missing = {i for i in chosen if i not in self._scored}
        if not missing:
            return
        sql, params = _matrix_sql(self._matches, missing, self._filters, every=False)
        self._take(self._backend._read(sql, params))
        self._scored |= missing

    def masks(
        self, chunk_ids: Sequence[int], texts: Mapping[int, str] | None = None
    ) -> dict[int, int]:
        """Which of the terms each chunk matches (``Backend.matched_terms``), as bit
        masks over ``terms``: the rows' own, no set built per chunk."""
        mask = self._mask
        return {cid: mask.get(cid, 0) for cid in chunk_ids}

    def window(self, memory_ids: Sequence[str]) -> Window:
        """The window's reads (``Window``): one statement; the joiners' terms from the
        rows of ``keyword_scope`` (a chunk none of them matched holds none)."""
        pairs, chunks = self._backend._window(memory_ids, self._filters)
        held = self._mask
        return Window(pairs, *_joined(chunks, lambda chunk_id: held.get(chunk_id, 0)))

    def search(self, keywords: KeywordQuery, limit: int) -> list[ChunkMatch] | None:
        """``Backend.keyword_search`` for the lane's own query (the OR of some of the
        terms), worked out from the rows; None for any other query."""
        if keywords.expression is not None or keywords.mode != "any" or keywords.newest_first:
            return None
        if not keywords.terms or any(t not in self._index for t in keywords.terms):
            return None
        chosen = [self._index[t] for t in keywords.terms]
        self._ensure(chosen)
        bits = 0
        for i in chosen:
            bits |= 1 << i
        matching = [
            cid
            for cid, mask in self._mask.items()
            if mask & bits and (row := self._chunks.get(cid)) is not None and row[4]
        ]
        stats = self._scoped_stats(chosen)
        if stats is None:  # the scopes hold the whole index: FTS5's BM25 is theirs
            parts = [self._scores[i] for i in chosen]
            ranked = []
            for chunk_id in matching:
                score = 0.0
                for part in parts:  # FTS5's order: each phrase's part, 0 where absent
                    score += part.get(chunk_id, 0.0)
                ranked.append((-score, chunk_id))
            ranked.sort()
        else:
            # Every match of the scopes scored over their own statistics (issue 25):
            # which chunks are kept never depends on the whole index's BM25, however
            # many match (``keyword_search`` scores all only up to ``ALL_MATCHES_MAX``).
            ranked = self._rescored(chosen, stats, matching)
        chunks = self._chunks
        out = []
        for negative, chunk_id in ranked[:limit]:
            memory_id, seq, text, _, _ = chunks[chunk_id]
            out.append(ChunkMatch(chunk_id, memory_id, seq, text, -negative))
        return out

    def _scoped_stats(self, chosen: list[int]) -> tuple[float, list[float]] | None:
        """(average length, idf per phrase) of ``ScopedBM25._scope_stats``; None when the
        scopes hold the whole index (FTS5's numbers are theirs)."""
        scoped = self._scoped
        if scoped >= self._everything:
            return None
        hits = [self._counts[i] for i in chosen]
        backend = self._backend
        with backend._cache_lock():
            average = backend._average_length(backend._read, self._keys, scoped)
        idf = [termcounts.idf(scoped, n) for n in hits]
        return average, idf

    def _rescored(
        self, chosen: list[int], stats: tuple[float, list[float]], found: list[int]
    ) -> list[tuple[float, int]]:
        """``ScopedBM25._scoped_bm25`` of the chunks ``found`` (the same expressions in
        the same order, so the same floats), as (−score, chunk id), best first."""
        average, idf = stats
        chunks = self._chunks
        counted = self._solved(chosen, found)
        if counted is None:
            counted = self._counted(chosen, found)
        out = []
        for chunk_id, tfs in zip(found, counted, strict=True):
            norm = K1 * (1 - B + B * chunks[chunk_id][3] / average)
            score = 0.0
            for weight, tf in zip(idf, tfs, strict=True):
                if tf:
                    score += weight * tf * (K1 + 1) / (tf + norm)
            out.append((-score, chunk_id))
        out.sort()
        return out

    def _counted(self, chosen: list[int], found: list[int]) -> list[list[int]]:
        """Each found chunk's count of each chosen term from its text
        (``scratch.term_counts``), where ``_solved`` could not say."""
        stems = [self._stems[i] for i in chosen]
        texts = [(cid, self._chunks[cid][2]) for cid in found]
        counted = self._backend._term_counts(texts, stems)
        return [[counted[cid].get(s, 0) for s in stems] for cid in found]

    def _solved(self, chosen: list[int], found: list[int]) -> list[list[int]] | None:
        """Each found chunk's count of each chosen term (in ``found``'s order): FTS5's
        single-term score solved for it (module docstring); None when a check fails."""
        rows, tokens = _averages(self._averages)
        if rows <= 0 or tokens <= 0:
            return None
        average = tokens / rows
        parts = []
        for i in chosen:
            hits = self._vocab.get(self._stems[i], 0)
            if hits > rows:  # counts of two versions of the file: count the texts instead
                return None
            value = math.log((rows - hits + 0.5) / (hits + 0.5))
            weight = value if value > 0.0 else 1e-6
            parts.append((weight, weight * (K1 + 1), self._scores[i]))
        chunks = self._chunks
        out: list[list[int]] = []
        for chunk_id in found:
            k = K1 * (1 - B + B * chunks[chunk_id][3] / average)
            tfs = []
            for weight, top, part in parts:
                s = part.get(chunk_id)
                if s is None:
                    tfs.append(0)
                    continue
                denominator = top - s
                if s <= 0 or denominator <= 0:
                    return None
                tf = round(s * k / denominator)
                if tf < 1 or abs(weight * tf * (K1 + 1) / (tf + k) - s) > _CHECK * s:
                    return None
                tfs.append(tf)
            out.append(tfs)
        return out


def _averages(blob: bytes | None) -> tuple[int, int]:
    """FTS5's averages record (rows, then tokens per column): (rows, tokens in all)."""
    values: list[int] = []
    value = 0
    for byte in blob or b"":
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
    if not values:
        return 0, 0
    return values[0], sum(values[1:])
