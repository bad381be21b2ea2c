"""Pure text functions: normalisation and hashing, chunking, and safe FTS5 queries.

Nothing here touches a database, so the write path's text work is testable on its own.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

_WS = re.compile(r"\s+")
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def normalise(text: str) -> str:
    """Unicode NFC, whitespace collapsed, trimmed. Two texts that differ only in
    spacing or composition normalise to the same string (and hash)."""
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(text: str) -> str:
    """sha256 (hex) of the normalised text: the identity used for exact dedup and for
    the embedding cache."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def count_tokens(text: str) -> int:
    """Words and punctuation marks: a model-free token estimate (~1.3 per English word)."""
    return len(_TOKEN.findall(text))


# ----------------------------------------------------------------------------- chunking


@dataclass(frozen=True, slots=True)
class _Unit:
    text: str
    tokens: int


def chunk(text: str, size: int = 400, overlap: int = 80) -> list[str]:
    """Split ``text`` into chunks of about ``size`` tokens, ``overlap`` tokens shared
    between neighbours, cut at paragraph boundaries where possible (then sentences, then
    words). A text of at most ``size`` tokens is one chunk, returned unchanged."""
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError("chunk: need size > 0 and 0 <= overlap < size")
    if len(text) <= size:  # a token is at least one character: surely one chunk
        return [text]
    if count_tokens(text) <= size:
        return [text]
    units = list(_units(text, size))
    chunks: list[str] = []
    current: list[_Unit] = []
    current_tokens = 0
    for unit in units:
        if current and current_tokens + unit.tokens > size:
            chunks.append("\n\n".join(u.text for u in current))
            current = _tail(current, overlap)
            current_tokens = sum(u.tokens for u in current)
            # An overlap that leaves no room for the next unit is dropped.
            if current_tokens + unit.tokens > size:
                current, current_tokens = [], 0
        current.append(unit)
        current_tokens += unit.tokens
    if current:
        chunks.append("\n\n".join(u.text for u in current))
    return chunks


