"""Opening a PostgreSQL database as a HiveMem store: what the database holds decides
what an open may do to it (issue #25, the SQLite rule of ``store/sqlite/migrations.py``
on PostgreSQL).

- A HiveMem schema (``0001_memories`` recorded): pending migrations are applied.
- Nothing in the schema new tables go to (``current_schema()``; an extension's own
  tables do not count), or only an empty ``migrations`` table (a first open cut short):
  a new store, made when the open may create (``create=True``: a write, ``init``,
  ``hivemem.open(url)``). A read (``create=False``) is ``NotAStore`` and changes
  nothing, not even ``CREATE EXTENSION vector``.
- Tables of another program: ``NotAStore`` naming them, and the database is left as it
  was (no extension, no table), whatever ``create`` says.
"""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
from psycopg import errors as pgerrors

from ...clock import to_text
from ...errors import NotAStore, StoreError
from . import migrations, redact, secrets_of

# Relations of the schema new tables go to, but not those of an extension (PostGIS's
# ``spatial_ref_sys``): tables, views, materialised views, sequences, foreign tables.
_RELATIONS_SQL = (
    "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
    "AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND NOT EXISTS (SELECT 1 FROM pg_depend d "
    "WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e') "
    "ORDER BY c.relkind IN ('r', 'p') DESC, c.relname"
)


def connect_error(exc: Exception, url: str) -> StoreError:
    """One line naming the fix for a failed connection; no password in it."""
    where = redact(url)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for secret in secrets_of(url):
        text = text.replace(secret, "***")
    low = text.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        why = "the user or password is wrong; check the URL given to --db or HIVEMEM_DB"
    elif "does not exist" in low and "database" in low:
        why = "the database does not exist; create it (createdb NAME) or fix the URL"
    elif "role" in low and "does not exist" in low:
        why = "the user does not exist on the server; fix the URL or create the role"
    elif any(
        s in low for s in ("refused", "no such file", "could not translate", "timeout", "timed out")
    ):
        why = "no server answers there; start PostgreSQL or fix the host and port in the URL"
    else:
        why = "check that the server runs and the URL is right"
    return StoreError(f"cannot connect to PostgreSQL at {where}: {why} ({text})")


def prepare(url: str, timeout_s: float, *, create: bool = True) -> bool:
    """Refuse what is not a store, then pgvector present and the schema current (or
    refused when newer); True when this open made the store (its first migration ran
    here). See the module's docstring for what is refused."""
    location = redact(url)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout_s)))
    except psycopg.Error as exc:
        raise connect_error(exc, url) from None
    try:
        # Before anything writes: another program's database stays as it was.
        refuse_foreign(conn, location, create=create)
        _enable_pgvector(conn, location)
        migrations.check_known(conn, location)
        try:
            done = migrations.apply(conn, to_text(datetime.now(UTC)))
        except pgerrors.InsufficientPrivilege as exc:
            raise StoreError(
                f"PostgreSQL at {location}: the schema needs migrations this user "
                f"may not apply ({str(exc).splitlines()[0]}); open the store once as "
                "the database's owner"
            ) from None
        return migrations.FIRST in done
    except psycopg.OperationalError as exc:
        raise connect_error(exc, url) from None
    finally:
        conn.close()


def refuse_foreign(conn: psycopg.Connection, location: str, *, create: bool) -> None:
    """``NotAStore`` for a database of another program, or (``create=False``) for one
    with no HiveMem schema yet; nothing is written either way."""
    names = migrations.applied(conn) if _own_migrations_table(conn) else ["?"]
    if migrations.FIRST in names:
        return
    tables = [row[0] for row in conn.execute(_RELATIONS_SQL)]
    if not tables or (tables == ["migrations"] and not names):
        if create:
            return
        raise NotAStore(
            f"no HiveMem store at {location} (the database holds no HiveMem schema; "
            "nothing was created): check the URL, or create one with "
            "`hivemem --db URL init` (hivemem.open(url) in Python)"
        )
    shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
    raise NotAStore(
        f"{location} is not a HiveMem store (it is another PostgreSQL database, holding "
        f"{shown}); it was left unchanged: give the URL of a HiveMem store, or of an "
        "empty database"
    )


def _own_migrations_table(conn: psycopg.Connection) -> bool:
    """No ``migrations`` table, or one of HiveMem's columns (another program's, of other
    columns, is not HiveMem's record)."""
    columns = {
        row[0]
        for row in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass('migrations') "
            "AND attnum > 0 AND NOT attisdropped"
        )
    }
    return not columns or columns == {"seq", "name", "applied_at"}


def _enable_pgvector(conn: psycopg.Connection, location: str) -> None:
    has = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if has:
        return
    available = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if not available:
        raise StoreError(
            f"PostgreSQL at {location} has no pgvector: install it on the "
            "server (e.g. apt install postgresql-17-pgvector), then run "
            "CREATE EXTENSION vector in the database"
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error:
        raise StoreError(
            f"PostgreSQL at {location}: pgvector is installed but not enabled "
            "and this user may not enable it; run CREATE EXTENSION vector as an "
            "owner of the database"
        ) from None
