"""The database handle: ``hivemem.open()`` and ``Store`` (one database, its embedder and
its embedding worker). ``store.scope(name)`` gives the ``ScopedMemory`` handle through
which every read and write goes (``hivemem.facade.memory``)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import platformdirs

from .. import arguments
from ..clock import Clock, system_clock
from ..errors import InvalidInput, StoreError
from ..lifecycle.indexer import Indexer
from ..lifecycle.sessions import SessionWorker
from ..providers.embed import Embedder, get_embedder
from ..providers.llm import LLM, get_llm
from ..retrieval.rerank import Reranker, resolve_reranker
from ..settings import Settings
from ..store import factory
from ..store.factory import is_url, open_backend
from ..store.protocols import (
    Backend,
    BackupRows,
    EntityIndex,
    Health,
    Inspection,
    JobState,
    KeywordIndex,
    Memories,
    Purges,
    Resolutions,
    RunLog,
    Sessions,
    Tokens,
    UiSessions,
    VaultRows,
    VectorIndex,
)
from ..store.tables import TableRows
from ..types import Memory, as_tuple
from ..write import rules
from ..write.redact import WRITTEN_TEXT_FIELDS, Scrubber, guard_value
from ..write.vault import Vault
from .memory import ScopedMemory

log = logging.getLogger("hivemem.facade.database")
SERVER_WRITES = 4  # tool writes one server process runs at once on PostgreSQL (half the pool)


def default_path() -> Path | str:
    """``$HIVEMEM_DB`` if set (a file, or a ``postgresql://`` URL), else ``memory.db`` in
    the user's data folder."""
    env = os.environ.get("HIVEMEM_DB")
    if env:
        return env if is_url(env) else Path(env).expanduser()
    return Path(platformdirs.user_data_dir("hivemem", appauthor=False)) / "memory.db"


def open(  # noqa: A001 - the library's entry point reads best as hivemem.open()
    path: str | Path | None = None,
    *,
    settings: Settings | None = None,
    clock: Clock = system_clock,
    embedder: Embedder | str | None = None,
    reranker: Reranker | str | None = None,
    llm: LLM | str | None = None,
    llm_api_key: str | None = None,
    embed_api_key: str | None = None,
    create: bool = True,
) -> Store:
    """Open (creating if needed) the store at ``path`` — a file, ``":memory:"``, or a
    ``postgresql://`` URL (the ``postgres`` extra; docs/postgres.md).

    With no path: ``$HIVEMEM_DB``, else ``memory.db`` in the user data folder. Pending
    schema migrations are applied on open. A missing file becomes a new store
    (``store.created`` is then true); with ``create=False`` it is ``NotAStore`` instead
    and nothing is made (the CLI's reads open so). A SQLite file of another program is
    always ``NotAStore``, and left byte for byte as it was. On PostgreSQL likewise: a
    database with no HiveMem schema is a missing store, one holding another program's
    tables is always ``NotAStore`` and left unchanged.

    ``embedder`` is an ``Embedder`` or the name of a registered one (default: the
    ``embedder`` setting, the bundled offline model; ``"none"`` for keyword search only).
    The model loads on first use, not here.
    ``reranker`` likewise (default: the ``reranker`` setting, none). ``llm`` is an
    ``LLM`` or a provider name (default: the ``llm`` setting, none), used by maintenance
    jobs only; ``llm_api_key`` is its key (the CLI reads ``HIVEMEM_LLM_API_KEY``).
    ``embedder="openai"`` is configured by the ``embed_*`` settings, with
    ``embed_api_key`` (the CLI reads ``HIVEMEM_EMBED_API_KEY``).
    """
    settings = settings or Settings()
    if clock is None or not callable(clock):
        raise InvalidInput("clock", "expected a function returning the time (a callable)")
    if path is None:
        path = default_path()
        if not is_url(path) and create:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    model = resolve_embedder(
        settings.embedder if embedder is None else embedder, settings, embed_api_key
    )
    ranker = resolve_reranker(settings.reranker if reranker is None else reranker)
    chat = resolve_llm(settings.llm if llm is None else llm, settings, llm_api_key)
    backend = open_backend(path, settings, create=create)
    try:
        return Store(
            backend, settings=settings, clock=clock, embedder=model, reranker=ranker, llm=chat
        )
    except BaseException:
        backend.close()
        raise


def resolve_embedder(
    embedder: Embedder | str | None,
    settings: Settings | None = None,
    api_key: str | None = None,
) -> Embedder | None:
    """An embedder from a name (``"none"`` and None mean no embedder) or an instance;
    ``openai`` is configured by the ``embed_*`` settings."""
    if embedder is None or embedder == "none":
        return None
    if embedder == "openai":
        s = settings or Settings()
        shortened = s.embed_dimensions if s.embed_dimensions > 0 else None
        return get_embedder(
            "openai",
            model=s.embed_model,
            dimension=shortened or s.embed_full_dimension,
            dimensions=shortened,
            base_url=s.embed_base_url or None,
            api_key=api_key,
        )
    if embedder == "sentence-transformers":
        return get_embedder(embedder, model=(settings or Settings()).embed_model_path)
    if embedder == "onnx":
        s = settings or Settings()
        return get_embedder(embedder, model=s.embed_model_path, pooling=s.embed_pooling)
    if isinstance(embedder, str):
        return get_embedder(embedder)
    if not isinstance(embedder, Embedder) or not callable(getattr(embedder, "embed_batch", None)):
        raise InvalidInput(
            "embedder",
            "expected an Embedder (identity, dimension and a callable embed_batch(texts)) or "
            "the name of a registered one",
        )
    return embedder


def resolve_llm(
    llm: LLM | str | None, settings: Settings, api_key: str | None = None
) -> LLM | None:
    """An LLM from a provider name (``"none"`` and None mean no LLM), configured by the
    ``llm_*`` settings, or an instance. Cheap: no connection is opened here."""
    if llm is None or llm == "none" or llm == "":
        return None
    if isinstance(llm, str):
        if not settings.llm_model:
            raise InvalidInput("llm_model", f"the LLM {llm!r} needs a model name")
        return get_llm(
            llm,
            model=settings.llm_model,
            base_url=settings.llm_base_url or None,
            api_key=api_key,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
        )
    if not isinstance(llm, LLM) or not callable(getattr(llm, "complete", None)):
        raise InvalidInput(
            "llm",
            "expected an LLM (identity and a callable complete(messages, schema)) or the "
            "name of a registered provider",
        )
    return llm


class Store:
    """One database. Get a handle with ``store.scope(name)``; close when done (or use
    ``with``).

    The backend is private (``_backend``). Services get what they need from the store
    by name, one protocol of ``hivemem.store.protocols`` each: ``memories``,
    ``keyword``, ``vectors``, ``entities``, ``session_rows``, ``job_state``,
    ``run_log``, ``purges``, ``inspection``, ``vault_rows``, ``tokens``, ``ui_sessions``,
    ``health``, ``backup_rows``; transactions through ``atomic()`` and ``snapshot()``."""

    def __init__(
        self,
        backend: Backend,
        *,
        settings: Settings | None = None,
        clock: Clock = system_clock,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        llm: LLM | None = None,
    ) -> None:
        self._backend = backend
        self.reranker = reranker
        self.llm = llm  # maintenance jobs only; never called on the write path
        self.settings = settings or Settings()
        self.clock = clock
        self.indexer = Indexer(
            backend.vectors,
            embedder,
            batch_size=self.settings.embed_batch_size,
            background=self.settings.embed_in_background,
            claim_s=self.settings.embed_claim_s,
        )
        if self.indexer.enabled and backend.vectors.has_pending():
            self.indexer.notify()  # work left by an earlier run (a crash, a short CLI call)
        # Consolidation of earlier sessions when a new one starts (off the write path).
        self.session_worker = SessionWorker(self)
        self.vault_rows: VaultRows = factory.vault_rows(backend)
        self.tokens: Tokens = factory.tokens(backend, self.settings.max_scope_chars)
        self.ui_sessions: UiSessions = factory.ui_sessions(backend)
        self.scrubber = Scrubber(
            lambda: [json.loads(v) for v in self.vault_rows.secret_values()],
            self.vault_rows.changed_elsewhere,
        )

    # ------------------------------------------------------------------ the seam

    @property
    def backend(self) -> Any:
        """Gone (issue #13): the backend is private. Ask the store for the protocol
        you need instead; the message names them."""
        raise AttributeError(
            "Store.backend is private since issue #13: use the store's protocols "
            "(store.memories, store.atomic(), store.keyword, store.vectors, store.entities, "
            "store.session_rows, store.job_state, store.run_log, store.purges, "
            "store.inspection, store.vault_rows, store.tokens, store.ui_sessions, "
            "store.backup_rows, "
            "store.health); docs/architecture.md"
        )

    @property
    def created(self) -> bool:
        """This open made the store: the file did not exist, or held no tables (the
        CLI says so on stderr, so a mistyped ``--db`` shows at once)."""
        return bool(getattr(self._backend, "created", False))

    @property
    def memories(self) -> Memories:
        """The rows of ``memories`` (reads and writes; writes inside ``atomic()``)."""
        return self._backend

    def atomic(self) -> AbstractContextManager[None]:
        """A write transaction (nested: a savepoint)."""
        return self._backend.atomic()

    def snapshot(self) -> AbstractContextManager[None]:
        """A read-only transaction: one consistent view while writers go on."""
        return self._backend.snapshot()

    def tracing(self, callback: Callable[[str], None]) -> AbstractContextManager[None] | None:
        """``callback(sql)`` for every SQL statement the store runs inside the returned
        context (a measuring seam: ``hivemem bench``'s statements per search); None where
        the backend cannot say (only SQLite can)."""
        tracing = getattr(self._backend, "tracing", None)
        return None if tracing is None else tracing(callback)

    @property
    def keyword(self) -> KeywordIndex:
        return self._backend

    @property
    def vectors(self) -> VectorIndex:
        return self._backend.vectors

    @property
    def entities(self) -> EntityIndex:
        return self._backend.entities

    @property
    def session_rows(self) -> Sessions:
        """Sessions seen and the episodes around one (``SessionWorker`` is the service)."""
        return self._backend

    @property
    def job_state(self) -> JobState:
        """What the maintenance jobs read and mark."""
        return self._backend.maintenance

    @property
    def run_log(self) -> RunLog:
        """The maintenance jobs' run log."""
        return self._backend.maintenance

    @property
    def purges(self) -> Purges:
        return self._backend.purges

    @property
    def resolutions(self) -> Resolutions:
        """The ``resolve`` job's verdicts and entity merges."""
        return self._backend.resolutions

    @property
    def inspection(self) -> Inspection:
        return self._backend.inspection

    @property
    def health(self) -> Health:
        """Meta, schema version, health checks and rebuilds of derived tables."""
        return self._backend

    @property
    def backup_rows(self) -> BackupRows:
        """The rows an export carries beside the memories (``hivemem.lifecycle.backup``)."""
        return factory.backup_rows(self._backend)

    @property
    def table_rows(self) -> TableRows:
        """Whole rows of the side tables (sessions, vault, entities …): ``hivemem copy``."""
        return factory.table_rows(self._backend)

    def analyze(self) -> None:
        """Refresh the query planner's statistics (after a bulk load)."""
        factory.analyze(self._backend)

    def flush_access(self) -> int:
        """Write the access counts searches queued (they are written in batches off the
        read path); maintenance jobs call it first, so decay sees every access."""
        return self._backend.flush_access()

    def known_migrations(self) -> list[str]:
        """The migrations this HiveMem knows for this store's backend (``doctor``)."""
        return factory.known_migrations(self.location)

    # ------------------------------------------------------------------ vault, redaction

    def vault(self, scope: str) -> Vault:
        """The key/value vault of ``scope`` (machine state and secrets; ``hivemem.write.vault``)."""
        return Vault(self, scope)

    def scrub(self, text: str) -> str:
        """``text`` with every secret value of the vault (any scope) redacted."""
        return self.scrubber.scrub(text)

    def scrubbed(self, value: Any) -> Any:
        """``value`` (a ``Memory``, ``Hit``, ``Entity``, any result dataclass, a list,
        mapping or text) with the vault's secrets redacted from every text it holds, at
        any depth: content, key, tags, attributes, source ids, snippet, reasons. The
        facade passes every result through it before it leaves, so every front end gets
        clean values. The same object when there is nothing to redact."""
        return self.scrubber.scrubbed(value)

    def guard(self, value: object, field: str = "content") -> Any:
        """A field about to be written (content, key, tags, attributes, …), with the
        ``credential_policy`` applied to every text in it: credentials and vault secrets
        redacted (default), refused (``InvalidInput`` naming ``field``), or allowed."""
        return guard_value(value, self.settings.credential_policy, self.scrubber, field)

    def guard_fields(self, fields: dict[str, Any], *, refresh: bool = True) -> dict[str, Any]:
        """The fields of a write with ``guard`` applied to each one that holds caller text
        (``WRITTEN_TEXT_FIELDS``: content, key, tags, attributes, source ids, …).
        ``refresh=False``: the vault's values as the write's first record read them (a
        batch asks the store once, not once a row)."""
        if not isinstance(fields, dict):
            raise InvalidInput("fields", f"expected a mapping of field names, got {fields!r:.60}")
        policy = self.settings.credential_policy
        if policy != "allow" and refresh:
            self.scrubber.holds_secrets()  # the vault's values, read once for every field
        return {
            name: guard_value(value, policy, self.scrubber, name, refresh=False)
            if name in WRITTEN_TEXT_FIELDS and value is not None
            else value
            for name, value in fields.items()
        }

    def flush(self, progress: Any = None) -> int:
        """Block until every queued chunk has its vector; returns how many were embedded
        (``progress(done, total)`` is called per batch). Raises if the embedder fails
        (the chunks stay queued)."""
        return self.indexer.flush(arguments.callback(progress, "progress"))

    def index_written(self, wait: bool) -> None:
        """After a committed write: embed its chunks now (``wait``) or in the background.

        The write is durable before this runs, so a store failure here (a full disk,
        a lock held too long) does not turn it into an error: the chunks stay queued,
        are keyword-searchable already, and are embedded by the next flush or start.
        An embedder failure still raises (the caller asked for the vectors)."""
        if not wait:
            self.indexer.notify()
            return
        try:
            self.flush()
        except StoreError as exc:
            log.warning("saved; its vectors stay queued until the store can take them: %s", exc)

    def reindex(self, progress: Any = None, *, force: bool = False) -> int:
        """Re-embed every chunk with this store's embedder after a model change (or with
        ``force``); on a store already of this model, embed only the chunks still
        queued. ``progress(done, total)`` is called per batch. Returns the chunks
        embedded: 0 when there was nothing to do."""
        return self.indexer.reindex(arguments.callback(progress, "progress"), force=force)

    @property
    def location(self) -> str:
        return self._backend.location

    def server_reads(self) -> int | None:
        """How many tool reads one server process (HTTP, MCP) should run at once: the
        ``server_reads`` setting, else 1 on SQLite and None (no bound) on PostgreSQL.

        Why 1 on SQLite: the driver lets go of the GIL at every row it steps (and the
        stdlib's does too), so two searches side by side in one process hand the GIL
        back and forth hundreds of times a search, each hand-over costing CPU, and the
        writer thread, which needs it back after every statement, waits behind them
        all (``hivemem bench --load``, one process: writes p50 ~0.6 s; with one read at
        a time ~20 ms, and more requests served). Processes (``--workers``) give the
        cores. PostgreSQL's reads wait on the server, where side by side pays."""
        if self.settings.server_reads:
            return self.settings.server_reads
        return None if is_url(self.location) else 1

    def server_writes(self) -> int:
        """How many tool writes one server process (HTTP, MCP) runs at once: 1 on SQLite
        (the file has one writer: a second would wait for its lock), ``SERVER_WRITES`` on
        PostgreSQL. Why more there: a PostgreSQL write is ~6 round trips, and between them
        it waits its turn for the GIL among the searching threads (p50 6 ms alone, 38 ms
        beside 8 searching threads), so one writer thread was busy most of the time under
        load and the writes queued behind each other (one process, 16 clients: p50 ~0.8
        s). The server orders concurrent writers itself (several processes and nodes
        write side by side already)."""
        return SERVER_WRITES if is_url(self.location) else 1

    def scope(
        self,
        name: str,
        *,
        shared: Sequence[str] = (),
        lead_of: Sequence[str] | str | None = None,
        actor: str | None = None,
    ) -> ScopedMemory:
        """A handle that reads and writes scope ``name`` and may read ``shared`` scopes.
        ``lead_of`` (scope names or glob patterns) grants the rights of a lead over
        other scopes (``hivemem.write.rights``); ``actor`` is who writes through it, recorded
        as ``updated_by`` (default: the scope's name)."""
        return ScopedMemory(self, name, shared=shared, lead_of=lead_of, actor=actor)

    def scopes(self) -> list[str]:
        return self._backend.scopes()

    def stats(self) -> dict[str, Any]:
        """Counts over every scope."""
        return self._backend.stats(None, self.clock())

    def iter_memories(self, scopes: Sequence[str] | None = None) -> Iterator[Memory]:
        """Every row of the given scopes (all scopes when ``None``), any status."""
        if scopes is not None:
            limit = self.settings.max_scope_chars
            scopes = [str(rules.name(s, "scopes", limit)) for s in as_tuple(scopes)]
            if not scopes:
                return iter(())
        return self._backend.iter_all(scopes)

    def close(self) -> None:
        self.session_worker.close()
        self.scrubber.close()
        self.indexer.close()
        self.vault_rows.close()
        self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<hivemem.Store {self.location}>"
