"""The handles services take: what the write path, the read path and the lifecycle use
of the facade's ``Store`` and ``ScopedMemory``, as protocols (docs/architecture.md).

The facade sits above the services and imports them; a service never imports the
facade back, not even for an annotation (``.importlinter`` counts the imports under
``TYPE_CHECKING`` too). A service is annotated with one of these protocols instead, and
the facade's classes satisfy them structurally, without inheriting them:
``tests/test_handles.py`` holds that every member exists on a live ``Store`` and
``ScopedMemory`` with a signature that accepts what the protocol promises.

Narrowest first:

- ``Scope``: who a scoped handle is: its scope, the shared scopes it reads, the scopes
  it leads, who writes through it, its settings (``write/rights.py`` needs no more).
- ``StoreHandle``: one database as services see it: settings and clock, transactions,
  the storage protocols by name (``store/protocols.py``), the redaction of output and of
  written fields, the embedding queue, and a handle on another scope (``scope``).
- ``ScopedHandle``: a ``Scope`` with its ``store`` and the facade's calls a service
  makes back through a handle (``save``, ``get``, ``list``, ``search``, ``history`` …),
  each with only the parameters services pass; the facade's own take more.

Nothing here is above ``store/``: the types of the answers are the base's
(``hivemem.types``), and what the store holds from higher layers (the scrubber, the
LLM) appears as the little the services call of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..types import Entity, Hit, Kind, Memory, MemoryType, Query, Related, Status

if TYPE_CHECKING:  # pragma: no cover
    from ..clock import Clock
    from ..providers.llm import LLM
    from ..settings import Settings
    from . import protocols as p
    from .tables import TableRows

# What a filter argument of ``list`` / ``search`` takes: one value or several.
Kinds = str | Kind | Sequence[str | Kind] | None
Types = str | MemoryType | Sequence[str | MemoryType] | None
Statuses = str | Status | Sequence[str | Status] | None


class Secrets(Protocol):
    """The store's scrubber, as a service that changed the vault's secrets calls it."""

    def reload(self) -> None:
        """Read the vault's secret values again (after a write or a purge changed them)."""
        ...


class StoreHandle(Protocol):
    """One database, as services see it (the facade's ``Store``)."""

    settings: Settings
    clock: Clock

    @property
    def llm(self) -> LLM | None: ...

    @property
    def location(self) -> str: ...

    # ------------------------------------------------------------------ transactions
    def atomic(self) -> AbstractContextManager[None]: ...

    def snapshot(self) -> AbstractContextManager[None]: ...

    # ------------------------------------------------------------------ the storage seam
    @property
    def memories(self) -> p.Memories: ...

    @property
    def keyword(self) -> p.KeywordIndex: ...

    @property
    def vectors(self) -> p.VectorIndex: ...

    @property
    def entities(self) -> p.EntityIndex: ...

    @property
    def session_rows(self) -> p.Sessions: ...

    @property
    def job_state(self) -> p.JobState: ...

    @property
    def run_log(self) -> p.RunLog: ...

    @property
    def purges(self) -> p.Purges: ...

    @property
    def resolutions(self) -> p.Resolutions: ...

    @property
    def inspection(self) -> p.Inspection: ...

    @property
    def health(self) -> p.Health: ...

    @property
    def vault_rows(self) -> p.VaultRows: ...

    @property
    def backup_rows(self) -> p.BackupRows: ...

    @property
    def table_rows(self) -> TableRows: ...

    def scopes(self) -> list[str]: ...

    def stats(self) -> dict[str, Any]: ...

    def flush_access(self) -> int:
        """Write the access counts searches queued (before a job reads them)."""
        ...

    # ------------------------------------------------------------------ redaction
    @property
    def scrubber(self) -> Secrets: ...

    def scrub(self, text: str) -> str: ...

    def scrubbed(self, value: Any) -> Any: ...

    def guard_fields(self, fields: dict[str, Any], *, refresh: bool = True) -> dict[str, Any]: ...

    # ------------------------------------------------------------------ embedding queue
    def index_written(self, wait: bool) -> None:
        """After a committed write: its chunks are embedded now (``wait``) or queued."""
        ...

    # ------------------------------------------------------------------ other scopes
    def scope(self, name: str, *, actor: str | None = None) -> ScopedHandle:
        """A handle on scope ``name`` writing as ``actor`` (default: the scope's name)."""
        ...


class Scope(Protocol):
    """Who a scoped handle is: what it reads, writes and leads, and as whom."""

    name: str  # the own scope: writes go there
    shared: tuple[str, ...]  # shared scopes it reads too
    visible: tuple[str, ...]  # the own scope, then the shared ones
    lead_of: tuple[str, ...]  # scope names or glob patterns it may change (write/rights.py)
    actor: str  # who writes through it (``updated_by``)
    settings: Settings


class ScopedHandle(Scope, Protocol):
    """A scope's handle as services call it back (the facade's ``ScopedMemory``)."""

    @property
    def store(self) -> StoreHandle: ...

    def save(
        self,
        content: str,
        *,
        key: str | None = None,
        type: str | MemoryType | None = None,  # noqa: A002 - the domain's word
        kind: str | Kind = Kind.FACT,
        source: str = ...,
        supersede_reason: str | None = None,
        tags: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
        confidence: float | None = None,
        event_time: datetime | str | None = None,
        session_id: str | None = None,
        source_ids: Sequence[str] | None = None,
        category: str | None = None,
        updated_by: str | None = None,
    ) -> Memory: ...

    def correct(
        self,
        memory_id: str,
        new_content: str,
        *,
        reason: str | None = None,
        minor: bool = False,
        updated_by: str | None = None,
    ) -> Memory: ...

    def confirm(self, memory_id: str, *, updated_by: str | None = None) -> Memory: ...

    def delete(self, id_or_key: str, *, updated_by: str | None = None) -> Memory: ...

    def get(self, id_or_key: str) -> Memory: ...

    def search(
        self,
        query: str | Query,
        limit: int = 10,
        *,
        kind: Kinds = None,
        exclude_sessions: Sequence[str] | str | None = None,
        status: Statuses = None,
        min_score: float = 0.0,
    ) -> list[Hit]: ...

    def history(self, id_or_key: str) -> list[Memory]: ...

    def related(self, memory_id: str, *, limit: int = 10) -> list[Related]: ...

    def alias(self, name: str, alias: str) -> Entity: ...

    def list(
        self,
        *,
        kind: Kinds = None,
        type: Types = None,  # noqa: A002
        status: Statuses = None,
        include_expired: bool = True,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Memory]: ...  # last: the name shadows ``list`` in the class body
