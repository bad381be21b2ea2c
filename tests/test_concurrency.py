"""Several processes on one database file (LESSONS 6): WAL, busy_timeout and
``BEGIN IMMEDIATE`` must make concurrent writers wait for each other, never fail with
"database is locked", never break the one-active-row-per-key rule or a supersede chain;
and a writer killed with SIGKILL mid-batch must leave no partial batch behind.

Children are separate interpreters (``python -c``) so each has its own connection, file
locks and page cache, as separate agents or MCP servers would. They report as one JSON
line on stdout. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import hivemem
from hivemem.store.sqlite.backend import sqlite_driver

pytestmark = pytest.mark.slow

SRC = str(Path(hivemem.__file__).resolve().parents[1])
CHILD_TIMEOUT_S = 120

# Waits for the parent's "go" file, so every child opens the (fresh) file and starts
# writing at the same moment: first-open migrations race as well as the saves.
BARRIER = textwrap.dedent(
    """
    import json, os, sys, time
    import hivemem

    def wait_for_go(folder, name):
        open(os.path.join(folder, "ready-" + name), "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(folder, "go")):
            if time.monotonic() > deadline:
                raise SystemExit("no go signal")
            time.sleep(0.001)
    """
)

SUPERSEDER = BARRIER + textwrap.dedent(
    """
    path, folder, worker, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    wait_for_go(folder, worker)
    saved, errors = [], []
    try:
        store = hivemem.open(path)
    except Exception as exc:
        print(json.dumps({"saved": [], "errors": [f"open: {type(exc).__name__}: {exc}"]}))
        raise SystemExit(0)
    mem = store.scope("team")
    for r in range(rounds):
        try:
            m = mem.save(
                f"worker {worker} round {r}: the deploy window is slot {worker}-{r}",
                key="deploy-window",
                supersede_reason=f"worker {worker} round {r}",
            )
            saved.append(m.id)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    store.close()
    print(json.dumps({"saved": saved, "errors": errors}))
    """
)

KEY_WRITER = BARRIER + textwrap.dedent(
    """
    path, folder, worker, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    wait_for_go(folder, worker)
    saved, errors = {}, []
    store = hivemem.open(path)
    mem = store.scope("team")
    for i in range(count):
        key = f"w{worker}-k{i}"
        try:
            m = mem.save(f"writer {worker} item {i}: kestrel telemetry {i}", key=key)
            if i % 4 == 0:  # some keys get a second version
                m = mem.save(
                    f"writer {worker} item {i}: kestrel telemetry {i} revised",
                    key=key,
                    supersede_reason="revised",
                )
            saved[key] = m.id
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    store.close()
    print(json.dumps({"saved": saved, "errors": errors}))
    """
)

READER = BARRIER + textwrap.dedent(
    """
    path, folder, worker = sys.argv[1], sys.argv[2], sys.argv[3]
    wait_for_go(folder, worker)
    errors, searches, bad_hits = [], 0, []
    store = hivemem.open(path)
    mem = store.scope("team")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = os.path.exists(os.path.join(folder, "writers-done"))
        try:
            for hit in mem.search("kestrel telemetry revised", limit=20):
                if not (0.0 <= hit.score <= 1.0) or hit.memory.scope != "team":
                    bad_hits.append(repr(hit))
            mem.list(limit=50)
            searches += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        if done:
            break
    store.close()
    print(json.dumps({"searches": searches, "errors": errors, "bad_hits": bad_hits}))
    """
)

BATCH_WRITER = textwrap.dedent(
    """
    import os, sys
    import hivemem

    path, log, batch, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = hivemem.open(path)
    mem = store.scope("team")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    n = 0
    while True:
        items = [
            {
                "content": f"run {run} batch {n} turn {i}: osprey migration notes " * 4,
                "session_id": f"run-{run}",
                "role": "user" if i % 2 else "agent",
            }
            for i in range(batch)
        ]
        written = mem.add_episodes(items)
        # One write() per committed batch: the line is in the file whole or not at all.
        os.write(fd, (written[-1].id + "\\n").encode())
        n += 1
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, env.get("PYTHONPATH")) if p)
    return env


