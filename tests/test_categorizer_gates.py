"""The categorizer's gates (``hivemem.write.categorizer``): a pattern is skipped only
where it cannot match, so ``categorize`` answers what running every pattern answers.
Compared on LoCoMo's turns (where the evaluation data is on disk) and on generated texts
built from the rules' own cues, separators that do and do not cut a word, capitals and
non-ASCII letters."""

from __future__ import annotations

import random

from hivemem.write import categorizer
from hivemem.write.categorizer import categorize, categorize_ungated
from locomo_turns import locomo_turns


def test_every_locomo_turn_gets_the_category_of_every_pattern_run():
    turns = locomo_turns()
    assert len(turns) > 5000
    differing = [t for t in turns if categorize(t) != categorize_ungated(t)]
    assert differing == []


# Cues of every rule, near misses of them, and words that are none.
_CUE_TEXT = """password passwords passwd api key keys api_key apikey secret tokens credential ssh
    private bearer oauth login username config configuration settings env environment var
    variables flag port timeout endpoint base url base_url hostname dns proxy bug traceback
    stack trace stacktrace exception compiled refactor unit tests function method regex
    commit branch merge pull request my his her their name wife kids dad is was born married
    years old birthday lives in works at for as he she they likes loves project milestone
    release repo repository stakeholders deliverable design doc mvp v2 v1.2.3 prefer
    preferred favourite favorite would rather hate dislikes enjoys always never use wants
    drinks eat don't dont like todo to-do to do task deadline remind me follow-up follow up
    action item due on by need needs have must monday tomorrow eod end of day week 2023 42
    5km 10 % mb users the a an located founded based hi hey thanks ok okay lol sure bye
    main.py app.js x.rs notes.c settings.yaml .env .toml sk-abcdefgh1234 AKIAABCDEFGHIJKLMN
    ghp_abcdefghijklmnop FOO_BAR= MAX_SIZE -----BEGIN ``` => - [ ] [x] ?
    projecté éproject café naïve İstanbul straße ﬁle ½ ٣ 𝟘 passwordé ñapi
    apples river quietly"""
_CUES = _CUE_TEXT.split() + [
    "api key",
    "api-key",
    "ssh key",
    "private key",
    "env var",
    "environment variables",
    "base url",
    "stack trace",
    "unit tests",
    "pull request",
    "my name",
    "her boss",
    "is born",
    "was 30 years old",
    "is married",
    "was bornin",
    "lives in",
    "works at",
    "she loves",
    "design doc",
    "would rather",
    "never drinks",
    "don't like",
    "to do",
    "remind me",
    "follow up",
    "action item",
    "due by",
    "have to",
    "by monday",
    "by end of week",
    "is located",
    "were the",
    "-----BEGIN RSA PRIVATE KEY-----",
    "def f(",
    "class A:",
    "import os",
    "function (",
    "- [ ] ",
]
_SEPARATORS = [" ", " ", " ", "  ", "-", "_", "'", "’", ".", ",", "\n", "", "é", "!", "?", "\t"]


def _generated(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words = [rng.choice(_CUES) for _ in range(rng.randint(1, 12))]
        text = words[0]
        for word in words[1:]:
            text += rng.choice(_SEPARATORS) + word
        shape = rng.random()
        if shape < 0.15:
            text = text.upper()
        elif shape < 0.3:
            text = text.title()
        if rng.random() < 0.2:
            text = (
                rng.choice(["", " ", "\n", "- ", "Hey "]) + text + rng.choice(["", "?", " ?", "."])
            )
        texts.append(text)
    return texts


def test_generated_texts_get_the_category_of_every_pattern_run():
    texts = _generated(6000, seed=24)
    differing = [t for t in texts if categorize(t) != categorize_ungated(t)]
    assert differing == []
    categories = {categorize(t)[0] for t in texts}
    assert categories >= {"credential", "config", "code", "person", "task", "general"}


def test_a_pattern_that_matches_finds_its_gate_open():
    texts = _generated(3000, seed=7)
    closed = []
    for rules in categorizer._RULES.values():
        for pattern, _ in rules:
            for text in texts:
                if pattern.search(text[:4000]) and not categorizer.gate_open(text, pattern.pattern):
                    closed.append((pattern.pattern[:40], text))
    assert closed == []


def test_every_pattern_has_a_gate_or_is_run_always():
    sources = {p.pattern for rules in categorizer._RULES.values() for p, _ in rules}
    assert sources == set(categorizer._GATES)
