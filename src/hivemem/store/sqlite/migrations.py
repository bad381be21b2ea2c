"""Named, ordered schema migrations for the SQLite store.

Each migration is a function registered under a unique name; ``apply`` runs the ones a
database has not seen, in order, each in its own transaction together with the row that
records it in ``migrations``. A migration never inspects the schema to decide what to do:
the record of applied names is the truth. Tests open a database created by the first
migration alone and upgrade it.

Migrations may call Python (e.g. the chunker) to backfill derived tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ... import text as textmod
from ...errors import NotAStore, StoreError
from . import termcounts
from .database import OperationalError

Connection = Any  # a DB-API connection of the sqlite3 family


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[Connection], None]
    rebuilds: bool = False  # rebuilds a table others reference: runs with foreign keys off


MIGRATIONS: list[Migration] = []


def migration(
    name: str, *, rebuilds: bool = False
) -> Callable[[Callable[[Connection], None]], Callable[[Connection], None]]:
    def register(fn: Callable[[Connection], None]) -> Callable[[Connection], None]:
        if any(m.name == name for m in MIGRATIONS):
            raise RuntimeError(f"duplicate migration name {name}")
        MIGRATIONS.append(Migration(name, fn, rebuilds))
        return fn

    return register


def applied(conn: Connection) -> list[str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'"
    ).fetchone()
    if not exists:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY seq")]


def pending(conn: Connection, upto: str | None = None) -> list[Migration]:
    done = set(applied(conn))
    out = []
    for m in MIGRATIONS:
        if m.name not in done:
            out.append(m)
        if m.name == upto:
            break
    return out


def apply(conn: Connection, now: str, upto: str | None = None) -> list[str]:
    """Apply pending migrations (up to and including ``upto``); return their names.

    ``conn`` must be in autocommit mode: each migration gets ``BEGIN IMMEDIATE`` …
    ``COMMIT``, so a failure leaves the database at the previous migration.
    """
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations ("
        " seq INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, applied_at TEXT NOT NULL)"
    )
    done: list[str] = []
    seen = set(applied(conn))
    for m in MIGRATIONS:
        # A table rebuilt is dropped and its copy renamed: with foreign keys on, the
        # drop would delete every row that references it (ON DELETE CASCADE). The
        # pragma cannot change inside a transaction, so it is set around it.
        keys = m.rebuilds and m.name not in seen
        if keys:
            keys = bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])
            conn.execute("PRAGMA foreign_keys = OFF")
        try:
            _apply_one(conn, m, now, done)
        finally:
            if keys:
                conn.execute("PRAGMA foreign_keys = ON")
        if m.name == upto:
            break
    return done


def _apply_one(conn: Connection, m: Migration, now: str, done: list[str]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-checked inside the write lock: another process may have just applied it.
        if conn.execute("SELECT 1 FROM migrations WHERE name = ?", (m.name,)).fetchone():
            conn.execute("COMMIT")
        else:
            m.apply(conn)
            conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (m.name, now))
            conn.execute("COMMIT")
            done.append(m.name)
    except BaseException:
        conn.execute("ROLLBACK")
        raise


FIRST = "0001_memories"  # every HiveMem store has applied it


def refuse_foreign(conn: Connection, location: str) -> None:
    """Refuse a SQLite database of another program, before anything is written to it.

    A HiveMem store records ``0001_memories`` in ``migrations``. A file without tables
    (new, or empty) becomes a store; so does one holding only an empty ``migrations``
    table (a first open stopped before its first migration). Any other table means the
    file is someone else's: migrating it would add HiveMem's tables to their database
    (issue #25), so it is refused and left byte for byte as it was.
    """
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!' "
            "ORDER BY type = 'table' DESC, name"
        )
    ]
    if not tables:
        return
    try:
        names = applied(conn)
    except OperationalError:  # another program's ``migrations`` table, of other columns
        names = ["?"]
    if FIRST in names or (tables == ["migrations"] and not names):
        return
    shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
    raise NotAStore(
        f"{location} is not a HiveMem store (it is another SQLite database, holding {shown}); "
        "it was left unchanged: give the path of a HiveMem store, or of a new file"
    )


def refuse_newer(conn: Connection, location: str) -> None:
    """Refuse a database written by a newer HiveMem (migrations this one does not know)."""
    known = set(known_names())
    unknown = [name for name in applied(conn) if name not in known]
    if unknown:
        raise StoreError(
            f"{location} was written by a newer HiveMem (schema {unknown[-1]}); "
            "upgrade hivemem to open it"
        )


def known_names() -> list[str]:
    return [m.name for m in MIGRATIONS]


# ----------------------------------------------------------------------------- the list


@migration("0001_memories")
def _memories(conn: Connection) -> None:
    for sql in (
        """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
        """CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            scope TEXT NOT NULL,
            kind TEXT NOT NULL
                CHECK (kind IN ('episode', 'fact', 'reflection', 'summary', 'note')),
            type TEXT NOT NULL CHECK (type IN
                ('identity', 'lesson', 'decision', 'context', 'reference', 'historical')),
            key TEXT,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            source TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('active', 'superseded', 'deleted', 'archived')),
            valid_from TEXT NOT NULL,
            valid_until TEXT,
            supersedes_id TEXT,
            supersede_reason TEXT,
            supersede_kind TEXT CHECK (supersede_kind IN ('hard', 'soft')),
            updated_by TEXT,
            confidence REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
            decay_rate REAL NOT NULL DEFAULT 0.0 CHECK (decay_rate >= 0),
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed TEXT,
            event_time TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            expires_at TEXT,
            session_id TEXT,
            role TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            attributes TEXT NOT NULL DEFAULT '{}',
            source_ids TEXT NOT NULL DEFAULT '[]',
            category TEXT NOT NULL DEFAULT 'general'
        )""",
        # At most one ACTIVE row per (scope, key): the rule holds even across processes.
        """CREATE UNIQUE INDEX memories_active_key ON memories (scope, key)
            WHERE status = 'active' AND key IS NOT NULL""",
        "CREATE INDEX memories_scope_created ON memories (scope, status, created_at)",
        "CREATE INDEX memories_scope_key ON memories (scope, key)",
        "CREATE INDEX memories_scope_hash ON memories (scope, content_hash)",
        "CREATE INDEX memories_supersedes ON memories (supersedes_id)",
        "CREATE INDEX memories_session ON memories (scope, session_id)",
    ):
        conn.execute(sql)


