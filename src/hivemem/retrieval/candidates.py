"""The search's candidates as one table indexed by position (the pipeline's lanes to hits).

A search meets ~100-200 memories (the lanes' candidates and dialogue context) and returns
``limit`` of them. Each used to be an object with a dict per lane (its rank and raw
scores, rounded for the explanation) and a dict of lane scores, read back into arrays
for fusion: ~0.5 ms of Python a search at 20,000 memories, most of it for candidates
that are never returned. Here a candidate is a position: the lanes append their scores
by position, fusion takes each lane as a float64 array over the positions
(``arrays``), and a hit's explanation (``lanes``) is built for the hits returned only,
from the same values in the same order as the per-candidate dicts held them.

Where a lane names one memory twice (two chunks of it), the later entry wins, as it
did in the per-candidate dicts; the rank and score of that entry are the lane's for the
memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_Lane = dict[int, tuple[int, float, float]]  # position → (rank, score, raw value)


class Candidates:
    """The candidates in the order they were found (the order ties keep)."""

    __slots__ = (
        "ids", "at", "chunk_id", "chunk_seq", "chunk_text", "matched", "vector",
        "keyword", "vector_lane", "entity", "context", "extra", "found",
    )  # fmt: skip

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.at: dict[str, int] = {}
        self.chunk_id: list[int | None] = []
        self.chunk_seq: list[int] = []
        self.chunk_text: list[str] = []
        self.matched: list[tuple[str, ...]] = []
        self.vector: list[np.ndarray | None] = []
        # Per lane: position → (rank, the lane's score, the raw value the explanation
        # shows: keyword coverage's window part, the vector lane's cosine).
        self.keyword: _Lane = {}
        self.vector_lane: _Lane = {}
        self.entity: _Lane = {}
        self.context: dict[int, tuple[int, float]] = {}  # position → (anchor's rank, score)
        self.extra: dict[int, dict[str, Any]] = {}  # later lanes: current, rerank
        self.found = 0  # candidates the lanes and context found (``Explanation.candidates``)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, memory_id: str) -> int:
        """The position of ``memory_id``, appended if new."""
        at = self.at.get(memory_id)
        if at is not None:
            return at
        at = self.at[memory_id] = self.fresh(memory_id)
        return at

    def fresh(self, memory_id: str) -> int:
        """A new position for ``memory_id`` even where it has one, which lookups by id
        keep finding: a record (a current version brought in by its superseded match)
        that must not show another record's lane scores, matched terms or chunk."""
        at = len(self.ids)
        self.ids.append(memory_id)
        self.chunk_id.append(None)
        self.chunk_seq.append(0)
        self.chunk_text.append("")
        self.matched.append(())
        self.vector.append(None)
        return at

    def lane(self, name: str) -> _Lane:
        return {"keyword": self.keyword, "vector": self.vector_lane, "entity": self.entity}[name]

    def arrays(self, lanes_run: Sequence[str]) -> dict[str, np.ndarray]:
        """Each lane's scores as an array over the candidates, in their order (0: the
        lane did not return the candidate); ``fusion`` works on these."""
        out = {}
        for name in lanes_run:
            scores = np.zeros(len(self.ids), dtype=np.float64)
            lane = self.lane(name)
            if lane:
                scores[np.fromiter(lane, dtype=np.intp, count=len(lane))] = [
                    entry[1] for entry in lane.values()
                ]
            out[name] = scores
        return out

    def cosines(self) -> list[float]:
        """The vector lane's cosines as the explanation shows them (rounded)."""
        return [round(entry[2], 6) for entry in self.vector_lane.values()]

    def lanes(self, at: int) -> dict[str, dict[str, Any]]:
        """What the lanes said of the candidate at ``at``, as its explanation shows it:
        rank and raw scores per lane, in the order the lanes ran."""
        out: dict[str, dict[str, Any]] = {}
        entry = self.keyword.get(at)
        if entry is not None:
            rank, coverage, window = entry
            out["keyword"] = {"rank": rank, "coverage": round(coverage, 6)}
            if window > 0:
                out["keyword"]["window"] = round(window, 6)
        entry = self.vector_lane.get(at)
        if entry is not None:
            rank, score, cosine = entry
            out["vector"] = {"rank": rank, "cosine": round(cosine, 6), "score": round(score, 6)}
        entry = self.entity.get(at)
        if entry is not None:
            out["entity"] = {"rank": entry[0], "score": round(entry[1], 6)}
        context = self.context.get(at)
        if context is not None:
            out["context"] = {"of": context[0], "score": round(context[1], 6)}
        out.update(self.extra.get(at, {}))
        return out


class Candidate:
    """One candidate of a ``Candidates`` table as the later stages read it (a hit's
    lanes, matched terms and chunk): a position, not a copy."""

    __slots__ = ("table", "at")

    def __init__(self, table: Candidates, at: int) -> None:
        self.table = table
        self.at = at

    @property
    def memory_id(self) -> str:
        return self.table.ids[self.at]

    @property
    def lanes(self) -> dict[str, dict[str, Any]]:
        return self.table.lanes(self.at)

    def set_lane(self, name: str, value: dict[str, Any]) -> None:
        """A lane after fusion (``current``, ``rerank``), shown after the others."""
        self.table.extra.setdefault(self.at, {})[name] = value

    @property
    def chunk_id(self) -> int | None:
        return self.table.chunk_id[self.at]

    @property
    def chunk_seq(self) -> int:
        return self.table.chunk_seq[self.at]

    @property
    def chunk_text(self) -> str:
        return self.table.chunk_text[self.at]

    @property
    def matched(self) -> tuple[str, ...]:
        return self.table.matched[self.at]

    @property
    def vector(self) -> np.ndarray | None:
        return self.table.vector[self.at]
