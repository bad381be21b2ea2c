"""``hivemem serve-http --workers N``: one listening socket, N server processes.

Why: a search is CPU-bound Python, and one process runs Python on one core at a time
(the GIL), so the read pool of one process removes the waits on the write lock but not
that ceiling. N processes search on N cores. Each is a whole server: its own store
handle (its own writer connection, read pool and caches), its own writer thread.

The design (a pre-fork, as gunicorn and uvicorn's own ``--workers`` do):

- **The parent** opens the store once and closes it (migrations run once, before any
  worker exists), binds the socket, then forks the workers and supervises them. It holds
  no store, no connection and no thread, so every fork starts clean.
- **Each worker** opens its own ``Store`` after the fork (never a connection inherited
  across ``fork()``, which SQLite forbids) and serves the shared socket with uvicorn; the
  kernel hands each new connection to one of them.
- **What must run once.** There is no scheduler in serve-http (``hivemem maintain
  --daemon`` is its own process). Each worker's embedding thread wakes on its own
  writes (and on open, for a queue left by a crash); one batch runs at a time per file
  (``SQLiteVectorIndex.turn``, a ``flock``), and the worker that waited finds those
  chunks stored, so each queued chunk is embedded once (``upsert`` skips chunks another
  process stored in any case). Token ``last_used_at`` writes are per worker, at most one
  a minute each, through the writer's ``BEGIN IMMEDIATE`` and busy timeout. The WAL
  restart waits for the other workers' snapshots (``store/sqlite/pool.py``).
- **Across processes, reads see writes.** Every read transaction sees every commit
  acknowledged before it began, whichever process made it; the caches a worker keeps
  (keyword statistics, scope vectors) are keyed on what the snapshot itself holds
  (``SQLiteBackend.snapshot`` notes the file's change counter before the snapshot
  starts), so a write acknowledged by one worker is found by a search through another
  at once (``tests/test_http_workers.py``).
- **A worker that dies** (kill -9, a crash) is replaced by a new fork; what it
  acknowledged was committed. The requests it was answering fail on their connections.
  A worker that exits by itself within ``STARTUP_S`` of its start (not killed by a
  signal) is a startup failure: the parent stops the others and reports it.
- **Stopping.** SIGTERM or SIGINT to the parent is passed to every worker as SIGTERM;
  each finishes its requests (uvicorn's graceful shutdown), closes its store (queued
  access counts written) and exits; the parent waits for them.
- **A parent that dies** (kill -9, the OOM killer) cannot pass anything on: each worker
  watches its parent (``_orphan_watch``) and stops as if sent SIGTERM. Found in CI:
  the workers of a killed parent went on serving for good, and with ``SO_REUSEPORT``
  they kept a share of the port's connections beside a restarted server.

Needs ``fork`` (Linux, macOS). API tokens and the inspector's browser sessions (``/ui``
cookies; ``hivemem.store.ui_sessions``) are in the store: a browser signed in through
one worker is signed in on every worker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import HiveMemError, InvalidInput, MissingDependency
from ...write.redact import install_log_filter
from .. import serving, stages

if TYPE_CHECKING:  # pragma: no cover
    from ...facade.database import Store
    from ...settings import Settings

log = logging.getLogger("hivemem.frontends.http")

STARTUP_S = 3.0  # a worker that exits sooner by itself failed to start: stop, fork no more
POLL_S = 0.1
ORPHAN_POLL_S = 1.0  # how often a worker checks that its parent is alive
STOP_WAIT_S = 30.0


MAX_DEFAULT_WORKERS = 4  # each worker holds its own store, caches and embedding model


def default_workers(db: str | None) -> int:
    """``serve-http``'s workers when ``--workers`` is not given: one per CPU core this
    process may run on, at most ``MAX_DEFAULT_WORKERS``; 1 where several cannot serve
    (no ``fork``, or a ``:memory:`` database each process would have its own copy of).
    A search is CPU-bound Python: one process uses one core at a time (the GIL)."""
    if not hasattr(os, "fork") or db == ":memory:":
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, MAX_DEFAULT_WORKERS))


def check(workers: int, db: str | None) -> None:
    """``--workers`` must be ≥ 1; more than one needs fork and a database other
    processes can open."""
    if workers < 1:
        raise InvalidInput("workers", "must be at least 1")
    if workers == 1:
        return
    if not hasattr(os, "fork"):
        raise InvalidInput("workers", "more than one worker needs fork (Linux, macOS)")
    if db == ":memory:":  # each process would have a database of its own
        raise InvalidInput("workers", "more than one worker needs a database file or URL")


def serve_forked(
    open_store: Callable[[], Store],
    close_store: Callable[[], None],
    host: str,
    port: int,
    settings: Settings,
    workers: int,
) -> None:
    """Serve the API from ``workers`` forked processes on one socket (see the module
    docstring). ``open_store()`` opens this process's store, ``close_store()`` closes
    it; the parent calls both once before forking."""
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependency("hivemem serve-http", "pip install 'hivemem[http]'") from exc
    open_store()  # migrations, the file, its folder: once, before any worker exists
    close_store()
    install_log_filter(("uvicorn", "uvicorn.access", "uvicorn.error"))
    # A Config only to bind the socket: each worker builds its own app.
    config = uvicorn.Config(None, host=host, port=port, log_level="info", proxy_headers=False)  # type: ignore[arg-type]
    try:
        if REUSE_PORT:  # the port, held (bound, never listening: it takes no connection)
            sock = _reuse_port_socket(host, port, listen=False)
            port = sock.getsockname()[1]
        else:
            sock = config.bind_socket()
    except (SystemExit, OSError):  # uvicorn exits when it cannot bind; say it our way
        raise HiveMemError(f"the HTTP API could not start on {host}:{port}") from None
    print(
        f"HiveMem serve-http: {workers} workers on http://{host}:{sock.getsockname()[1]} "
        f"(parent pid {os.getpid()}){serving.parser_note()}",
        file=sys.stderr,
        flush=True,
    )
    stopping: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        stopping.append(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    children: dict[int, float] = {}  # pid -> when it started
    failed: str | None = None
    try:
        for _ in range(workers):
            children[_fork(open_store, close_store, sock, host, port, settings)] = time.monotonic()
        while children and not stopping:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                time.sleep(POLL_S)
                continue
            started = children.pop(pid, None)
            if started is None:
                continue
            why = _exit_reason(status)
            if not os.WIFSIGNALED(status) and time.monotonic() - started < STARTUP_S:
                failed = f"a worker (pid {pid}) {why} at startup"
                break
            log.warning("worker %s %s; starting another", pid, why)
            print(f"HiveMem: worker {pid} {why}; starting another", file=sys.stderr, flush=True)
            children[_fork(open_store, close_store, sock, host, port, settings)] = time.monotonic()
    finally:
        _stop_all(children)
        sock.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if failed:
        raise HiveMemError(f"the HTTP API could not start on {host}:{port}: {failed}")


def _fork(
    open_store: Callable[[], Store],
    close_store: Callable[[], None],
    sock: Any,
    host: str,
    port: int,
    settings: Settings,
) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:  # the worker: never returns into the parent's code
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)  # uvicorn installs its own in run()
        _orphan_watch(parent)
        code = _work(open_store, close_store, sock, host, port, settings)
    except BaseException:  # noqa: BLE001 - a worker reports and exits, whatever happened
        logging.getLogger("hivemem.frontends.http").exception("worker %s failed", os.getpid())
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _orphan_watch(parent: int) -> None:
    """Stop this worker (SIGTERM to itself: uvicorn's graceful shutdown) once ``parent``
    is gone: an orphan is re-parented, so ``getppid()`` changes (see the module
    docstring). A thread polling once a second; ``prctl(PR_SET_PDEATHSIG)`` would be
    Linux only."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="hivemem-orphan-watch", daemon=True).start()


def _work(
    open_store: Callable[[], Store],
    close_store: Callable[[], None],
    sock: Any,
    host: str,
    port: int,
    settings: Settings,
) -> int:
    import uvicorn

    from . import create_app

    if REUSE_PORT:  # this worker's own listening socket in the port's group
        sock.close()
        sock = _reuse_port_socket(host, port, listen=True)
    store = open_store()
    try:
        app = create_app(store, settings)
        server = uvicorn.Server(serving.config(app, host, port))
        stages.install()  # hivemem bench --load only: CPU by stage, this worker's
        server.run(sockets=[sock])
        return 0 if server.started else 1
    finally:
        close_store()


# Linux balances connections over the listening sockets of one port (SO_REUSEPORT) by a
# hash of each connection. One socket shared by every worker let whichever worker woke
# first accept: 13 of 16 keep-alive clients landed on one of two workers, which then did
# most of the work alone.
REUSE_PORT = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _reuse_port_socket(host: str, port: int, *, listen: bool) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    if listen:
        sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def _signal(pids: Any, signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _stop_all(children: dict[int, float]) -> None:
    """SIGTERM to every worker, then wait (SIGKILL past ``STOP_WAIT_S``)."""
    _signal(children, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while children:
        for pid in list(children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                children.pop(pid)
        if children and time.monotonic() > deadline:
            _signal(children, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(POLL_S if children else 0)
