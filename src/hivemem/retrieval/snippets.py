"""The text a search result shows: openhive's ~400-token snippet of the matching part.

``Hit.snippet`` is a short window (~200 characters) for lists. Agents written for
openhive read a ``snippet`` of about 400 tokens — a whole chunk — so ``passage`` returns
the hit's best chunk (the one its lanes matched, ``explain.chunk_seq``), cut to
``tokens`` around the first matched term, with the vault's secrets redacted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import text as textmod
from ..types import Hit

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle

DEFAULT_TOKENS = 400


def passages(mem: ScopedHandle, hits: list[Hit], tokens: int = DEFAULT_TOKENS) -> list[str]:
    """For each hit, its matching chunk cut to about ``tokens`` tokens."""
    chunks = mem.store.keyword.memory_chunks([h.memory.id for h in hits])
    by_seq = {(c.memory_id, c.seq): c.text for c in chunks}
    out = []
    for hit in hits:
        chunk = by_seq.get((hit.memory.id, hit.explain.chunk_seq), hit.memory.content)
        window = textmod.token_window(chunk, list(hit.explain.matched_terms), tokens)
        out.append(mem.store.scrub(window))
    return out
