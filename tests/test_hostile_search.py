"""Search takes any text (DESIGN §3: user text is escaped, never FTS5 syntax).

A thousand hostile queries, generated from a fixed seed, go against a store with content:
none may raise, and every answer is a well-formed list of hits. With ``fts_syntax=True``
the caller opts in to FTS5 syntax, and bad syntax is ``InvalidInput`` naming the query,
never a driver error.
"""

from __future__ import annotations

import random

import pytest

from hivemem import Hit, InvalidInput, Status

SEED = 20260101
COUNT = 1000

FTS_FRAGMENTS = [
    '"',
    "'",
    '""',
    "*",
    "**",
    "NEAR",
    "NEAR(",
    "NEAR(deploy friday, 3)",
    "NEAR(deploy friday, -1)",
    "NEAR/3",
    "-",
    "--",
    "+",
    "OR",
    "AND",
    "NOT",
    "or",
    "and not",
    "^",
    "^deploy",
    ":",
    "text:",
    "text:deploy",
    "content:",
    "memory_id:",
    "rowid:",
    "chunks_fts:",
    "{text}:",
    "{text content}:",
    "- text:",
    "(",
    ")",
    "((",
    "))",
    "[",
    "]",
    "{",
    "}",
    '"deploy',
    'deploy"',
    "deploy*",
    "*deploy",
    "de*ploy",
    "deploy OR",
    "AND deploy",
    "NOT NOT",
    "rank:",
    "bm25(",
    "MATCH",
    "';--",
    "\\",
    "%",
    "_",
    "?",
    "$1",
    "@",
    ",",
    ";",
    ".",
]
WORDS = [
    "deploy",
    "friday",
    "postgres",
    "vault",
    "near",
    "the",
    "and",
    "not",
    "text",
    "osprey",
    "16",
    "café",
    "naïve",
    "東京",
    "Straße",
]
UNICODE = [
    "🐝",
    "👩‍💻",
    "🇩🇪",
    "\u200f",  # right-to-left mark
    "\u200e",  # left-to-right mark
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u200b",  # zero-width space
    "\u200d",  # zero-width joiner
    "\ufeff",  # byte-order mark
    "e\u0301",  # combining accent
    "\u0000",
    "\u0007",
    "\u001b[31m",
    "\u007f",
    "\u0085",
    "\u2028",
    "\ud800",  # a lone surrogate: not encodable as UTF-8
    "\udfff",
    "\U0010ffff",
    "ﬁ",
    "Ⅻ",
]
STOPWORDS_ONLY = ["the of and", "who is he?", "what is it", "a an the", "I", "is"]
PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»¿¡—–…·"
DIGITS = ["0", "123", "3.14", "1e10", "-1", "٣", "²", "١٢٣", "0x1F", "2026-01-01"]
SEPARATORS = ["", " ", "  ", "\t", "\n", "\r\n", " OR ", " AND "]


def hostile_queries(seed: int = SEED, count: int = COUNT) -> list[str]:
    """``count`` hostile search strings, the same ones on every run."""
    rnd = random.Random(seed)
    pools = [FTS_FRAGMENTS, WORDS, UNICODE, DIGITS, list(PUNCTUATION)]
    out: list[str] = [
        "",
        " ",
        "\n\t",
        *FTS_FRAGMENTS,
        *UNICODE,
        *STOPWORDS_ONLY,
        *DIGITS,
        PUNCTUATION,
    ]
    while len(out) < count:
        recipe = rnd.randrange(10)
        if recipe == 0:  # about 10 kB of text, fragments strewn through it
            parts = [rnd.choice(rnd.choice(pools)) for _ in range(2500)]
            text = " ".join(parts)
            out.append(text[:10_240])
        elif recipe == 1:
            out.append("".join(rnd.choice(PUNCTUATION) for _ in range(rnd.randint(1, 30))))
        elif recipe == 2:
            out.append(" ".join(rnd.choice(STOPWORDS_ONLY) for _ in range(rnd.randint(1, 5))))
        elif recipe == 3:
            out.append("".join(chr(rnd.randrange(0x20)) for _ in range(rnd.randint(1, 8))))
        elif recipe == 4:  # random code points from anywhere, surrogates included
            out.append("".join(chr(rnd.randrange(0x110000)) for _ in range(rnd.randint(1, 12))))
        else:
            parts = [rnd.choice(rnd.choice(pools)) for _ in range(rnd.randint(1, 8))]
            out.append(rnd.choice(SEPARATORS).join(parts))
    return out[:count]


