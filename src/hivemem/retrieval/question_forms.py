"""A question rewritten in the form its answer takes, for the vector lane.

An agent asks "Where do I live now?"; the memory says "I moved to Berlin". A sentence
model places a question nearer to other questions than to the statements that answer
it, so the vector lane can also embed the question's *statement form* — the words an
answer would be written in, with the question's machinery taken out: the wh-word, the
``do`` of do-support, the auxiliary moved behind its subject ("What floor is my flat
on?" -> "my flat is on the floor"), no question mark. Rule-based, no model, the same
output for the same input in every process; a text that is not a question is returned
unchanged (the lane then embeds it once). Measured on four suites: docs/retrieval.md,
"Finding answers by meaning".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import numpy as np

from ..settings import Settings
from .ranking import lane_confidence

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")

_WH = frozenset({"what", "which", "where", "when", "who", "whom", "whose", "why", "how"})
_DO = frozenset({"do", "does", "did"})
_AUX = frozenset(
    {
        "is",
        "are",
        "was",
        "were",
        "am",
        "has",
        "have",
        "had",
        "can",
        "could",
        "will",
        "would",
        "should",
        "shall",
        "may",
        "might",
        "must",
    }
)
_PRONOUN = frozenset({"i", "you", "he", "she", "we", "they", "it", "someone", "anyone"})
_DETERMINER = frozenset(
    {"my", "your", "his", "her", "our", "their", "its", "the", "a", "an", "this", "that"}
    | {"these", "those", "any", "some"}
)
# Words that end a subject noun phrase: what follows it in a question is the predicate.
_PREDICATE_START = frozenset(
    {"on", "in", "at", "to", "for", "with", "from", "about", "by", "into", "after"}
    | {"before", "during", "like", "over", "under", "now", "still", "currently", "usually"}
    | {"ever", "always", "often", "been", "being", "be", "not", "really", "also", "most"}
)
# How/what + word: the phrase asks for an amount, a time or a kind; the answer states it.
_HOW_WORDS = frozenset({"many", "much", "long", "often", "old", "far", "big", "soon"})


def share(settings: Settings, keyword: Mapping[str, float], page: int) -> float:
    """The statement form's share of the vector lane's query for this search:
    ``statement_weight`` where the keyword lane cannot tell its best matches apart (more
    than ``keyword_ties`` tie at its best on the tie page: ``ranking.lane_confidence``),
    else 0. There the answer is to be found by meaning, and the form helps most; where
    the keyword lane is decisive (most LoCoMo and LongMemEval questions) the question
    alone is embedded — applied to every question the form cost LongMemEval a question
    at turn@10 (docs/retrieval.md)."""
    weight = settings.statement_weight
    if weight <= 0 or settings.keyword_ties <= 0:
        return 0.0
    return weight if lane_confidence(keyword, settings.keyword_ties, page) < 1.0 else 0.0


def query_vector(
    embed: Callable[[str], np.ndarray | None], question: str, weight: float
) -> np.ndarray | None:
    """The vector lane's query: ``question``'s unit vector, or with ``weight`` > 0 the
    normalised ``(1 - weight) × question + weight × statement form`` (a memory's cosine
    to it ranks as the weighted mean of its cosines to the two). Each form is embedded
    on its own, so the question's vector is the one it gets alone (a batch of two would
    quantise their activations together); a question with no statement form is
    embedded once."""
    vector = embed(question)
    if weight <= 0 or vector is None:
        return vector
    statement = statement_form(question)
    if statement == question:
        return vector
    other = embed(statement)
    if other is None:
        return vector
    mixed = (1.0 - weight) * vector + weight * other
    norm = float(np.linalg.norm(mixed))
    return (mixed / norm).astype(np.float32) if norm > 0 else vector


def statement_form(question: str) -> str:
    """``question`` as a statement of its answer's shape ("Where do I live now?" -> "I
    live now"; "Does my flat have a garden?" -> "my flat has a garden"), or ``question``
    unchanged when it does not start like a question."""
    words = _WORD.findall(question)
    if len(words) < 2:
        return question
    lowered = [w.lower() for w in words]
    first = lowered[0]
    if first in _WH:
        head, rest = _wh_head(words, lowered)
    elif first in _DO or first in _AUX:
        head, rest = [], words
    else:
        return question
    if not rest:
        return question
    aux = rest[0].lower()
    if aux not in _DO and aux not in _AUX:
        # "Who moved to Berlin?" / "Which colleague is leaving?": the wh-phrase is the
        # subject; the rest already reads as a statement.
        return _join(head + rest)
    body = rest[1:]
    subject = _subject_length(body)
    if subject == 0:
        return _join(head + body)
    verb = [] if aux in _DO else [aux]
    return _join(body[:subject] + verb + body[subject:] + head)


def _wh_head(words: list[str], lowered: list[str]) -> tuple[list[str], list[str]]:
    """The wh-phrase's content words (what the answer fills in) and the words after it."""
    at = 1
    if lowered[0] in {"what", "which", "whose"}:
        # "What kind of food", "Which city", "Whose car": nouns up to the auxiliary.
        while at < len(words) and lowered[at] not in _DO and lowered[at] not in _AUX:
            at += 1
            if at - 1 >= 5:
                break
    elif lowered[0] == "how" and len(words) > 1 and lowered[1] in _HOW_WORDS:
        at = 2
        if lowered[1] in {"many", "much"}:  # "How many rooms": the counted noun
            while at < len(words) and lowered[at] not in _DO and lowered[at] not in _AUX:
                at += 1
    head = [w for w in words[1:at] if w.lower() not in {"kind", "type", "sort", "of"}]
    return head, words[at:]


def _subject_length(body: list[str]) -> int:
    """How many of ``body``'s first words are its subject: a pronoun, a name, or a
    determiner and up to three words of its noun phrase ("my sister's new flat")."""
    if not body:
        return 0
    first = body[0].lower()
    if first in _PRONOUN:
        return 1
    if first in _DETERMINER:
        n = 1
        while n < len(body) and n <= 3 and body[n].lower() not in _PREDICATE_START:
            word = body[n].lower()
            n += 1
            if not (word.endswith("'s") or word.endswith("’s")) and n < len(body):
                nxt = body[n].lower()
                # A noun phrase's noun is followed by the predicate: stop at a word that
                # could be a verb after do-support, or at a preposition.
                if nxt in _PREDICATE_START or nxt in _AUX or not _may_continue(nxt):
                    break
        return n
    n = 0
    while n < len(body) and body[n][:1].isupper():
        n += 1
    return n


def _may_continue(word: str) -> bool:
    """Whether ``word`` may still belong to a noun phrase (a possessive, an adjective
    before its noun cannot be told apart here: only the verb-like endings stop it)."""
    return not word.endswith(("ed", "ing")) and word not in _COMMON_VERBS


_COMMON_VERBS = frozenset(
    {"have", "has", "live", "work", "like", "want", "need", "use", "eat", "drink", "go"}
    | {"get", "take", "make", "do", "say", "think", "know", "prefer", "own", "rent"}
    | {"study", "play", "drive", "read", "watch", "buy", "plan", "keep", "feel", "mean"}
)


def _join(words: list[str]) -> str:
    return " ".join(words)
