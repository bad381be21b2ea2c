"""The vault: key/value machine state and secrets, per scope.

    vault = store.vault("agent-1")
    vault.set("cursor", {"page": 3})                # machine state: any JSON value
    vault.set("github_token", "ghp_…", secret=True)  # a secret: text only
    vault.get("github_token")                        # the value, to the caller who asks

Vault entries are not memories: they are never chunked, embedded or searched, never in
``context()`` and never in tool output. A secret's value is also registered with the
store's scrubber (``hivemem.write.redact``), which redacts it from every output of every scope:
search hits and snippets, context blocks, tool results, log records and exports (unless
``include_secrets``). Memory content that contains a registered secret is redacted (or
refused) on save like any other credential, per the ``credential_policy`` setting.

A secret is never downgraded by accident: replacing a secret with ``secret=False``
raises ``Conflict``; delete it first. Secrets shorter than ``MIN_SECRET_CHARS`` are
refused, as they could not be redacted without mangling ordinary text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import arguments
from ..errors import Conflict, InvalidInput, NotFound
from . import rules
from .redact import MIN_SECRET_CHARS
from .retry import retried

if TYPE_CHECKING:  # pragma: no cover
    from ..facade.database import Store
    from ..store.protocols import VaultRow

MASK = "********"
_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class VaultEntry:
    """One entry. ``repr`` and ``to_dict`` mask a secret's value; read it as ``.value``."""

    scope: str
    key: str
    value: Any
    is_secret: bool
    created_at: datetime
    updated_at: datetime

    def __repr__(self) -> str:
        shown = MASK if self.is_secret else repr(self.value)
        return f"VaultEntry(scope={self.scope!r}, key={self.key!r}, value={shown})"

    def to_dict(self, *, reveal: bool = False) -> dict[str, Any]:
        """JSON-ready; a secret's value is masked unless ``reveal``."""
        return {
            "scope": self.scope,
            "key": self.key,
            "value": self.value if reveal or not self.is_secret else MASK,
            "is_secret": self.is_secret,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


def _entry(row: VaultRow) -> VaultEntry:
    return VaultEntry(
        row.scope, row.key, json.loads(row.value), row.is_secret, row.created_at, row.updated_at
    )


class Vault:
    """The vault of one scope (``store.vault(scope)``)."""

    def __init__(self, store: Store, scope: str) -> None:
        clean = rules.name(scope, "scope", store.settings.max_scope_chars)
        assert clean is not None
        self.scope = clean
        self._store = store
        self._rows = store.vault_rows

    def __repr__(self) -> str:
        return f"<hivemem.Vault {self.scope!r}>"

    def _key(self, key: object) -> str:
        clean = rules.name(key, "key", self._store.settings.max_key_chars)
        assert clean is not None
        return clean

    @retried
    def set(self, key: str, value: Any, *, secret: bool = False) -> VaultEntry:
        """Store ``value`` under ``key`` (replacing what was there). A value is any JSON
        value within ``max_content_bytes``; a secret must be text of at least
        ``MIN_SECRET_CHARS`` characters."""
        name = self._key(key)
        if not isinstance(secret, bool):
            raise InvalidInput("secret", "expected true or false")
        encoded = _encode(value, secret, self._store.settings.max_content_bytes)
        with self._store.atomic():
            before = self._rows.get(self.scope, name)
            if before is not None and before.is_secret and not secret:
                raise Conflict(
                    f"vault key {name!r} of scope {self.scope!r} holds a secret; set it with "
                    "secret=True (--secret) to replace it, or delete it first"
                )
            self._rows.put(self.scope, name, encoded, secret, self._store.clock())
        if secret or (before is not None and before.is_secret):
            # Another scope may hold the old value as a secret too: reload, don't guess.
            self._store.scrubber.reload()
        return self.entry(name)

    def entry(self, key: str) -> VaultEntry:
        """The entry under ``key``; raises ``NotFound``."""
        name = self._key(key)
        row = self._rows.get(self.scope, name)
        if row is None:
            raise NotFound(f"no vault key {name!r} in scope {self.scope!r}")
        return _entry(row)

    def get(self, key: str, default: Any = _MISSING) -> Any:
        """The value under ``key``: ``default`` when there is none, else ``NotFound``."""
        try:
            return self.entry(key).value
        except NotFound:
            if default is _MISSING:
                raise
            return default

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:  # a key that could never be stored (a lone surrogate) is not in the vault
            arguments.storable(key, "key")
        except InvalidInput:
            return False
        return self._rows.get(self.scope, key) is not None

    def list(self, prefix: str | None = None) -> list[VaultEntry]:
        """Every entry of the scope (keys starting with ``prefix``), by key."""
        return [_entry(r) for r in self._rows.list(self.scope, arguments.prefix(prefix))]

    @retried
    def delete(self, key: str) -> VaultEntry:
        """Remove ``key``; returns the removed entry; raises ``NotFound``."""
        name = self._key(key)
        with self._store.atomic():
            row = self._rows.delete(self.scope, name)
        if row is None:
            raise NotFound(f"no vault key {name!r} in scope {self.scope!r}")
        if row.is_secret:
            # Another scope may hold the same value as a secret: reload, don't guess.
            self._store.scrubber.reload()
        return _entry(row)


def _encode(value: Any, secret: bool, max_bytes: int) -> str:
    if secret:
        if not isinstance(value, str):
            raise InvalidInput("value", f"a secret must be text, got {type(value).__name__}")
        if len(value) < MIN_SECRET_CHARS:
            raise InvalidInput(
                "value",
                f"a secret needs at least {MIN_SECRET_CHARS} characters (a shorter one "
                "cannot be redacted from output without mangling ordinary text)",
            )
        if not value.strip():
            raise InvalidInput("value", "a secret cannot be blank")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
        encoded.encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise InvalidInput("value", f"not a JSON value: {exc}") from None
    except UnicodeEncodeError as exc:
        raise arguments.bad_character("value", exc.start) from None
    size = len(encoded.encode("utf-8"))
    if size > max_bytes:
        raise InvalidInput(
            "value", f"{size} bytes exceeds the limit of {max_bytes} (setting max_content_bytes)"
        )
    return encoded
