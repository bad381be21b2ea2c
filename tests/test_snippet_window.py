"""``text.snippet``'s window of a long ASCII text, flattened only up to the window's end,
against the whole text flattened (the rule it had): the same string for every text."""

from __future__ import annotations

import random

import pytest

from hivemem import text


def _whole(body: str, terms: list[str], width: int = 200) -> str:
    """``snippet`` as it was: the whole text flattened first."""
    flat = " ".join(body.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    positions = [p for p in (lowered.find(t) for t in terms) if p >= 0]
    start = max(0, min(positions) - width // 4) if positions else 0
    end = min(len(flat), start + width)
    start = max(0, end - width)
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    return prefix + flat[start:end].strip() + suffix


_WORDS = ["Berlin", "office", "the", "a", "Anna", "paris", "x", "DOG", "dogs", "b2", "-", "."]
_GAPS = [" ", " ", " ", "  ", "\n", "\n\n", "\t", " \r\n ", "\x0b", "\x1c", "\x0c"]


def _body(rng: random.Random, words: int) -> str:
    """Words and gaps; half the texts spaced by single spaces only (read as they are)."""
    gaps = _GAPS if rng.random() < 0.5 else [" "] * 40 + ["  ", "\n"]
    out = [rng.choice(["", " ", "\n  "])]
    for _ in range(words):
        out += [rng.choice(_WORDS), rng.choice(gaps)]
    out.append(rng.choice(["", " ", "\n"]))
    return "".join(out)


@pytest.mark.parametrize("seed", range(8))
def test_the_window_is_the_whole_flattening_s(seed):
    rng = random.Random(seed)
    for _ in range(400):
        body = _body(rng, rng.choice([5, 40, 70, 90, 120, 300]))
        terms = rng.sample(["berlin", "anna", "dog", "paris", "zzz", "b2", "e", "ice"], 3)
        width = rng.choice([200, 200, 80, 15])
        assert text.snippet(body, terms, width) == _whole(body, terms, width), (body, terms)


def test_the_window_where_the_term_sits_at_either_end():
    filler = "word \n\n " * 120
    for body in ("Berlin " + filler, filler + "Berlin", filler + " berlin\n", "Berlin"):
        for terms in (["berlin"], [], ["nowhere"], ["word", "berlin"]):
            assert text.snippet(body, terms) == _whole(body, terms)


def test_terms_the_fast_path_leaves_to_the_whole_flattening():
    body = "alpha beta  gamma\n" * 60
    for terms in ([""], ["beta gamma"], ["a\tb"], ["café"]):
        assert text.snippet(body, terms) == _whole(body, terms)


def test_a_text_ending_in_a_space_where_the_window_ends():
    # The window ends at the flattened text's end (no "…" after it): the text's own
    # trailing space is no part of the flattened text.
    body = "q" * 349 + "berlin" + "z" * 144 + " "
    assert text.snippet(body, ["berlin"]) == _whole(body, ["berlin"])
    assert not text.snippet(body, ["berlin"]).endswith("…")


def test_a_term_after_a_long_run_of_whitespace():
    # The text just before the term flattens to fewer characters than the window takes
    # before it: the window is read from the whole flattened prefix.
    for gap in (" \n\t " * 10, "\n" * 30, " " * 3):
        body = ("x" + gap) * 40 + "Berlin " + "word " * 100
        for terms in (["berlin"], ["word", "berlin"], ["x"]):
            assert text.snippet(body, terms) == _whole(body, terms), (gap, terms)
    for lead in ("y" * 200, "\n" * 150):  # words before, or none
        for run in (0, 1, 30, 55, 60, 101):  # the text just before the term, flattened,
            for word in range(40, 60):  # of about as many characters as the window takes
                body = lead + "\n" * run + "z" * word + " Berlin " + "word " * 100
                assert text.snippet(body, ["berlin"]) == _whole(body, ["berlin"]), (run, word)
