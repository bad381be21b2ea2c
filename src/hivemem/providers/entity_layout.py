"""How a text is laid out around a capitalised name, for the regex entity pass
(``entities.extract``): a heading line, a label before a colon, title-case text such as a
pasted list of keywords or a table's header. There capitals are the layout's, not a
name's, so a name of common words found there is no entity.

Kept apart from ``entities.py`` so that module stays a readable size. "Common" is the
bundled vocabulary's commonest words or a common noun's or verb's family
(``common_words``); a rare word or a given name is never taken for layout.
"""

from __future__ import annotations

import re

from . import common_words
from .entity_context import fold, line_around

# A mid-sentence capitalised word at most this common (its rank among the bundled
# vocabulary's words, ``common_words``) is a title's or heading's word ("the Food for
# Thought kitchen", "Module 3"), not a name, unless a list or a cue types it. Tuned on the
# dev half of ``hivemem eval entities``.
MID_SENTENCE_COMMON_RANK = 4000


_LINE_WORD = re.compile(r"[^\W\d_][\w'’-]{3,}")  # a word of four letters or more


def heading(text: str, start: int, end: int, first: bool, seen: dict[int, bool]) -> bool:
    """Whether the name at ``start:end`` is a heading's or a label's words, not a name
    (checked for names no list or cue typed): a run of several words that opens a
    sentence and ends in a colon ("Bid Due Date:"), or a line in title case: three or
    more words of four letters or more, all capitalised, one of them a common word, and
    no sentence mark at its end ("Allergies Appointment Current", "Benefits of Dofollow
    Links"; not "Bank of America hired O'Neil" nor a line of names)."""
    if first and " " in text[start:end] and text[end : end + 1] == ":":
        return True
    line_start = text.rfind("\n", 0, start) + 1
    if line_start not in seen:
        line_end = text.find("\n", end)
        line = text[line_start : len(text) if line_end < 0 else line_end].strip()
        words = _LINE_WORD.findall(line)
        seen[line_start] = (
            len(words) >= 3
            and all(word[0].isupper() for word in words)
            and line[-1:] not in ".!?"
            and _heading_words(words)
        )
    return seen[line_start]


def title_case_label(words: list[str], text: str, start: int) -> bool:
    """Whether a name of common words (``words``, joiners left out) stands in title-case
    text, so that its capitals are the text's, not a name's: at least eight words of four
    letters or more around it (its line, or 100 characters either side in a long one),
    three in four of them capitalised ("Product, Features, Benefits, Purpose, Target
    Audience, Differences", a CSV header). A question that names "the Nazi Party" and
    "World War II" is no such text, and a name with a rarer word ("Memorable") stays."""
    around = _LINE_WORD.findall(text, *line_around(text, start, 100))
    if len(around) < 8 or sum(word[0].isupper() for word in around) * 4 < len(around) * 3:
        return False  # checked first: most text is no title-case text, and this is cheap
    return all(_common_heading_word(word) for word in words)


def _common_heading_word(word: str) -> bool:
    """A word of the vocabulary's commonest or of a common noun's or verb's family."""
    return _common_rank(word) < MID_SENTENCE_COMMON_RANK or common_words.inflected(fold(word))


def _heading_words(words: list[str]) -> bool:
    """Whether a title-case line's words are a heading's: one of them common, or two of
    a common noun's or verb's family ("Benefits of Dofollow Links", "Customs Import
    Declaration Submission"; first names have none, so "Developer: Cyril Lonsido" stays)."""
    if any(_common_rank(word) < MID_SENTENCE_COMMON_RANK for word in words):
        return True
    return sum(common_words.inflected(fold(word)) for word in words) >= 2


def _common_rank(word: str) -> int:
    """``common_words.rank`` of a word as written; a word it does not know ranks last."""
    found = common_words.rank(fold(word))
    return 1 << 30 if found is None else found
