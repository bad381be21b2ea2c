"""``hivemem bench --load``: many HTTP clients against a real ``serve-http`` process.

What it does, per target (a new SQLite file, or a new database on the PostgreSQL
server of the URL, ``hivemem_load_<hex>``, dropped after; the URL's own database where
its user may not create one):

1. fills one fresh scope with ``preload`` generated episodes through the library (hash
   vectors: the store is measured, not the embedding model), and makes a bearer token
   for that scope with ``hivemem token create`` (the public command);
2. starts ``hivemem --db TARGET serve-http`` as a child process (its own interpreter:
   the server's GIL is not the clients');
3. runs ``clients`` threads for ``seconds``, each with one keep-alive connection of the
   standard library's ``http.client`` (the lightest client at hand: about a third of
   ``httpx``'s CPU per request, which shares the cores with the server), looping: a
   write (``POST …/memories``, unique content) with probability ``write_share``, else a
   search (``POST …/search``, one of the bench's generated questions);
4. then checks every acknowledged write (a 200 with the memory's id) twice: through the
   server (``GET …/memories/{id}``, same content) while it runs, and through the
   library after the server was stopped (SIGTERM) — both must find all of them.

Figures: requests/s over the whole run, per kind count/p50/p95/max, errors (a transport
error or any status but 200; the first few are kept), acknowledged writes and how many
were found each way. A target's ``env`` is added to the server's environment
(``HIVEMEM_READ_CONNECTIONS=0`` measures the single connection in the same run),
``pythonpath`` runs the server from another checkout's ``src`` (a baseline build), and
``workers`` starts ``serve-http --workers N``. The clients share this machine with the
server: the CPU each side used while the clients ran (this process's, and the server's
with its workers', from ``/proc``), both also per request, and the load average are
reported beside the figures: on a machine whose cores the clients share, requests/s
follows the server's CPU per request and the cores it got, and the table says both.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import HiveMemError
from ..store.factory import is_url, local_postgres
from ..store.factory import postgres_admin as admin
from .bench import CorpusGenerator
from .bench_postgres import _with_database
from .bench_report import LatencyStats
from .load_clients import ApiClient, LoadError, McpClient
from .load_stages import STAGE_CPU_ENV, StageCpu, collect, format_stages, per_request

Progress = Callable[[str], None]
KINDS = ("search", "write")


@dataclass(frozen=True)
class LoadTarget:
    """One server to load: ``db`` (a file path or a PostgreSQL URL), a label, extra
    environment for the server, and a ``src`` folder to run the server from (None: this
    install)."""

    label: str
    db: str
    env: dict[str, str] = field(default_factory=dict)
    pythonpath: str | None = None
    workers: int = 1  # serve-http --workers
    kind: str = "http"  # "http": serve-http; "mcp": serve-mcp over HTTP; "bare": bare stack
    scopes: int = 1  # the preload spread over this many scopes (tokens for them all)


@dataclass(frozen=True)
class LoadResult:
    label: str
    db: str
    clients: int
    seconds: float
    requests: int
    latency: dict[str, LatencyStats]
    errors: int
    error_samples: tuple[str, ...]
    acknowledged: int
    found_via_http: int
    found_after_stop: int
    wal_bytes: int | None = None  # SQLite: the -wal file when the clients stopped
    client_cpu_s: float | None = None  # CPU seconds of this process (the clients) meanwhile
    server_cpu_s: float | None = None  # CPU seconds of the server and its workers (Linux)
    load_average: float | None = None  # the 1-minute load average when the clients stopped
    scopes: int = 1  # the scopes the load was spread over
    scopes_written: int = 0  # the scopes that got an acknowledged write
    stages: StageCpu | None = None  # server CPU ms per request by stage (load_stages)
    database_cpu_s: float | None = None  # a local PostgreSQL's own processes meanwhile

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def cpu_ms_per_request(self, cpu_s: float | None) -> float | None:
        return cpu_s * 1000 / self.requests if cpu_s is not None and self.requests else None

    @property
    def all_found(self) -> bool:
        return self.found_via_http == self.acknowledged == self.found_after_stop

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "db": _redacted(self.db),
            "clients": self.clients,
            "seconds": round(self.seconds, 3),
            "requests": self.requests,
            "requests_per_s": round(self.requests_per_s, 1),
            "latency": {k: v.__dict__ for k, v in self.latency.items()},
            "errors": self.errors,
            "error_samples": list(self.error_samples),
            "acknowledged_writes": self.acknowledged,
            "found_via_http": self.found_via_http,
            "found_after_stop": self.found_after_stop,
            "wal_bytes": self.wal_bytes,
            "client_cpu_s": self.client_cpu_s,
            "server_cpu_s": self.server_cpu_s,
            "load_average": self.load_average,
            "scopes": self.scopes,
            "scopes_written": self.scopes_written,
            "client_cpu_ms_per_request": _rounded(self.cpu_ms_per_request(self.client_cpu_s)),
            "server_cpu_ms_per_request": _rounded(self.cpu_ms_per_request(self.server_cpu_s)),
            "database_cpu_s": self.database_cpu_s,
            "database_cpu_ms_per_request": _rounded(self.cpu_ms_per_request(self.database_cpu_s)),
            "server_cpu_ms_by_stage": self.stages.to_dict() if self.stages else None,
        }


def _rounded(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def _redacted(db: str) -> str:
    """A URL without its password (errors and reports never show it)."""
    if "://" not in db or "@" not in db:
        return db
    scheme, rest = db.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else db


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cli(db: str, *args: str, env: dict[str, str] | None = None) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from hivemem.frontends.cli import main; main()",
        "--db",
        db,
        *args,
    ]


def _server_env(target: LoadTarget) -> dict[str, str]:
    env = {**os.environ, "HIVEMEM_EMBEDDER": "hash", **target.env}
    if target.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (target.pythonpath, env.get("PYTHONPATH")) if p
        )
    return env


_FILL = """
import sys, hivemem
from hivemem.evaluation.bench import CorpusGenerator
db, scopes, preload, seed = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4])
with hivemem.open(db, embedder="hash") as store:
    items = list(CorpusGenerator(seed).episodes(preload))
    share = -(-len(items) // len(scopes))
    for n, scope in enumerate(scopes):
        mine = items[n * share : (n + 1) * share]
        for start in range(0, len(mine), 500):
            store.scope(scope).add_episodes(mine[start : start + 500])
    store.flush()
"""


def _prepare(target: LoadTarget, scopes: Sequence[str], preload: int, seed: int) -> str:
    """Fill ``scopes`` (the preload spread over them) and return a bearer token with
    write on them all. The server's own build fills it (a baseline build cannot open a
    file of a newer schema); the bare stack fills its own table and takes no token."""
    if target.kind == "bare":
        from ..store.baseline import BareStore

        bare = BareStore(target.db)
        items = [e["content"] for e in CorpusGenerator(seed).episodes(preload)]
        share = -(-len(items) // len(scopes))
        for n, scope in enumerate(scopes):
            bare.add_many(scope, items[n * share : (n + 1) * share])
        return ""
    filled = subprocess.run(
        [sys.executable, "-c", _FILL, target.db, ",".join(scopes), str(preload), str(seed)],
        capture_output=True,
        text=True,
        env=_server_env(target),
        check=False,
    )
    if filled.returncode != 0:
        raise HiveMemError(f"cannot fill the load test's store: {filled.stderr.strip()[-500:]}")
    grants = [arg for scope in scopes for arg in ("--write", scope)]
    made = subprocess.run(
        _cli(target.db, "token", "create", f"load-{scopes[0]}", *grants),
        capture_output=True,
        text=True,
        env=_server_env(target),
        check=False,
    )
    if made.returncode != 0 or "token: " not in made.stdout:
        raise HiveMemError(f"cannot create a token for the load test: {made.stderr.strip()}")
    return made.stdout.split("token: ", 1)[1].split()[0]


def _start(target: LoadTarget, port: int, scope: str, stage_folder: str) -> subprocess.Popen[bytes]:
    if target.kind == "bare":
        module = "hivemem.evaluation.bare_stack"
        command = [sys.executable, "-m", module, target.db, str(port), str(target.workers)]
    elif target.kind == "mcp":
        args = ("serve-mcp", "--transport", "http", "--port", str(port), "--scope", scope)
        command = _cli(target.db, *args)
    else:
        workers = ("--workers", str(target.workers))  # always: the default follows the cores
        args = ("serve-http", "--port", str(port), "--host", "127.0.0.1", *workers)
        command = _cli(target.db, *args)
    env = {**_server_env(target), STAGE_CPU_ENV: stage_folder}
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def _speaker(target: LoadTarget, port: int, headers: dict[str, str]) -> Any:
    return McpClient(port) if target.kind == "mcp" else ApiClient(port, headers)


def _wait_ready(server: subprocess.Popen[bytes], port: int) -> None:
    """Until the server accepts a connection (every kind listens only once it serves)."""
    deadline = time.monotonic() + 60
    while True:
        with socket.socket() as probe:
            probe.settimeout(1)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if server.poll() is not None:
            raise HiveMemError(f"the server exited: {server.stderr.read().decode()[-1000:]}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            raise HiveMemError("the server did not listen within 60 s")
        time.sleep(0.1)


def _family(pid: int) -> list[int]:
    """``pid`` and its children (the workers), from ``/proc`` (``pid`` alone elsewhere)."""
    pids = [pid]
    with contextlib.suppress(OSError, ValueError):
        children = Path(f"/proc/{pid}/task/{pid}/children")
        if children.exists():
            pids += [int(p) for p in children.read_text().split()]
    return pids


def _cpu_seconds(pid: int, *, reaped: bool = False) -> float | None:
    """User + system CPU seconds of ``pid`` and its children (the workers), from
    ``/proc`` (None where there is none); ``reaped``: with the children that ended
    (``pid``'s cutime and cstime: a PostgreSQL backend whose connection closed). A
    child that ends between the listing and its reading is skipped: its time reaches
    ``pid``'s cutime once reaped (before, the whole figure became None, and a busy
    PostgreSQL, whose backends come and go, often printed no database CPU)."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for one in _family(pid):
            try:
                fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                if one == pid:
                    raise
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
            if reaped and one == pid:
                total += int(fields[13]) + int(fields[14])  # cutime, cstime
        return total / ticks
    except (OSError, ValueError, IndexError):
        return None


