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
    from ..store.handles import StoreHandle

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
    "keyword_postings": "derived: the keyword index's postings (PostgreSQL), kept from the chunks",
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
# Tables only a PostgreSQL store has (a SQLite file's table list lacks them).
POSTGRES_ONLY = frozenset({"keyword_postings"})
# Tables SQLite or an extension makes for another table (their data is that table's).
SHADOW_PREFIXES = ("sqlite_", "chunks_fts_", "chunk_vectors_")


def table_coverage(store: StoreHandle) -> dict[str, str | None]:
    """Every table of the store's file and what an export does with it (``None``: not
    listed in ``TABLES``, a gap)."""
    return {
        name: TABLES.get(name)
        for name in store.backup_rows.tables()
        if not name.startswith(SHADOW_PREFIXES)
    }


def export_records(
    store: StoreHandle, scopes: Sequence[str] | None, include_secrets: bool
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
    for s in rows.sessions(scopes):
        state = portable_state(store, s["scope"], s["session_id"], s["attributes"])
        records.append({"record": "session", **s, "attributes": state})
    return records, left_out


# A consolidation run's cursor is the ``seq`` of the last episode it consumed: this
# file's insertion order, which another store numbers otherwise (an import or a copy
# writes rows in id order and numbers them as it goes). So an export says how many of
# the session's episodes, in id order, were all consumed (``consumed``), and an import
# turns that back into its own seq. Ids are made before the write lock, so writers that
# overlap can store a session's turns in an order their ids do not follow: the count
# stops at the first one not consumed, and the target may read a few again (its facts are
# deduplicated) but never skips one. A file that carries a bare cursor (written before),
# or one that is not a number, starts the session over.
_PAGE = 1_000


def _state(attributes: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A session's attributes and their consolidation state, or None (none, or not JSON:
    the text is carried as it is)."""
    try:
        loaded = json.loads(attributes or "{}")
    except (TypeError, ValueError):
        return None
    state = loaded.get("consolidation") if isinstance(loaded, dict) else None
    return (loaded, state) if isinstance(state, dict) else None


def portable_state(store: StoreHandle, scope: str, session_id: str, attributes: str) -> str:
    """A session's attributes with its consolidation cursor made portable (above)."""
    found = _state(attributes)
    if found is None or "cursor" not in found[1]:
        return attributes
    loaded, state = found
    cursor = state["cursor"]
    if not isinstance(cursor, int) or isinstance(cursor, bool):
        loaded["consolidation"] = _renamed(state, "cursor", "consumed", None)
        return _json(loaded)
    seqs: dict[str, int] = {}
    after = 0
    while page := store.job_state.episodes(scope, session_id, after, _PAGE):
        seqs.update((memory.id, seq) for seq, memory in page)
        after = page[-1][0]
        if len(page) < _PAGE:
            break
    consumed = 0
    for memory_id in sorted(seqs):
        if seqs[memory_id] > cursor:
            break
        consumed += 1
    loaded["consolidation"] = _renamed(state, "cursor", "consumed", consumed)
    return _json(loaded)


def local_state(store: StoreHandle, scope: str, session_id: str, attributes: str) -> str:
    """The attributes ``portable_state`` gave, with the cursor in ``store``'s numbering
    (its episodes of the session are written first)."""
    found = _state(attributes)
    if found is None or not {"cursor", "consumed"} & found[1].keys():
        return attributes
    loaded, state = found
    state.pop("cursor", None)  # another store's seq (a file written before)
    consumed = state.get("consumed")
    cursor = None
    if isinstance(consumed, int) and not isinstance(consumed, bool) and consumed > 0:
        seqs: list[int] = []
        while len(seqs) < consumed:
            page = store.job_state.episodes(scope, session_id, seqs[-1] if seqs else 0, _PAGE)
            seqs.extend(seq for seq, _ in page)
            if len(page) < _PAGE:
                break
        if seqs:
            cursor = seqs[min(consumed, len(seqs)) - 1]
    loaded["consolidation"] = _renamed(state, "consumed", "cursor", cursor)
    return _json(loaded)


def _renamed(state: Mapping[str, Any], old: str, new: str, value: Any) -> dict[str, Any]:
    """``state`` with ``old`` replaced by ``new`` in its place (left out if ``value`` is
    None): a round trip gives back the very text stored."""
    return {
        (new if k == old else k): (value if k == old else v)
        for k, v in state.items()
        if k != old or value is not None
    }


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


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
    store: StoreHandle, records: Sequence[tuple[int, Mapping[str, Any]]], scope: str | None
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
            state = local_state(store, record["scope"], record["session_id"], record["attributes"])
            outcome = rows.put_session({**record, "attributes": state}, when)
        if outcome == "imported":
            imported[kind] = imported.get(kind, 0) + 1
        elif outcome != "present":
            conflicts.append((line, outcome))
    return imported, conflicts
