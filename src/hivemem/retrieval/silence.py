"""Silence when the question names what its scope has never heard of.

A sentence model puts an unrelated question near its topical neighbours ("Which Roman
general defeated Mithridates?" at cosine .55 from "When did the Roman Empire fall?"), so no
cosine floor alone tells an unrelated question from a real one whose answer shares no word
with it (docs/retrieval.md: a floor that silences all 100 unrelated questions costs half
the paraphrase answers). What the unrelated questions have and the real ones mostly lack is
*words the scope has never seen*: "protactinium", "Mithridates", "dinoflagellates" are in
no memory of the scope, and they are not common English words either. A paraphrase
question uses everyday words ("Does the user have siblings?"): even where the scope lacks
them, they are words of the language.

The rule (``names_the_unknown``): a question names the unknown when at least
``UNKNOWN_WORDS`` of its terms are in no chunk of the scopes searched, and at least one
of those is a *rare* word: alphabetic and not a whole word of the bundled WordPiece
vocabulary (``providers/models/bert-base-uncased-vocab.txt``, ~21,000 whole English words;
digits are not rare: a date the scope lacks says nothing). Such a question gets no hit when
its best vector match is under the model's calibrated ``unknown_floor``
(``providers.embed``). Measured (``hivemem eval silence``; docs/retrieval.md,
"Silence: words the scope has never seen"): with all-MiniLM-L6-v2 at 0.40, 43 of the 100
unrelated questions over 10,000 real turns are silenced, and no answer that today's search
finds in the top 10 is lost on the paraphrase suite, LoCoMo episodes and mixed, or
LongMemEval's first 20 questions.

The document frequencies are the backend's ``term_stats`` over the scopes searched (both
backends cache them per term; the keyword lane has just read the same ones), and they
are read only when the best cosine is already under the floor.

Only a scope of at least ``MIN_SCOPE_CHUNKS`` chunks can say what it has never heard of.
In a young scope of a few memories nearly every word is unseen, and a real question that
names alternatives ("Which CI provider do we use, Jenkins or CircleCI?" over "Our CI runs
on GitHub Actions", cosine under the floor) was silenced; the suites the floor was
measured on hold 500 to 10,000 chunks a scope, and the rule silenced answers on none.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..providers.embed import VOCAB_FILE
from ..store.protocols import Backend

UNKNOWN_WORDS = 2  # terms in no chunk of the scope, at least (one rare among them)
MIN_SCOPE_CHUNKS = 1_000  # a smaller scope's unseen words say nothing (module docstring)


@functools.cache
def _vocabulary() -> frozenset[str]:
    """The WordPiece vocabulary's whole words (no ``##`` pieces, no ``[special]``)."""
    words = VOCAB_FILE.read_text(encoding="utf-8").split("\n")
    return frozenset(w for w in words if w.isalpha())


def rare(term: str) -> bool:
    """Not a common English word: alphabetic and not a whole word of the vocabulary."""
    return term.isalpha() and term not in _vocabulary()


@dataclass(frozen=True, slots=True)
class Unknown:
    """What a question names that its scope has never seen: its terms in no chunk of
    the scope (``unseen``), and which of those are rare words (``rare``)."""

    unseen: tuple[str, ...]
    rare: tuple[str, ...]

    @property
    def names_the_unknown(self) -> bool:
        return len(self.unseen) >= UNKNOWN_WORDS and bool(self.rare)


def unknown(terms: Sequence[str], doc_freq: Mapping[str, int]) -> Unknown:
    """The terms of a question that no chunk of the scope holds (``doc_freq`` 0), and
    the rare ones among them."""
    unseen = tuple(t for t in terms if doc_freq.get(t, 0) == 0)
    return Unknown(unseen, tuple(t for t in unseen if rare(t)))


def names_the_unknown(terms: Sequence[str], doc_freq: Mapping[str, int]) -> bool:
    """True when the question names at least ``UNKNOWN_WORDS`` words the scope has never
    seen, one of them rare (see the module docstring)."""
    return unknown(terms, doc_freq).names_the_unknown


def scope_doc_freq(
    backend: Backend, scopes: Sequence[str], terms: Sequence[str]
) -> Mapping[str, int] | None:
    """Each term's chunk count in ``scopes``: the backend's ``term_stats`` (cached per
    term by both backends; the keyword lane has just read the same). ``None`` when the
    scopes hold fewer than ``MIN_SCOPE_CHUNKS`` chunks: too few to say a word is unknown."""
    if not terms:
        return {}
    stats = backend.term_stats(terms, scopes)
    return stats.doc_freq if stats.total_chunks >= MIN_SCOPE_CHUNKS else None
