"""SQLite connections read the file through a memory map (setting ``mmap_mb``).

What must hold: every connection of a store (the writer and each read connection) maps
as much as the setting says, 0 turns it off, a bad value is refused at the edge, and a
mapped reader still sees what another handle wrote — before and after a checkpoint
moves the write-ahead log's pages into the mapped file.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import sqlean as sqlite3

import hivemem
from hivemem import settings as settingsmod
from hivemem.errors import InvalidInput
from hivemem.settings import Settings


def _mapped(store: hivemem.Store) -> list[int]:
    """``PRAGMA mmap_size`` of the writer and of two read connections of ``store``."""
    backend = store._backend
    sizes = [backend._conn.execute("PRAGMA mmap_size").fetchone()[0]]
    lent = [backend._pool.acquire(), backend._pool.acquire()]
    try:
        sizes += [conn.execute("PRAGMA mmap_size").fetchone()[0] for conn in lent]
    finally:
        for conn in lent:
            backend._pool.release(conn)
    return sizes


def test_every_connection_maps_the_file_by_default(tmp_path: Path) -> None:
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        store.scope("a").save("the deploy key rotates on Fridays")
        assert _mapped(store) == [1024 << 20] * 3


def test_the_setting_sizes_the_map_and_zero_turns_it_off(tmp_path: Path) -> None:
    for mb, expected in ((0, 0), (64, 64 << 20)):
        settings = Settings().replace(mmap_mb=mb)
        with hivemem.open(tmp_path / f"m{mb}.db", settings=settings, embedder="none") as store:
            assert _mapped(store) == [expected] * 3


@pytest.mark.parametrize("value", [-1, 1.5, (1 << 20) + 1, True])
def test_a_bad_value_is_refused_naming_the_setting(value: object) -> None:
    with pytest.raises(InvalidInput, match="mmap_mb"):
        Settings().replace(mmap_mb=value)


def test_the_environment_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIVEMEM_MMAP_MB", "0")
    assert Settings.from_env().mmap_mb == 0
    monkeypatch.setenv("HIVEMEM_MMAP_MB", "lots")
    with pytest.raises(InvalidInput, match="HIVEMEM_MMAP_MB"):
        Settings.from_env()


def test_every_ranged_name_is_a_setting() -> None:
    """A misspelt name in the range table would leave its setting unchecked."""
    fields = {f.name for f in dataclasses.fields(Settings)}
    assert set(settingsmod._RANGES) <= fields
    assert "mmap_mb" in settingsmod._RANGES and "seat_lead" in settingsmod._RANGES


def test_a_mapped_reader_sees_another_handles_writes_across_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with (
        hivemem.open(path, embedder="none") as writer,
        hivemem.open(path, embedder="none") as reader,
    ):
        first = writer.scope("ops").save("the staging database lives on host kestrel")
        assert [h.memory.id for h in reader.scope("ops").search("kestrel")] == [first.id]
        # The checkpoint copies the log's pages into the file the reader has mapped.
        plain = sqlite3.connect(path)
        try:
            plain.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            plain.close()
        assert [h.memory.id for h in reader.scope("ops").search("kestrel")] == [first.id]
        second = writer.scope("ops").save("the kestrel host moved to rack nine")
        found = {h.memory.id for h in reader.scope("ops").search("kestrel")}
        assert found == {first.id, second.id}
        writer.scope("ops").delete(first.id)
        left = [h.memory.id for h in reader.scope("ops").search("kestrel")]
        assert left == [second.id]


def test_results_are_the_same_mapped_or_not(tmp_path: Path) -> None:
    texts = [
        f"turn {i}: the team talks about release {i % 7} and host h{i % 11}" for i in range(300)
    ]
    path = tmp_path / "same.db"
    with hivemem.open(path, embedder="hash") as store:
        store.scope("s").add_episodes(
            [
                {"content": t, "session_id": f"x{i // 20}", "role": "user"}
                for i, t in enumerate(texts)
            ]
        )
        store.flush()
    pages = {}
    for mb in (0, 1024):
        settings = Settings().replace(mmap_mb=mb)
        with hivemem.open(path, settings=settings, embedder="hash") as store:
            pages[mb] = [
                [(h.memory.id, h.score) for h in store.scope("s").search(q, limit=10)]
                for q in ("release 3 host h5", "what about host h2", "turn 17")
            ]
    assert pages[0] == pages[1024] and all(pages[0])