def _start_together(folder: Path, commands: list[tuple[str, list[str]]]) -> list[Any]:
    """Start one child per (script, args) and release them at once."""
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for script, args in commands
    ]
    try:
        deadline = time.monotonic() + 60
        while len(list(folder.glob("ready-*"))) < len(children):
            assert time.monotonic() < deadline, "children did not start"
            assert all(c.poll() is None for c in children), "a child died before the start"
            time.sleep(0.01)
    except BaseException:
        _stop(children)
        raise
    (folder / "go").touch()
    return children


def _stop(children: list[Any]) -> None:
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()


def _reports(children: list[Any]) -> list[dict]:
    """Each child's JSON report, after checking it exited cleanly and said nothing of
    locks on stderr."""
    try:
        outputs = [c.communicate(timeout=CHILD_TIMEOUT_S) for c in children]
    finally:
        _stop(children)
    reports = []
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert "locked" not in err.lower(), err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def _raw_integrity(path: Path) -> list[str]:
    conn = sqlite_driver.connect(str(path))
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def test_eight_processes_supersede_one_key(tmp_path):
    path = tmp_path / "memory.db"  # not created yet: the first opens race too
    workers, rounds = 8, 25
    children = _start_together(
        tmp_path,
        [(SUPERSEDER, [str(path), str(tmp_path), str(w), str(rounds)]) for w in range(workers)],
    )
    reports = _reports(children)

    assert [r["errors"] for r in reports] == [[]] * workers
    saved = [mid for r in reports for mid in r["saved"]]
    assert len(saved) == len(set(saved)) == workers * rounds

    with hivemem.open(path) as store:
        mem = store.scope("team")
        chain = mem.history("deploy-window")
        active = mem.list(key="deploy-window")
        health = store.health.health()
        all_rows = list(store.iter_memories())

    assert sorted(m.id for m in chain) == sorted(saved)
    assert len(all_rows) == workers * rounds
    # One root, and each version supersedes the one before it (history is oldest first).
    assert chain[0].supersedes_id is None
    assert [m.supersedes_id for m in chain[1:]] == [m.id for m in chain[:-1]]
    assert [m.status for m in chain] == [hivemem.Status.SUPERSEDED] * (len(chain) - 1) + [
        hivemem.Status.ACTIVE
    ]
    assert [m.id for m in active] == [chain[-1].id]
    # The validity intervals tile time: each version ends exactly when the next begins.
    assert [m.valid_until for m in chain[:-1]] == [m.valid_from for m in chain[1:]]
    assert all(m.valid_from < m.valid_until for m in chain[:-1])
    assert chain[-1].valid_until is None
    assert health["integrity"] == ["ok"]
    assert health["fts_ok"] is True
    assert health["keys_with_several_active"] == 0
    assert health["broken_supersede_links"] == 0
    assert _raw_integrity(path) == ["ok"]


