"""The search's one read of its candidates (``Backend.candidate_rows``, SQLite).

The pipeline reads the memories of its pool (the best ~60 candidates after fusion) to
adjust their scores, and, for diversity (MMR), the float vector of the chunk that stands
for each: the chunk a lane matched, else (a dialogue neighbour) the memory's first
chunk. Those were three statements (the rows, the neighbours' first chunks, the
vectors); here they are one, over a ``VALUES`` list of (memory, chunk) pairs.

``read_with_context`` adds the dialogue neighbours of the best hits (fusion's
``session_neighbours``) to the same statement: the pairs of the anchors not kept from the
keyword lane's ask (``neighbours.py``), and the rows of every neighbour that passes, so
fusion's context and the pool's rows are one read where they were two.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...types import Memory, Query
from ..pool_reads import RankRow
from ..rows import COLUMNS, SELECT, row_to_memory
from . import neighbours

if TYPE_CHECKING:  # pragma: no cover
    from datetime import datetime

    from .database import SQLiteDatabase

Row = tuple[Memory | RankRow, Any, int | None]  # a memory's row, its chunk's vector, that chunk


def read(
    db: SQLiteDatabase,
    scopes: Sequence[str],
    wanted: Mapping[str, int | None],
    model: str | None,
    overlay: Callable[[list[Memory]], list[Memory]],
) -> list[tuple[Memory, np.ndarray | None]]:
    """``get_many``'s memories in the order of ``wanted`` (memory id → its chunk, None:
    its first), each with that chunk's float vector under ``model`` (None when not
    embedded, or when ``model`` is None: no vectors read). ``overlay``: the access
    counts still queued (``AccessLog.overlay``), as ``get_many`` adds them."""
    if not wanted:
        return []
    clause, params = db._scope_clause(scopes)
    pairs: list[Any] = []
    for memory_id, chunk_id in wanted.items():
        pairs += [memory_id, chunk_id]
    values = ", ".join(["(?, ?)"] * len(wanted))
    # The chunk a lane matched, else the memory's first (``memory_chunks``'s order).
    vector, join, extra = _vector_join(model, "w")
    rows = db._read(
        f"WITH w (id, chunk) AS (VALUES {values}) "
        f"SELECT {SELECT}, {vector} FROM w CROSS JOIN memories m ON m.id = w.id {join}"
        f"WHERE {clause}",
        [*pairs, *extra, *params],
    )
    order = {memory_id: i for i, memory_id in enumerate(wanted)}
    rows.sort(key=lambda r: order[r[0]])
    memories = overlay([row_to_memory(r[:-1]) for r in rows])
    return [
        (memory, None if r[-1] is None else np.frombuffer(r[-1], dtype=np.float32))
        for memory, r in zip(memories, rows, strict=True)
    ]


def read_with_context(
    db: SQLiteDatabase,
    memo: neighbours.PairMemo,
    version: Any,
    scopes: Sequence[str],
    wanted: Mapping[str, int | None],
    model: str | None,
    queued: Callable[[Sequence[str]], Mapping[str, tuple[int, datetime]]],
    anchors: Sequence[str],
    chunk_of: Callable[[str], int | None],
    keep: Callable[[dict[str, neighbours.Sides]], Collection[str]],
    query: Query,
    now: datetime,
    have: Collection[str] = (),
    cache_rows: Callable[[Sequence[int]], Mapping[int, int]] | None = None,
) -> list[Row]:
    """``read`` of ``wanted`` and ``session_neighbours`` of ``anchors`` in one statement,
    with the rows of those neighbours. ``keep`` is given each anchor's neighbours (as
    ``session_neighbours`` gives them) and says which of the rows read are wanted:
    ``RankRow`` values are made for those only (``Memory`` values for none: the caller
    builds them for the hits it returns). ``queued``: the access counts still queued
    (``AccessLog.queued``), added as ``get_many`` adds them. Each row carries the chunk
    its vector is of: the one asked for (``wanted``, else ``chunk_of`` for a neighbour
    kept from an earlier ask), else the memory's first (a neighbour read here: a
    candidate's own chunk is most often its first, a turn being one chunk). Rows come in
    no particular order. ``version``: as ``neighbours.read``'s. ``have``: memories whose vector the
    caller holds (the vector lane read it): none is read for them (a row's vector None).
    ``cache_rows``: the ``embedding_cache`` row ids noted for chunks (the vector index's
    copies, ``cache_rows_of``): a vector asked for is read by its row, checked against
    the chunk's text hash and model, and by the cache's index where there is none or the
    check fails (the same vector), as the KNN reads its rows (``vectors._rows``)."""
    ask = neighbours.Asked.of(db, scopes, query, now)
    known, todo = neighbours.kept(memo, version, ask, anchors)
    asked = dict(wanted)
    for sides in known.values():
        for neighbour, _ in sides:
            if neighbour not in asked:
                asked[neighbour] = chunk_of(neighbour)
    if not asked and not todo:
        keep(neighbours.in_order(known))
        return []
    clause, params = db._scope_clause(scopes)
    noted: Mapping[int, int] = {}
    if model is not None and cache_rows is not None:
        noted = cache_rows([c for m, c in asked.items() if c is not None and m not in have])
    pairs: list[Any] = []
    for memory_id, chunk_id in asked.items():
        row = None if chunk_id is None else noted.get(chunk_id)
        pairs += [memory_id, chunk_id, memory_id not in have, row]
    values = (
        "VALUES " + ", ".join(["(?, ?, ?, ?)"] * len(asked))
        if asked
        else "SELECT NULL, NULL, NULL, NULL WHERE 0"
    )
    vector, join, extra = _noted_vector_join(model)
    rows_sql = (
        f"SELECT 0, {SELECT}, {vector}, {'x.chunk' if model is None else 'c.id'} "
        "FROM x CROSS JOIN memories m ON m.id = x.id "
        f"{join}WHERE {clause}"
    )
    if todo:
        # The pairs' rows beside the memories' (padded to their width); the neighbours
        # that pass (``ok``) join the memories asked for, each with its first chunk.
        padding = ", ".join(["NULL"] * (len(COLUMNS) - 3))
        sql = (
            neighbours.pairs_sql(todo, ask.filters) + f", w (id, chunk, need, row) AS ({values}), "
            "x (id, chunk, need, row) AS (SELECT id, chunk, need, row FROM w "
            "UNION ALL SELECT id, NULL, 1, NULL FROM ok WHERE id NOT IN (SELECT id FROM w)) "
            f"{rows_sql} UNION ALL SELECT 1, anchor, before, before IN ok, after, "
            f"after IN ok, {padding} FROM pairs"
        )
        got = db._read(sql, [*todo, *ask.params, *pairs, *extra, *params])
    else:
        sql = f"WITH x (id, chunk, need, row) AS ({values}) {rows_sql}"
        got = db._read(sql, [*pairs, *extra, *params])
    if todo:
        found = neighbours.sides([r[1:6] for r in got if r[0] == 1])
        known.update(neighbours.keep(memo, version, ask, todo, found))
    wanted_ids = keep(neighbours.in_order(known))
    memory_rows = [r for r in got if r[0] == 0 and r[1] in wanted_ids]
    counts = queued([r[1] for r in memory_rows])
    return [
        (
            RankRow(r[1:-2], counts.get(r[1])),
            None if r[-2] is None else np.frombuffer(r[-2], dtype=np.float32),
            r[-1],
        )
        for r in memory_rows
    ]


def _noted_vector_join(model: str | None) -> tuple[str, str, list[Any]]:
    """``_vector_join`` of ``x`` where ``x.need``, each vector read by its noted cache
    row (``x.row``) checked against the chunk's text hash and model, else by the cache's
    index: that join's key is NULL where the row held, so SQLite does not seek it (a
    condition beside the key is tested after the seek)."""
    if model is None:
        return "NULL", "", []
    join = (
        "LEFT JOIN chunks c ON c.id = COALESCE(x.chunk, (SELECT f.id FROM chunks f "
        "WHERE f.memory_id = m.id ORDER BY f.seq LIMIT 1)) "
        "LEFT JOIN embedding_cache e ON e.id = x.row AND e.text_hash = c.text_hash "
        "AND e.model = ? AND x.need "
        "LEFT JOIN embedding_cache i ON i.text_hash = "
        "(CASE WHEN e.id IS NULL AND x.need THEN c.text_hash END) AND i.model = ? "
    )
    return "COALESCE(e.vector, i.vector)", join, [model, model]


def _vector_join(model: str | None, table: str, when: str = "") -> tuple[str, str, list[Any]]:
    """The vector column, the joins that bring it, and their parameters: the chunk asked
    for in ``table``, else the memory's first (``memory_chunks``'s order); none without
    a model. ``when``: `` AND`` a condition under which the vector is read (after the
    index's terms: a constant false there, ``0 AND …``, made SQLite scan the whole
    cache, 0.8 s)."""
    if model is None:
        return "NULL", "", []
    join = (
        f"LEFT JOIN chunks c ON c.id = COALESCE({table}.chunk, (SELECT f.id FROM chunks f "
        "WHERE f.memory_id = m.id ORDER BY f.seq LIMIT 1)) "
        f"LEFT JOIN embedding_cache e ON e.text_hash = c.text_hash AND e.model = ?{when} "
    )
    return "e.vector", join, [model]
