"""What an export carries besides the memories, and what it leaves out on purpose.

An export (``hivemem.lifecycle.portability``) holds, after its memory lines, one line per record
``{"record": KIND, ...}``:

- ``vault``: every vault entry of the exported scopes. A secret's value only with
  ``include_secrets``; otherwise secret entries are left out and the header says how
  many (``left_out``).
- ``api_token``: every HTTP API token, as its sha256 hash (the secret itself is never
  stored, so a restored token keeps working for whoever holds it). Tokens are
  store-wide: an export of some scopes only leaves them out, and says so.
- ``entity_alias``: aliases given by ``mem.alias()`` (an entity's own name is made again
  from the memories).
- ``session``: the consolidation state of sessions (which ones were turned into facts).

``TABLES`` says, for every table of the file, whether an export carries it or why not
(derived data rebuilt on import or by a maintenance job, or state of this file only); a
test fails when a table appears that is not listed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..clock import to_text
from ..store.protocols import SESSION_COLUMNS, TOKEN_COLUMNS, VAULT_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    from ..facade.database import Store

RECORD_KINDS = ("vault", "api_token", "entity_alias", "session")

EXPORTED = "exported"
# Every table of a HiveMem file: "exported", or why an export does not carry it.
TABLES: dict[str, str] = {
    "memories": EXPORTED,
    "vault": EXPORTED + " (secret values only with --include-secrets)",
    "api_tokens": EXPORTED + " (as hashes; only in an export of every scope)",
    "entity_aliases": EXPORTED + " (aliases other than an entity's own name)",
    "sessions": EXPORTED + " (consolidation state; counts are rebuilt from the episodes)",
    "entities": "derived: rebuilt from the memories' content on import",
    "memory_entities": "derived: rebuilt from the memories' content on import",
    "chunks": "derived: rebuilt from the memories' content on import",
    "chunks_fts": "derived: the keyword index, rebuilt from the chunks",
    "chunks_vocab": "derived: a view of the keyword index",
    "chunk_vectors": "derived: vectors, re-embedded after import (hivemem reindex)",
    "vector_queue": "derived: the chunks waiting for their vectors",
    "vector_log": "derived: the vector index's change log",
    "scope_chunks": "derived: chunks per scope, counted from the chunks",
    "embedding_cache": "derived: vectors cached by text hash; re-embedded on demand",
    "memory_categories": "derived: the categorizer's confidence (the category is exported)",
    "cross_refs": "derived: rebuilt by `hivemem maintain --job cross-refs`",
    "decay_state": "derived: the decay job's bookkeeping; confidence itself is exported",
    "memory_jobs": "derived: which maintenance jobs saw a memory; they run again",
    "entity_resolutions": "derived: the resolve job's verdicts (its merges are exported "
    "as aliases); it asks again after an import",
    "maintenance_runs": "this file's own run log (hivemem maintain --log)",
    "ui_sessions": "not exported: the web inspector's sign-ins (hashes of session ids, "
    "12 h idle at most), state of the servers over this file: a browser signs in again "
    "on the imported store; `hivemem copy` leaves them too",
    "purges": "this file's own audit of erasures (hivemem purge --audit): ids and counts "
    "of what is gone for good; not carried to another file",
    "meta": "this file's own state: embedding model and index epochs",
    "migrations": "this file's own schema version",
}
# Tables SQLite or an extension makes for another table (their data is that table's).
SHADOW_PREFIXES = ("sqlite_", "chunks_fts_", "chunk_vectors_")


def table_coverage(store: Store) -> dict[str, str | None]:
    """Every table of the store's file and what an export does with it (``None``: not
    listed in ``TABLES``, a gap)."""
    return {
        name: TABLES.get(name)
        for name in store.backup_rows.tables()
        if not name.startswith(SHADOW_PREFIXES)
    }


def export_records(
    store: Store, scopes: Sequence[str] | None, include_secrets: bool
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The record lines of an export and what was left out (``{what: count}``)."""
    rows = store.backup_rows
    records: list[dict[str, Any]] = []
    left_out: dict[str, int] = {}
    for entry in rows.vault(scopes):
        if entry["is_secret"] and not include_secrets:
            left_out["secret vault entries"] = left_out.get("secret vault entries", 0) + 1
            continue
        records.append({"record": "vault", **entry, "is_secret": bool(entry["is_secret"])})
    tokens = rows.tokens()
    if scopes is None:
        for token in tokens:
            records.append({"record": "api_token", **token, "scopes": json.loads(token["scopes"])})
    elif tokens:
        left_out["API tokens (store-wide: export every scope)"] = len(tokens)
    records.extend({"record": "entity_alias", **a} for a in rows.aliases(scopes))
    records.extend({"record": "session", **s} for s in rows.sessions(scopes))
    return records, left_out


_FIELDS = {
    "vault": VAULT_COLUMNS,
    "api_token": TOKEN_COLUMNS,
    "entity_alias": ("scope", "alias", "canonical", "type", "name"),
    "session": SESSION_COLUMNS,
}
_OPTIONAL = {"revoked_at", "last_used_at", "consolidated_at"}
_SCOPED = {"vault", "entity_alias", "session"}


def check_record(value: Mapping[str, Any]) -> str | None:
    """Why a record line is invalid, or None."""
    kind = value.get("record")
    if kind not in _FIELDS:
        return f"unknown record {kind!r} (known: {', '.join(RECORD_KINDS)})"
    for name in _FIELDS[kind]:
        field = value.get(name)
        if field is None and name in _OPTIONAL:
            continue
        if name == "is_secret":
            if not isinstance(field, bool):
                return f"{kind}: is_secret must be true or false"
        elif name == "scopes":
            if not isinstance(field, dict) or not all(
                isinstance(k, str) and v in ("read", "write") for k, v in field.items()
            ):
                return f"{kind}: scopes must map scope names to read or write"
        elif not isinstance(field, str) or not field:
            return f"{kind}: {name} must be non-empty text"
    return None


def import_records(
    store: Store, records: Sequence[tuple[int, Mapping[str, Any]]], scope: str | None
) -> tuple[dict[str, int], list[tuple[int, str]]]:
    """Write checked records inside the import's transaction. Returns the counts
    imported per kind and the conflicts as ``(line, message)``."""
    rows = store.backup_rows
    when = to_text(store.clock())
    imported: dict[str, int] = {}
    conflicts: list[tuple[int, str]] = []
    for line, value in records:
        kind = value["record"]
        record = dict(value)
        if scope is not None and kind in _SCOPED:
            record["scope"] = scope
        if kind == "vault":
            outcome = rows.put_vault(record)
        elif kind == "api_token":
            outcome = rows.put_token(record)
        elif kind == "entity_alias":
            outcome = rows.put_alias(record, when)
        else:
            outcome = rows.put_session(record, when)
        if outcome == "imported":
            imported[kind] = imported.get(kind, 0) + 1
        elif outcome != "present":
            conflicts.append((line, outcome))
    return imported, conflicts
