"""The PostgreSQL backend seen in the SQLite store's dialect, for the statements both
stores share (the inspector's reads, the counts of ``stats``): the scope clause and
the filters written with ``?``, memories and entities read through ``qmark``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...types import Entity, ListFilter, Memory, Query
from . import qmark

if TYPE_CHECKING:  # pragma: no cover
    from .database import PostgresDatabase


class _Entities:
    def __init__(self, backend: PostgresDatabase) -> None:
        self._pg = backend

    def _entities(self, where: str, params: Sequence[Any], aliases: bool = True) -> list[Entity]:
        return self._pg.entities._entities(qmark(where), params, aliases)


class Portable:
    """The part of the backend the inspector's statements use, in SQLite's dialect."""

    def __init__(self, backend: PostgresDatabase) -> None:
        self._pg = backend
        self.entities = _Entities(backend)

    @staticmethod
    def _scope_clause(scopes: Sequence[str]) -> tuple[str, list[Any]]:
        if not scopes:
            raise RuntimeError("no scope given")  # every read is scoped; a HiveMem bug
        return "m.scope = ANY(?)", [list(scopes)]

    def _filter_sql(self, flt: ListFilter | Query, now: datetime) -> tuple[list[str], list[Any]]:
        where, params = self._pg._filter_sql(flt, now)
        return [w.replace("%s", "?") for w in where], params

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        return self._pg._memories(qmark(where), params, qmark(tail))

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._pg._read(sql, params)
