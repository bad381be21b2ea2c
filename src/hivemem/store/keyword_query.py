"""What the keyword lane asks a keyword index: a neutral query, compiled by each backend.

``KeywordQuery`` is either plain terms with a mode (``any``: chunks holding any term,
the lane's own queries; ``all``; ``phrase``: the terms in order, adjacent) or a caller's
own query syntax (``fts_syntax=True``) parsed into a small tree (``parse``). Nothing
above the store writes a backend's query language: SQLite compiles the query to an FTS5
``MATCH`` string (``store/sqlite/keyword.py``), PostgreSQL to a ``tsquery``
(``store/postgres/keyword.py``).

The syntax a caller may write is FTS5's, read here by a parser that follows FTS5's own
grammar and tokenizer (``fts5parse.y``, ``fts5_expr.c``) so that what SQLite accepted
stays accepted, with the same meaning, and what it refused stays refused
(``InvalidInput`` naming the query, before any backend sees it):

- phrases: barewords (letters, digits, ``_``, any non-ASCII character) or ``"quoted"``
  strings (``""`` is a quote), joined by ``+`` into one phrase; ``*`` after a piece makes
  its last token a prefix; ``^`` before a phrase anchors it at the start of the text;
- ``NEAR(p1 p2 …[, N])``: the phrases within N tokens (10 when not given);
- ``AND``, ``OR``, ``NOT`` (upper case; NOT binds tightest, then AND, then OR) and
  parentheses; phrases side by side are an implicit AND;
- column filters ``text:``, ``{text}:``, ``-text:``, ``- {text} : (…)`` (the index has
  one column, ``text``; another name is refused as FTS5 refuses it).

A phrase's text is kept as written; it is tokenized only to find phrases that hold no
index token at all (``"🐝"``): FTS5 drops such a phrase from an implicit AND or a NEAR,
and it matches nothing elsewhere (``Empty``). The tree holds that outcome, so each
backend compiles the same meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from ..errors import InvalidInput
from . import scratch

Mode = Literal["any", "all", "phrase"]
COLUMNS = ("text",)  # the keyword index's one column (chunks_fts)
NEAR_DEFAULT = 10


@dataclass(frozen=True, slots=True)
class Piece:
    """One string of a phrase as written; ``prefix``: its last token is a prefix."""

    text: str
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class Phrase:
    pieces: tuple[Piece, ...]
    initial: bool = False  # ``^``: the phrase starts the text


@dataclass(frozen=True, slots=True)
class Near:
    phrases: tuple[Phrase, ...]
    distance: int = NEAR_DEFAULT


@dataclass(frozen=True, slots=True)
class And:
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Or:
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Not:
    """``left`` without ``right``."""

    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Empty:
    """Matches nothing (a phrase without index tokens, or a filter excluding the column)."""


Expr = Union[Phrase, Near, And, Or, Not, Empty]  # noqa: UP007 (a runtime alias)


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """A keyword-index query, neutral of any backend's syntax (see the module docstring).

    ``terms`` with ``mode``, or ``expression`` (a caller's parsed syntax; ``terms`` then
    empty). ``newest_first``: the terms are so common that ranking every match would
    cost too much, so the best among the newest matches are wanted instead."""

    terms: tuple[str, ...] = ()
    mode: Mode = "any"
    expression: Expr | None = None
    newest_first: bool = False

    @classmethod
    def any_of(cls, terms: tuple[str, ...] | list[str], newest_first: bool = False) -> KeywordQuery:
        return cls(tuple(terms), "any", None, newest_first)

    def tree(self) -> Expr:
        """The query as a tree (terms with their mode too)."""
        if self.expression is not None:
            return self.expression
        phrases: list[Expr] = [_checked(Phrase((Piece(t),))) for t in self.terms]
        if self.mode == "phrase":
            return _checked(Phrase(tuple(Piece(t) for t in self.terms)))
        out: Expr | None = None
        for phrase in phrases:
            if out is None:
                out = phrase
            else:
                out = Or(out, phrase) if self.mode == "any" else And(out, phrase)
        return simplify(out if out is not None else Empty())


def phrase_tokens(phrase: Phrase) -> list[tuple[str, bool]]:
    """The phrase's index tokens in order, each with whether it is a prefix."""
    out: list[tuple[str, bool]] = []
    for piece in phrase.pieces:
        tokens = scratch.stems(piece.text)
        out.extend((t, piece.prefix and i == len(tokens) - 1) for i, t in enumerate(tokens))
    return out


