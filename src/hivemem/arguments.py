"""Validation of the arguments of reads and changes: ids, keys, prefixes, offsets, lists.

``hivemem.write.rules`` validates what becomes a row; this module validates the other values a
caller hands the facade (``ScopedMemory``, ``Vault``, the token table, the notes index)
before any of them reaches SQLite. Each function returns the clean value or raises
``InvalidInput`` naming the field in plain words: no ``UnicodeEncodeError``,
``OverflowError`` or driver error ever escapes for a bad argument.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import InvalidInput
from .settings import Settings

MAX_REF_CHARS = 1000  # an id is 36 characters and a key at most max_key_chars
MAX_OFFSET = 2**63 - 1  # the largest integer SQLite stores; past the end is just empty
MAX_PATH_BYTES = 4096  # PATH_MAX on Linux; longer paths cannot be opened anywhere


def bad_character(field: str, position: int) -> InvalidInput:
    """The one message for text SQLite cannot store (a lone surrogate, which is what a
    byte that is not UTF-8 becomes in a command-line argument)."""
    return InvalidInput(
        field,
        f"contains an invalid character at position {position} "
        "(not valid UTF-8: an unpaired surrogate)",
    )


def storable(value: str, field: str) -> str:
    """``value`` unchanged if both backends can store it and look it up: valid UTF-8
    text (no unpaired surrogate) without a NUL character (PostgreSQL's text cannot hold
    one: a NUL in a name or id reached it as a raw driver error, issue 25)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise bad_character(field, exc.start) from None
    if "\x00" in value:
        raise InvalidInput(field, f"contains a NUL character at position {value.index(chr(0))}")
    return value


def ref(value: object, field: str = "id", *, what: str = "a memory id or key") -> str:
    """An id or key to look something up by: non-empty text SQLite can store."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, f"expected {what}, got {_kind(value)}")
    if len(value) > MAX_REF_CHARS:
        raise InvalidInput(field, f"{len(value)} characters is longer than any {what}")
    return storable(value, field)


def prefix(value: object, field: str = "prefix") -> str | None:
    """An optional key prefix: text SQLite can store, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, f"expected text, got {_kind(value)}")
    if len(value) > MAX_REF_CHARS:
        raise InvalidInput(field, f"{len(value)} characters is longer than any key")
    return storable(value, field) or None


def text(value: object, field: str) -> str | None:
    """Optional free text (instructions, a note): text SQLite can store, or ``None``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(field, f"expected text, got {_kind(value)}")
    return storable(value, field)


def offset(value: object, field: str = "offset") -> int:
    """How many rows to skip: a whole number from 0 to ``MAX_OFFSET``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OFFSET:
        raise InvalidInput(
            field, f"expected a whole number from 0 to {MAX_OFFSET}, got {_shown(value)}"
        )
    return value


def flag(value: object, field: str) -> bool:
    """A yes/no switch: ``True`` or ``False`` only (not ``"no"``, which is truthy)."""
    if not isinstance(value, bool):
        raise InvalidInput(field, f"expected true or false, got {_shown(value)}")
    return value


def batch(value: object, field: str = "items") -> Iterable[Any]:
    """A list of mappings (episodes): any iterable but text, bytes or a single mapping."""
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise InvalidInput(field, f"expected a list of mappings, got {_kind(value)}")
    return value


def path(value: object, field: str) -> Path:
    """A file-system path that can be looked at: text or path-like, no NUL, not longer
    than ``MAX_PATH_BYTES`` (longer ones fail with "File name too long")."""
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise InvalidInput(field, "expected the path of a folder")
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if "\x00" in text:
        raise InvalidInput(field, "contains a NUL character")
    try:
        size = len(os.fsencode(text))
    except UnicodeEncodeError as exc:
        raise bad_character(field, exc.start) from None
    if size > MAX_PATH_BYTES:
        raise InvalidInput(field, f"{size} bytes is longer than any path ({MAX_PATH_BYTES})")
    return Path(text)


def query(text: str, fts_syntax: bool, settings: Settings) -> str:
    """Search text within the bounds that keep a search's cost bounded.

    Any text is a valid natural-language query (at most ``max_content_bytes`` characters;
    only its focus and ``max_query_terms`` terms are searched). FTS5 syntax goes to SQLite
    as it is, and its cost grows with its words (``'deploy ' * 14_300`` ran for minutes),
    so it must be storable text of at most ``max_query_terms`` words; its run time is
    bounded too (``fts_time_limit_ms``, in the backend)."""
    max_chars, max_terms = settings.max_content_bytes, settings.max_query_terms
    if len(text) > max_chars:
        raise InvalidInput(
            "query", f"{len(text)} characters is longer than the limit of {max_chars}"
        )
    if fts_syntax:
        storable(text, "query")
        words = [w for w in _FTS_WORD.findall(text) if w not in _FTS_OPERATORS]
        if len(words) > max_terms:
            raise InvalidInput(
                "query",
                f"an FTS5 query may hold at most {max_terms} words (setting "
                f"max_query_terms); this one holds {len(words)}",
            )
    return text


_FTS_WORD = re.compile(r"\w+")
_FTS_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})


def _kind(value: object) -> str:
    if isinstance(value, str):
        return "empty text" if not value.strip() else "text"
    return "null" if value is None else type(value).__name__


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def name(value: object, field: str, max_chars: int, *, optional: bool = False) -> str | None:
    """A short identifier (scope, key, session id, role, …): text, trimmed, not blank,
    no control characters, at most ``max_chars``."""
    if value is None:
        if optional:
            return None
        raise InvalidInput(field, "is required")
    if not isinstance(value, str):
        raise InvalidInput(field, f"expected text, got {type(value).__name__}")
    storable(value, field)
    value = unicodedata.normalize("NFC", value.strip())
    if not value:
        raise InvalidInput(field, "is empty")
    if _CONTROL.search(value):
        raise InvalidInput(field, "contains a control character")
    if len(value) > max_chars:
        raise InvalidInput(field, f"{len(value)} characters exceeds the limit of {max_chars}")
    return value


def limit(value: object, field: str = "limit", maximum: int = 10_000) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInput(field, f"expected a whole number from 1 to {maximum}, got {value!r}")
    return value


def callback(value: Any, field: str) -> Any:
    """``value`` when it is ``None`` or callable; else ``InvalidInput`` naming it, at the
    call that took it, instead of a ``TypeError`` deep inside a write or a job after
    its work began (a progress hook, ``clock``, ``on_start``, ``on_report``)."""
    if value is None or callable(value):
        return value
    raise InvalidInput(field, f"expected a function (a callable) or None, got {_kind(value)}")
