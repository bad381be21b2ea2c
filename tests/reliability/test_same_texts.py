"""The same texts on both backends (issue #25, item 9): whatever SQLite stores,
PostgreSQL stores too, reads back identical, and finds by a word it contains.

PostgreSQL refused any token over 2,046 bytes (a tsvector lexeme's limit) that SQLite's
FTS5 indexes whole: a base64 blob, a run of CJK characters without spaces, a long
number. A table of hostile texts (long tokens, CJK, digits, control characters but NUL,
emoji, right-to-left text and its marks, combining marks, quotes and backslashes, a
100 kB text) and, in the fuzz part, texts drawn from those alphabets with a probe word,
are saved on a SQLite file and on the embedded PostgreSQL. Each must read back
identical, and be found by a search for its probe word (plain, and as an FTS5 phrase
with ``fts_syntax=True``) on both.
"""

from __future__ import annotations

import base64
import hashlib
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hivemem

from .hostile import FUZZ

RAW = base64.b64encode(b"".join(hashlib.sha256(bytes([i])).digest() for i in range(100))).decode()
BLOB = "".join(c for c in RAW if c.isalnum())[:4000]
CJK = "".join(chr(0x4E00 + (i * 7) % 2000) for i in range(700))
DIGITS = "".join(str(i * 7 % 10) for i in range(3000))
FILLER = " ".join(f"filler{i % 97} river{i % 13}" for i in range(6000))[:50_000]

# (name, text, probe word the text contains)
TEXTS = [
    ("base64", f"attachment {BLOB} ends here", BLOB),
    ("cjk", f"{CJK}。", CJK),
    ("digits", f"the number {DIGITS} is long", DIGITS),
    ("a3000", "a" * 3000, "a" * 3000),
    ("cyrillic", "x" + "\u0436" * 1500 + " ended", "x" + "\u0436" * 1500),
    ("control", "alpha\x01beta gamma\x7fdelta tab\there\x1b[31mcolour controlword", "controlword"),
    ("emoji", "\U0001f9a9 flamingo \U0001f469\u200d\U0001f469\u200d\U0001f467 family", "flamingo"),
    ("rtl", "\u202eשלום עולם\u202c مرحبا بالعالم rtlword", "שלום"),
    ("combining", "cafe\u0301 nai\u0308ve z\u0336a\u0337lgo", "cafe\u0301"),
    ("quotes", "it's a \"quoted\" back\\slash 'word' with % and _", "quoted"),
    ("bom_zero_width", "\ufeffzero\u200bwidth\u2060joined wordjoiner", "wordjoiner"),
    ("big", f"{FILLER} zanzibarquill {FILLER}", "zanzibarquill"),
]


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _check(mem: hivemem.ScopedMemory, text: str, probe: str) -> None:
    saved = mem.save(text)
    assert mem.get(saved.id).content == text
    found = [h.memory.id for h in mem.search(probe, limit=20)]
    assert saved.id in found, f"not found by {probe[:40]!r}"
    phrase = [h.memory.id for h in mem.search(_phrase(probe), fts_syntax=True, limit=20)]
    assert saved.id in phrase, f"not found by the phrase {probe[:40]!r}"


@pytest.mark.parametrize(("name", "text", "probe"), TEXTS, ids=[t[0] for t in TEXTS])
def test_a_hostile_text_is_stored_read_back_and_found_on_both_backends(
    any_store, name, text, probe
):
    assert probe in text
    _check(any_store.scope("same"), text, probe)


# The fuzz part: texts from the hostile alphabets around a probe word.
PIECES = st.one_of(
    st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=40),
    st.sampled_from([BLOB[:3000], CJK[:800], DIGITS, "\u0301\u0308", "\u202e\u202c", "\U0001f9a9"]),
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x4FFF), min_size=690, max_size=900),
)
_probes = itertools.count()


@FUZZ
@given(before=PIECES, after=PIECES)
def test_fuzzed_texts_are_stored_and_found_alike_on_both_backends(any_store, before, after):
    probe = f"probe{next(_probes)}word"
    text = f"{before} {probe} {after}"
    _check(any_store.scope("fuzz"), text, probe)
