"""Named, ordered schema migrations of the PostgreSQL store (the rules of the SQLite
store's ``hivemem.store.sqlite.migrations``): each migration runs in its own transaction together
with the row that records it in ``migrations``; the record of applied names is the truth;
a database that holds a name this HiveMem does not know was written by a newer one and is
refused. Several nodes opening one database at once serialise on an advisory lock, and
each re-checks the record under it, so a migration runs exactly once.

Column types follow the SQLite schema on purpose: times are ISO 8601 UTC text of fixed
width (``hivemem.clock``) in the "C" collation, so text order is time order and every row
converts to a ``Memory`` by the same code (``hivemem.store.rows``) on both backends;
``memories.seq`` is the explicit insertion order that SQLite reads from its rowid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import StoreError

Connection = Any  # a psycopg connection in autocommit mode

# pg_advisory_xact_lock key of schema changes (migrations, the vector table's DDL)
SCHEMA_LOCK = 0x6869766D656D  # "hivmem"


@dataclass(frozen=True)
class Migration:
    name: str
    statements: tuple[str, ...]


T = 'TEXT COLLATE "C"'  # ids, scopes, keys and times: bytewise order, as in SQLite

MIGRATIONS: list[Migration] = [
    Migration(
        "0001_memories",
        (
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            f"""CREATE TABLE memories (
                id {T} PRIMARY KEY,
                seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
                scope {T} NOT NULL,
                kind TEXT NOT NULL
                    CHECK (kind IN ('episode', 'fact', 'reflection', 'summary', 'note')),
                type TEXT NOT NULL CHECK (type IN
                    ('identity', 'lesson', 'decision', 'context', 'reference', 'historical')),
                key {T},
                content TEXT NOT NULL,
                content_hash TEXT NOT NULL,
                source TEXT NOT NULL,
                status TEXT NOT NULL
                    CHECK (status IN ('active', 'superseded', 'deleted', 'archived')),
                valid_from {T} NOT NULL,
                valid_until {T},
                supersedes_id {T},
                supersede_reason TEXT,
                supersede_kind TEXT CHECK (supersede_kind IN ('hard', 'soft')),
                updated_by TEXT,
                confidence DOUBLE PRECISION NOT NULL DEFAULT 1.0
                    CHECK (confidence BETWEEN 0 AND 1),
                decay_rate DOUBLE PRECISION NOT NULL DEFAULT 0.0 CHECK (decay_rate >= 0),
                access_count BIGINT NOT NULL DEFAULT 0,
                last_accessed {T},
                event_time {T},
                created_at {T} NOT NULL,
                updated_at {T} NOT NULL,
                expires_at {T},
                session_id {T},
                role TEXT,
                tags TEXT NOT NULL DEFAULT '[]',
                attributes TEXT NOT NULL DEFAULT '{{}}',
                source_ids TEXT NOT NULL DEFAULT '[]',
                category TEXT NOT NULL DEFAULT 'general'
            )""",
            # At most one ACTIVE row per (scope, key), whichever node writes it.
            """CREATE UNIQUE INDEX memories_active_key ON memories (scope, key)
                WHERE status = 'active' AND key IS NOT NULL""",
            "CREATE INDEX memories_scope_created ON memories (scope, status, created_at)",
            "CREATE INDEX memories_scope_key ON memories (scope, key)",
            "CREATE INDEX memories_scope_hash ON memories (scope, content_hash)",
            "CREATE INDEX memories_supersedes ON memories (supersedes_id)",
            "CREATE INDEX memories_session ON memories (scope, session_id, seq)",
        ),
    ),
    Migration(
        "0002_chunks",
        (
            # ``terms``: the chunk's tokens as the SQLite index tokenizes them (porter
            # stems, ``store.scratch.tokens``), with positions; ``length``: how many
            # tokens (BM25's document length). ``scope`` is the memory's, kept here so
            # every index of the lanes can start with the tenant.
            f"""CREATE TABLE chunks (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                memory_id {T} NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
                scope {T} NOT NULL,
                seq INTEGER NOT NULL,
                text TEXT NOT NULL,
                text_hash TEXT NOT NULL,
                length INTEGER NOT NULL,
                terms TSVECTOR NOT NULL,
                UNIQUE (memory_id, seq)
            )""",
            "CREATE INDEX chunks_terms ON chunks USING gin (terms)",
            "CREATE INDEX chunks_scope ON chunks (scope) INCLUDE (length)",
        ),
    ),
    Migration(
        "0003_sessions",
        (
            f"""CREATE TABLE sessions (
                scope {T} NOT NULL,
                session_id {T} NOT NULL,
                started_at {T} NOT NULL,
                last_event_at {T} NOT NULL,
                episode_count INTEGER NOT NULL DEFAULT 0,
                consolidated_at {T},
                attributes TEXT NOT NULL DEFAULT '{{}}',
                PRIMARY KEY (scope, session_id)
            )""",
        ),
    ),
    Migration(
        "0004_vectors",
        (
            # The vector table itself is created when an embedder is bound (its
            # dimension is known then): ``store/postgres/vectors.py``.
            """CREATE TABLE embedding_cache (
                text_hash TEXT NOT NULL,
                model TEXT NOT NULL,
                vector BYTEA NOT NULL,
                PRIMARY KEY (text_hash, model)
            )""",
            """CREATE TABLE vector_queue (
                chunk_id BIGINT PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE
            )""",
        ),
    ),
    Migration(
        "0005_entities",
        (
            f"""CREATE TABLE entities (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                scope {T} NOT NULL,
                canonical {T} NOT NULL,
                type TEXT NOT NULL,
                name TEXT NOT NULL,
                mention_count INTEGER NOT NULL DEFAULT 0,
                first_seen {T} NOT NULL,
                last_seen {T} NOT NULL,
                UNIQUE (scope, canonical, type)
            )""",
            f"""CREATE TABLE entity_aliases (
                scope {T} NOT NULL,
                alias {T} NOT NULL,
                entity_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
                PRIMARY KEY (scope, alias, entity_id)
            )""",
            "CREATE INDEX entity_aliases_entity ON entity_aliases (entity_id)",
            f"""CREATE TABLE memory_entities (
                memory_id {T} NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
                entity_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
                PRIMARY KEY (memory_id, entity_id)
            )""",
            "CREATE INDEX memory_entities_entity ON memory_entities (entity_id, memory_id)",
        ),
    ),
    Migration(
        "0006_maintenance",
        (
            f"""CREATE TABLE maintenance_runs (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                job TEXT NOT NULL,
                scope {T},
                trigger TEXT NOT NULL,
                started_at {T} NOT NULL,
                finished_at {T},
                status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'skipped', 'failed')),
                counts TEXT NOT NULL DEFAULT '{{}}',
                error TEXT
            )""",
            "CREATE INDEX maintenance_runs_job ON maintenance_runs (job, scope, started_at)",
            f"""CREATE TABLE memory_jobs (
                job TEXT NOT NULL,
                memory_id {T} NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
                done_at {T} NOT NULL,
                PRIMARY KEY (job, memory_id)
            )""",
            "CREATE INDEX memory_jobs_memory ON memory_jobs (memory_id)",
            f"""CREATE TABLE cross_refs (
                memory_id {T} NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
                related_id {T} NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
                score DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (memory_id, related_id)
            )""",
            "CREATE INDEX cross_refs_related ON cross_refs (related_id, memory_id)",
            f"""CREATE TABLE decay_state (
                memory_id {T} PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
                base DOUBLE PRECISION NOT NULL,
                anchor {T} NOT NULL,
                applied DOUBLE PRECISION NOT NULL
            )""",
            f"""CREATE TABLE memory_categories (
                memory_id {T} PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
                confidence DOUBLE PRECISION NOT NULL CHECK (confidence BETWEEN 0 AND 1)
            )""",
        ),
    ),
    Migration(
        "0007_vault",
        (
            f"""CREATE TABLE vault (
                scope {T} NOT NULL,
                key {T} NOT NULL,
                value TEXT NOT NULL,
                is_secret INTEGER NOT NULL DEFAULT 0 CHECK (is_secret IN (0, 1)),
                created_at {T} NOT NULL,
                updated_at {T} NOT NULL,
                PRIMARY KEY (scope, key)
            )""",
            "CREATE INDEX vault_secret ON vault (is_secret) WHERE is_secret = 1",
        ),
    ),
    Migration(
        "0008_api_tokens",
        (
            f"""CREATE TABLE api_tokens (
                id {T} PRIMARY KEY,
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                scopes TEXT NOT NULL,
                created_at {T} NOT NULL,
                revoked_at {T},
                last_used_at {T}
            )""",
        ),
    ),
    # Searches scan GIN's whole pending list (rows inserted since its last merge, up to
    # 4 MB by default): measured at 100k right after a load, 3,098 pending chunks cost a
    # keyword search ~40 ms of its ~70 ms. At 64 kB the list is merged by the insert
    # that fills it (a few dozen chunks at a time), so a search never scans more.
    Migration(
        "0013_keyword_pending_list",
        ("ALTER INDEX chunks_terms SET (gin_pending_list_limit = 64)",),
    ),
    Migration(
        # The SQLite store's 0010_entity_types and 0011_purges, and the explicit
        # insertion order of sessions (SQLite's 0014_insertion_seq; ``memories.seq``
        # exists here since 0001): the order sessions were first seen.
        "0014_parity",
        (
            "ALTER TABLE sessions ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE",
            "ALTER TABLE entities ADD COLUMN protected INTEGER NOT NULL DEFAULT 0, "
            "ADD COLUMN summary TEXT",
            f"""CREATE TABLE purges (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                scope {T} NOT NULL,
                target TEXT NOT NULL CHECK (target IN ('memory', 'scope')),
                memory_ids TEXT NOT NULL DEFAULT '[]',
                counts TEXT NOT NULL DEFAULT '{{}}',
                purged_by TEXT,
                purged_at {T} NOT NULL
            )""",
            "CREATE INDEX purges_scope ON purges (scope, purged_at)",
        ),
    ),
    Migration(
        # The SQLite store's 0016_entity_resolutions: the ``resolve`` job's verdicts,
        # one per pair of entities (``hivemem.store.resolutions``).
        "0015_entity_resolutions",
        (
            f"""CREATE TABLE entity_resolutions (
                scope {T} NOT NULL,
                entity_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
                other_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
                same INTEGER NOT NULL,
                similarity DOUBLE PRECISION NOT NULL,
                judged_by TEXT,
                judged_at {T} NOT NULL,
                PRIMARY KEY (entity_id, other_id)
            )""",
            "CREATE INDEX entity_resolutions_scope ON entity_resolutions (scope)",
            "CREATE INDEX entity_resolutions_other ON entity_resolutions (other_id)",
        ),
    ),
    Migration(
        # Every committed change to the vault notifies the channel ``hivemem_vault``
        # (one notification per transaction): each store LISTENs on a connection of its
        # own and learns of another node's new secret without a query per output.
        "0017_vault_notify",
        (
            """CREATE FUNCTION hivemem_vault_changed() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN
                   PERFORM pg_notify('hivemem_vault', '');
                   RETURN NULL;
               END $$""",
            "CREATE TRIGGER vault_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
            "ON vault FOR EACH STATEMENT EXECUTE FUNCTION hivemem_vault_changed()",
        ),
    ),
    Migration(
        # The keyword index's postings as rows: one per (lexeme, chunk), with the
        # lexeme's term frequency and the chunk's length, kept by statement triggers on
        # ``chunks`` (``store/postgres/postings.py``): a term's count is an index-only
        # range count and plain terms are scored from the index, without the chunks'
        # heap pages.
        "0018_keyword_postings",
        (
            f"""CREATE TABLE keyword_postings (
                lexeme {T} NOT NULL,
                scope {T} NOT NULL,
                chunk_id BIGINT NOT NULL,
                tf INTEGER NOT NULL,
                length INTEGER NOT NULL
            )""",
            "CREATE UNIQUE INDEX keyword_postings_key ON keyword_postings "
            "(lexeme, scope, chunk_id) INCLUDE (tf, length)",
            """CREATE FUNCTION hivemem_postings_added() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN
                   INSERT INTO keyword_postings (lexeme, scope, chunk_id, tf, length)
                   SELECT u.lexeme, n.scope, n.id, cardinality(u.positions), n.length
                   FROM added n, unnest(n.terms) u;
                   RETURN NULL;
               END $$""",
            """CREATE FUNCTION hivemem_postings_removed() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN
                   DELETE FROM keyword_postings p
                   USING (SELECT o.scope, o.id, l.lexeme FROM removed o,
                          unnest(tsvector_to_array(o.terms)) AS l(lexeme)) r
                   WHERE p.lexeme = r.lexeme AND p.scope = r.scope AND p.chunk_id = r.id;
                   RETURN NULL;
               END $$""",
            """CREATE FUNCTION hivemem_postings_changed() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN
                   DELETE FROM keyword_postings p
                   USING (SELECT o.scope, o.id, l.lexeme FROM removed o
                          JOIN added n ON n.id = o.id
                          CROSS JOIN LATERAL unnest(tsvector_to_array(o.terms)) AS l(lexeme)
                          WHERE n.terms IS DISTINCT FROM o.terms
                             OR n.length IS DISTINCT FROM o.length
                             OR n.scope IS DISTINCT FROM o.scope) r
                   WHERE p.lexeme = r.lexeme AND p.scope = r.scope AND p.chunk_id = r.id;
                   INSERT INTO keyword_postings (lexeme, scope, chunk_id, tf, length)
                   SELECT u.lexeme, n.scope, n.id, cardinality(u.positions), n.length
                   FROM added n JOIN removed o ON o.id = n.id, unnest(n.terms) u
                   WHERE n.terms IS DISTINCT FROM o.terms
                      OR n.length IS DISTINCT FROM o.length
                      OR n.scope IS DISTINCT FROM o.scope;
                   RETURN NULL;
               END $$""",
            """CREATE FUNCTION hivemem_postings_truncated() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN
                   DELETE FROM keyword_postings;  -- TRUNCATE: refused inside one
                   RETURN NULL;
               END $$""",
            "CREATE TRIGGER chunks_postings_ai AFTER INSERT ON chunks REFERENCING NEW TABLE "
            "AS added FOR EACH STATEMENT EXECUTE FUNCTION hivemem_postings_added()",
            "CREATE TRIGGER chunks_postings_ad AFTER DELETE ON chunks REFERENCING OLD TABLE "
            "AS removed FOR EACH STATEMENT EXECUTE FUNCTION hivemem_postings_removed()",
            "CREATE TRIGGER chunks_postings_au AFTER UPDATE ON chunks REFERENCING OLD TABLE "
            "AS removed NEW TABLE AS added FOR EACH STATEMENT "
            "EXECUTE FUNCTION hivemem_postings_changed()",
            "CREATE TRIGGER chunks_postings_at AFTER TRUNCATE ON chunks "
            "FOR EACH STATEMENT EXECUTE FUNCTION hivemem_postings_truncated()",
            "INSERT INTO keyword_postings (lexeme, scope, chunk_id, tf, length) "
            "SELECT u.lexeme, c.scope, c.id, cardinality(u.positions), c.length "
            "FROM chunks c, unnest(c.terms) u",
        ),
    ),
    Migration(
        # The embedding queue is a claim: a node takes a batch of queued chunks for
        # ``embed_claim_s`` seconds (``vectors.py``), so nodes sharing the database embed
        # different chunks, and a dead node's claims expire for another to take. The
        # server's clock, not the nodes', times the claims.
        "0020_vector_claims",
        (
            "ALTER TABLE vector_queue ADD COLUMN claimed_by TEXT, "
            "ADD COLUMN claimed_until TIMESTAMPTZ",
        ),
    ),
    Migration(
        # The SQLite store's 0017_ui_sessions: the web inspector's sign-in sessions,
        # shared by every node (``hivemem.store.ui_sessions``; never the session id,
        # only its sha256).
        "0021_ui_sessions",
        (
            f"""CREATE TABLE ui_sessions (
                id_hash {T} PRIMARY KEY,
                token_id {T} REFERENCES api_tokens (id) ON DELETE CASCADE,
                local_key {T},
                created_at {T} NOT NULL,
                seen_at {T} NOT NULL,
                expires_at {T} NOT NULL,
                CHECK ((token_id IS NULL) <> (local_key IS NULL))
            )""",
            "CREATE INDEX ui_sessions_expiry ON ui_sessions (expires_at)",
            "CREATE INDEX ui_sessions_token ON ui_sessions (token_id, seen_at)",
            "CREATE INDEX ui_sessions_local ON ui_sessions (local_key, seen_at)",
        ),
    ),
    Migration(
        # Lexemes over 1,024 bytes are cut to their first 1,024 bytes (whole characters)
        # as ``keyword.lexeme`` now cuts every token written and searched, so a search
        # finds the long tokens older stores hold as it finds new ones. Only chunks
        # whose text is that long can hold one; the postings follow by their trigger.
        "0022_long_lexemes",
        (
            r"""DO $$
            DECLARE
                chunk record;
                entry record;
                parts text[];
                cut text;
                k integer;
            BEGIN
                FOR chunk IN SELECT c.id, c.terms FROM chunks c
                             WHERE octet_length(c.text) > 1024 AND EXISTS (
                                 SELECT 1 FROM unnest(c.terms) u
                                 WHERE octet_length(u.lexeme) > 1024)
                LOOP
                    parts := ARRAY[]::text[];
                    FOR entry IN SELECT u.lexeme, u.positions FROM unnest(chunk.terms) u LOOP
                        cut := entry.lexeme;
                        IF octet_length(cut) > 1024 THEN
                            k := least(length(cut), 1024);
                            WHILE octet_length(left(cut, k)) > 1024 LOOP
                                k := k - 1;
                            END LOOP;
                            cut := left(cut, k);
                        END IF;
                        parts := parts || (
                            '''' || replace(replace(cut, '\', '\\'), '''', '''''') || ''''
                            || COALESCE(':' || array_to_string(entry.positions, ','), ''));
                    END LOOP;
                    UPDATE chunks SET terms = array_to_string(parts, ' ')::tsvector
                    WHERE id = chunk.id;
                END LOOP;
            END $$""",
        ),
    ),
    Migration(
        # One HNSW index per big scope replaces the one over every scope
        # (``scope_indexes.py``): a scope's answer no longer depends on other tenants'
        # vectors. Big scopes are searched exactly until theirs is built (in the
        # background on first search, or by ``hivemem doctor --repair``).
        "0023_scope_vector_indexes",
        ("DROP INDEX IF EXISTS chunk_vectors_hnsw",),
    ),
    Migration(
        # SQLite's 0024 twin (the write path, issue 24): three indexes of ``memories``
        # held an entry for every row though their queries find few. ``key = %s`` (by
        # key, versions, the key filter) and ``supersedes_id = %s`` (successors) are
        # strict, so the planner proves ``IS NOT NULL`` from them, plans generic or
        # not; ``find_duplicate`` names ``kind <> 'episode'`` as a literal. An episode,
        # keyless and replacing nothing, now skips all three; a keyless save two.
        # (SQLite's other half, memory_categories WITHOUT ROWID, has no twin here: a
        # PostgreSQL table is a heap and its key one b-tree either way.)
        "0024_lean_write_indexes",
        (
            "DROP INDEX memories_scope_key",
            "CREATE INDEX memories_scope_key ON memories (scope, key) WHERE key IS NOT NULL",
            "DROP INDEX memories_supersedes",
            "CREATE INDEX memories_supersedes ON memories (supersedes_id) "
            "WHERE supersedes_id IS NOT NULL",
            "DROP INDEX memories_scope_hash",
            "CREATE INDEX memories_scope_hash ON memories (scope, content_hash) "
            "WHERE kind <> 'episode'",
        ),
    ),
    Migration(
        # 0024's duplicate index had a trap: any kinds filter without episodes (a save's
        # cross-references, a search for facts) implies ``kind <> 'episode'``, so the
        # planner could take it for a filter's probe of a memory by id. With statistics
        # read while a scope held only episodes it looked empty, and the probe scanned
        # every note of the scope for each chunk checked (the load bench's writes: the
        # cross-references statement 19 ms instead of 2). ``key IS NULL`` is named by
        # ``find_duplicate`` alone, so no filter proves the predicate any more; a keyed
        # save, which it never looks for, takes no entry either.
        "0025_duplicate_index_for_find_duplicate_only",
        (
            "DROP INDEX memories_scope_hash",
            "CREATE INDEX memories_scope_hash ON memories (scope, content_hash) "
            "WHERE kind <> 'episode' AND key IS NULL",
        ),
    ),
]


FIRST = "0001_memories"  # every HiveMem store has applied it


def known_names() -> list[str]:
    return [m.name for m in MIGRATIONS]


def _record_exists(conn: Connection) -> bool:
    return conn.execute("SELECT to_regclass('migrations') IS NOT NULL").fetchone()[0]


def applied(conn: Connection) -> list[str]:
    if not _record_exists(conn):
        return []
    return [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY seq")]


def check_known(conn: Connection, location: str) -> None:
    """Refuse a database written by a newer HiveMem (migrations this one does not know)."""
    known = set(known_names())
    unknown = [name for name in applied(conn) if name not in known]
    if unknown:
        raise StoreError(
            f"{location} was written by a newer HiveMem (schema {unknown[-1]}); "
            "upgrade hivemem to open it"
        )


def apply(conn: Connection, now: str, upto: str | None = None) -> list[str]:
    """Apply pending migrations (up to and including ``upto``); return their names.
    Each runs in one transaction with its record, under the schema lock."""
    done: list[str] = []
    seen_before = set(applied(conn))
    for m in MIGRATIONS:
        if m.name in seen_before:  # a current schema needs no lock and no DDL right
            if m.name == upto:
                break
            continue
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
            if not _record_exists(conn):
                conn.execute(
                    "CREATE TABLE migrations (seq INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL UNIQUE, applied_at TEXT NOT NULL)"
                )
            seen = conn.execute("SELECT 1 FROM migrations WHERE name = %s", [m.name]).fetchone()
            if not seen:
                for sql in m.statements:
                    conn.execute(sql)
                conn.execute(
                    "INSERT INTO migrations (seq, name, applied_at) "
                    "SELECT COALESCE(MAX(seq), 0) + 1, %s, %s FROM migrations",
                    [m.name, now],
                )
                done.append(m.name)
        if m.name == upto:
            break
    return done


def register(name: str, *statements: str) -> Callable[[], None]:
    """Add a migration at the end of the list (tests of the upgrade rules use it)."""
    if name in known_names():
        raise RuntimeError(f"duplicate migration name {name}")
    MIGRATIONS.append(Migration(name, tuple(statements)))

    def remove() -> None:
        MIGRATIONS[:] = [m for m in MIGRATIONS if m.name != name]

    return remove