def _database_pid(db: str) -> int | None:
    """The PostgreSQL server's postmaster when it runs on this machine (its processes'
    CPU is counted beside the server's: ``local_postgres.postmaster_pid``); None for
    SQLite, or a server elsewhere."""
    return local_postgres.postmaster_pid(db) if is_url(db) else None


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


class _Tally:
    """What the clients saw, shared under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: dict[str, list[int]] = {k: [] for k in KINDS}
        self.errors = 0
        self.error_samples: list[str] = []
        self.acknowledged: dict[str, tuple[str, str]] = {}  # memory id -> (scope, content)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors += 1
            if len(self.error_samples) < 5:
                self.error_samples.append(what[:300])


def _client(
    speak: Any,
    scopes: Sequence[str],
    number: int,
    stop_at: float,
    write_share: float,
    questions: Sequence[str],
    tally: _Tally,
) -> None:
    rng = random.Random(number)
    samples: dict[str, list[int]] = {k: [] for k in KINDS}
    acknowledged: dict[str, tuple[str, str]] = {}
    n = 0
    while time.monotonic() < stop_at:
        n += 1
        writing = rng.random() < write_share
        kind = "write" if writing else "search"
        scope = scopes[0] if len(scopes) == 1 else rng.choice(scopes)
        started = time.perf_counter_ns()
        try:
            if writing:
                content = f"load client {number} write {n} marker {uuid.uuid4().hex}"
                memory_id = speak.write(scope, content)
            else:
                speak.search(scope, rng.choice(questions))
        except (OSError, http.client.HTTPException, LoadError, KeyError, ValueError) as exc:
            tally.error(f"{kind}: {type(exc).__name__}: {exc}")
            continue
        samples[kind].append(time.perf_counter_ns() - started)
        if writing:
            acknowledged[memory_id] = (scope, content)
    speak.close()
    with tally.lock:
        for kind in KINDS:
            tally.samples[kind].extend(samples[kind])
        tally.acknowledged.update(acknowledged)


def _found_via_server(speak: Any, wanted: dict[str, tuple[str, str]]) -> int:
    found = sum(speak.get(scope, mid) == content for mid, (scope, content) in wanted.items())
    speak.close()
    return found


def _found_after_stop(target: LoadTarget, wanted: dict[str, tuple[str, str]]) -> int:
    if target.kind == "bare":
        from ..store.baseline import BareStore

        bare = BareStore(target.db)
        return sum(
            (bare.get(scope, mid) or {}).get("content") == content
            for mid, (scope, content) in wanted.items()
        )
    import hivemem

    with hivemem.open(target.db, embedder="none") as store:
        found = 0
        for memory_id, (scope, content) in wanted.items():
            try:
                if store.scope(scope).get(memory_id).content == content:
                    found += 1
            except hivemem.NotFound:
                pass
        return found


def run_load(
    target: LoadTarget,
    *,
    clients: int = 16,
    seconds: float = 30.0,
    write_share: float = 0.3,
    preload: int = 2000,
    seed: int = 7,
    progress: Progress | None = None,
) -> LoadResult:
    """Load one target (see the module docstring) and return what was measured."""
    say = progress or (lambda _text: None)
    given = target.db
    fresh = _fresh_database(given, say) if is_url(given) else None
    if fresh is not None:
        target = replace(target, db=fresh[1])
    try:
        return _run_load(target, given, clients, seconds, write_share, preload, seed, say)
    finally:
        if fresh is not None:
            admin(given, f"DROP DATABASE IF EXISTS {fresh[0]} WITH (FORCE)")


def _fresh_database(url: str, say: Progress) -> tuple[str, str] | None:
    """A new, empty database on the URL's server for one target (name, URL), as SQLite's
    targets each get a new file: run one after another on one database, each target
    found the rows of the ones before it (PostgreSQL's later rows ran on a bigger
    database). None, and the URL's own database, where the user may not create one."""
    name = f"hivemem_load_{uuid.uuid4().hex[:8]}"
    try:
        admin(url, f"CREATE DATABASE {name}")
    except Exception as exc:  # no CREATEDB, most often: the run goes on, as before
        say(f"cannot create a database for the load test ({exc}); using the URL's own")
        return None
    return name, _with_database(url, name)


