"""Context cues of the regex entity pass (``entities.extract``): the words around a
capitalised name that tell its kind where no list does. "Hey Jo" or "my dog Pepper" make
a person, "moved to Reading" a place, "works at Brightline" an organisation.

Kept apart from ``entities.py`` so that module stays a readable size; these functions
are pure and cheap (a regex over the 60 characters around a name), for the write path.
"""

from __future__ import annotations

import re

from . import entity_cues as cues

_OPENERS = " \t\"'“‘([*-"  # what may stand between a sentence's end and its first word


_LIST_MARK = re.compile(r"(?:^|\s)(?:\d{1,2}|[a-zA-Z]|[ivxIVX]{1,4})\)$")


def opens_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` is the first of a sentence (or of the text, a line,
    what follows a colon: "Caroline: Bought apples", or a list item's or a table cell's
    mark: "4) Approximate calories", "| Passionate about", "• Font")."""
    before = text[max(0, start - 40) : start].rstrip(_OPENERS)
    if not before or before[-1] in ".!?…\n\r:;|•·▪":
        return True
    return before[-1] == ")" and _LIST_MARK.search(before) is not None


def fold(word: str) -> str:
    return word.casefold().replace("’", "'")


_BEFORE = re.compile(r"([\w'’-]+)[\s,]*$")
_LAST_TWO = re.compile(r"([\w'’-]+)\s+([\w'’-]+)\s*$")
_TWO_BEFORE = re.compile(r"([\w'’-]+)\s+(?:[\w'’-]+\s+)?([\w'’-]+)\s*$")
_AFTER = re.compile(r"^(?:'s|’s)?\s*([\w'’-]+)")
_OWNERS = cues.words("my his her our your their")


def person_cue(text: str, start: int, end: int) -> bool:
    """Whether the text makes the name at ``start:end`` a person: a greeting or thanks
    right before it ("Hey Jo", "Thanks, Deb"), a relation word after my/his/her/...
    ("my friend Sam", "our dog Daisy") or "named" before it, a speech verb after it
    ("Gail says"), or a vocative at a sentence's end (", Maria!")."""
    offset = max(0, start - 60)
    before = text[offset:start]
    word = _BEFORE.search(before)
    if word is not None:
        key = fold(word[1])
        if key in cues.NAMING_WORDS or key in cues.MEETING_WORDS:
            return True
        # a greeting addresses someone where it opens the sentence ("Hey Jo", "Thanks,
        # Deb"), not inside one ("at the Night Market", "a great Dane")
        if key in cues.ADDRESS_WORDS and opens_sentence(text, offset + word.start(1)):
            return True
        if key in cues.RELATION_WORDS:
            pair = _TWO_BEFORE.search(before)
            if pair is not None and fold(pair[1]) in _OWNERS:
                return True
    after = text[end : end + 30]
    verb = _AFTER.match(after)
    if verb is not None and fold(verb[1]) in cues.SPEECH_VERBS and not after.startswith(("'", "’")):
        return True
    return (
        before.rstrip().endswith(",")
        and after[:1] in ("!", "?", ".")
        and (after[1:2] in ("", " ", "\n", '"', "'"))
        and not _listed(before, offset, text)
    )


_WORD_BEFORE_COMMA = re.compile(r"([\w'’-]+)\s*,\s*$")


def _listed(before: str, offset: int, text: str) -> bool:
    """Whether the word before the comma is a name, so that the comma lists or locates
    ("based in Hook, Hampshire.", "OEE Tracker, Digital Logbook."): no vocative. A
    greeting ("Thanks, Deb!") or a sentence's first word is no such name."""
    word = _WORD_BEFORE_COMMA.search(before)
    if word is None or not word[1][:1].isupper() or fold(word[1]) in cues.ADDRESS_WORDS:
        return False
    return not opens_sentence(text, offset + word.start(1))


def place_cue(text: str, start: int) -> bool:
    """Whether a verb of moving or living and a preposition right before ``start`` make
    the name there a place ("moved to Reading", "living in Bath", "trip to Nice")."""
    pair = _LAST_TWO.search(text[max(0, start - 40) : start])
    return (
        pair is not None
        and fold(pair[2]) in cues.PLACE_PREPOSITIONS
        and fold(pair[1]) in cues.PLACE_VERBS
    )


_VERB_PREPOSITION = re.compile(r"([\w'’-]+)\s+([\w'’-]+)\s+(?:the\s+)?$")
_ACTS_AFTER = re.compile(
    r"(?:'s|’s)?\s+(?:(was|were|is|has been|had been|has|have|had)\s+)?([a-z]+)"
)


def org_cue(text: str, start: int, end: int, acts_only: bool = False) -> bool:
    """Whether the text makes the name at ``start:end`` an organisation: a word of work
    or shopping and a preposition right before it ("works at Brightline", "a splurge at
    Anthropologie", "ordered from Newegg", "hired by the Acme"), or an act only a
    company does after it ("Arena was incorporated", "Umbrella has announced"; not
    "faced": "the Mayans faced"). Checked for names no list typed, once the common-word checks
    let them through ("deals at Christmas" stays no entity). With ``acts_only`` only
    the act counts: an app's name is the company where it acts as one ("Netflix
    announced") and the service where it is bought ("a subscription for Netflix")."""
    pair = None if acts_only else _VERB_PREPOSITION.search(text, max(0, start - 40), start)
    if pair is not None:
        verb, preposition = fold(pair[1]), fold(pair[2])
        if preposition in cues.ORG_PREPOSITIONS and verb in cues.ORG_CONTEXT_WORDS:
            return True
        if preposition == "by" and verb in cues.ORG_BY_WORDS:
            return True
    act = _ACTS_AFTER.match(text, end, end + 40)
    if act is None:
        return False
    if act[1] in ("was", "were", "is", "has been", "had been"):
        return act[2] in cues.ORG_PASSIVE_ACTS
    return act[2] in cues.ORG_ACTS


# What only code looks like: an empty call, a method call, a keyword or string argument,
# an import or definition, an assignment, a block's brace at the line's end. Not
# "happy(Todd" nor "s 127(4)": prose that lost a space.
_CODE = re.compile(
    r"\w\(\)|[a-z_]\.\w+\(|\w\(\w+=|\w\(['\"]|\s=\s|=>|::|[{}]\s*$"
    r"|^\s*(?:import \w|from \S+ import|def \w|class \w|return\b)"
)


def in_code(text: str, start: int) -> bool:
    """Whether the name at ``start`` stands in a line of code ("class RegistrationViewSet(
    viewsets.ModelViewSet):", "from rest_framework import RefreshToken"): a capitalised
    word there is an identifier, not an entity (checked for names no list typed)."""
    low, high = line_around(text, start, 80)
    return _CODE.search(text[low:high]) is not None


def line_around(text: str, start: int, reach: int) -> tuple[int, int]:
    """The bounds of the line holding ``start``, or of ``reach`` characters either side
    of it where the line is longer than twice that (a long line is prose or data: only
    what is near the name counts). Never reads further than that, so a huge one-line text
    costs each name the same."""
    before = text.rfind("\n", max(0, start - 2 * reach), start)
    after = text.find("\n", start, start + 2 * reach)
    low = before + 1 if before >= 0 else (0 if start <= 2 * reach else None)
    high = after if after >= 0 else (len(text) if len(text) - start <= 2 * reach else None)
    if low is not None and high is not None and high - low <= 2 * reach:
        return low, high
    low = max(start - reach, 0 if low is None else low)
    high = min(start + reach, len(text) if high is None else high)
    return low, high
