"""Several server processes on one SQLite file: ``serve-http --workers N`` and two
``serve-http`` processes side by side (``hivemem.frontends.http.workers``).

Real processes, a real file, real sockets: a write acknowledged by one process is found
by a search through another at once, while that other one searches on other threads;
kill -9 of a worker loses no acknowledged write and the server goes on answering."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import hivemem

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

ENV = {**os.environ, "HIVEMEM_EMBEDDER": "hash"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _cli(db: Path | str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from hivemem.frontends.cli import main; main()",
        "--db",
        str(db),
        *args,
    ]


def _start(db: Path | str, *extra: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    server = subprocess.Popen(
        _cli(db, "serve-http", "--port", str(port), *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=ENV,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                return server, base
        except httpx.TransportError:
            pass
        assert server.poll() is None, server.stdout.read().decode()
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.2)


def _token(db: Path | str) -> dict[str, str]:
    made = subprocess.run(
        _cli(db, "token", "create", "t", "--write", "a"), capture_output=True, text=True, env=ENV
    )
    assert made.returncode == 0, made.stderr
    return {"Authorization": f"Bearer {made.stdout.split('token: ')[1].split()[0]}"}


def _stop(server: subprocess.Popen) -> int:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
    return server.wait(timeout=60)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_a_write_through_one_process_is_found_through_another_at_once(tmp_path):
    db = tmp_path / "m.db"
    with hivemem.open(db, embedder="hash") as store:  # a small scope beside a big one
        for i in range(30):
            store.scope("b").save(f"harbour note {i} about the lighthouse")
    auth = _token(db)
    nodes = [_start(db), _start(db)]
    stop = threading.Event()
    failures: list[str] = []

    def search_b() -> None:  # B's caches are read and refilled while A writes
        with httpx.Client(base_url=nodes[1][1], headers=auth, timeout=30) as client:
            while not stop.is_set():
                r = client.post("/v1/scopes/a/search", json={"query": "lighthouse keeper"})
                if r.status_code != 200:
                    failures.append(r.text)

    readers = [threading.Thread(target=search_b) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        a = httpx.Client(base_url=nodes[0][1], headers=auth, timeout=30)
        b = httpx.Client(base_url=nodes[1][1], headers=auth, timeout=30)
        for n in range(25):
            saved = a.post(
                "/v1/scopes/a/memories",
                json={"content": f"lighthouse keeper {n} logs the tide mark{n}x"},
            )
            assert saved.status_code == 200, saved.text
            memory_id = saved.json()["memory"]["id"]
            found = b.post(
                "/v1/scopes/a/search", json={"query": f"lighthouse mark{n}x", "limit": 50}
            )
            assert found.status_code == 200, found.text
            assert memory_id in [h["id"] for h in found.json()["results"]], (n, found.text)
            counted = b.post("/v1/scopes/a/search", json={"query": "lighthouse", "limit": 100})
            assert len(counted.json()["results"]) == n + 1  # every one so far, none stale
        a.close()
        b.close()
    finally:
        stop.set()
        for t in readers:
            t.join()
        for server, _ in nodes:
            _stop(server)
    assert failures == [], "\n".join(server.stdout.read().decode() for server, _ in nodes)


def test_workers_share_one_file_and_survive_a_kill_of_one(tmp_path):
    db = tmp_path / "m.db"
    auth = _token(db)
    server, base = _start(db, "--workers", "2")
    stop = threading.Event()
    try:
        workers = _children(server.pid)
        assert len(workers) == 2, workers
        acknowledged: dict[str, str] = {}
        refused: list[str] = []  # answers other than 200: none expected
        dropped: list[str] = []  # connections of the killed worker
        lock = threading.Condition()  # notified at each acknowledged write

        def write(n: int) -> None:
            i = 0
            with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
                while not stop.is_set():
                    i += 1
                    content = f"writer {n} note {i}"
                    try:
                        r = client.post("/v1/scopes/a/memories", json={"content": content})
                    except httpx.TransportError as exc:  # the killed worker's connection
                        dropped.append(str(exc))
                        continue
                    if r.status_code == 200:
                        with lock:
                            acknowledged[r.json()["memory"]["id"]] = content
                            lock.notify_all()
                    else:
                        refused.append(r.text)

        threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()

        def acknowledged_reach(count: int) -> None:  # writes under way, not a fixed sleep
            with lock:
                assert lock.wait_for(lambda: len(acknowledged) >= count, timeout=60), (
                    len(acknowledged),
                    refused,
                    dropped,
                )

        acknowledged_reach(12)  # both workers are taking writes
        os.kill(workers[0], signal.SIGKILL)
        with lock:
            before_kill = len(acknowledged)
        acknowledged_reach(before_kill + 12)  # and the server goes on taking them
        stop.set()
        for t in threads:
            t.join()
        assert refused == []
        assert len(dropped) <= 4, dropped  # at most one request in flight per writer
        # a new worker took the killed one's place, and every write is served by both
        deadline = time.monotonic() + 30
        while len(_children(server.pid)) < 2 or workers[0] in _children(server.pid):
            assert time.monotonic() < deadline, _children(server.pid)
            time.sleep(0.2)
        with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
            for memory_id, content in acknowledged.items():
                got = client.get(f"/v1/scopes/a/memories/{memory_id}")
                assert got.status_code == 200 and got.json()["memory"]["content"] == content
    finally:
        stop.set()  # the writers end even when an assertion above failed
        assert _stop(server) == 0
    assert len(acknowledged) > 20
    with hivemem.open(db, embedder="none") as store:
        mem = store.scope("a")
        assert {m: mem.get(m).content for m in acknowledged} == acknowledged


def test_workers_stop_together(tmp_path):
    db = tmp_path / "m.db"
    server, _ = _start(db, "--workers", "3")
    workers = _children(server.pid)
    assert len(workers) == 3
    assert _stop(server) == 0
    for pid in workers:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_the_workers_of_a_killed_parent_stop(tmp_path):
    """Found in CI: kill -9 of serve-http's parent left its workers serving for good (4
    orphans a test run), and with SO_REUSEPORT a restarted server shared its port with
    them."""
    server, base = _start(tmp_path / "m.db", "--workers", "2")
    workers = _children(server.pid)
    assert len(workers) == 2
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=30)
    try:
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() < deadline, [pid for pid in workers if _alive(pid)]
            time.sleep(0.2)
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{base}/v1/health", timeout=2)
    finally:  # a failure here leaves no orphan behind
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_serve_http_starts_one_worker_per_core_by_default(tmp_path):
    """Without --workers: one worker per core this process may use, at most 4."""
    from hivemem.frontends.http.workers import MAX_DEFAULT_WORKERS, default_workers

    cores = len(os.sched_getaffinity(0))
    server, _ = _start(tmp_path / "m.db")
    try:
        expected = min(cores, MAX_DEFAULT_WORKERS)
        assert len(_children(server.pid)) == (expected if expected > 1 else 0)
    finally:
        assert _stop(server) == 0
    assert default_workers(":memory:") == 1  # each process would have a database of its own


def test_the_default_worker_count_follows_the_cores_up_to_four(monkeypatch):
    from hivemem.frontends.http import workers

    for cores, expected in ((1, 1), (2, 2), (3, 3), (64, 4)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)))
        assert workers.default_workers("team.db") == expected


@pytest.mark.parametrize(
    ("db", "workers", "message"),
    [(":memory:", "2", "needs a database file"), ("x.db", "0", "at least 1")],
)
def test_bad_worker_counts_are_refused(tmp_path, db, workers, message):
    where = db if db == ":memory:" else str(tmp_path / db)
    done = subprocess.run(
        _cli(Path(where), "serve-http", "--workers", workers),
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 2 and "workers" in done.stderr and message in done.stderr


def test_workers_on_postgresql(pg_url):
    auth = _token(pg_url)
    server, base = _start(pg_url, "--workers", "2")
    try:
        assert len(_children(server.pid)) == 2
        with httpx.Client(base_url=base, headers=auth, timeout=30) as client:
            ids = []
            for n in range(10):
                r = client.post("/v1/scopes/a/memories", json={"content": f"osprey {n} nests"})
                assert r.status_code == 200, r.text
                ids.append(r.json()["memory"]["id"])
            found = client.post("/v1/scopes/a/search", json={"query": "osprey", "limit": 20})
            assert {h["id"] for h in found.json()["results"]} == set(ids)
    finally:
        assert _stop(server) == 0