def _run_load(
    target: LoadTarget,
    given: str,
    clients: int,
    seconds: float,
    write_share: float,
    preload: int,
    seed: int,
    say: Progress,
) -> LoadResult:
    run = uuid.uuid4().hex[:8]
    scopes = (
        [f"load-{run}"]
        if target.scopes == 1
        else [f"load-{run}-{n:03d}" for n in range(target.scopes)]
    )
    where = f"scope {scopes[0]}" if len(scopes) == 1 else f"{len(scopes)} scopes"
    say(f"{target.label}: preloading {preload} memories into {where}")
    secret = _prepare(target, scopes, preload, seed)
    headers = {"Authorization": f"Bearer {secret}"}
    questions = CorpusGenerator(seed).questions(200)
    port = _free_port()
    stage_folder = tempfile.mkdtemp(prefix="hivemem-stages-")
    server = _start(target, port, scopes[0], stage_folder)
    tally = _Tally()
    try:
        _wait_ready(server, port)
        say(f"{target.label}: {clients} clients for {seconds:g} s")
        reports_before = collect(Path(stage_folder), _family(server.pid))
        server_cpu = _cpu_seconds(server.pid)
        database = _database_pid(target.db)
        database_cpu = _cpu_seconds(database, reaped=True) if database else None
        client_cpu = time.process_time()
        started = time.monotonic()
        threads = [
            threading.Thread(
                target=_client,
                args=(
                    _speaker(target, port, headers),
                    scopes,
                    n,
                    started + seconds,
                    write_share,
                    questions,
                    tally,
                ),
                name=f"load-client-{n}",
            )
            for n in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        client_cpu = time.process_time() - client_cpu
        server_after = _cpu_seconds(server.pid)
        if database and database_cpu is not None:
            database_after = _cpu_seconds(database, reaped=True)
            database_cpu = database_after - database_cpu if database_after is not None else None
        server_cpu = (
            server_after - server_cpu
            if server_cpu is not None and server_after is not None
            else None
        )
        load_average = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        reports = collect(Path(stage_folder), _family(server.pid))
        stages = per_request(
            reports_before, reports, server_cpu * 1000 if server_cpu is not None else None
        )
        wal = Path(f"{target.db}-wal")
        wal_bytes = wal.stat().st_size if "://" not in target.db and wal.exists() else None
        say(f"{target.label}: checking {len(tally.acknowledged)} acknowledged writes")
        via_http = _found_via_server(_speaker(target, port, headers), tally.acknowledged)
    finally:
        _stop(server)
        shutil.rmtree(stage_folder, ignore_errors=True)
    after = _found_after_stop(target, tally.acknowledged)
    return LoadResult(
        label=target.label,
        db=given,
        clients=clients,
        seconds=elapsed,
        requests=sum(len(s) for s in tally.samples.values()) + tally.errors,
        latency={k: LatencyStats.of(tally.samples[k]) for k in KINDS},
        errors=tally.errors,
        error_samples=tuple(tally.error_samples),
        acknowledged=len(tally.acknowledged),
        found_via_http=via_http,
        found_after_stop=after,
        wal_bytes=wal_bytes,
        client_cpu_s=client_cpu,
        server_cpu_s=server_cpu,
        load_average=load_average,
        scopes=len(scopes),
        scopes_written=len({scope for scope, _ in tally.acknowledged.values()}),
        stages=stages,
        database_cpu_s=database_cpu,
    )


def default_file(folder: str | None = None) -> str:
    """A fresh SQLite file for a load run (in ``folder``, else a temporary folder)."""
    where = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="hivemem-load-"))
    where.mkdir(parents=True, exist_ok=True)
    return str(where / f"load-{uuid.uuid4().hex[:8]}.db")


