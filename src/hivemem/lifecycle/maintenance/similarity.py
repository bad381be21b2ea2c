"""Word-overlap similarity for dedup, conflicts and cross-refs: pure functions, plus one
candidate lookup through the keyword index.

``words(text)`` is the set Jaccard compares: lowercase words, stopwords and negations
dropped, a plural ``s`` stripped ("likes" and "like" are one word), so two statements
that differ only in spacing, case, filler words or polarity have the same set.
``negated(text)`` tells the polarity apart: an odd number of negations.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ... import text as textmod
from ...types import Kind, Memory, Query, Status

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "cannot",
        "can't",
        "don't",
        "doesn't",
        "didn't",
        "isn't",
        "wasn't",
        "aren't",
        "weren't",
        "won't",
        "wouldn't",
        "shouldn't",
        "couldn't",
        "hasn't",
        "haven't",
        "hadn't",
        "dont",
        "doesnt",
        "didnt",
        "isnt",
        "wasnt",
        "arent",
        "werent",
        "wont",
        "cant",
        "hasnt",
        "havent",
    ]
)


def _tokens(text: str) -> list[str]:
    return [w.lower().replace("\u2019", "'") for w in _WORD.findall(text)]


@functools.lru_cache(maxsize=16_384)  # dedup compares each stored fact many times
def words(text: str) -> frozenset[str]:
    out = set()
    for word in _tokens(text):
        if word in NEGATIONS or word.endswith("n't"):
            continue
        word = word.removesuffix("'s")
        if word in textmod.STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return frozenset(out)


# Negation words in phrases that negate nothing ("no worries", "can't wait").
_IDIOMS = re.compile(
    r"\b(no (worries|problem|wonder|way|doubt|matter)|oh no|can'?t wait|never mind|"
    r"not only|don'?t worry|nothing (like|beats)|why not)\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=16_384)
def negated(text: str) -> bool:
    """Whether the statement is negated (an odd number of negation words, idioms such
    as "no worries" or "can't wait" left out)."""
    text = _IDIOMS.sub(" ", text.replace("\u2019", "'"))
    count = sum(1 for w in _tokens(text) if w in NEGATIONS or w.endswith("n't"))
    return count % 2 == 1


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def candidates(
    store: Any,
    scope: str,
    content: str,
    kinds: Sequence[Kind],
    now: datetime,
    limit: int = 20,
    *,
    min_jaccard: float = 0.0,
) -> list[Memory]:
    """Active memories of ``scope`` that share words with ``content``: the keyword
    index's best matches (BM25), so a comparison never scans the whole scope. ``store``
    gives the protocols it reads (``keyword``, ``job_state``, ``memories``).

    ``min_jaccard`` > 0 asks only for memories that may reach that overlap, which lets
    the lookup use the rarest words alone (short posting lists): a text with word
    Jaccard >= j to one of n words holds at least j x n of them, so it holds one of any
    n - ceil(j x n) + 1 of them.
    """
    terms = textmod.query_terms(content)
    if not terms:
        return []
    if min_jaccard > 0 and len(terms) > 2:
        keep = len(terms) - math.ceil(min_jaccard * len(terms)) + 1
        freq = store.keyword.term_stats(terms).doc_freq
        rare = sorted(terms, key=lambda t: (freq.get(t, 0), t))[: max(1, keep)]
        return store.job_state.matching(scope, textmod.fts_or_query(rare), kinds, limit)
    query = Query(text=content, limit=limit, kinds=tuple(kinds), statuses=(Status.ACTIVE,))
    matches = store.keyword.keyword_search([scope], query, terms, limit * 2, now)
    ids = list(dict.fromkeys(m.memory_id for m in matches))[:limit]
    return store.memories.get_many([scope], ids)
