"""The read pool's waiters and the access-count queue's overlay under load
(store/sqlite/pool.py, store/sqlite/access.py): a returned connection wakes one waiter of
each kind, not all of them, and every waiter still gets one; queued counts are found per
memory under every scope list and in the batch being written."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import sqlean as sqlite3  # the SQLite library the store uses (tests/test_project_rules.py)

import hivemem
from hivemem.store.sqlite.access import AccessLog
from hivemem.store.sqlite.pool import ReadPool


def _spy_on_waits(pool: ReadPool) -> list[str]:
    """Every return from a ``wait()`` on any of the pool's conditions, by thread name."""
    woken: list[str] = []
    for value in list(vars(pool).values()):
        if isinstance(value, threading.Condition):
            original = value.wait

            def wait(timeout=None, _original=original):
                result = _original(timeout)
                woken.append(threading.current_thread().name)
                return result

            value.wait = wait  # type: ignore[method-assign]
    return woken


def _waiting(pool: ReadPool, count: int) -> None:
    deadline = time.monotonic() + 10
    while (
        sum(len(c._waiters) for c in vars(pool).values() if isinstance(c, threading.Condition))
        < count
    ):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the waiters never queued"
        time.sleep(0.01)


def test_a_returned_connection_wakes_one_waiter_per_kind_and_every_waiter_is_served(tmp_path):
    path = tmp_path / "r.db"
    sqlite3.connect(path).close()
    pool = ReadPool(str(path), lambda: sqlite3.connect(path, check_same_thread=False), 1)
    held_snapshot = pool.acquire(snapshot=True)  # size 1: two connections in all
    held_single = pool.acquire()
    woken = _spy_on_waits(pool)
    served: list[str] = []
    go = threading.Event()

    def waiter(snapshot: bool) -> None:
        conn = pool.acquire(snapshot=snapshot)
        served.append(threading.current_thread().name)
        go.wait(10)  # each holds what it got until the test lets go
        pool.release(conn, snapshot=snapshot)

    threads = [
        threading.Thread(target=waiter, args=(n % 3 == 0,), name=f"waiter-{n}", daemon=True)
        for n in range(12)
    ]
    try:
        for thread in threads:
            thread.start()
        _waiting(pool, 12)
        pool.release(held_single)  # one connection back: one single reader takes it
        held_single = None
        deadline = time.monotonic() + 10
        while not served:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.1)  # time for every other waiter to wake, were it woken
        # One woken, and served; a notify_all woke all twelve to find nothing.
        assert len(woken) == 1, woken
        assert len(served) == 1
    finally:
        go.set()
        if held_single is not None:
            pool.release(held_single)
        pool.release(held_snapshot, snapshot=True)
        for thread in threads:
            thread.join(10)
    assert not any(t.is_alive() for t in threads), "a waiter was never served"
    assert sorted(served) == sorted(t.name for t in threads)
    pool.close()


def test_a_draining_writer_and_a_reset_still_wake_the_waiters(tmp_path):
    path = tmp_path / "r.db"
    sqlite3.connect(path).close()
    pool = ReadPool(str(path), lambda: sqlite3.connect(path, check_same_thread=False), 1)
    conns = [pool.acquire(snapshot=True), pool.acquire()]
    got: list[object] = []
    readers = [
        threading.Thread(target=lambda s=s: got.append(pool.acquire(snapshot=s))) for s in (1, 0)
    ]
    for reader in readers:
        reader.start()
    _waiting(pool, 2)
    pool.release(conns.pop(), snapshot=False)
    pool.reset()  # the snapshot's connection is stale now: closed on its return
    pool.release(conns.pop(), snapshot=True)
    for reader in readers:
        reader.join(10)
        assert not reader.is_alive()
    assert len(got) == 2
    with pool.drained(0.2) as empty:  # both lent, nobody gives them back: it gives up
        assert not empty
    for conn, snapshot in zip(got, (True, False), strict=True):
        pool.release(conn, snapshot=snapshot)
    with pool.drained(5) as empty:
        assert empty
    pool.close()