def _units(text: str, size: int):
    """Paragraphs; paragraphs over ``size`` split into sentences; sentences over ``size``
    split into word windows."""
    for paragraph in _PARAGRAPH.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        tokens = count_tokens(paragraph)
        if tokens <= size:
            yield _Unit(paragraph, tokens)
            continue
        for sentence in _SENTENCE.split(paragraph):
            tokens = count_tokens(sentence)
            if tokens <= size:
                yield _Unit(sentence, tokens)
                continue
            words = sentence.split()
            step = max(1, size // 2)
            for start in range(0, len(words), step):
                piece = " ".join(words[start : start + step])
                yield _Unit(piece, count_tokens(piece))


def _tail(units: list[_Unit], overlap: int) -> list[_Unit]:
    """The trailing units of a chunk that fit in ``overlap`` tokens; if the last unit alone
    is too long, its last words."""
    if overlap == 0 or not units:
        return []
    out: list[_Unit] = []
    total = 0
    for unit in reversed(units):
        if total + unit.tokens > overlap:
            break
        out.insert(0, unit)
        total += unit.tokens
    if out:
        return out
    words = units[-1].text.split()
    piece = " ".join(words[-max(1, overlap // 2) :])
    return [_Unit(piece, count_tokens(piece))]


# ----------------------------------------------------------------------------- queries

# Function words and question words: they carry no topic, and ANDing or ORing them only
# adds noise. A query made only of these falls back to its own words.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "mustn",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "shan",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "ever",
        "every",
        "get",
        "got",
        "may",
        "might",
        "must",
        "shall",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
        "y",
        "o",
        "tell",
        "know",
        "say",
        "said",
        "please",
        "thanks",
        "thank",
        "ok",
        "okay",
        "yes",
        "yeah",
        "hey",
        "hi",
        "hello",
        "kind",
        "sort",
    ]
)


def query_focus(text: str, max_words: int = 64) -> str:
    """The part of a query that says what is sought.

    Agents often paste a system prompt or a long context before the real question;
    an embedding model reads only its first ~128 word-pieces, and a keyword query made of
    the preamble's rare words finds the preamble's topics. A query of at most
    ``max_words`` words is returned unchanged; a longer one is cut to its last paragraph
    when that is short enough and asks something or carries a role label, else to its
    last sentence that asks something (ends with ``?``) when that is short enough, else to its last
    ``max_words`` words. A role label before that question ("User question:", "Q:",
    "Human:") is dropped: its words are the prompt's, not what is sought (with it, a 2 kB
    prompt before LoCoMo's questions searched for "user" and "question" too).
    """
    words = text.split()
    if len(words) <= max_words:
        return text
    # The last paragraph, whole, when it is a question or a labelled message: a question
    # of several sentences ("I'm back to our talk about beer. Which one did you
    # recommend?") keeps what it is about (with only its last sentence, a 2 kB prompt cost
    # LongMemEval 2.7 points of session@5).
    last = _PARAGRAPH.split(text.strip())[-1].strip()
    focus = _ROLE_LABEL.sub("", last, count=1)
    if 0 < len(focus.split()) <= max_words and ("?" in focus or focus != last):
        return focus
    for sentence in reversed(_SENTENCE_OR_LINE.split(text)):
        if "?" in sentence and 0 < len(sentence.split()) <= max_words:
            return _ROLE_LABEL.sub("", sentence.strip(), count=1) or sentence.strip()
    return " ".join(words[-max_words:])


_SENTENCE_OR_LINE = re.compile(r"(?<=[.!?])\s+|\n+")
_ROLE_LABEL = re.compile(
    r"^(?:[A-Za-z]+\s+){0,2}?(?:question|query|request|message|input|prompt|task|user|human|q)"
    r"\s*:\s+",
    re.IGNORECASE,
)


def query_terms(text: str, max_terms: int = 32) -> list[str]:
    """The meaningful words of a natural-language query, lowercased, deduplicated, in
    order: stopwords and one-letter words dropped (unless nothing else is left), at most
    ``max_terms`` kept."""
    words = [w.lower() for w in _WORD.findall(text)]
    seen: set[str] = set()
    terms: list[str] = []
    for word in words:
        if word in seen or word in STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        seen.add(word)
        terms.append(word)
    if not terms:  # e.g. "who is he?": search the words themselves
        terms = list(dict.fromkeys(words))
    return terms[:max_terms]


def fts_quote(term: str) -> str:
    """One FTS5 string token: the term in double quotes, inner quotes doubled. Whatever
    the term holds, the result is never FTS5 syntax."""
    return '"' + term.replace('"', '""') + '"'


def fts_or_query(terms: list[str]) -> str:
    """An FTS5 query matching any of ``terms`` (each quoted); "" when there are none."""
    return " OR ".join(fts_quote(t) for t in terms)


def snippet(text: str, terms: list[str], width: int = 200) -> str:
    """A window of ``text`` around the first query term found (whole text when short)."""
    if len(text) > 2 * width and text.isascii():
        cut = _ascii_snippet(text, terms, width)
        if cut is not None:
            return cut
    # str.split() splits on exactly the characters \s matches (str.isspace), 3x faster
    # than _WS.sub(" ", text).strip() on a kilobyte.
    flat = " ".join(text.split())
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


def _ascii_snippet(text: str, terms: list[str], width: int) -> str | None:
    """``snippet`` of a long ASCII text with only the part of it around the window
    flattened, and not even that where it holds no whitespace but single spaces (a
    search returning 50 kilobyte-long turns flattened each whole: ~0.6 ms); None where
    that part does not reach past the window (``snippet`` flattens it all).

    The same answer: ASCII's ``lower`` keeps each character's place, and a term, holding
    no whitespace, occurs in the flattened text exactly where it occurs in a word of the
    text, in the same order. The window starts ``width // 4`` characters before the
    first term found; a piece of the text flattens to a piece of the whole flattened
    (less a space at a cut), so where the flattened part just before the term is
    longer than that, the window is read from it and after it (behind "…"), and where
    the term sits nearer the start the flattened text up to it is the whole prefix's."""
    if any(not t or t.split() != [t] for t in terms):
        return None
    quarter = width // 4
    lowered = text.lower()
    at = -1  # the first place of any term: each next term is looked for before it only
    for term in terms:
        found = lowered.find(term, 0, len(lowered) if at < 0 else at + len(term) - 1)
        if found >= 0:
            at = found
    if at < 0:
        flat = _flat_prefix(text[: width + quarter + 1])
        return flat[:width].strip() + "…" if len(flat) > width else None
    tail = text[at + 1 : at + 1 + width + quarter]
    rest = _flat_prefix(tail)
    if rest and tail[0].isspace():
        rest = " " + rest
    back = at - 2 * (quarter + 1)
    if back > 0:
        # The flattened text up to the term ends with this piece's (a suffix of it):
        # with more than ``quarter + 1`` characters, the window starts inside it.
        piece = _flat_prefix(text[back : at + 1])
        if len(piece) > quarter + 1:
            near = piece[-(quarter + 1) :] + rest
            return "…" + near[:width].strip() + "…" if len(near) > width else None
    head = _flat_prefix(text[: at + 1])  # ends with the term's first character
    flat = head + rest
    start = max(0, len(head) - 1 - quarter)
    end = start + width
    if len(flat) <= end:  # the window may reach the text's end: ``snippet`` says
        return None
    return ("…" if start > 0 else "") + flat[start:end].strip() + "…"


def _flat_prefix(part: str) -> str:
    """``" ".join(part.split())`` of ASCII ``part``: ``part`` itself, less its trailing
    spaces, where its only whitespace is single spaces after the first character (an
    ASCII whitespace character other than the space is not printable)."""
    if part.isprintable() and "  " not in part and part[:1] != " ":
        return part.rstrip(" ")
    return " ".join(part.split())


def token_window(text: str, terms: list[str], tokens: int) -> str:
    """About ``tokens`` tokens (``count_tokens``' units) of ``text``, starting a little
    before the first query term found: the whole text when it is that short."""
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if len(spans) <= tokens:
        return text.strip()
    lowered = text.lower()
    positions = [p for p in (lowered.find(t.lower()) for t in terms if t) if p >= 0]
    first = 0
    if positions:
        at = min(positions)
        first = next((i for i, (start, _end) in enumerate(spans) if start >= at), 0)
        first = max(0, min(first - tokens // 8, len(spans) - tokens))
    last = first + tokens - 1
    prefix = "…" if first > 0 else ""
    suffix = "…" if last < len(spans) - 1 else ""
    return prefix + text[spans[first][0] : spans[last][1]].strip() + suffix


_QUIET_REASONS = frozenset({"expired", "minor correction", "corrected"})
REASON_PREFIX = "Supersede reason: "


def reason_chunk(reason: str | None, kind: str | None) -> list[str]:
    """The extra keyword chunk that makes a hard supersede's reason searchable (empty
    for a soft supersede or a routine reason); the write path, imports and the store's
    repairs all derive it here (``hivemem.write.audit.reason_chunks``)."""
    text = (reason or "").strip()
    if kind != "hard" or not text or text.lower() in _QUIET_REASONS:
        return []
    return [REASON_PREFIX + text]


_USER_VERB = re.compile(r"\b(does|is|did|has|was|do|can|will|would|should)\s+the\s+user\b", re.I)
_USER_POSSESSIVE = re.compile(r"\bthe\s+user[’']s\b", re.I)
_USER = re.compile(r"\bthe\s+user\b", re.I)
_FIRST_PERSON_VERB = {"does": "do", "is": "am"}


def as_first_person(question: str) -> str:
    """A question about "the user" as the user's own words would put it, for the vector
    lane: an agent asks "Where does the user live now?", the memory says "I moved to
    Berlin" — a sentence model links "I"/"my" to what the user wrote far better than "the
    user" (measured on every suite: docs/retrieval.md). "does the user" → "do I", "is the
    user" → "am I", "the user's" → "my", "the user" → "I"; any other text unchanged. The
    keyword lane keeps the question as written."""
    if "user" not in question.lower():
        return question

    def verb(match: re.Match[str]) -> str:
        word = match.group(1)
        said = _FIRST_PERSON_VERB.get(word.lower(), word.lower())
        return (said.capitalize() if word[0].isupper() else said) + " I"

    out = _USER_POSSESSIVE.sub("my", question)
    out = _USER_VERB.sub(verb, out)
    return _USER.sub("I", out)
