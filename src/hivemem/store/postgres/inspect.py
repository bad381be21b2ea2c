"""The web inspector's reads on the PostgreSQL store: the shared statements
(``store/inspect.py``: portable SQL, keyset pages on ``(created_at, id)``), run
through the backend's view in their dialect (``portable.Portable``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..inspect import InspectionStatements
from .portable import Portable

if TYPE_CHECKING:  # pragma: no cover
    from .database import PostgresDatabase


class PgInspection(InspectionStatements):
    def __init__(self, backend: PostgresDatabase) -> None:
        super().__init__(Portable(backend))
