"""Read your writes: a memory written a moment ago is found by meaning by the next search.

The write path stays as it is (DESIGN §2): a write commits its row, chunks and keyword
index and queues its chunks for the embedding worker; no model is called. What changes
is the read: before a search reads through its read view, it embeds the queued chunks of the
scopes it reads (``embed_fresh`` → ``Indexer.embed_pending``), so those chunks are
vector candidates like any other by the time the vector lane runs.

Bounds. The newest ``search_embed_max`` chunks (64; the last writes are the ones asked
about next) within ``search_embed_ms`` (30 ms; slices of 8, the first always runs). A
burst larger than that leaves the rest queued for the worker: found by keyword until
then, and each hit's notes say so — only when chunks of the scopes searched wait, never
because of another scope's writes. With one write between searches (an agent's turn),
the search embeds one chunk: a few milliseconds with the default model (``hivemem bench``,
the read-your-writes row).

Once per chunk. The vectors are stored by the worker's own ``upsert``, which takes the
chunks off the queue (and fills the embedding cache): the worker never embeds them
again. Within a process the worker's batch in flight is waited for (within half the
budget) instead of embedding the same texts twice; across processes and nodes (the
PostgreSQL claims, ``claimed_by``/``claimed_until``, are not taken: a search embeds its
chunks even while another node holds them) ``upsert`` stores whichever vector comes
first, once.

Reads fail open: an embedder that fails here leaves the chunks queued and the search
goes on (the vector lane then says why it did not run). A store the process cannot write
(a read-only file) the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..settings import Settings
from ..types import Query
from .pipeline import QueryEmbedder


def embed_fresh(
    indexer: QueryEmbedder, scopes: Sequence[str], query: Query, settings: Settings
) -> int:
    """Embed the queued chunks of ``scopes`` before ``query`` is searched there (see the
    module docstring); returns how many chunks of ``scopes`` are still queued (up to
    ``search_embed_max + 1`` counted). Called outside the search's read view, so the
    view sees the vectors stored."""
    if query.fts_syntax or not indexer.enabled or settings.search_embed_max <= 0:
        return 0  # FTS5 syntax runs no vector lane; without a model nothing will embed
    return indexer.embed_pending(
        scopes, settings.search_embed_max, settings.search_embed_ms / 1000.0
    )


def queued(indexer: QueryEmbedder, scopes: Sequence[str], query: Query, settings: Settings) -> bool:
    """Whether ``embed_fresh`` has chunks to embed: asked inside the search's read view,
    where the queue's read is kept while nothing is written, so that ``embed_fresh``
    (outside any view) runs only when it has work."""
    if query.fts_syntax or not indexer.enabled or settings.search_embed_max <= 0:
        return False
    return indexer.queued_in(scopes, settings.search_embed_max)