@migration("0002_chunks_fts")
def _chunks_fts(conn: Connection) -> None:
    for sql in (
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            text TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            UNIQUE (memory_id, seq)
        )""",
        """CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            text, content = 'chunks', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
        "CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab (chunks_fts, 'row')",
        """CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
        END""",
        """CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END""",
    ):
        conn.execute(sql)
    # Backfill: every memory written before this migration gets its chunks (in the
    # schema of this migration: the scope key column comes with 0013).
    rows = conn.execute("SELECT id, content FROM memories ORDER BY rowid").fetchall()
    for memory_id, content in rows:
        conn.executemany(
            "INSERT INTO chunks (memory_id, seq, text, text_hash) VALUES (?, ?, ?, ?)",
            [
                (memory_id, i, p, textmod.content_hash(p))
                for i, p in enumerate(textmod.chunk(content))
            ],
        )


@migration("0003_sessions")
def _sessions(conn: Connection) -> None:
    conn.execute(
        """CREATE TABLE sessions (
            scope TEXT NOT NULL,
            session_id TEXT NOT NULL,
            started_at TEXT NOT NULL,
            last_event_at TEXT NOT NULL,
            episode_count INTEGER NOT NULL DEFAULT 0,
            consolidated_at TEXT,
            attributes TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (scope, session_id)
        )"""
    )
    conn.execute(
        """INSERT INTO sessions (scope, session_id, started_at, last_event_at, episode_count)
           SELECT scope, session_id, MIN(COALESCE(event_time, created_at)),
                  MAX(COALESCE(event_time, created_at)), COUNT(*)
           FROM memories WHERE kind = 'episode' AND session_id IS NOT NULL
           GROUP BY scope, session_id"""
    )