def phrases_of(expr: Expr, *, positive_only: bool = True) -> list[Phrase]:
    """The phrases of ``expr`` in order (not those under a NOT's right side when
    ``positive_only``: they never occur in a match)."""
    if isinstance(expr, Phrase):
        return [expr]
    if isinstance(expr, Near):
        return list(expr.phrases)
    if isinstance(expr, (And, Or)):
        return phrases_of(expr.left, positive_only=positive_only) + phrases_of(
            expr.right, positive_only=positive_only
        )
    if isinstance(expr, Not):
        right = [] if positive_only else phrases_of(expr.right, positive_only=False)
        return phrases_of(expr.left, positive_only=positive_only) + right
    return []


def _checked(phrase: Phrase) -> Expr:
    return phrase if phrase_tokens(phrase) else Empty()


def simplify(expr: Expr) -> Expr:
    """``Empty`` propagated as FTS5 evaluates it: AND with nothing is nothing, OR with
    nothing is the other side, nothing NOT x is nothing, x NOT nothing is x."""
    if isinstance(expr, (And, Or, Not)):
        left, right = simplify(expr.left), simplify(expr.right)
        le, re_ = isinstance(left, Empty), isinstance(right, Empty)
        if isinstance(expr, And):
            return Empty() if le or re_ else And(left, right)
        if isinstance(expr, Or):
            return right if le else left if re_ else Or(left, right)
        return Empty() if le else left if re_ else Not(left, right)
    return expr


# ----------------------------------------------------------------------------- parser

_SINGLE = {
    "(": "LP",
    ")": "RP",
    "{": "LCP",
    "}": "RCP",
    ":": "COLON",
    ",": "COMMA",
    "+": "PLUS",
    "*": "STAR",
    "-": "MINUS",
    "^": "CARET",
}
_SPACE = " \t\n\r"


def _bareword(ch: str) -> bool:
    return ord(ch) >= 0x80 or ch.isascii() and (ch.isalnum() or ch in "_\x1a")


