"""A supersede chain is ordered in time (issue #25, item 8), on both backends.

On PostgreSQL the time of a save was taken before the key's lock: a writer that waited
for another then superseded it with an *earlier* ``valid_from``, and ``get(key,
as_of=t)`` answered the wrong version. Nodes' clocks differ too: a node whose clock is
behind must still start a new version after its parent. What must hold, whoever writes:
along the chain each version starts strictly after its parent, the parent ends where
its successor starts, and ``get(key, as_of=t)`` is the version that started last at or
before ``t``.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import hivemem
from hivemem.types import Memory

# A writer process. Its clock stalls a moment after it is read, as a busy node's thread
# may be switched out right after reading the time: another writer then gets the key's
# lock first, and a time read before the lock would be earlier than that writer's.
WRITER = """
import sys
import time
from datetime import UTC, datetime

import hivemem


def clock():
    now = datetime.now(UTC)
    time.sleep(0.003)
    return now


location, key, count, who = sys.argv[1:]
with hivemem.open(location, embedder="none", clock=clock) as store:
    mem = store.scope("race")
    for i in range(int(count)):
        mem.save(f"{who} version {i}", key=key, supersede_reason=f"{who} {i}")
"""


def _chain(mem: hivemem.ScopedMemory, key: str) -> list[Memory]:
    """The versions of ``key`` from the first along the supersede links."""
    versions = mem.history(key)
    by_parent = {v.supersedes_id: v for v in versions}
    assert len(by_parent) == len(versions), "a version superseded by two others"
    chain = [by_parent[None]]
    while chain[-1].id in by_parent:
        chain.append(by_parent[chain[-1].id])
    assert len(chain) == len(versions), "the supersede links do not make one chain"
    return chain


def _assert_ordered(mem: hivemem.ScopedMemory, key: str) -> list[Memory]:
    chain = _chain(mem, key)
    for parent, child in zip(chain, chain[1:], strict=False):
        assert child.valid_from > parent.valid_from, (parent, child)
        assert parent.valid_until == child.valid_from, (parent, child)
    assert chain[-1].valid_until is None
    for version in chain:
        assert mem.get(key, as_of=version.valid_from).id == version.id
        if version.valid_until is not None:
            just_before = version.valid_until - timedelta(microseconds=1)
            assert mem.get(key, as_of=just_before).id == version.id
    return chain


def test_several_processes_writing_one_key_leave_a_chain_ordered_in_time(any_location):
    key = "deploy-rule"
    with hivemem.open(any_location, embedder="none") as store:  # the schema, once
        store.scope("race").save("first version", key=key)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(any_location), key, "15", f"writer{n}"],
            stderr=subprocess.PIPE,
        )
        for n in range(4)
    ]
    for w in writers:
        _, err = w.communicate(timeout=300)
        assert w.returncode == 0, err.decode()[-2000:]
    with hivemem.open(any_location, embedder="none") as store:
        chain = _assert_ordered(store.scope("race"), key)
    assert len(chain) == 1 + 4 * 15


def test_a_node_whose_clock_is_behind_still_starts_a_version_after_its_parent(any_location, clock):
    behind = hivemem.open(
        any_location, embedder="none", clock=lambda: clock.now - timedelta(hours=1)
    )
    ahead = hivemem.open(any_location, embedder="none", clock=clock)
    try:
        key = "deploy-rule"
        first = ahead.scope("a").save("ship on Tuesdays", key=key)
        second = behind.scope("a").save("ship on Fridays", key=key, supersede_reason="moved")
        assert second.valid_from > first.valid_from
        third = ahead.scope("a").save("ship on Mondays", key=key, supersede_reason="moved")
        chain = _assert_ordered(ahead.scope("a"), key)
        assert [v.id for v in chain] == [first.id, second.id, third.id]
    finally:
        behind.close()
        ahead.close()
