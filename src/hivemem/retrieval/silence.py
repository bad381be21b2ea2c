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
of those is a *rare* word: alphabetic and not an everyday English word, one used at
least once per million words of English (Zipf frequency 3 or more: 28,338 words,
``providers/models/english-words.txt``, from wordfreq's English list; digits are not
rare: a date the scope lacks says nothing). Until 2026-11-28 a rare word was one not
whole in BERT's WordPiece vocabulary (~21,000 words), which splits everyday words
("lettuce", "toddler", "firewall", "bullied"): the held-out paraphrase set B lost real
questions to it. Such a question gets no hit when
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

A question about no one the scope knows (``a_stranger``, 2026-11-28): the rule above
leaves the unrelated questions that name one rare word ("Which Roman general defeated
Mithridates?") or only everyday ones ("Which bishop crowned Charlemagne?"). What they
share, and the real questions mostly lack, is their *subject*: a real question asks
about the user ("Where do I live now?", "Does the user have siblings?"), about someone
or something the scope has named (LoCoMo's "What did Caroline ..."), or about shared
work ("Which database did the team decide on?"); an unrelated one asks about the world,
and names things of it. The second rule: a question with no personal word (I, my, we,
you, the user, ...) and no entity the scope holds (the entity lane found none) that
names a thing the scope has never seen ("Mithridates", "Charlemagne", "Lake Tanganyika":
a mention, ``providers.entities``, with a word in no chunk) gets no hit when its best
vector match is under the model's ``stranger_floor``. A name is what makes it safe: an
everyday word the scope lacks says little (the paraphrase suite's answers share no word
with their questions), but a scope that has never seen a name holds nothing about it.
Two unseen everyday words instead of a name silenced 10 more of the 100 and no answer on
the suites, but also "When does the team ship the invoicing service?" over "Our team
deploys the billing service on weekdays before three" (cosine .53) in a scope of 1,008
chunks; it was not kept. Measured (``hivemem eval silence``; docs/retrieval.md,
"Silence: a question about no one the scope knows"): with all-MiniLM-L6-v2 at 0.53 the
two rules and the match floor silence 68 of the 100 (43 without this one), and no answer
today's search finds in the top 10 is lost on any suite, on either half of its
questions. The personal words and the entity lane's result are read first: a question
about the user never costs the document frequencies.

Strange words make a stranger too (``strange_words``, 2026-11-28, afternoon): a question
about no one that names two words its scope (almost) never holds, one of them a rare word
it has never seen ("How many carpels does a tulip flower have?", "What is the atomic mass
of ytterbium?": "atomic" in one chunk of 10,000). These are the unseen-words rule's
words, whose floor (0.40) was set by questions about the user ("Is the user lactose
intolerant?", cosine .455); about no one, they say what a never-seen name says. The
second word may be merely scarce: in at most one chunk per ``SCARCE_CHUNKS`` (5,000) of
the scope, a rate, so a word seen once in the paraphrase suite's 2,222 chunks ("What
slowed the checkout page?") is not scarce, while one seen once in 10,000 is. The rare
word must be unseen: one the scope holds once may be the one the user just wrote. "The
team" is a subject like "we" ("When does the team ship the invoicing service?": two
unseen words, "invoicing" rare, its answer at cosine .53). Measured (``hivemem eval
silence``; docs/retrieval.md, "Silence: strange words"): 32 → 22 of the 100 answered
(chosen on the even half: 13 → 9; the odd half 19 → 13), and no ranking moves on any
suite.

Scattered words (``scattered``, 2026-11-28, evening): of the 22 left, 11 name no entity
of the scope and words it holds only once or twice each ("What gauge of wire is used
for a 40 amp circuit breaker?": "gauge", "wire", "amp", "breaker" each in one chunk of
10,000; "What voltage does a Daniell cell produce?": "daniell" rare but seen once), and
some name an entity the scope holds only beside other things ("Which lichen grows on
Antarctic basalt?": "Antarctic" in two chunks, about worms). What they share is that
their words never meet: no chunk the keyword lane found holds two of them, outside the
scope's commonest words ("used", "makes": in more than one chunk per ``COMMON_CHUNKS``).
A real answer holds two of its question's words, or none (a paraphrase), and a name the
scope knows is found beside the question's other words or is what is asked about. The
rule: a question with no personal word, none of whose keyword lane's first ``page``
matches (the ties rule's page: the same on both backends) holds two of its words
outside the commonest, naming at least ``UNKNOWN_WORDS`` scarce words
(``scarce``) that no memory the entity lane found holds, one of them seen (scattered) or
rare, gets no hit under ``stranger_floor``. An entity's own words are held by its
memories: "Is Zyxtronic reliable?" over "Zyxtronic Partners audit our books" lacks one
word ("reliable") and keeps its answer. Two unseen everyday words are not enough: "What
triggered the security alert?" is a real question of the paraphrase suite. Measured
(docs/retrieval.md, "Silence: scattered words"): 22 → 12 of the 100 answered (chosen on
the even half: 9 → 2; the odd half 13 → 10), and no answer today's search finds in the
top 10 is lost, nor any real question silenced, on any suite. It needs scopes of
``MIN_SCOPE_CHUNKS`` like the rules above (in LoCoMo's, under it, it would cost answers:
dates and names the conversation never writes), and finds a seen word scarce only in
scopes of ``SCARCE_CHUNKS`` or more.

Meetings per memory, anywhere in the scope (``scattered_memories``, 2026-11-28, late;
a reviewer's findings): the keyword lane keeps one chunk per memory, so a note holding
"funicular" in one chunk and "hydrofoil" in another was no meeting ("Which was cheaper,
the funicular or the hydrofoil?" silenced); its first 20 matches may not reach the one
memory holding both words (thirty turns holding "cost" came first); and a search of
limit under 10 fetched fewer, so the rule was off there and a question limit 9
answered was silenced at 10. Now, before it silences, the rule reads the memories
holding any of the question's words outside the commonest and the terms each memory
holds over all its chunks: a meeting anywhere in the scope keeps the hits, at every
limit. An alias is a name the scope knows ("Kessy" for Kessler: ``ScopeReads.resolved``),
and two lanes that agree found the answer (``lanes_agree``: the vector lane's first is
the entity lane's one best). Measured (docs/retrieval.md, "Silence: scattered words"):
12 → 13 of the 100 answered at limit 10 ("Which lichen grows on Antarctic basalt?":
"Antarctic" and "grows" meet in a memory the page did not show), 13 at limits 1 to 50
(22 at limits 1 and 3 before), and no ranking moves on any suite.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..providers import entities as entitymod
from ..settings import Settings
from ..store.keyword_query import KeywordQuery
from ..store.protocols import Backend
from ..types import Query
from .candidates import Candidates

UNKNOWN_WORDS = 2  # terms in no chunk of the scope, at least (one rare among them)
MIN_SCOPE_CHUNKS = 1_000  # a smaller scope's unseen words say nothing (module docstring)
SCARCE_CHUNKS = 5_000  # a stranger's second word: in at most 1 chunk per 5,000 of the scope
COMMON_CHUNKS = 100  # a word in more than 1 chunk per 100 of the scope: its company says little


EVERYDAY_FILE = (
    Path(__file__).resolve().parent.parent / "providers" / "models" / "english-words.txt"
)


@functools.cache
def _vocabulary() -> frozenset[str]:
    """The everyday English words (``EVERYDAY_FILE``: Zipf frequency 3 or more)."""
    return frozenset(EVERYDAY_FILE.read_text(encoding="utf-8").split())


def rare(term: str) -> bool:
    """Not an everyday English word: alphabetic, and used less than once per million
    words of English (not in ``EVERYDAY_FILE``; the module docstring)."""
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


class ScopeReads:
    """The reads ``scattered`` asks for only when it is about to silence a search (both
    backends answer them: ``Backend`` and its ``entities``), so a search it does not
    silence costs none of them."""

    __slots__ = ("backend", "now", "query", "scopes")

    def __init__(
        self,
        backend: Backend,
        scopes: Sequence[str],
        query: Query | None = None,
        now: datetime | None = None,
    ) -> None:
        self.backend, self.scopes, self.query, self.now = backend, scopes, query, now

    def holding(self, terms: Sequence[str], chunks: int) -> list[str]:
        """The memories that hold any of ``terms`` (scarce words: ``chunks``, their
        chunk counts summed, is small), as the search's filters pass them: one keyword
        read. The keyword lane's page may not reach them: "How much did the funicular
        and the hydrofoil cost?" fetched thirty turns holding "cost" or "much" before
        the one note holding both "funicular" and "hydrofoil"."""
        if not terms or chunks <= 0 or self.query is None or self.now is None:
            return []
        keywords = KeywordQuery.any_of(list(terms))
        found = self.backend.keyword_search(self.scopes, self.query, keywords, chunks, self.now)
        return list(dict.fromkeys(m.memory_id for m in found))

    def memory_terms(self, memory_ids: Sequence[str], terms: Sequence[str]) -> dict[str, set[str]]:
        """Which of ``terms`` each memory holds in any of its chunks (one read of their
        chunks, ``memory_chunks``; ``matched_terms`` over the texts just read). The
        keyword lane keeps one chunk per memory, and a long note holding "funicular" in
        one chunk and "hydrofoil" in another holds both words all the same."""
        chunks = self.backend.memory_chunks(list(memory_ids))
        texts = {c.chunk_id: c.text for c in chunks}
        held = self.backend.matched_terms(list(texts), terms, texts)
        out: dict[str, set[str]] = {}
        for chunk in chunks:
            out.setdefault(chunk.memory_id, set()).update(held.get(chunk.chunk_id, ()))
        return out

    def resolved(self, text: str) -> set[str]:
        """The words of the names in ``text`` that an entity of the scopes goes by, its
        canonical name or an alias (one ``entities.lookup``): "Kessy" where Kessler has
        that alias. The scope has heard of them under that name."""
        names = entitymod.query_names(text)
        keys: set[str] = set()
        for entity in self.backend.entities.lookup(self.scopes, names, aliases=True):
            keys.add(entity.canonical)
            keys.update(entitymod.canonical(alias) for alias in entity.aliases)
        words: set[str] = set()
        for name in names:
            if name in keys:
                words.update(re.findall(r"\w+", name))
        return words


@dataclass(frozen=True, slots=True)
class Seen:
    """What the scopes searched hold of a question's terms: each term's chunk count
    (``doc_freq``) and the scopes' chunks (``total``); ``reads``, where a search made
    it, what ``scattered`` reads before it silences one."""

    doc_freq: Mapping[str, int]
    total: int
    reads: ScopeReads | None = None


DocFreq = Callable[[], Seen | None]  # read only when a rule needs it (``silent``)


def scope_doc_freq(
    backend: Backend,
    scopes: Sequence[str],
    terms: Sequence[str],
    query: Query | None = None,
    now: datetime | None = None,
) -> Seen | None:
    """Each term's chunk count in ``scopes`` and their chunks: the backend's ``term_stats``
    (cached per term by both backends; the keyword lane has just read the same). ``None``
    when the scopes hold fewer than ``MIN_SCOPE_CHUNKS`` chunks: too few to say a word is
    unknown."""
    if not terms:
        return Seen({}, 0)
    stats = backend.term_stats(terms, scopes)
    if stats.total_chunks < MIN_SCOPE_CHUNKS:
        return None
    return Seen(stats.doc_freq, stats.total_chunks, ScopeReads(backend, scopes, query, now))


# Words by which a question asks about its asker or the one it asks (after
# ``text.as_first_person``, "the user" reads "I"; "user" stays for other phrasings), or
# about the asker's shared work ("When does the team ship the invoicing service?": two
# words the scope never holds, one rare, and its answer at cosine .53).
_PERSONAL = re.compile(
    r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves|you|your|yours|user|users|team|"
    r"teams)\b",
    re.IGNORECASE,
)
_NOT_NAMES = {
    entitymod.EntityType.DATE,
    entitymod.EntityType.EMAIL,
    entitymod.EntityType.URL,
    # Trigger: a person the scope never names ("Is Noor's tuition covered?"). Why: talk
    # writes the people in one's life as she, he, my sister ("She won a full
    # scholarship"), so a scope that never names them may still hold their answers
    # (paraphrase set B: 12 real questions silenced, 8 with the answer in the top 10).
    # Outcome: such a name makes no stranger; a named thing or place still does.
    entitymod.EntityType.PERSON,
}


def personal(text: str) -> bool:
    """The question asks about its asker or the one it asks: a personal word in it."""
    return _PERSONAL.search(text) is not None


def unknown_names(text: str, doc_freq: Mapping[str, int]) -> tuple[str, ...]:
    """The named things of ``text`` (``providers.entities.extract``: capitalised names,
    dates aside: a date the scope lacks says nothing) with a word that no chunk of the
    scope holds (``doc_freq`` 0; words ``doc_freq`` does not count are not judged)."""
    names = []
    for mention in entitymod.extract(text):
        if mention.type in _NOT_NAMES:
            continue
        words = re.findall(r"\w+", mention.canonical.casefold())
        if any(doc_freq.get(w, 1) == 0 for w in words):
            names.append(mention.canonical)
    return tuple(names)


def scarce(terms: Sequence[str], seen: Seen) -> tuple[str, ...]:
    """The terms the scope (almost) never holds: in at most one chunk per
    ``SCARCE_CHUNKS`` of it (2 of 10,000 chunks; in a scope of fewer than
    ``SCARCE_CHUNKS``, only a word in none)."""
    return tuple(t for t in terms if seen.doc_freq.get(t, 0) * SCARCE_CHUNKS <= seen.total)


def strange_words(terms: Sequence[str], seen: Seen) -> bool:
    """At least ``UNKNOWN_WORDS`` scarce terms, one of them a rare word no chunk holds:
    the unseen-words rule's words, its second word allowed to be merely scarce
    ("What is the atomic mass of ytterbium?": "ytterbium" rare and unseen, "atomic" in
    one chunk of 10,000). The rare word must be unseen: a rare word the scope holds
    once may be the one the user just wrote."""
    words = scarce(terms, seen)
    return len(words) >= UNKNOWN_WORDS and any(
        rare(t) and not seen.doc_freq.get(t, 0) for t in words
    )


def a_stranger(text: str, terms: Sequence[str], seen: Seen) -> bool:
    """The second rule's words (the module docstring), for a question already known to
    name no entity of the scope: no personal word, and a name the scope has never seen
    or strange words (``strange_words``)."""
    if personal(text):
        return False
    return bool(unknown_names(text, seen.doc_freq)) or strange_words(terms, seen)


Match = tuple[int, Sequence[str], bool]  # a keyword match: rank, terms held, entity's too


def keyword_matches(candidates: Candidates) -> Iterator[Match]:
    """The keyword lane's matches as ``scattered`` reads them: each one's rank in the
    lane, the question's terms its chunk holds, and whether the entity lane found the
    same memory (it names an entity of the question)."""
    entity, matched = candidates.entity, candidates.matched
    for at, (rank, _, _) in candidates.keyword.items():
        yield rank, matched[at], at in entity


def lanes_agree(candidates: Candidates) -> bool:
    """The vector lane's first memory is the entity lane's one best (no other memory
    scores as well there): the question is about an entity the scope knows, and the
    memory nearest in meaning is that entity's ("When does Zoe's bistro offer
    pancakes?" over "Zoe's cafe on Elm Street serves buckwheat crepes", first in all
    three lanes at cosine .41; "Which city did Kessy relocate to?" over "Kessler moved
    to Lisbon", Kessy an alias of Kessler). Not the keyword lane's first alone: "Which
    lichen grows on Antarctic basalt?" finds "Antarctic" in a memory about worms, first
    in the keyword and vector lanes, and tied in the entity lane with another."""
    first = next((at for at, entry in candidates.vector_lane.items() if entry[0] == 1), None)
    entity = candidates.entity
    if first is None or first not in entity:
        return False
    best = entity[first][1]
    return all(entry[1] < best for at, entry in entity.items() if at != first)


def scattered(
    terms: Sequence[str],
    seen: Seen,
    matches: Iterable[Match],
    page: int,
    known: Iterable[str] = (),
) -> bool:
    """The question's words never meet (the module docstring): none of the keyword
    matches ranked within ``page`` (0: any) holds two of ``terms`` outside the scope's
    commonest (in more than one chunk per ``COMMON_CHUNKS``), and at least
    ``UNKNOWN_WORDS`` of its scarce words (``scarce``) are held by no match that names
    an entity of the question (an entity's own words are not what the question lacks)
    and are not ``known`` (words of a name the scope's entities go by: an alias), one
    of them seen or rare: two unseen everyday words say little ("What triggered the
    security alert?" in the paraphrase suite's 2,222 chunks, a real question)."""
    common = {t for t in terms if seen.doc_freq.get(t, 0) * COMMON_CHUNKS > seen.total}
    named: set[str] = set(known)
    for rank, words, names in matches:
        if (page <= 0 or rank <= page) and len(set(words) - common) >= 2:
            return False
        if names:
            named.update(words)
    lacks = [t for t in scarce(terms, seen) if t not in named]
    return len(lacks) >= UNKNOWN_WORDS and any(seen.doc_freq.get(t, 0) or rare(t) for t in lacks)


def scattered_memories(
    text: str, terms: Sequence[str], seen: Seen, candidates: Candidates, page: int, known: bool
) -> bool:
    """``scattered`` over a search's candidates, judged per memory and over the whole
    scope (2026-11-28, late: the reviewer's F1-F3). What the search already holds
    decides unless the rule would silence: a keyword match of the page holding two of
    the words, or the lanes' agreement (``lanes_agree``). On the way to silence (rare,
    and it saves the rest of the search) three reads: the names the scope's entities go
    by (``ScopeReads.resolved``, where the entity lane found one: ``known``), the
    memories holding any of the question's words outside the commonest
    (``ScopeReads.holding``: each in at most one chunk per ``COMMON_CHUNKS``), and
    the terms each of those and of the page's matches holds over all its chunks
    (``ScopeReads.memory_terms``). A meeting is then looked for in every memory of the
    scope, not in the keyword lane's first ``page`` (one chunk each, and as many as
    the limit fetched): the result no longer depends on the limit ("Which dynasty built
    the Grand Canal of China?" was silenced at limit 3 and answered at 10)."""
    matches = list(keyword_matches(candidates))
    if not scattered(terms, seen, matches, page) or lanes_agree(candidates):
        return False
    reads = seen.reads
    if reads is None:
        return True
    words = reads.resolved(text) if known else set()
    if words and not scattered(terms, seen, matches, page, words):
        return False
    ids = candidates.ids
    listed = [ids[at] for at in candidates.keyword]
    common = {t for t in terms if seen.doc_freq.get(t, 0) * COMMON_CHUNKS > seen.total}
    rest = [t for t in terms if t not in common and seen.doc_freq.get(t, 0)]
    found = reads.holding(rest, sum(seen.doc_freq[t] for t in rest))
    shown = set(listed)
    more = [m for m in found if m not in shown]
    held = reads.memory_terms([*listed, *more], terms) if listed or more else {}
    whole = [
        (rank, tuple(held.get(memory_id, ())) or own, names)
        for memory_id, (rank, own, names) in zip(listed, matches, strict=True)
    ]
    whole += [(0, tuple(held.get(m, ())), False) for m in more]
    return scattered(terms, seen, whole, 0, words)


def silent(
    best: float,
    text: str,
    terms: Sequence[str],
    doc_freq: DocFreq | None,
    knows_an_entity: bool,
    settings: Settings,
    candidates: Candidates | None = None,
    page: int = 0,
) -> bool:
    """True when a rule of this module silences the search: ``best`` is the vector
    lane's best cosine, ``text`` the question as searched, ``terms`` its keyword terms,
    ``doc_freq`` reads their chunk counts in the scopes (None: the scopes are too young
    to say), ``knows_an_entity`` whether the entity lane found an entity the scopes
    hold, ``candidates`` the lanes' (``scattered_memories`` reads the keyword lane's
    matches ranked within ``page`` first, then, on the way to silence, the scope's).
    The floors are the settings ``unknown_floor`` and ``stranger_floor``, resolved to
    the model's (``providers.calibration``) where they are -1; 0 turns a rule off.
    Without the entity lane (``entity_weight`` 0) nothing tells a question's subject or
    an entity's words, and only the first rule applies."""
    if doc_freq is None:
        return False
    unknown, stranger = settings.unknown_floor, settings.stranger_floor
    if settings.entity_weight <= 0 or personal(text):
        stranger = 0.0  # the question has a subject (or none can be told): rules 2, 3 off
    if best >= max(unknown, stranger):
        return False
    seen = doc_freq()
    if seen is None:
        return False
    if best < unknown and names_the_unknown(terms, seen.doc_freq):
        return True
    if best >= stranger:
        return False
    if not knows_an_entity and a_stranger(text, terms, seen):
        return True
    if candidates is None:
        return False
    return scattered_memories(text, terms, seen, candidates, page, knows_an_entity)