@pytest.fixture
def filled(store):
    mem = store.scope("team-a")
    mem.save("Never deploy on a Friday; deploy on Tuesday.", key="deploy-day", type="lesson")
    mem.save(
        "Never deploy on Fridays, nor near a holiday.",
        key="deploy-day",
        supersede_reason="holidays too",
    )
    mem.save("We use Postgres 16 for the main database and the vault for secrets.")
    mem.save("The text column holds NEAR and NOT AND OR as plain words.", key="fts-words")
    mem.save("Café in 東京: naïve Straße résumé 🐝 emoji note", type="reference")
    mem.save("Ⅻ ﬁle ٣ digits ² and 3.14 and 2026-01-01 and 0x1F", key="digits")
    mem.add_episode("the osprey migration starts in March", session_id="s1", role="user")
    gone = mem.save("deleted memo: deploy friday vault osprey", key="memo")
    mem.delete(gone.id)
    store.scope("team-b").save("other scope: deploy friday vault osprey postgres")
    return mem, gone.id


def _check_hits(hits: object, limit: int, deleted_id: str) -> None:
    assert isinstance(hits, list)
    assert len(hits) <= limit
    assert all(isinstance(h, Hit) for h in hits)
    scores = [h.score for h in hits]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True)
    ids = [h.memory.id for h in hits]
    assert len(ids) == len(set(ids))
    assert deleted_id not in ids
    assert {h.memory.scope for h in hits} <= {"team-a"}
    assert {h.memory.status for h in hits} <= {Status.ACTIVE, Status.SUPERSEDED}


def test_generator_is_deterministic_and_covers_the_hostile_cases():
    queries = hostile_queries()
    assert queries == hostile_queries()
    assert len(queries) == COUNT
    assert max(len(q) for q in queries) >= 10_000
    for needle in ("NEAR(", "text:", "\ud800", "\u200f", "\x00", "🐝", '"'):
        assert any(needle in q for q in queries), needle


def test_a_thousand_hostile_queries_never_raise(filled):
    mem, deleted_id = filled
    matched = 0
    for query in hostile_queries():
        hits = mem.search(query, limit=5)
        _check_hits(hits, 5, deleted_id)
        matched += bool(hits)
    assert matched > 100  # the queries reach the content, not just the error paths


def test_words_inside_hostile_text_still_find_their_memory(filled):
    mem, _ = filled
    for query in ('"deploy', "deploy*", "^deploy", "NEAR(deploy", "text:deploy", "(deploy)"):
        hits = mem.search(query)
        assert "deploy-day" in [h.memory.key for h in hits], query
    hits = mem.search('NEAR AND NOT OR "text"')
    assert hits[0].memory.key == "fts-words"


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        'deploy "',
        "NEAR(",
        "NEAR(deploy friday",
        "NEAR(deploy friday, -1)",
        "AND",
        "OR deploy",
        "deploy NOT",
        "deploy AND",
        "(deploy",
        "deploy)",
        "*",
        "^",
        ":",
        "-",
        "+",
        "nocolumn:deploy",
        "{text:deploy",
        "deploy OR OR friday",
        "\ud800",
        "deploy \udfff",
    ],
)
def test_bad_fts_syntax_is_invalid_input(filled, query):
    mem, _ = filled
    with pytest.raises(InvalidInput) as err:
        mem.search(query, fts_syntax=True)
    assert err.value.field == "query"


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ('"deploy on Tuesday"', "deploy-day"),
        ("deploy AND tuesday", "deploy-day"),
        ("text:postgres", None),
        ("postgr*", None),
        ("NEAR(never holiday, 10)", "deploy-day"),
        ("{text}: osprey", None),
        ("deploy NOT holiday", "deploy-day"),
    ],
)
def test_good_fts_syntax_finds_memories(filled, query, key):
    mem, deleted_id = filled
    hits = mem.search(query, fts_syntax=True)
    _check_hits(hits, 10, deleted_id)
    assert hits, query
    if key is not None:
        assert hits[0].memory.key == key


def test_hostile_queries_with_fts_syntax_raise_only_invalid_input(filled):
    mem, deleted_id = filled
    outcomes = {"hits": 0, "invalid": 0}
    for query in hostile_queries():
        try:
            hits = mem.search(query, limit=5, fts_syntax=True)
        except InvalidInput as exc:
            assert exc.field == "query"
            outcomes["invalid"] += 1
        else:
            _check_hits(hits, 5, deleted_id)
            outcomes["hits"] += 1
    assert outcomes["hits"] > 0 and outcomes["invalid"] > 0


def test_unpaired_surrogates_in_lookups_are_clear_errors(store):
    mem = store.scope("a")
    saved = mem.save("hello world", key="greeting")
    bad = "x\ud800y"
    calls = {
        "id": [lambda: mem.get(bad), lambda: mem.history(bad)],
        "name": [lambda: mem.entity(bad)],
        "session_id": [lambda: mem.search("hello", session_id=bad)],
        "exclude_sessions": [lambda: mem.search("hello", exclude_sessions=[bad])],
    }
    for field, fns in calls.items():
        for fn in fns:
            with pytest.raises(InvalidInput) as info:
                fn()
            assert info.value.field == field
    assert mem.get("greeting").id == saved.id  # nothing else was disturbed