@migration("0004_memories_scope_id")
def _memories_scope_id(conn: Connection) -> None:
    # Reads by id are scoped (``scope IN (...) AND id IN (...)``). Until a connection has
    # planner statistics (a store created by this process, before ``PRAGMA optimize``
    # first runs at close) SQLite reads such a list through the (scope, …) indexes, i.e.
    # every memory of the scope: ~30 ms per search at 100k memories. With (scope, id)
    # both terms use one index whatever the statistics say.
    conn.execute("CREATE INDEX memories_scope_id ON memories (scope, id)")


@migration("0005_vector_queue")
def _vector_queue(conn: Connection) -> None:
    # Vectors are derived off the write path (DESIGN §2). A chunk's insert queues it in
    # the same transaction, so after a crash "what is left to embed" is exactly the queue;
    # the background worker empties it. The queue cascades with its chunk. The vec0 table
    # itself is created at run time for the recorded embedder (its dimension is only
    # known then; see ``store/vectors.py``).
    for sql in (
        # A rowid table: WITHOUT ROWID keeps ~1 kB of a row on its b-tree page and
        # spills a 1.5 kB vector onto a 4 kB overflow page of its own (2.7x the size).
        """CREATE TABLE embedding_cache (
            id INTEGER PRIMARY KEY,
            text_hash TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (text_hash, model)
        )""",
        """CREATE TABLE vector_queue (
            chunk_id INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE
        )""",
        """CREATE TRIGGER chunks_queue AFTER INSERT ON chunks BEGIN
            INSERT INTO vector_queue (chunk_id) VALUES (new.id);
        END""",
        "INSERT INTO vector_queue (chunk_id) SELECT id FROM chunks",
    ):
        conn.execute(sql)


