"""The search's one read of its candidates (``Backend.candidate_rows``, SQLite).

The pipeline reads the memories of its pool (the best ~60 candidates after fusion) to
adjust their scores, and, for diversity (MMR), the float vector of the chunk that stands
for each: the chunk a lane matched, else (a dialogue neighbour) the memory's first
chunk. Those were three statements (the rows, the neighbours' first chunks, the
vectors); here they are one, over a ``VALUES`` list of (memory, chunk) pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...types import Memory
from ..rows import SELECT, row_to_memory

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteDatabase


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
    if model is None:
        vector, join, extra = "NULL", "", []
    else:
        # The chunk a lane matched, else the memory's first (``memory_chunks``'s order).
        vector = "e.vector"
        join = (
            "LEFT JOIN chunks c ON c.id = COALESCE(w.chunk, (SELECT f.id FROM chunks f "
            "WHERE f.memory_id = m.id ORDER BY f.seq LIMIT 1)) "
            "LEFT JOIN embedding_cache e ON e.text_hash = c.text_hash AND e.model = ? "
        )
        extra = [model]
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
