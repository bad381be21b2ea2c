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