@migration("0006_entities")
def _entities(conn: Connection) -> None:
    # Entities are per scope (isolation holds for names too). Every entity has its
    # canonical name among its aliases, so one alias lookup resolves canonical names
    # and aliases alike.
    for sql in (
        """CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            scope TEXT NOT NULL,
            canonical TEXT NOT NULL,
            type TEXT NOT NULL,
            name TEXT NOT NULL,
            mention_count INTEGER NOT NULL DEFAULT 0,
            first_seen TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            UNIQUE (scope, canonical, type)
        )""",
        """CREATE TABLE entity_aliases (
            scope TEXT NOT NULL,
            alias TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            PRIMARY KEY (scope, alias, entity_id)
        ) WITHOUT ROWID""",
        """CREATE TABLE memory_entities (
            memory_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, entity_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX memory_entities_entity ON memory_entities (entity_id, memory_id)",
    ):
        conn.execute(sql)
    from ...providers import entities as entitymod
    from .entities import link_mentions

    rows = conn.execute(
        "SELECT id, scope, content, created_at FROM memories ORDER BY rowid"
    ).fetchall()
    for memory_id, scope, content, created_at in rows:
        link_mentions(
            conn, scope, memory_id, entitymod.extract(content), created_at, protection=False
        )


def insert_chunks(conn: Connection, memory_id: str, scope: str, pieces: list[str]) -> None:
    """A memory's chunks (the current schema: with the scope key, ``termcounts``)."""
    insert_chunks_of(conn, [(memory_id, scope, pieces)])


def insert_chunks_of(conn: Connection, memories: list[tuple[str, str, list[str]]]) -> None:
    """The chunks of several memories, ``(memory_id, scope, pieces)`` each, in one
    statement (the scope key computed once per scope)."""
    keys: dict[str, str] = {}
    rows: list[tuple[str, int, str, str, str]] = []
    for memory_id, scope, pieces in memories:
        key = keys.get(scope)
        if key is None:
            key = keys[scope] = termcounts.scope_key(scope)
        rows.extend((memory_id, i, p, textmod.content_hash(p), key) for i, p in enumerate(pieces))
    conn.executemany(
        "INSERT INTO chunks (memory_id, seq, text, text_hash, scope_key) VALUES (?, ?, ?, ?, ?)",
        rows,
    )


@migration("0007_maintenance")
def _maintenance(conn: Connection) -> None:
    # State of the maintenance jobs (``hivemem.lifecycle.maintenance``), all derived or
    # bookkeeping: nothing here is needed to read a memory. ``memories`` itself is left
    # as it is (its columns are the record of DESIGN §1; exports and upgrades compare it
    # column by column).
    for sql in (
        # The run log: what each run of each job did, when, and how it ended. A row left
        # 'running' belongs to a process that died mid-run.
        """CREATE TABLE maintenance_runs (
            id INTEGER PRIMARY KEY,
            job TEXT NOT NULL,
            scope TEXT,
            trigger TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL
                CHECK (status IN ('running', 'ok', 'skipped', 'failed')),
            counts TEXT NOT NULL DEFAULT '{}',
            error TEXT
        )""",
        "CREATE INDEX maintenance_runs_job ON maintenance_runs (job, scope, started_at)",
        # Which memories a per-memory job (cross-refs, enrich, categorize) has seen.
        """CREATE TABLE memory_jobs (
            job TEXT NOT NULL,
            memory_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            done_at TEXT NOT NULL,
            PRIMARY KEY (job, memory_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX memory_jobs_memory ON memory_jobs (memory_id)",
        # Related memories (the cross-refs job), best first per memory.
        """CREATE TABLE cross_refs (
            memory_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            related_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            score REAL NOT NULL,
            PRIMARY KEY (memory_id, related_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX cross_refs_related ON cross_refs (related_id, memory_id)",
        # Ebbinghaus state: confidence = base x f(rate, days since anchor); ``applied``
        # is the value the decay job last wrote, so a change by anyone else (confirm,
        # a conflict) is noticed and becomes the new base.
        """CREATE TABLE decay_state (
            memory_id TEXT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
            base REAL NOT NULL,
            anchor TEXT NOT NULL,
            applied REAL NOT NULL
        )""",
        # How sure the automatic categorizer was of ``memories.category`` (1.0 when the
        # caller gave the category).
        """CREATE TABLE memory_categories (
            memory_id TEXT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
            confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1)
        )""",
    ):
        conn.execute(sql)


@migration("0008_vault")
def _vault(conn: Connection) -> None:
    # Key/value machine state and secrets per scope (``hivemem.write.vault``). Never chunked,
    # never embedded, never searched: nothing here reaches ``chunks`` or a vector. A
    # secret's value is also registered with the scrubber, which redacts it from every
    # output (search, context, tool results, logs, exports).
    conn.execute(
        """CREATE TABLE vault (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            is_secret INTEGER NOT NULL DEFAULT 0 CHECK (is_secret IN (0, 1)),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX vault_secret ON vault (is_secret) WHERE is_secret = 1")


@migration("0009_api_tokens")
def _api_tokens(conn: Connection) -> None:
    # Tokens of the HTTP API (``store/tokens.py``): only a token's sha256 is kept.
    # ``scopes`` is a JSON object scope -> "read" | "write".
    conn.execute(
        """CREATE TABLE api_tokens (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            token_hash TEXT NOT NULL UNIQUE,
            scopes TEXT NOT NULL,
            created_at TEXT NOT NULL,
            revoked_at TEXT,
            last_used_at TEXT
        )"""
    )


@migration("0010_entity_types")
def _entity_types(conn: Connection) -> None:
    # Entities carry a real type (``hivemem.providers.entities.name_type``), a protected flag
    # (decay leaves memories linked to a protected entity alone; no job retypes it) and
    # an optional summary. Names the regex stored as ``person`` before types existed are
    # typed again by the same cues new writes use.
    conn.execute("ALTER TABLE entities ADD COLUMN protected INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE entities ADD COLUMN summary TEXT")
    from ...providers import entities as entitymod

    rows = conn.execute("SELECT id, scope, canonical, name FROM entities WHERE type = 'person'")
    for entity_id, scope, key, name in rows.fetchall():
        kind = entitymod.name_type(name).value
        if kind == "person":
            continue
        taken = conn.execute(
            "SELECT 1 FROM entities WHERE scope = ? AND canonical = ? AND type = ?",
            (scope, key, kind),
        ).fetchone()
        if not taken:
            conn.execute("UPDATE entities SET type = ? WHERE id = ?", (kind, entity_id))


@migration("0011_purges")
def _purges(conn: Connection) -> None:
    # The audit of hard purges (``hivemem.write.purge``): what was erased, when and by whom,
    # never the content. ``memory_ids`` are the erased rows' ids (time-ordered uuids
    # that carry nothing of the text); ``counts`` what each table lost.
    conn.execute(
        """CREATE TABLE purges (
            id INTEGER PRIMARY KEY,
            scope TEXT NOT NULL,
            target TEXT NOT NULL CHECK (target IN ('memory', 'scope')),
            memory_ids TEXT NOT NULL DEFAULT '[]',
            counts TEXT NOT NULL DEFAULT '{}',
            purged_by TEXT,
            purged_at TEXT NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX purges_scope ON purges (scope, purged_at)")


@migration("0012_scope_terms")
def _scope_terms(conn: Connection) -> None:
    # Keyword statistics per scope were counted per (scope, term) on every write here;
    # 0013 replaced them by counts read from the keyword index (``store/termcounts.py``)
    # and drops these tables (if any), so a file upgraded past both does nothing here.
    return None


@migration("0013_scope_in_keyword_index")
def _scope_in_keyword_index(conn: Connection) -> None:
    # The scope inside the keyword index: a MATCH confined to the visible scopes, and
    # per-scope document frequencies read from the index (``store/termcounts.py``).
    termcounts.migrate(conn)


@migration("0014_insertion_seq")
def _insertion_seq(conn: Connection) -> None:
    # An explicit insertion order (issue #13): session neighbours, the consolidation
    # cursor and the order sessions were first seen read ``seq``, never SQLite's rowid
    # (which is no column of the data: PostgreSQL has none, and VACUUM may renumber
    # rowids of a table without an INTEGER PRIMARY KEY). Existing rows keep their order
    # (seq = rowid), so cursors stored in ``sessions.attributes`` stay valid. A trigger
    # numbers every new row, whichever code path inserts it (writes, import, rescue).
    for table in ("memories", "sessions"):
        conn.execute(f"ALTER TABLE {table} ADD COLUMN seq INTEGER")
        conn.execute(f"UPDATE {table} SET seq = rowid")
        conn.execute(f"CREATE UNIQUE INDEX {table}_seq ON {table} (seq)")
        conn.execute(
            f"""CREATE TRIGGER {table}_seq_ai AFTER INSERT ON {table} WHEN new.seq IS NULL
            BEGIN
                UPDATE {table} SET seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM {table})
                WHERE rowid = new.rowid;
            END"""
        )
    conn.execute("DROP INDEX memories_session")
    conn.execute("CREATE INDEX memories_session ON memories (scope, session_id, seq)")


@migration("0016_entity_resolutions")
def _entity_resolutions(conn: Connection) -> None:
    # The verdicts of the ``resolve`` job (``hivemem.lifecycle.maintenance.resolve``): the
    # LLM was asked whether two entities of a scope are one, once per pair; a rerun asks
    # only about pairs it has not judged. Ids are the entities' at the time (a merge
    # deletes the absorbed one; its rows go with it).
    conn.execute(
        """CREATE TABLE entity_resolutions (
            scope TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            other_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
            same INTEGER NOT NULL,
            similarity REAL NOT NULL,
            judged_by TEXT,
            judged_at TEXT NOT NULL,
            PRIMARY KEY (entity_id, other_id)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX entity_resolutions_scope ON entity_resolutions (scope)")


@migration("0017_ui_sessions")
def _ui_sessions(conn: Connection) -> None:
    # The web inspector's sign-in sessions (``hivemem.store.ui_sessions``), shared by
    # every process over the file: the sha256 of the session id (never the id), the
    # token it signed in with (NULL for the local user of ``hivemem ui``, bound instead
    # to the hash of that run's start key), and its times.
    conn.execute(
        """CREATE TABLE ui_sessions (
            id_hash TEXT PRIMARY KEY,
            token_id TEXT REFERENCES api_tokens (id) ON DELETE CASCADE,
            local_key TEXT,
            created_at TEXT NOT NULL,
            seen_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            CHECK ((token_id IS NULL) <> (local_key IS NULL))
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX ui_sessions_expiry ON ui_sessions (expires_at)")
    conn.execute("CREATE INDEX ui_sessions_token ON ui_sessions (token_id, seen_at)")
    conn.execute("CREATE INDEX ui_sessions_local ON ui_sessions (local_key, seen_at)")


@migration("0024_lean_write_indexes")
def _lean_write_indexes(conn: Connection) -> None:
    # The write path's cost is the pages a commit puts in the WAL (issue 24, item 3:
    # 32 per episode against a plain insert's 9). Three indexes of ``memories`` held an
    # entry for every row though their queries ask for a few: ``key = ?`` (by_key,
    # versions_of_key, the key filter, busy_keys), ``supersedes_id = ?`` (successors,
    # the repair check) and the duplicate check, which never runs for an episode. Each
    # now holds only the rows those queries can find (a ``key = ?`` term implies ``key
    # IS NOT NULL`` to SQLite's planner; ``find_duplicate`` says ``kind <> 'episode'``),
    # so an episode, keyless and replacing nothing, skips all three. And the
    # categorizer's confidence, one row per memory keyed by its id, was a rowid table
    # with a separate index of that id: two B-trees where one (WITHOUT ROWID) holds it.
    for sql in (
        "DROP INDEX memories_scope_key",
        "CREATE INDEX memories_scope_key ON memories (scope, key) WHERE key IS NOT NULL",
        "DROP INDEX memories_supersedes",
        "CREATE INDEX memories_supersedes ON memories (supersedes_id) "
        "WHERE supersedes_id IS NOT NULL",
        "DROP INDEX memories_scope_hash",
        "CREATE INDEX memories_scope_hash ON memories (scope, content_hash) "
        "WHERE kind <> 'episode'",
        """CREATE TABLE memory_categories_new (
            memory_id TEXT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
            confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1)
        ) WITHOUT ROWID""",
        "INSERT INTO memory_categories_new (memory_id, confidence) "
        "SELECT memory_id, confidence FROM memory_categories",
        "DROP TABLE memory_categories",
        "ALTER TABLE memory_categories_new RENAME TO memory_categories",
    ):
        conn.execute(sql)


_MEMORY_INDEXES = (
    """CREATE UNIQUE INDEX memories_active_key ON memories (scope, key)
        WHERE status = 'active' AND key IS NOT NULL""",
    "CREATE INDEX memories_scope_created ON memories (scope, status, created_at)",
    "CREATE INDEX memories_scope_id ON memories (scope, id)",
    "CREATE INDEX memories_session ON memories (scope, session_id, seq)",
    "CREATE INDEX memories_scope_key ON memories (scope, key) WHERE key IS NOT NULL",
    "CREATE INDEX memories_supersedes ON memories (supersedes_id) WHERE supersedes_id IS NOT NULL",
    "CREATE INDEX memories_scope_hash ON memories (scope, content_hash) WHERE kind <> 'episode'",
)


@migration("0026_memories_seq_rowid", rebuilds=True)
def _memories_seq_rowid(conn: Connection) -> None:
    # The insertion order (0014) as the table's own key: ``seq INTEGER PRIMARY KEY`` is
    # the rowid, so its unique index (a B-tree, a page of every write's WAL) and the
    # trigger that numbered rows inserted without it (a sub-program run on every
    # insert, ~8 µs, though it fired for none) are gone. A row inserted without ``seq``
    # gets MAX(rowid) + 1, which is what the trigger gave; rowid and seq were already
    # equal. ``id`` keeps its unique index (the same name), the key every foreign key
    # names. Every row is copied in order, every column as it was, by name; the
    # planner's statistics of the indexes kept are kept, both ANALYZE's counts
    # (sqlite_stat1) and its samples (sqlite_stat4, in a build with STAT4, as sqlean's):
    # the table is as large as before, and each sample's key ends with the rowid, which
    # was seq already. Dropping the table drops them, and ``PRAGMA optimize`` would not
    # bring the samples back.
    stats = _rows(
        conn,
        "SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'memories' AND idx IS NOT 'memories_seq'",
    )
    samples = _rows(
        conn,
        "SELECT idx, neq, nlt, ndlt, sample FROM sqlite_stat4 "
        "WHERE tbl = 'memories' AND idx IS NOT 'memories_seq'",
    )
    conn.execute(
        """CREATE TABLE memories_new (
            id TEXT NOT NULL UNIQUE,
            scope TEXT NOT NULL,
            kind TEXT NOT NULL
                CHECK (kind IN ('episode', 'fact', 'reflection', 'summary', 'note')),
            type TEXT NOT NULL CHECK (type IN
                ('identity', 'lesson', 'decision', 'context', 'reference', 'historical')),
            key TEXT,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            source TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('active', 'superseded', 'deleted', 'archived')),
            valid_from TEXT NOT NULL,
            valid_until TEXT,
            supersedes_id TEXT,
            supersede_reason TEXT,
            supersede_kind TEXT CHECK (supersede_kind IN ('hard', 'soft')),
            updated_by TEXT,
            confidence REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
            decay_rate REAL NOT NULL DEFAULT 0.0 CHECK (decay_rate >= 0),
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed TEXT,
            event_time TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            expires_at TEXT,
            session_id TEXT,
            role TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            attributes TEXT NOT NULL DEFAULT '{}',
            source_ids TEXT NOT NULL DEFAULT '[]',
            category TEXT NOT NULL DEFAULT 'general',
            seq INTEGER PRIMARY KEY
        )"""
    )
    columns = ", ".join(r[1] for r in conn.execute("PRAGMA table_info(memories_new)"))
    conn.execute(
        f"INSERT INTO memories_new ({columns}) SELECT {columns} FROM memories ORDER BY seq"
    )
    conn.execute("DROP TABLE memories")  # its indexes and trigger with it
    conn.execute("ALTER TABLE memories_new RENAME TO memories")
    for sql in _MEMORY_INDEXES:
        conn.execute(sql)
    if stats:
        conn.executemany(
            "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('memories', ?, ?)", stats
        )
    if samples:
        conn.executemany(
            "INSERT INTO sqlite_stat4 (tbl, idx, neq, nlt, ndlt, sample) "
            "VALUES ('memories', ?, ?, ?, ?, ?)",
            samples,
        )
    if stats or samples:  # loaded by this connection too, else its PRAGMA optimize at
        conn.execute("ANALYZE sqlite_master")  # close finds the indexes unanalyzed and
        # analyzes the table again with a row limit, which keeps no samples


def _rows(conn: Connection, sql: str) -> list[Any]:
    """The rows of a statement over a table that may not exist (sqlite_stat1 and
    sqlite_stat4 before any ANALYZE; sqlite_stat4 in a build without STAT4)."""
    try:
        return conn.execute(sql).fetchall()
    except OperationalError:
        return []