def format_load(results: Sequence[LoadResult]) -> str:
    lines = [
        f"{'target':<28} {'req/s':>8} {'search p50/p95 ms':>18} {'write p50/p95 ms':>17} "
        f"{'errors':>6} {'acked':>6} {'found':>11}"
    ]
    for r in results:
        s, w = r.latency["search"], r.latency["write"]
        lines.append(
            f"{r.label:<28} {r.requests_per_s:>8.1f} "
            f"{s.p50_ms:>8.1f}/{s.p95_ms:<9.1f} {w.p50_ms:>7.1f}/{w.p95_ms:<9.1f} "
            f"{r.errors:>6} {r.acknowledged:>6} {r.found_via_http:>5}/{r.found_after_stop:<5}"
        )
    for r in results:
        for sample in r.error_samples:
            lines.append(f"  {r.label} error: {sample}")
        if r.wal_bytes is not None:
            lines.append(f"  {r.label}: WAL {r.wal_bytes / 1e6:.1f} MB when the clients stopped")
        cpu, per_request = [], []
        sides = (
            ("clients", r.client_cpu_s),
            ("server", r.server_cpu_s),
            ("database", r.database_cpu_s),
        )
        for side, used in sides:
            if used is not None:
                cpu.append(f"{side} {used / r.seconds:.2f}")
                per_request.append(f"{side} {r.cpu_ms_per_request(used):.2f} ms")
        if cpu:
            load = f"; load average {r.load_average:.1f}" if r.load_average is not None else ""
            lines.append(
                f"  {r.label}: CPU cores used: {', '.join(cpu)}{load}; "
                f"CPU per request: {', '.join(per_request)}"
            )
        if r.stages is not None:
            lines.append(format_stages(r.label, r.stages))
        if not r.all_found:
            lines.append(f"  {r.label}: NOT EVERY ACKNOWLEDGED WRITE WAS FOUND")
    bare = next((r for r in results if r.label.startswith("bare")), None)
    if bare is not None and bare.requests_per_s > 0:
        ratios = ", ".join(
            f"{r.label} {r.requests_per_s / bare.requests_per_s:.2f}x"
            for r in results
            if r is not bare
        )
        lines.append(f"req/s against the bare stack in this run: {ratios}")
    lines.append("found: via the server while it ran / via the library after it stopped (SIGTERM).")
    lines.append(
        f"this machine: {os.cpu_count()} CPU cores, shared by the clients and the server "
        "(and a local PostgreSQL's own processes: 'database' above): req/s is at most the "
        "cores the server gets divided by its CPU per request."
    )
    return "\n".join(lines)


