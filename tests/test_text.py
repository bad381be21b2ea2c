"""Pure text functions: hashing, chunking, query terms, quoting."""

from __future__ import annotations

import pytest

from hivemem import text


def test_hash_ignores_spacing_and_unicode_composition():
    assert text.content_hash("café  au lait") == text.content_hash("cafe\u0301 au lait ")
    assert text.content_hash("a b") != text.content_hash("ab")


def test_short_text_is_one_chunk_unchanged():
    assert text.chunk("hello world") == ["hello world"]


def test_chunks_respect_size_overlap_and_paragraphs():
    paragraphs = [f"P{i} " + " ".join(f"w{i}_{j}" for j in range(59)) for i in range(20)]
    chunks = text.chunk("\n\n".join(paragraphs), size=400, overlap=80)
    assert len(chunks) > 1
    for piece in chunks:
        assert text.count_tokens(piece) <= 400
        # cut at paragraph boundaries: every chunk starts at a paragraph's start
        assert piece.startswith("P")
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.split("\n\n")[0] in prev  # the overlap repeats the last paragraph
    joined = "\n\n".join(chunks)
    for i in range(20):
        assert f"P{i} " in joined


def test_one_huge_paragraph_is_split_by_sentence_then_words():
    sentence = " ".join(["word"] * 1000) + "."
    chunks = text.chunk(sentence + " " + sentence, size=400, overlap=80)
    assert all(text.count_tokens(c) <= 400 for c in chunks)
    assert sum(c.count("word") for c in chunks) >= 2000


def test_chunk_rejects_bad_sizes():
    with pytest.raises(ValueError):
        text.chunk("x", size=10, overlap=10)


def test_query_terms_drop_stopwords_and_keep_order():
    assert text.query_terms("Where does the user live? Berlin, maybe Berlin!") == [
        "user",
        "live",
        "berlin",
        "maybe",
    ]


def test_query_of_only_stopwords_falls_back_to_its_words():
    assert text.query_terms("who is he?") == ["who", "is", "he"]


def test_query_terms_are_capped():
    assert len(text.query_terms(" ".join(f"term{i}" for i in range(100)), max_terms=8)) == 8


@pytest.mark.parametrize("term", ['"', 'a"b', "NEAR(", "*", "-x", "OR"])
def test_quote_makes_any_term_a_string_token(term):
    quoted = text.fts_quote(term)
    assert quoted.startswith('"') and quoted.endswith('"')
    assert quoted[1:-1].replace('""', "").count('"') == 0


def test_snippet_centres_on_a_term():
    body = "intro " * 100 + "the Berlin office opened " + "outro " * 100
    snip = text.snippet(body, ["berlin"], width=80)
    assert "Berlin" in snip and snip.startswith("…") and snip.endswith("…")


def test_query_focus_leaves_a_short_query_unchanged():
    for query in ("Where does the user live?", "  spaced   out  ", "", "x " * 64):
        assert text.query_focus(query) == query


def test_query_focus_keeps_the_final_question_after_a_long_preamble():
    preamble = "You are a helpful assistant. Answer concisely and truthfully. " * 30
    question = "Which city does the user live in?"
    assert text.query_focus(preamble + question) == question
    assert text.query_focus(preamble + "\n\n" + question + "\n") == question
    # The last question wins over an earlier one.
    earlier = "Is this an earlier question? "
    assert text.query_focus(earlier + preamble + question) == question


def test_query_focus_drops_the_role_label_before_the_question():
    preamble = "You are a helpful assistant. Answer concisely and truthfully. " * 30
    question = "Which city does the user live in?"
    for label in ("User question: ", "Q: ", "Human:  ", "user: "):
        assert text.query_focus(preamble + "\n\n" + label + question) == question
    # Not a role label: kept.
    kept = "Docker: which port does the registry use?"
    assert text.query_focus(preamble + "\n" + kept) == kept


def test_query_focus_without_a_question_keeps_the_last_words():
    words = [f"w{i}" for i in range(200)]
    assert text.query_focus(" ".join(words)) == " ".join(words[-64:])
    assert text.query_focus(" ".join(words), max_words=10) == " ".join(words[-10:])


def test_query_focus_skips_a_question_too_long_to_be_the_focus():
    long_question = " ".join(f"q{i}" for i in range(100)) + "?"
    assert text.query_focus(long_question) == " ".join(long_question.split()[-64:])


def test_query_focus_keeps_a_question_of_several_sentences_after_a_preamble():
    preamble = "You are a helpful assistant. Answer concisely and truthfully. " * 30
    question = (
        "I'm going back to our talk about music theory. You mentioned some online "
        "resources. Can you remind me of the website you recommended?"
    )
    for label in ("User question: ", ""):
        assert text.query_focus(preamble + "\n\n" + label + question) == question
    # Labelled but not asking: the message is still the focus.
    order = "Tell me the name of the beer you recommended for the stew."
    assert text.query_focus(preamble + "\n\nUser: " + order) == order
    # A last paragraph that neither asks nor is labelled is not the focus.
    tail = "Which city does she live in?\n\nThanks a lot."
    assert text.query_focus(preamble + tail) == "Which city does she live in?"
