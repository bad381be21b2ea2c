"""Redaction: secrets and credentials never leave HiveMem through an output.

Two mechanisms, both compiled regular expressions (microseconds per call):

- ``Scrubber`` holds every secret value of the vault (``hivemem.write.vault``, all scopes) and
  replaces each occurrence (as is, JSON-escaped or URL-quoted) with ``[REDACTED]`` in
  whatever it is given; ``Scrubber.scrubbed`` reaches every text inside a value
  (``Memory``, ``Hit``, ``Entity``, lists, mappings). Every public method of the facade
  returns through ``scrubs_output``, so every field of every result (content, key, tags,
  attributes, snippets, errors) is clean for every front end; ``context()`` blocks, tool
  results, log records and exports pass through it too. It follows other processes'
  vault changes (``PRAGMA data_version``), so a secret set elsewhere is redacted here
  from the next call on.
- ``find_credentials`` recognises well-known credential shapes (API keys, tokens, private
  keys, JWTs, bearer tokens); ``guard_value`` applies the ``credential_policy`` setting
  to every text field of every write (``WRITTEN_TEXT_FIELDS``): ``redact`` (default: the credential
  becomes ``[REDACTED:<kind>]`` and a warning is logged), ``reject`` (``InvalidInput``,
  nothing written) or ``allow``. Registered vault secrets found in content are treated
  the same way, so a secret never reaches the keyword or vector index.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import logging
import re
import threading
import urllib.parse
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import HiveMemError, InvalidInput, StoreError

log = logging.getLogger("hivemem.write.redact")

REDACTED = "[REDACTED]"
POLICIES = ("redact", "reject", "allow")
# Every field of a write that holds caller text: ``credential_policy`` applies to each.
WRITTEN_TEXT_FIELDS = frozenset(
    {
        "content",
        "key",
        "tags",
        "attributes",
        "source_ids",
        "session_id",
        "role",
        "updated_by",
        "source",
        "supersede_reason",
    }
)
MIN_SECRET_CHARS = 6  # shorter values cannot be redacted without mangling ordinary text

# (kind, literal, pattern, needs a word boundary before it). Every pattern starts with
# its literal, so ``literal in text`` (a C substring search) rules a shape out for most
# texts and the regex engine scans for the literal prefix: ~1 us on a 200-character
# memory, well under 1 ms for the largest one accepted. Group 1, when there is one, is
# the credential (a bearer token without its word).
_SHAPES: tuple[tuple[str, str, str, bool], ...] = (
    (
        "private-key",
        "-----BEGIN ",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)",
        False,
    ),
    ("openai-key", "sk-", r"sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}", True),
    ("github-token", "gh", r"gh[pousr]_[A-Za-z0-9]{30,}", True),
    ("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{22,}", True),
    ("aws-access-key", "AKIA", r"AKIA[0-9A-Z]{16}(?![0-9A-Za-z])", True),
    ("aws-access-key", "ASIA", r"ASIA[0-9A-Z]{16}(?![0-9A-Za-z])", True),
    ("slack-token", "xox", r"xox[abposr]-[A-Za-z0-9-]{10,}", True),
    ("stripe-key", "k_live_", r"[rs]k_live_[A-Za-z0-9]{16,}", True),
    ("stripe-key", "k_test_", r"[rs]k_test_[A-Za-z0-9]{16,}", True),
    ("google-api-key", "AIza", r"AIza[0-9A-Za-z_-]{35}", True),
    ("jwt", "eyJ", r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}", True),
    ("bearer-token", "Bearer ", r"Bearer ([A-Za-z0-9._~+/-]{20,}=*)", True),
    ("bearer-token", "bearer ", r"bearer ([A-Za-z0-9._~+/-]{20,}=*)", True),
)
_COMPILED = tuple(
    (kind, literal, re.compile(pattern), boundary) for kind, literal, pattern, boundary in _SHAPES
)


@dataclass(frozen=True, slots=True)
class Finding:
    """A credential found in a text: its kind and where it is (never its value)."""

    kind: str
    start: int
    end: int


def find_credentials(text: str) -> list[Finding]:
    """Every well-known credential shape in ``text``, in order (overlaps merged)."""
    found: list[Finding] = []
    for kind, literal, pattern, boundary in _COMPILED:
        if literal not in text:
            continue
        for match in pattern.finditer(text):
            start = match.start()
            if boundary and start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
                continue  # inside a longer word ("task-…"): not this shape
            span = match.span(1) if pattern.groups else match.span()
            found.append(Finding(kind, *span))
    if len(found) < 2:
        return found
    found.sort(key=lambda f: (f.start, -f.end))
    merged = [found[0]]
    for finding in found[1:]:
        if finding.start < merged[-1].end:  # e.g. a JWT inside a bearer header
            continue
        merged.append(finding)
    return merged


def redact_credentials(text: str) -> tuple[str, list[Finding]]:
    """``text`` with every credential replaced by ``[REDACTED:<kind>]``, and the findings."""
    found = find_credentials(text)
    if not found:
        return text, found
    parts, last = [], 0
    for finding in found:
        parts.append(text[last : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        last = finding.end
    parts.append(text[last:])
    return "".join(parts), found


class Scrubber:
    """Redacts registered secret values from text.

    ``load`` is called (with no argument) to read every secret value when ``stale``
    returns true; both are given by the store (the vault table and ``PRAGMA
    data_version``). Values shorter than ``MIN_SECRET_CHARS`` are ignored (the vault
    refuses them).
    """

    def __init__(
        self,
        load: Callable[[], Iterable[str]] | None = None,
        stale: Callable[[], bool] | None = None,
    ) -> None:
        self._load = load
        self._stale = stale
        self._lock = threading.Lock()
        self._values: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._loaded = load is None
        _LOG_FILTER.attach(self)

    @property
    def count(self) -> int:
        """How many secret values are registered."""
        self._refresh()
        return len(self._values)

    def add(self, value: str) -> None:
        if len(value) >= MIN_SECRET_CHARS and value not in self._values:
            self._set(self._values | {value})

    def discard(self, value: str) -> None:
        if value in self._values:
            self._set(self._values - {value})

    def reload(self) -> None:
        """Read every secret value again from the store. The same values keep their
        pattern: a store's own writes also count as a change (``PRAGMA data_version``
        with the read pool), so on the write path nearly every reload finds the values
        it had, and compiling them again cost a write more than its row did."""
        if self._load is not None:
            values = frozenset(v for v in self._load() if len(v) >= MIN_SECRET_CHARS)
            if values != self._values:
                self._set(values)
            else:
                install_log_filter()  # loggers created since get the filter all the same
            self._loaded = True

    def _set(self, values: frozenset[str]) -> None:
        with self._lock:
            self._values = values
            # Longest first: a secret that contains another is redacted whole. Each value
            # also in the forms outputs write it in: JSON-escaped (a log line holding a JSON
            # body) and URL-quoted (a request path in an access log).
            forms = {form for value in values for form in _forms(value)}
            ordered = sorted(forms, key=lambda v: (-len(v), v))
            self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        install_log_filter()  # loggers created since the store opened get the filter too

    def _refresh(self) -> None:
        # ``stale`` first: it notes the file's version before the values are read. A
        # reload that fails leaves the values unloaded, so the next call reads them
        # (``stale`` has already said "changed" once and may not say it again).
        stale = self._stale is not None and self._stale()
        if stale or not self._loaded:
            self._loaded = self._load is None
            self.reload()

    def refresh_for_error(self, exc: BaseException) -> None:
        """Bring the values up to date before the output of the error ``exc`` is
        scrubbed (then scrub with ``refresh=False``). An error path never needs the
        store: after a store failure (``StoreError``: the store down, busy, damaged)
        the values known now stand, since asking would fail or wait the same way;
        after another error (a conflict that echoes a memory, a bad argument) the store
        is asked as for any output, and the values known now stand if it cannot answer."""
        if isinstance(exc, StoreError):
            return
        try:
            self._refresh()
        except Exception:  # the store went away meanwhile: the last values known
            log.debug("secret values not refreshed for an error's output", exc_info=True)

    def holds_secrets(self) -> bool:
        """Whether any secret value is registered now (the store asked first, as
        ``scrub`` asks it): a caller with many texts to scrub asks this once, then scrubs
        each with ``refresh=False``, or not at all."""
        self._refresh()
        return self._pattern is not None

    def contains_secret(self, text: str, *, refresh: bool = True) -> bool:
        """Whether ``text`` holds a registered secret value; ``refresh=False``: the values
        known now (a caller checking several texts of one write refreshes once)."""
        if refresh:
            self._refresh()
        return self._pattern is not None and self._pattern.search(text) is not None

    def scrub(self, text: str, *, refresh: bool = True, replacement: str = REDACTED) -> str:
        """``text`` with every registered secret value replaced by ``[REDACTED]``.
        ``refresh=False`` uses the values known now, without asking the store (the log
        filter: a log call never waits for the database)."""
        if refresh:
            self._refresh()
        pattern = self._pattern
        if pattern is None or not isinstance(text, str):
            return text
        return pattern.sub(lambda _: replacement, text)

    def scrubbed(self, value: Any, *, refresh: bool = True) -> Any:
        """``value`` with every registered secret redacted from every text it holds, at
        any depth: strings, lists, tuples, mappings (keys too) and dataclass values such
        as ``Memory``, ``Hit``, ``Entity`` (a copy; the same object when nothing
        changes). Enums, numbers and times are left as they are. ``refresh=False``: the
        values known now (see ``scrub``)."""
        if refresh:
            self._refresh()
        if self._pattern is None:
            return value
        return _deep(value, lambda text: self.scrub(text, refresh=False))

    def close(self) -> None:
        _LOG_FILTER.detach(self)


F = TypeVar("F", bound=Callable[..., Any])


def scrubs_output(method: F) -> F:
    """Decorator of the facade's public methods (``self.store.scrubber`` is the store's
    scrubber): the result, and the message and ``current`` of a ``HiveMemError`` it
    raises, leave with every registered secret redacted (``Scrubber.scrubbed``). One
    place for every front end: library, tools, MCP, HTTP and CLI all read through it."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        scrubber: Scrubber = self.store.scrubber
        try:
            result = method(self, *args, **kwargs)
        except HiveMemError as exc:
            scrubber.refresh_for_error(exc)  # never a second failure from the store
            clean = scrubber.scrubbed(exc.message, refresh=False)
            if clean != exc.message:
                exc.message, exc.args = clean, (clean,)
            current = getattr(exc, "current", None)
            if current is not None:
                exc.current = scrubber.scrubbed(current, refresh=False)  # type: ignore[attr-defined]
            raise
        return scrubber.scrubbed(result)

    return wrapper  # type: ignore[return-value]