def _tokens(text: str) -> list[tuple[str, str, bool]]:
    """FTS5's query tokens: (kind, text, quoted). SQLite reads the query as a C string:
    it ends at the first NUL."""
    text = text.split("\x00", 1)[0]
    out: list[tuple[str, str, bool]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n:
            out.append(("EOF", "", False))
            return out
        ch = text[i]
        if ch in _SINGLE:
            out.append((_SINGLE[ch], ch, False))
            i += 1
        elif ch == '"':
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise _syntax("unterminated string")
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            out.append(("STRING", "".join(buf), True))
            i = j + 1
        elif _bareword(ch):
            j = i + 1
            while j < n and _bareword(text[j]):
                j += 1
            word = text[i:j]
            kind = word if word in ("AND", "OR", "NOT") else "STRING"
            out.append((kind, word, False))
            i = j
        else:
            raise _syntax(f'syntax error near "{ch}"')


def _syntax(why: str) -> InvalidInput:
    return InvalidInput("query", f"not valid FTS5 syntax: {why}")


class _Parser:
    """Recursive descent over FTS5's grammar (precedence: OR < AND < NOT)."""

    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> tuple[str, str, bool]:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self, kind: str) -> tuple[str, str, bool]:
        tok = self.peek()
        if tok[0] != kind:
            raise _syntax(f'syntax error near "{tok[1]}"')
        self.i += 1
        return tok

    def parse(self) -> Expr:
        if self.peek()[0] == "EOF":
            raise _syntax('syntax error near ""')
        if self.peek()[0] == "STAR":
            raise _syntax("unknown special query")
        expr = self.or_expr()
        self.take("EOF")
        return expr

    def or_expr(self) -> Expr:
        expr = self.and_expr()
        while self.peek()[0] == "OR":
            self.i += 1
            expr = Or(expr, self.and_expr())
        return expr

    def and_expr(self) -> Expr:
        expr = self.not_expr()
        while self.peek()[0] == "AND":
            self.i += 1
            expr = And(expr, self.not_expr())
        return expr

    def not_expr(self) -> Expr:
        expr = self.primary()
        while self.peek()[0] == "NOT":
            self.i += 1
            expr = Not(expr, self.primary())
        return expr

    def primary(self) -> Expr:
        kind = self.peek()[0]
        if kind == "LP":
            self.i += 1
            expr = self.or_expr()
            self.take("RP")
            return expr
        if self._colset_ahead() and self._colset_then_paren():
            keep = self.colset()
            self.take("COLON")
            self.take("LP")
            expr = self.or_expr()
            self.take("RP")
            return expr if keep else Empty()
        # exprlist: cnearsets side by side, an implicit AND that drops empty members
        members = [self.cnearset()]
        while self.peek()[0] in ("STRING", "CARET", "MINUS", "LCP"):
            members.append(self.cnearset())
        kept = [m for m in members if not isinstance(m, Empty)]
        if not kept:
            return Empty()
        expr = kept[0]
        for member in kept[1:]:
            expr = And(expr, member)
        return expr

    def _colset_ahead(self) -> bool:
        kind = self.peek()[0]
        if kind in ("MINUS", "LCP"):
            return True
        return kind == "STRING" and self.peek(1)[0] == "COLON"

    def _colset_then_paren(self) -> bool:
        j = self.i
        if self.toks[j][0] == "MINUS":
            j += 1
        if self.toks[j][0] == "LCP":
            while self.toks[j][0] not in ("RCP", "EOF"):
                j += 1
        j += 1
        return self.toks[min(j, len(self.toks) - 1)][0] == "COLON" and (
            self.toks[min(j + 1, len(self.toks) - 1)][0] == "LP"
        )

    def colset(self) -> bool:
        """A column filter; True when it keeps the index's column."""
        negate = self.peek()[0] == "MINUS"
        if negate:
            self.i += 1
        names: list[str] = []
        if self.peek()[0] == "LCP":
            self.i += 1
            names.append(self.take("STRING")[1])
            while self.peek()[0] == "STRING":
                names.append(self.take("STRING")[1])
            self.take("RCP")
        else:
            names.append(self.take("STRING")[1])
        for name in names:
            if name.lower() not in COLUMNS:
                raise _syntax(f"no such column: {name}")
        return not negate

    def cnearset(self) -> Expr:
        if self._colset_ahead():
            keep = self.colset()
            self.take("COLON")
            found = self.nearset()
            return found if keep else Empty()
        return self.nearset()

    def nearset(self) -> Expr:
        if self.peek()[0] == "CARET":
            self.i += 1
            phrase = self.phrase()
            return _checked(Phrase(phrase.pieces, initial=True))
        tok = self.peek()
        if tok[0] == "STRING" and self.peek(1)[0] == "LP":
            if tok[2] or tok[1] != "NEAR":
                raise _syntax(f'syntax error near "{tok[1]}"')
            self.i += 2
            phrases = [self.phrase()]
            while self.peek()[0] == "STRING":
                phrases.append(self.phrase())
            distance = NEAR_DEFAULT
            if self.peek()[0] == "COMMA":
                self.i += 1
                digits = self.take("STRING")[1]
                if not digits.isascii() or not digits.isdigit():
                    raise _syntax(f"expected integer, got {digits!r}")
                distance = int(digits)
            self.take("RP")
            kept = tuple(p for p in phrases if phrase_tokens(p))
            if not kept:
                return Empty()
            return kept[0] if len(kept) == 1 else Near(kept, distance)
        return _checked(self.phrase())

    def phrase(self) -> Phrase:
        pieces = [self.piece()]
        while self.peek()[0] == "PLUS":
            self.i += 1
            pieces.append(self.piece())
        return Phrase(tuple(pieces))

    def piece(self) -> Piece:
        text = self.take("STRING")[1]
        prefix = self.peek()[0] == "STAR"
        if prefix:
            self.i += 1
        return Piece(text, prefix)


def parse(text: str) -> KeywordQuery:
    """A caller's FTS5-syntax query as a ``KeywordQuery``; bad syntax is ``InvalidInput``
    on the field ``query``, as SQLite's own parser would refuse it."""
    return KeywordQuery(expression=simplify(_Parser(text).parse()))