def load_targets(
    postgres_url: str | None,
    folder: str | None,
    *,
    compare: bool = False,
    baseline_src: str | None = None,
    workers: int = 1,
    bare: bool = False,
    mcp: bool = False,
    many_scopes: int = 0,
    **options: Any,
) -> list[LoadResult]:
    """The same load on each target, one after another: the bare stack (``bare``: FastAPI
    + uvicorn over one plain FTS5 table, with as many workers), a baseline build
    (``baseline_src``), SQLite's single connection (``compare``), SQLite with its read
    pool, SQLite with ``workers`` server processes (when > 1), the MCP server over
    streamable HTTP (``mcp``), the load spread over ``many_scopes`` small scopes (a hive
    of tenants), and PostgreSQL (the baseline build first, with ``workers``; then as
    SQLite: with as many workers, MCP and scopes too)."""
    targets = []
    if bare:
        targets.append(
            LoadTarget(
                f"bare FastAPI + FTS5, {workers} w",
                default_file(folder),
                workers=workers,
                kind="bare",
            )
        )
    if baseline_src:
        targets.append(
            LoadTarget("sqlite, baseline src", default_file(folder), pythonpath=baseline_src)
        )
    if compare:
        targets.append(
            LoadTarget(
                "sqlite, one connection", default_file(folder), {"HIVEMEM_READ_CONNECTIONS": "0"}
            )
        )
    targets.append(LoadTarget("sqlite, read pool", default_file(folder)))
    for location, name in ((None, "sqlite"), (postgres_url, "postgresql")):
        if name == "postgresql":
            if not postgres_url:
                break
            if baseline_src:  # beside this build's, on the same server
                targets.append(
                    LoadTarget(
                        f"postgresql, baseline, {workers} w",
                        postgres_url,
                        pythonpath=baseline_src,
                        workers=workers,
                    )
                )
            targets.append(LoadTarget("postgresql", postgres_url))
        if workers > 1:
            targets.append(
                LoadTarget(
                    f"{name}, {workers} workers", location or default_file(folder), workers=workers
                )
            )
        if mcp:
            targets.append(
                LoadTarget(f"{name}, MCP http", location or default_file(folder), kind="mcp")
            )
        if many_scopes > 1:
            targets.append(
                LoadTarget(
                    f"{name}, {many_scopes} scopes",
                    location or default_file(folder),
                    workers=workers,
                    scopes=many_scopes,
                )
            )
    return [run_load(target, **options) for target in targets]