def _forms(value: str) -> set[str]:
    """``value`` as outputs may write it: as is, JSON-escaped, URL-quoted, or as Python
    shows it inside a repr (an error message quoting an id with ``!r``)."""
    out = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    out.add(repr(value)[1:-1])
    out |= {urllib.parse.quote(value, safe=""), urllib.parse.quote(value)}
    out.add(urllib.parse.quote_plus(value))
    return {form for form in out if len(form) >= MIN_SECRET_CHARS}


def _deep(value: Any, scrub: Callable[[str], str]) -> Any:
    """``value`` with ``scrub`` applied to every string inside it (see ``scrubbed``)."""
    if isinstance(value, enum.Enum) or value is None or isinstance(value, bool | int | float):
        return value  # a StrEnum is a str, but its value is a vocabulary word
    if isinstance(value, str):
        clean = scrub(value)
        return value if clean == value else clean
    if isinstance(value, list | tuple):
        items = [_deep(v, scrub) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, list) else tuple(items)
    if isinstance(value, Mapping):
        pairs = [(_deep(k, scrub), _deep(v, scrub)) for k, v in value.items()]
        if all(k is a and v is b for (k, v), (a, b) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = _deep(old, scrub)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


def guard(
    content: object,
    policy: str,
    scrubber: Scrubber | None = None,
    field: str = "content",
    *,
    refresh: bool = True,
) -> object:
    """Apply ``credential_policy`` to one text about to be written (``field`` names it
    in the error and the warning).

    Returns the text to store (unchanged unless redacted). Anything but text is returned
    as it is, for the write's own validation to refuse.
    """
    if not isinstance(content, str):
        return content
    if policy not in POLICIES:
        raise InvalidInput(
            "credential_policy", f"expected one of {', '.join(POLICIES)}, got {policy!r}"
        )
    if policy == "allow":
        return content
    found = find_credentials(content)
    secret = scrubber is not None and scrubber.contains_secret(content, refresh=refresh)
    if not found and not secret:
        return content
    kinds = sorted({f.kind for f in found} | ({"vault-secret"} if secret else set()))
    if policy == "reject":
        where = f" at character {found[0].start}" if found else ""
        raise InvalidInput(
            field,
            f"contains a credential ({', '.join(kinds)}{where}); keep secrets in the vault "
            "(`hivemem vault set KEY --secret`), or change the credential_policy setting",
        )
    redacted, _ = redact_credentials(content)
    if secret:
        assert scrubber is not None
        redacted = scrubber.scrub(redacted, replacement="[REDACTED:vault-secret]")
    log.warning("credential redacted from memory %s before saving: %s", field, ", ".join(kinds))
    return redacted


def guard_value(
    value: Any,
    policy: str,
    scrubber: Scrubber | None = None,
    field: str = "content",
    *,
    refresh: bool = True,
) -> Any:
    """``guard`` applied to every text inside ``value`` (a string, a list or tuple of
    them, a JSON object: keys and values at any depth). ``field`` names the top-level
    field; the error of a ``reject`` names it."""
    if isinstance(value, str):
        return guard(value, policy, scrubber, field, refresh=refresh)
    if isinstance(value, list | tuple):
        items = [guard_value(v, policy, scrubber, field, refresh=refresh) for v in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, Mapping):
        return {
            guard_value(k, policy, scrubber, field, refresh=refresh): guard_value(
                v, policy, scrubber, field, refresh=refresh
            )
            for k, v in value.items()
        }
    return value


class _SecretLogFilter(logging.Filter):
    """Scrubs the registered secrets of every open store from ``hivemem`` log records.

    A filter on a logger only sees that logger's own records, so it is installed on
    ``hivemem`` and on every ``hivemem.*`` logger that exists when a store opens.
    """

    def __init__(self) -> None:
        super().__init__()
        self._scrubbers: weakref.WeakSet[Scrubber] = weakref.WeakSet()

    def attach(self, scrubber: Scrubber) -> None:
        self._scrubbers.add(scrubber)
        install_log_filter()

    def detach(self, scrubber: Scrubber) -> None:
        self._scrubbers.discard(scrubber)

    def filter(self, record: logging.LogRecord) -> bool:
        scrubbers = list(self._scrubbers)
        if not scrubbers:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is logging's to report, not ours
            return True

        def scrub(text: str) -> str:
            for scrubber in scrubbers:
                text = scrubber.scrub(text, refresh=False)
            return text

        clean = scrub(message)
        if clean != message:
            # Keep the record's shape where the secret sits in its arguments: some
            # formatters read ``args`` themselves (uvicorn's access log unpacks a tuple).
            record.msg = scrub(record.msg) if isinstance(record.msg, str) else record.msg
            record.args = _deep(record.args, scrub) if record.args else record.args
            try:
                reshaped = record.getMessage()
            except Exception:
                reshaped = message
            if reshaped != clean and scrub(reshaped) != reshaped:
                record.msg, record.args = clean, ()
        if record.exc_info and record.exc_text is None:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            for scrubber in scrubbers:
                record.exc_text = scrubber.scrub(record.exc_text, refresh=False)
        return True


_LOG_FILTER = _SecretLogFilter()
# How many loggers (placeholders too) existed at the last full pass of
# ``install_log_filter``: loggers are never removed, and a pass turns every ``hivemem.*``
# placeholder into a logger, so the same count means nothing new to filter.
_FILTERED_UPTO = -1


def install_log_filter(others: Iterable[str] = ()) -> logging.Filter:
    """Put the secret filter on the ``hivemem`` logger and its existing children, and on
    the loggers named in ``others`` (the web server's access log, where a request path
    may hold a key)."""
    global _FILTERED_UPTO
    known = logging.root.manager.loggerDict
    others = tuple(others)
    if not others and len(known) == _FILTERED_UPTO:
        return _LOG_FILTER  # no logger made since the last pass (a reload calls this)
    _FILTERED_UPTO = len(known)
    loggers = [logging.getLogger(name) for name in ("hivemem", *others)]
    for name, logger in list(known.items()):  # no lock per logger: this runs per reload
        if name.startswith("hivemem."):
            # A placeholder (a parent named only by its children) becomes a logger, as
            # ``getLogger`` would make it, so it holds the filter once code logs to it.
            loggers.append(
                logger if isinstance(logger, logging.Logger) else logging.getLogger(name)
            )
    for logger in loggers:
        if _LOG_FILTER not in logger.filters:
            logger.addFilter(_LOG_FILTER)
    return _LOG_FILTER