def test_the_overlay_sums_pending_and_inflight_counts_under_every_scope_list():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    written: list[dict] = []
    release = threading.Event()
    entered = threading.Event()

    def write(batch):
        entered.set()
        release.wait(10)
        written.append(dict(batch))

    log = AccessLog(write, flush_after_s=3600)
    log.record(["a"], ["m1", "m2"], now)
    log.record(["a", "shared"], ["m1"], now + timedelta(seconds=1))
    flusher = threading.Thread(target=log.flush)
    flusher.start()
    assert entered.wait(10)  # the batch above is being written now: in flight
    log.record(["a"], ["m1"], now + timedelta(seconds=2))
    with hivemem.open(":memory:", embedder="none") as store:
        saved = store.scope("a").save("a memory")
    base = [replace(saved, id=memory_id) for memory_id in ("m1", "m2", "m3")]
    shown = log.overlay(base)
    assert [m.access_count for m in shown] == [3, 1, 0]
    assert shown[0].last_accessed == now + timedelta(seconds=2)
    assert shown[1].last_accessed == now
    assert shown[2] is base[2]
    release.set()
    flusher.join(10)
    assert log.overlay(base)[0].access_count == 1  # the batch written: only the queued one
    log.close()
    assert written[0] == {
        (("a",), "m1"): (1, now),
        (("a",), "m2"): (1, now),
        (("a", "shared"), "m1"): (1, now + timedelta(seconds=1)),
    }
    assert written[1] == {(("a",), "m1"): (1, now + timedelta(seconds=2))}


def test_a_waiter_interrupted_after_its_wake_up_passes_it_on(tmp_path):
    """Loans are first come, first served: a newcomer queues behind those waiting. A
    waiter that leaves with an exception (Ctrl-C) just as it was woken took that
    wake-up with it, and the next waiter and the newcomer waited beside an idle
    connection until another came back."""
    path = tmp_path / "r.db"
    sqlite3.connect(path).close()
    pool = ReadPool(str(path), lambda: sqlite3.connect(path, check_same_thread=False), 1)
    held = [pool.acquire(), pool.acquire()]  # size 1: both connections lent
    wait = pool._for_single.wait

    def interrupted_wait(timeout=None):
        woken = wait(timeout)
        if threading.current_thread().name == "first":
            raise KeyboardInterrupt
        return woken

    pool._for_single.wait = interrupted_wait
    served: dict[str, str] = {}

    def waiter() -> None:
        try:
            pool.acquire()
            served[threading.current_thread().name] = "served"
        except KeyboardInterrupt:
            served[threading.current_thread().name] = "interrupted"

    first = threading.Thread(target=waiter, name="first", daemon=True)
    second = threading.Thread(target=waiter, name="second", daemon=True)
    first.start()
    _waiting(pool, 1)
    second.start()
    _waiting(pool, 2)
    pool.release(held.pop())  # one back: its wake-up goes to "first", interrupted
    first.join(10)
    second.join(10)
    assert served == {"first": "interrupted", "second": "served"}
    pool.release(held.pop())
    pool.close()


def test_an_interrupted_drain_holds_no_loan_back(tmp_path):
    path = tmp_path / "r.db"
    sqlite3.connect(path).close()
    pool = ReadPool(str(path), lambda: sqlite3.connect(path, check_same_thread=False), 1)
    lent = pool.acquire()
    wait = pool._cond.wait

    def interrupted_wait(timeout=None):
        wait(0.01)
        raise KeyboardInterrupt

    pool._cond.wait = interrupted_wait
    try:
        with pool.drained(5.0):
            pass
    except KeyboardInterrupt:
        pass
    pool._cond.wait = wait
    pool.release(lent)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(pool.acquire()), daemon=True)
    reader.start()
    reader.join(10)
    assert got, "a loan after the interrupted drain waited for good"
    pool.release(got[0])
    pool.close()
