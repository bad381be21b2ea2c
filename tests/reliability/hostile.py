"""What the fuzz tests throw at HiveMem, and how many examples they try.

``make test`` runs the fast form (``EXAMPLES`` per entry point); ``make reliability``
sets ``HIVEMEM_RELIABILITY_LONG=1`` for the long form (random, not derandomized);
``HIVEMEM_RELIABILITY_EXAMPLES=N`` sets the count in either form. Every surface counts the calls it
made and how they ended in ``TALLY``; the run's summary prints it (conftest.py).
"""

from __future__ import annotations

import os
from collections import Counter

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

LONG = os.environ.get("HIVEMEM_RELIABILITY_LONG", "") not in ("", "0")
EXAMPLES = int(os.environ.get("HIVEMEM_RELIABILITY_EXAMPLES") or (300 if LONG else 8))

# One settings object for every fuzz test: no deadline (a shared 2-core machine), and
# the store fixture is shared by the examples of a test on purpose (state accumulates).
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,  # the fast form is the same run every time; the long one explores
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
    database=None,
)

# surface -> Counter of outcomes ("ok", or the HiveMemError class / exit code / status)
TALLY: dict[str, Counter[str]] = {}


def tally(surface: str, outcome: str) -> None:
    TALLY.setdefault(surface, Counter())[outcome] += 1


SURROGATES = ["\udbff", "\ud800", "\udc80", "a\udcbdb", "\udfff\ud800"]
CONTROL = ["\x00", "nul\x00inside", "\x01\x02", "line\nbreak", "\t", "\x1b[31mred", "\x7f", "\r\n"]
HUGE_TEXT = ["x" * 300_000, "deploy " * 14_300, "é" * 140_000, "word " * 60_000]
TIMES = [
    "99999999999999d",
    "999999d",
    "7d",
    "-1d",
    "1e400d",
    "²d",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-05:00",
    "2026-01-01",
    "not a time",
]
FTS = ['"', "NEAR(", "*", "w*", "deploy OR", "AND", "((", "text:", "NEAR(a b, -1)", "^", "-x"]
ODD_TEXT = [
    "",
    " ",
    "deploy",
    "team-a",
    "swarm",
    "deploy-window",
    "../../etc/passwd",
    "'; DROP TABLE memories; --",
    "%s%n",
    "\u202etxt.exe",
    "🦀" * 3,
    "a" * 201,
    "a" * 5000,
]
HUGE_NUMBERS = [
    2**70,
    -(2**70),
    10**20,
    2**63,
    2**63 - 1,
    -1,
    0,
    1,
    float("inf"),
    float("-inf"),
    float("nan"),
    1e308,
    -0.0,
    0.5,
]


def _wrong_types() -> list[object]:
    return [None, [], {}, [None], ["a", None], {"a": 1}, (1, 2), 1.5, True, False, b"\x80", set()]


def surrogate_text() -> st.SearchStrategy[str]:
    """Text with lone surrogates mixed in (Hypothesis's text() never makes them)."""
    piece = st.one_of(
        st.characters(),
        st.integers(0xD800, 0xDFFF).map(chr),
        st.sampled_from(["\x00", "\n", "\x7f"]),
    )
    return st.lists(piece, max_size=12).map("".join)


def hostile_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(SURROGATES + CONTROL + TIMES + FTS + ODD_TEXT),
        st.sampled_from(HUGE_TEXT),
        surrogate_text(),
        st.text(max_size=40),
    )


def hostile_value(plausible: list[object] | None = None) -> st.SearchStrategy[object]:
    """Anything a caller might pass: hostile text, huge numbers, wrong types, lists and
    mappings of those, or one of ``plausible`` (real ids, keys, scopes of the store)."""
    scalar = st.one_of(
        hostile_text(),
        st.sampled_from(HUGE_NUMBERS),
        st.sampled_from(_wrong_types()),
        st.integers(),
        st.floats(),
    )
    values = [
        scalar,
        st.lists(scalar, max_size=4),
        st.dictionaries(st.one_of(hostile_text(), st.integers()), scalar, max_size=3),
    ]
    if plausible:  # as likely as all the rest: a call must get past its first argument
        values = [st.sampled_from(plausible)] * len(values) + values
    return st.one_of(*values)


def cli_text() -> st.SearchStrategy[str]:
    """A command-line argument: what a shell can pass (no NUL; bytes that are not UTF-8
    arrive as surrogates U+DC80..U+DCFF), huge, numeric or odd."""
    numbers = [str(n) for n in HUGE_NUMBERS] + ["99999999999999999999", "-5", "1e999", "0x10"]
    raw_bytes = st.lists(
        st.one_of(st.characters(exclude_characters="\x00"), st.integers(0xDC80, 0xDCFF).map(chr)),
        max_size=10,
    ).map("".join)
    fixed = [t for t in CONTROL + TIMES + FTS + ODD_TEXT if "\x00" not in t]
    fixed += ["\udc80", "a\udcbdb", "\udcff\udcfe"]
    return st.one_of(
        st.sampled_from(fixed),
        st.sampled_from(numbers),
        st.sampled_from(["x" * 20_000, "deploy " * 3_000]),
        raw_bytes,
    )
