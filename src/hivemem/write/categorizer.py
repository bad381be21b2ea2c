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
    weight, on_lowercase)])."""
    out = []
    for category, patterns in rules.items():
        compiled = []
        for pattern, weight in patterns:
            if pattern.flags & re.IGNORECASE:
                flags = pattern.flags & ~re.IGNORECASE
                compiled.append((re.compile(pattern.pattern, flags), weight, True))
            else:
                compiled.append((pattern, weight, False))
        out.append((category, compiled))
    return out


_COMPILED = _caseless(_RULES)


def categorize(text: str, kind: Kind | str | None = None) -> tuple[str, float]:
    """The category of ``text`` and a confidence in [0, 1] (see the module docstring)."""
    best, best_score = "", 0.0
    sample = text[:4000]  # the opening says what a long memory is about; keeps it fast
    lower = sample.lower()
    for category, rules in _COMPILED:
        score = sum(w for pattern, w, low in rules if pattern.search(lower if low else sample))
        if score > best_score:
            best, best_score = category, score
    if not best:  # corvid: no keyword matched → general, confidence 0
        return "general", 0.0
    return best, round(min(0.95, 0.35 + 0.2 * best_score), 3)
