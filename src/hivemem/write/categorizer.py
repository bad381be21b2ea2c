"""Automatic categories: ``categorize(text) -> (category, confidence)``, keyword and
regex rules fast enough for the write path (tens of microseconds). The write path calls
it on save; the ``categorize`` maintenance job (``hivemem.lifecycle.maintenance.categorize``)
fills it in for rows written before categorize-on-save.

Each category has weighted patterns; the category with the highest total wins, and its
confidence grows with the evidence: ``min(0.95, 0.35 + 0.2 × score)``, so one weak cue
gives ~0.5 and several strong ones ~0.95. No cue at all gives ``general`` at confidence
0 (corvid's invariant: 0 means no keyword matched; a non-zero confidence is >= 0.1).
A category given by the caller is never replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..types import Kind

_I = re.IGNORECASE
_RULES: dict[str, list[tuple[re.Pattern[str], float]]] = {
    "credential": [
        (
            re.compile(
                r"\b(password|passwd|passphrase|api[ _-]?key|secret|token|credential)s?\b", _I
            ),
            1.5,
        ),
        (re.compile(r"\b(sk-[A-Za-z0-9]{8,}|AKIA[0-9A-Z]{12,}|gh[pousr]_[A-Za-z0-9]{12,})"), 3.0),
        (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), 3.0),
        (re.compile(r"\b(ssh key|private key|bearer|oauth|login|username)\b", _I), 1.0),
    ],
    "config": [
        (
            re.compile(r"\b(config(uration)?|settings?|env(ironment)? var(iable)?s?|flag)\b", _I),
            1.0,
        ),
        (re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\s*=", 0), 2.0),
        (re.compile(r"\.(ya?ml|toml|ini|json|env|cfg|conf)\b", _I), 1.5),
        (re.compile(r"\b(port|timeout|endpoint|base[ _]url|hostname|dns|proxy)\b", _I), 1.0),
    ],
    "code": [
        (re.compile(r"```|\bdef \w+\(|\bclass \w+[:(]|\bfunction\s*\w*\(|=>|\bimport \w+", 0), 2.0),
        (re.compile(r"\b\w+\.(py|js|ts|go|rs|java|rb|cpp|c|h|sql|sh)\b", _I), 1.5),
        (
            re.compile(
                r"\b(bug|traceback|stack ?trace|exception|compile[sd]?|refactor|unit tests?|"
                r"function|method|api|endpoint|regex|commit|branch|merge|pull request)\b",
                _I,
            ),
            1.0,
        ),
    ],
    "person": [
        (
            re.compile(
                r"\b(my|his|her|their) (name|wife|husband|partner|son|daughter|friend|"
                r"colleague|manager|boss|sister|brother|mother|father|mom|dad|kids?)\b",
                _I,
            ),
            1.5,
        ),
        (
            re.compile(
                r"\b(is|was) (born|married|\d+ years old)|\bbirthday\b|\blives in\b|"
                r"\bworks (at|for|as)\b",
                _I,
            ),
            1.5,
        ),
        (re.compile(r"\b(he|she|they) (is|was|likes|loves|works|lives)\b", _I), 0.8),
    ],
    "project": [
        (
            re.compile(
                r"\b(project|milestone|roadmap|release|sprint|repo(sitory)?|launch|"
                r"stakeholders?|deliverables?|architecture|design doc|mvp|v\d+(\.\d+)*)\b",
                _I,
            ),
            1.0,
        ),
    ],
    "preference": [
        (
            re.compile(
                r"\b(prefers?|preferred|preference|favou?rite|would rather|likes?|loves?|"
                r"hates?|dislikes?|enjoys?)\b",
                _I,
            ),
            1.2,
        ),
        (re.compile(r"\b(always|never) (use|wants?|drinks?|eats?)\b|\bdon'?t like\b", _I), 1.0),
    ],
    "task": [
        (
            re.compile(
                r"\b(todo|to-do|to do|task|deadline|remind me|follow[ -]up|action item|"
                r"due (on|by)|need(s)? to|have to|must)\b",
                _I,
            ),
            1.2,
        ),
        (
            re.compile(
                r"^\s*[-*] \[[ x]\]|\bby (monday|tuesday|wednesday|thursday|friday|"
                r"tomorrow|tonight|eod|end of (day|week))\b",
                _I | re.MULTILINE,
            ),
            1.5,
        ),
    ],
    "fact": [
        (re.compile(r"\b\d{4}\b|\b\d+(\.\d+)? ?(%|km|kg|mb|gb|ms|users|people)\b", _I), 0.6),
        (re.compile(r"\b(is|are|was|were) (the|a|an|located|founded|based)\b", _I), 0.6),
    ],
    "conversation": [
        (re.compile(r"^\s*(hi|hey|hello|thanks|thank you|ok(ay)?|lol|haha|sure|bye)\b", _I), 1.0),
        (re.compile(r"\?\s*$"), 0.6),
    ],
}


def _caseless(rules: dict[str, list[tuple[re.Pattern[str], float]]]) -> list[tuple[str, list]]:
    """The rules with every IGNORECASE pattern recompiled case-sensitive, to run on the
    lowercased text (Python's IGNORECASE matching is ~3x slower): (category, [(pattern,
    weight, on_lowercase, source)])."""
    out = []
    for category, patterns in rules.items():
        compiled = []
        for pattern, weight in patterns:
            if pattern.flags & re.IGNORECASE:
                flags = pattern.flags & ~re.IGNORECASE
                compiled.append((re.compile(pattern.pattern, flags), weight, True, pattern.pattern))
            else:
                compiled.append((pattern, weight, False, pattern.pattern))
        out.append((category, compiled))
    return out


# Gates: a condition every match of a rule's pattern implies, checked before the pattern
# runs. A pattern led by ``\b`` has no literal prefix for ``re`` to scan for, so it is
# tried at every position of the text (~2 µs a pattern on a turn, most of categorize's
# time); most turns hold no cue of most rules, and the gates say so from one split of
# the text into words. A gate only skips a pattern that cannot match, so the result is
# the patterns' own (tests/test_categorizer_gates.py compares both on LoCoMo's turns and
# on generated texts).
#
# ``words``: words of which every match holds one whole (mostly its first), as the split
# below cuts the text. The split keeps ASCII letters, digits and "_" (all ``\w``) and
# cuts at every other character; such a word of a pattern is made of literal ASCII
# letters and starts and ends where ``\b`` or a non-word character of the pattern says,
# so it is one of the split's words (the split may cut more, at a non-ASCII letter,
# which only lets a gate pass where the pattern then finds nothing). ``lower``/``sample``:
# substrings of which every match holds one, in the lowercased or the original text.
# ``digit``: every match holds a digit.
@dataclass(frozen=True)
class _Gate:
    words: tuple[tuple[frozenset[bytes], ...], ...] = ()  # any clause, each set in it
    lower: tuple[str, ...] = ()
    sample: tuple[str, ...] = ()
    digit: bool = False


def _words(*clauses: str) -> tuple[tuple[frozenset[bytes], ...], ...]:
    """Clauses of words, any of which opens the gate: in ``"my his | name wife"`` the
    text must hold a word of each side ("my name": both are whole words of a match); a
    word written ``~born`` is a substring of the lowercased text instead."""
    return tuple(
        tuple(frozenset(side.encode().split()) for side in clause.split("|")) for clause in clauses
    )


_R = {category: [pattern.pattern for pattern, _ in rules] for category, rules in _RULES.items()}
_GATES: dict[str, _Gate | None] = {
    _R["credential"][0]: _Gate(
        _words(
            "password passwords passwd passwds passphrase passphrases api_key api_keys "
            "apikey apikeys secret secrets token tokens credential credentials",
            "api | key keys",  # "api key", "api-key"
        )
    ),
    _R["credential"][1]: _Gate(sample=("sk-", "AKIA", "_")),
    _R["credential"][2]: None,  # a literal first: re scans for it
    _R["credential"][3]: _Gate(_words("ssh private | key", "bearer oauth login username")),
    _R["config"][0]: _Gate(
        _words(
            "config configuration setting settings flag",
            "env environment | var vars variable variables",
        )
    ),
    _R["config"][1]: _Gate(sample=("_",)),
    _R["config"][2]: None,  # a literal first
    _R["config"][3]: _Gate(
        _words("port timeout endpoint base_url hostname dns proxy", "base | url")
    ),
    _R["code"][0]: _Gate(sample=("```", "=>", "def ", "class ", "function", "import ")),
    _R["code"][1]: _Gate(_words("py js ts go rs java rb cpp c h sql sh")),  # the extension
    _R["code"][2]: _Gate(
        _words(
            "bug traceback stacktrace exception compile compiles compiled refactor function "
            "method api endpoint regex commit branch merge",
            "stack | trace",
            "unit | test tests",
            "pull | request",
        )
    ),
    _R["person"][0]: _Gate(
        _words(
            "my his her their | name wife husband partner son daughter friend colleague "
            "manager boss sister brother mother father mom dad kid kids"
        )
    ),
    _R["person"][1]: _Gate(
        # "born" and "married" end no word there ("is bornin" matches): substrings
        _words("is was | ~born ~married years", "birthday", "lives | in", "works | at for as")
    ),
    _R["person"][2]: _Gate(_words("he she they | is was likes loves works lives")),
    _R["project"][0]: _Gate(
        _words(
            "project milestone roadmap release sprint repo repository launch stakeholder "
            "stakeholders deliverable deliverables architecture mvp",
            "design | doc",
        ),
        digit=True,  # v1.2
    ),
    _R["preference"][0]: _Gate(
        _words(
            "prefer prefers preferred preference favorite favourite like likes love loves "
            "hate hates dislike dislikes enjoy enjoys",
            "would | rather",
        )
    ),
    _R["preference"][1]: _Gate(
        _words("always never | use want wants drink drinks eat eats", "don dont | like")
    ),
    _R["task"][0]: _Gate(
        _words(
            "todo task deadline must",
            "to | do",
            "remind | me",
            "follow | up",
            "action | item",
            "due | on by",
            "need needs have | to",
        )
    ),
    _R["task"][1]: _Gate(
        _words("by | monday tuesday wednesday thursday friday tomorrow tonight eod end"),
        lower=("[",),
    ),
    _R["fact"][0]: _Gate(digit=True),
    _R["fact"][1]: _Gate(_words("is are was were | the a an located founded based")),
    _R["conversation"][0]: None,  # anchored at the start: one try
    _R["conversation"][1]: _Gate(sample=("?",)),
}

_COMPILED = _caseless(_RULES)
# Every byte but ASCII letters, digits and "_" becomes a space (upper case too: the
# split is of the lowercased text; a non-ASCII character was already replaced by "?").
_KEEP = b"0123456789_abcdefghijklmnopqrstuvwxyz"
_SPLIT = bytes(c if c in _KEEP else 32 for c in range(256))
_DIGIT = re.compile(r"\d")


class _Bits:
    """The gates as bit masks, so a text's check is a few integer operations: one bit
    per set of words (``word_bits``: each word's bits), per substring cue and for a
    digit; a gate opens when the text's mask holds one of ``any_of`` or all the bits of
    one of its ``all_of`` masks."""

    def __init__(self, gates: dict[str, _Gate | None]) -> None:
        self.word_bits: dict[bytes, int] = {}
        self.lower: dict[str, int] = {}
        self.sample: dict[str, int] = {}
        self.digit = 1
        self.gates: dict[str, tuple[int, tuple[int, ...]] | None] = {}
        bit = 2
        for source, gate in gates.items():
            if gate is None:
                self.gates[source] = None
                continue
            any_of, all_of = self.digit if gate.digit else 0, []
            for cue in gate.lower:
                self.lower[cue] = self.lower.get(cue, 0) | bit
                any_of |= bit
                bit <<= 1
            for cue in gate.sample:
                self.sample[cue] = self.sample.get(cue, 0) | bit
                any_of |= bit
                bit <<= 1
            for clause in gate.words:
                mask = 0
                for side in clause:
                    for word in side:
                        if word.startswith(b"~"):  # a substring of the lowercased text
                            cue = word[1:].decode()
                            self.lower[cue] = self.lower.get(cue, 0) | bit
                        else:
                            self.word_bits[word] = self.word_bits.get(word, 0) | bit
                    mask |= bit
                    bit <<= 1
                if len(clause) == 1:
                    any_of |= mask
                else:
                    all_of.append(mask)
            self.gates[source] = (any_of, tuple(all_of))
        self.words = frozenset(self.word_bits)

    def of(self, sample: str, lower: str) -> int:
        """The text's mask."""
        mask = self.digit if _DIGIT.search(lower) else 0
        words = self.words.intersection(lower.encode("ascii", "replace").translate(_SPLIT).split())
        for word in words:
            mask |= self.word_bits[word]
        for cue, bit in self.lower.items():
            if cue in lower:
                mask |= bit
        for cue, bit in self.sample.items():
            if cue in sample:
                mask |= bit
        return mask


_BITS = _Bits(_GATES)
_GATED = [
    (
        category,
        [(pattern, weight, low, _BITS.gates[source]) for pattern, weight, low, source in rules],
    )
    for category, rules in _COMPILED
]


def categorize(text: str, kind: Kind | str | None = None) -> tuple[str, float]:
    """The category of ``text`` and a confidence in [0, 1] (see the module docstring)."""
    sample = text[:4000]  # the opening says what a long memory is about; keeps it fast
    lower = sample.lower()
    mask = _BITS.of(sample, lower)
    best, best_score = "", 0.0
    for category, rules in _GATED:
        score = 0.0
        for pattern, weight, low, gate in rules:
            if gate is not None and not mask & gate[0] and not _all_of(mask, gate[1]):
                continue
            if pattern.search(lower if low else sample):
                score += weight
        if score > best_score:
            best, best_score = category, score
    return _verdict(best, best_score)


def _all_of(mask: int, clauses: tuple[int, ...]) -> bool:
    """Whether ``mask`` holds all the bits of one of ``clauses``."""
    for needed in clauses:  # noqa: SIM110 - a loop, not any(): no generator per pattern
        if mask & needed == needed:
            return True
    return False


def gate_open(text: str, source: str) -> bool:
    """Whether the gate of the pattern ``source`` lets it run on ``text`` (for tests: a
    pattern that matches a text must find its gate open)."""
    gate = _BITS.gates[source]
    if gate is None:
        return True
    sample = text[:4000]
    mask = _BITS.of(sample, sample.lower())
    return bool(mask & gate[0]) or _all_of(mask, gate[1])


def categorize_ungated(text: str, kind: Kind | str | None = None) -> tuple[str, float]:
    """``categorize`` running every pattern, no gate: the reference its tests compare
    it with."""
    best, best_score = "", 0.0
    sample = text[:4000]
    lower = sample.lower()
    for category, rules in _COMPILED:
        score = sum(w for pattern, w, low, _ in rules if pattern.search(lower if low else sample))
        if score > best_score:
            best, best_score = category, score
    return _verdict(best, best_score)


def _verdict(best: str, best_score: float) -> tuple[str, float]:
    if not best:  # corvid: no keyword matched → general, confidence 0
        return "general", 0.0
    return best, round(min(0.95, 0.35 + 0.2 * best_score), 3)
