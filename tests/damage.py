"""A deterministic generator of damaged copies of a store, for the reliability suite.

``build(path, rows)`` writes a healthy store of ``rows`` memories (facts with keys and
supersede chains, episodes, vectors of the hash embedder) and checkpoints it. Each entry of
``DAMAGES`` makes one kind of damage to a copy of it, the way a failing disk, a torn
copy, a crash while copying a live file or a stray tool would: flipped bytes in chosen
pages (the memories table, its id index, the keyword index, the schema page), zeroed page
ranges, truncations, a bad header, hot write-ahead logs torn or garbled, a damaged FTS
index. Every damage is seeded: the same name damages the same bytes every run.

``readable_rows(path, rowids)`` is the oracle the rescue is held to: the memories a
plain SQLite connection can still read by rowid, one at a time, from the damaged file.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import sqlean as sqlite3

import hivemem

Damage = Callable[[Path, random.Random], None]
SIDE_FILES = ("-wal", "-shm")


def build(path: Path, rows: int = 3000) -> dict[int, str]:
    """A healthy, checkpointed store of ``rows`` memories at ``path``; {rowid: id}."""
    with hivemem.open(path, embedder="hash") as store:
        mem = store.scope("team-a")
        other = store.scope("team-b")
        batch = []
        for i in range(rows):
            if i % 10 == 0:  # a fact; from 2000 on, each supersedes the one 1000 before
                target = other if i % 20 == 0 else mem
                target.save(
                    f"fact {i}: token{i:06d}x the service number {i} runs on host h{i % 37}",
                    key=f"fact-{i if i < 2000 else i - 1000}",
                    supersede_reason="newer" if i >= 2000 else None,
                    tags=[f"t{i % 5}"],
                    attributes={"n": i},
                )
                continue
            batch.append(
                {
                    "content": f"turn {i}: token{i:06d}x the user talks about topic {i % 50}",
                    "session_id": f"s{i // 100}",
                    "role": "user" if i % 2 else "agent",
                }
            )
            if len(batch) == 250:
                mem.add_episodes(batch)
                batch = []
        if batch:
            mem.add_episodes(batch)
        store.flush()
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return dict(conn.execute("SELECT rowid, id FROM memories").fetchall())
    finally:
        conn.close()


def copy(source: Path, target: Path) -> None:
    shutil.copyfile(source, target)
    for suffix in SIDE_FILES:
        side = Path(f"{source}{suffix}")
        if side.exists():
            shutil.copyfile(side, f"{target}{suffix}")


# ----------------------------------------------------------------------------- helpers


def _page_size(path: Path) -> int:
    with open(path, "rb") as fp:
        fp.seek(16)
        raw = int.from_bytes(fp.read(2), "big")
    return 65536 if raw == 1 else raw


def _pages_of(path: Path, name: str, pagetype: str | None = None) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        sql = "SELECT pageno FROM dbstat WHERE name = ?"
        params: list[object] = [name]
        if pagetype:
            sql += " AND pagetype = ?"
            params.append(pagetype)
        return sorted(r[0] for r in conn.execute(sql + " ORDER BY pageno", params))
    finally:
        conn.close()


def _flip(path: Path, offsets: list[int], rng: random.Random, width: int = 24) -> None:
    with open(path, "r+b") as fp:
        for offset in offsets:
            fp.seek(offset)
            old = fp.read(width)
            fp.seek(offset)
            fp.write(bytes(b ^ rng.randrange(1, 256) for b in old))


def _flip_pages(path: Path, pages: list[int], rng: random.Random) -> None:
    size = _page_size(path)
    offsets = []
    for page in pages:
        start = (page - 1) * size
        offsets += [start + rng.randrange(8, size - 32) for _ in range(4)]
    _flip(path, offsets, rng)


def _pick(pages: list[int], rng: random.Random, n: int = 1) -> list[int]:
    assert pages, "no such pages in the store"
    return rng.sample(pages, min(n, len(pages)))


# ----------------------------------------------------------------------------- damages


def flip_memory_leaf(path: Path, rng: random.Random) -> None:
    _flip_pages(path, _pick(_pages_of(path, "memories", "leaf"), rng), rng)


def flip_memory_leaves(path: Path, rng: random.Random) -> None:
    _flip_pages(path, _pick(_pages_of(path, "memories", "leaf"), rng, 6), rng)


def flip_memory_interior(path: Path, rng: random.Random) -> None:
    _flip_pages(path, _pick(_pages_of(path, "memories", "internal"), rng), rng)


def flip_id_index(path: Path, rng: random.Random) -> None:
    _flip_pages(path, _pick(_pages_of(path, "sqlite_autoindex_memories_1"), rng, 2), rng)


def flip_fts_pages(path: Path, rng: random.Random) -> None:
    _flip_pages(path, _pick(_pages_of(path, "chunks_fts_data"), rng, 3), rng)


def flip_chunk_pages(path: Path, rng: random.Random) -> None:
    _flip_pages(path, _pick(_pages_of(path, "chunks", "leaf"), rng, 3), rng)


def flip_schema_page(path: Path, rng: random.Random) -> None:
    size = _page_size(path)
    _flip(path, [rng.randrange(200, size - 32) for _ in range(6)], rng)


def flip_random_pages(path: Path, rng: random.Random) -> None:
    pages = os.path.getsize(path) // _page_size(path)
    _flip_pages(path, rng.sample(range(2, pages + 1), 8), rng)


def zero_page_range(path: Path, rng: random.Random) -> None:
    size = _page_size(path)
    pages = os.path.getsize(path) // size
    first = rng.randrange(pages // 3, pages // 2)
    with open(path, "r+b") as fp:
        fp.seek(first * size)
        fp.write(b"\0" * size * 16)


def truncate_half(path: Path, rng: random.Random) -> None:
    os.truncate(path, (os.path.getsize(path) // 2 // _page_size(path)) * _page_size(path))


def truncate_tail(path: Path, rng: random.Random) -> None:
    os.truncate(path, os.path.getsize(path) - 3 * _page_size(path))


def truncate_mid_page(path: Path, rng: random.Random) -> None:
    os.truncate(path, os.path.getsize(path) * 3 // 4 + 1234)


def bad_magic(path: Path, rng: random.Random) -> None:
    with open(path, "r+b") as fp:
        fp.write(b"Not a database!\0")


def bad_page_size(path: Path, rng: random.Random) -> None:
    with open(path, "r+b") as fp:
        fp.seek(16)
        fp.write(b"\x03\x00")


def bad_page_count(path: Path, rng: random.Random) -> None:
    with open(path, "r+b") as fp:  # the in-header database size, far past the file's end
        fp.seek(28)
        fp.write((10_000_000).to_bytes(4, "big"))
        fp.seek(92)
        fp.write(b"\0\0\0\0")  # version-valid-for: the size is trusted only when it matches


def garbage_file(path: Path, rng: random.Random) -> None:
    size = os.path.getsize(path)
    with open(path, "wb") as fp:
        fp.write(rng.randbytes(min(size, 200_000)))


def _hot_wal(path: Path, rng: random.Random, rows: int = 200) -> None:
    """Leave a hot WAL beside ``path``: writes committed to the log, never checkpointed
    (a copy taken while a writer held the file open)."""
    staging = path.with_name(path.name + ".live")
    copy(path, staging)
    conn = sqlite3.connect(staging)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    with conn:
        for i in range(rows):
            conn.execute(
                "UPDATE memories SET content = content || ? WHERE rowid = ?",
                [f" edited{i}", rng.randrange(1, 1000)],
            )
    shutil.copyfile(staging, path)  # copied while the connection is still open
    shutil.copyfile(f"{staging}-wal", f"{path}-wal")
    shutil.copyfile(f"{staging}-shm", f"{path}-shm")
    conn.close()
    for suffix in ("", *SIDE_FILES):
        Path(f"{staging}{suffix}").unlink(missing_ok=True)


def hot_wal_torn(path: Path, rng: random.Random) -> None:
    _hot_wal(path, rng)
    wal = Path(f"{path}-wal")
    os.truncate(wal, os.path.getsize(wal) * 2 // 3 + 100)


def hot_wal_flipped_frames(path: Path, rng: random.Random) -> None:
    _hot_wal(path, rng)
    wal = Path(f"{path}-wal")
    size = os.path.getsize(wal)
    _flip(wal, [rng.randrange(32, size - 32) for _ in range(10)], rng)


def hot_wal_bad_header(path: Path, rng: random.Random) -> None:
    _hot_wal(path, rng)
    with open(f"{path}-wal", "r+b") as fp:
        fp.write(rng.randbytes(32))


def hot_wal_garbage_shm(path: Path, rng: random.Random) -> None:
    _hot_wal(path, rng)
    shm = Path(f"{path}-shm")
    with open(shm, "r+b") as fp:
        fp.write(rng.randbytes(os.path.getsize(shm)))


def hot_wal_truncated_db(path: Path, rng: random.Random) -> None:
    _hot_wal(path, rng)
    truncate_tail(path, rng)


def fts_garbage_blocks(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    with conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks_fts_data WHERE id > 10")]
        for block_id in rng.sample(ids, min(5, len(ids))):
            conn.execute(
                "UPDATE chunks_fts_data SET block = ? WHERE id = ?", [rng.randbytes(64), block_id]
            )
    conn.close()


def fts_index_gone(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM chunks_fts_data WHERE id > 1")
        conn.execute("DELETE FROM chunks_fts_idx")
    conn.close()


DAMAGES: dict[str, Damage] = {
    f.__name__: f
    for f in (
        flip_memory_leaf,
        flip_memory_leaves,
        flip_memory_interior,
        flip_id_index,
        flip_fts_pages,
        flip_chunk_pages,
        flip_schema_page,
        flip_random_pages,
        zero_page_range,
        truncate_half,
        truncate_tail,
        truncate_mid_page,
        bad_magic,
        bad_page_size,
        bad_page_count,
        garbage_file,
        hot_wal_torn,
        hot_wal_flipped_frames,
        hot_wal_bad_header,
        hot_wal_garbage_shm,
        hot_wal_truncated_db,
        fts_garbage_blocks,
        fts_index_gone,
    )
}


def damaged_copy(healthy: Path, target: Path, name: str, seed: int = 11) -> Path:
    """A copy of ``healthy`` at ``target`` with damage ``name`` (seeded: deterministic)."""
    copy(healthy, target)
    DAMAGES[name](target, random.Random(f"{name}:{seed}"))
    return target


def readable_rows(path: Path, rowids: dict[int, str]) -> set[str]:
    """The ids of memories a plain connection reads from a copy of ``path``, one rowid at
    a time (the copy keeps the original untouched by recovery)."""
    probe = path.with_name(path.name + ".oracle")
    copy(path, probe)
    found: set[str] = set()
    try:
        conn = sqlite3.connect(f"file:{probe}?mode=ro", uri=True)
        conn.execute("PRAGMA writable_schema = ON")  # a schema entry past the end: read on
    except sqlite3.DatabaseError:
        return found
    try:
        for rowid, memory_id in rowids.items():
            try:
                row = conn.execute(
                    "SELECT id, scope, kind, type, content, status, created_at FROM memories "
                    "WHERE rowid = ?",
                    [rowid],
                ).fetchone()
            except (sqlite3.DatabaseError, MemoryError):
                continue
            if row is not None and row[0] == memory_id:
                found.add(memory_id)
    finally:
        conn.close()
        for suffix in ("", *SIDE_FILES):
            Path(f"{probe}{suffix}").unlink(missing_ok=True)
    return found


def rows_plain_sql_reads(path: Path, rowids: dict[int, str]) -> set[str]:
    """The stricter oracle of issue #25: every row a plain connection returns for
    ``SELECT * … WHERE rowid = ?``, with text read as bytes (so a flipped byte in any text
    column does not hide the row), by the id a rescue spells for it (bytes that are not
    UTF-8 as U+FFFD). Every one must be saved by the rescue: exported, or set aside with
    its fields as read."""
    probe = path.with_name(path.name + ".oracle-bytes")
    copy(path, probe)
    found: set[str] = set()
    try:
        conn = sqlite3.connect(f"file:{probe}?mode=ro", uri=True)
        conn.text_factory = bytes
        conn.execute("PRAGMA writable_schema = ON")
    except sqlite3.DatabaseError:
        return found
    try:
        for rowid in range(1, max(rowids) + 1):
            try:
                row = conn.execute("SELECT * FROM memories WHERE rowid = ?", [rowid]).fetchone()
                head = conn.execute("SELECT id FROM memories WHERE rowid = ?", [rowid]).fetchone()
            except (sqlite3.DatabaseError, MemoryError):
                continue
            if row is not None and head is not None:
                value = head[0]
                found.add(
                    value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                )
    finally:
        conn.close()
        for suffix in ("", *SIDE_FILES):
            Path(f"{probe}{suffix}").unlink(missing_ok=True)
    return found