def test_writers_of_different_keys_and_a_searching_reader(tmp_path):
    path = tmp_path / "memory.db"
    with hivemem.open(path) as store:  # the reader searches from its first moment
        seed = store.scope("team").save("kestrel telemetry seed", key="seed")
    writers, per_writer = 3, 40
    commands = [
        (KEY_WRITER, [str(path), str(tmp_path), str(w), str(per_writer)]) for w in range(writers)
    ]
    children = _start_together(tmp_path, [*commands, (READER, [str(path), str(tmp_path), "r"])])
    try:
        reports = _reports(children[:writers])
    finally:
        (tmp_path / "writers-done").touch()
        reader_report = _reports(children[writers:])[0]

    assert [r["errors"] for r in reports] == [[]] * writers
    assert reader_report["errors"] == []
    assert reader_report["bad_hits"] == []
    assert reader_report["searches"] > 0

    expected = {"seed"} | {f"w{w}-k{i}" for w in range(writers) for i in range(per_writer)}
    revised = {f"w{w}-k{i}" for w in range(writers) for i in range(0, per_writer, 4)}
    with hivemem.open(path) as store:
        mem = store.scope("team")
        active = mem.list(limit=1000)
        superseded = mem.list(status="superseded", limit=1000)
        health = store.health.health()
    saved = {key: mid for r in reports for key, mid in r["saved"].items()}
    assert {m.key: m.id for m in active} == {**saved, "seed": seed.id}
    assert set(saved) | {"seed"} == expected
    assert sorted(m.key for m in superseded) == sorted(revised)
    assert health["integrity"] == ["ok"]
    assert health["fts_ok"] is True
    assert health["memories_without_chunks"] == 0


def _committed_ids(log: Path) -> list[str]:
    if not log.exists():
        return []
    text = log.read_text()
    return [line for line in text.split("\n")[:-1] if line]  # complete lines only


def test_kill_9_mid_batch_loses_no_committed_batch_and_leaves_no_partial_one(tmp_path):
    path = tmp_path / "memory.db"
    batch = 25
    reported: list[str] = []
    for run in range(2):  # the second run writes on top of the recovered file
        log = tmp_path / f"committed-{run}.log"
        child = subprocess.Popen(
            [sys.executable, "-c", BATCH_WRITER, str(path), str(log), str(batch), str(run)],
            stderr=subprocess.PIPE,
            env=_env(),
        )
        try:
            deadline = time.monotonic() + 60
            while len(_committed_ids(log)) < 3:  # writing for real before the clock starts
                assert child.poll() is None, child.communicate()[1]
                assert time.monotonic() < deadline, "writer made no progress"
                time.sleep(0.005)
            time.sleep(1.0)
            assert child.poll() is None, child.communicate()[1]
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == -signal.SIGKILL
        reported += _committed_ids(log)

        with hivemem.open(path) as store:
            mem = store.scope("team")
            everything = list(store.iter_memories())
            sessions = mem.sessions()
            health = store.health.health()
            found = mem.search("osprey migration", limit=5)
        # The second run's new session consolidates the first in the background: its
        # facts and summary are whole rows of their own transactions, never episodes.
        episodes = [m for m in everything if m.kind is hivemem.Kind.EPISODE]
        derived = {(m.kind, m.source) for m in everything if m.kind is not hivemem.Kind.EPISODE}
        assert derived <= {
            (hivemem.Kind.FACT, "consolidation"),
            (hivemem.Kind.SUMMARY, "session_summary"),
        }
        ids = {m.id for m in episodes}
        assert set(reported) <= ids
        assert len(episodes) % batch == 0
        # Every batch is whole, and each run's batches are 0..n-1 with no gap.
        turns = Counter(re.match(r"run (\d+) batch (\d+) ", m.content).groups() for m in episodes)
        assert set(turns.values()) == {batch}
        for r in range(run + 1):
            numbers = sorted(int(n) for (rr, n) in turns if rr == str(r))
            assert numbers == list(range(len(numbers)))
        assert {m.kind for m in episodes} == {hivemem.Kind.EPISODE}
        # At most one batch committed after its id was reported, none lost before.
        assert len(reported) * batch <= len(episodes) <= (len(reported) + run + 1) * batch
        # The session counters were written in the same transactions as the episodes.
        assert sum(s.episode_count for s in sessions) == len(episodes)
        assert {s.session_id for s in sessions} == {f"run-{r}" for r in range(run + 1)}
        assert health["integrity"] == ["ok"]
        assert health["fts_ok"] is True
        assert health["memories_without_chunks"] == 0
        assert len(found) == 5
        assert _raw_integrity(path) == ["ok"]
