"""The database handle: ``hivemem.open()`` and ``Store`` (one database, its embedder and
its embedding worker). ``store.scope(name)`` gives the ``ScopedMemory`` handle through
which every read and write goes (``hivemem.core``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import platformdirs

from .clock import Clock, system_clock
from .core import ScopedMemory
from .embed import Embedder, get_embedder
from .errors import InvalidInput
from .indexer import Indexer
from .llm import LLM, get_llm
from .redact import Scrubber, guard
from .rerank import Reranker, resolve_reranker
from .settings import Settings
from .store.base import Backend
from .store.factory import open_backend, vault_rows
from .store.postgres import is_url
from .types import Hit, Memory
from .vault import Vault


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
) -> Store:
    """Open (creating if needed) the store at ``path`` — a file, ``":memory:"``, or a
    ``postgresql://`` URL (the ``postgres`` extra; docs/postgres.md).

    With no path: ``$HIVEMEM_DB``, else ``memory.db`` in the user data folder. Pending
    schema migrations are applied on open. ``embedder`` is an ``Embedder`` or the name of
    a registered one (default: the ``embedder`` setting, the bundled offline model;
    ``"none"`` for keyword search only). The model loads on first use, not here.
    ``reranker`` likewise (default: the ``reranker`` setting, none). ``llm`` is an
    ``LLM`` or a provider name (default: the ``llm`` setting, none), used by maintenance
    jobs only; ``llm_api_key`` is its key (the CLI reads ``HIVEMEM_LLM_API_KEY``).
    """
    settings = settings or Settings()
    if path is None:
        path = default_path()
        if not is_url(path):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    model = resolve_embedder(settings.embedder if embedder is None else embedder)
    ranker = resolve_reranker(settings.reranker if reranker is None else reranker)
    chat = resolve_llm(settings.llm if llm is None else llm, settings, llm_api_key)
    backend = open_backend(path, settings)
    try:
        return Store(
            backend, settings=settings, clock=clock, embedder=model, reranker=ranker, llm=chat
        )
    except BaseException:
        backend.close()
        raise


def resolve_embedder(embedder: Embedder | str | None) -> Embedder | None:
    """An embedder from a name (``"none"`` and None mean no embedder) or an instance."""
    if embedder is None or embedder == "none":
        return None
    if isinstance(embedder, str):
        return get_embedder(embedder)
    if not isinstance(embedder, Embedder):
        raise InvalidInput("embedder", "expected an Embedder or the name of a registered one")
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
    if not isinstance(llm, LLM):
        raise InvalidInput("llm", "expected an LLM or the name of a registered provider")
    return llm


class Store:
    """One database. Get a handle with ``store.scope(name)``; close when done (or use
    ``with``)."""

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
        self.backend = backend
        self.reranker = reranker
        self.llm = llm  # maintenance jobs only; never called on the write path
        self.settings = settings or Settings()
        self.clock = clock
        self.indexer = Indexer(
            backend.vectors,
            embedder,
            batch_size=self.settings.embed_batch_size,
            background=self.settings.embed_in_background,
        )
        if self.indexer.enabled and backend.vectors.has_pending():
            self.indexer.notify()  # work left by an earlier run (a crash, a short CLI call)
        self.vault_rows = vault_rows(backend)
        self.scrubber = Scrubber(
            lambda: [json.loads(v) for v in self.vault_rows.secret_values()],
            self.vault_rows.changed_elsewhere,
        )

    # ------------------------------------------------------------------ vault, redaction

    def vault(self, scope: str) -> Vault:
        """The key/value vault of ``scope`` (machine state and secrets; ``hivemem.vault``)."""
        return Vault(self, scope)

    def scrub(self, text: str) -> str:
        """``text`` with every secret value of the vault (any scope) redacted."""
        return self.scrubber.scrub(text)

    def scrubbed(self, value: Any) -> Any:
        """A ``Memory``, ``Hit``, list of them or text with the vault's secrets redacted
        from its content and snippet (the same object when there is nothing to redact)."""
        if isinstance(value, str):
            return self.scrubber.scrub(value)
        if isinstance(value, list):
            return [self.scrubbed(v) for v in value]
        if isinstance(value, Memory):
            clean = self.scrubber.scrub(value.content)
            return value if clean == value.content else replace(value, content=clean)
        if isinstance(value, Hit):
            memory, snippet = self.scrubbed(value.memory), self.scrubber.scrub(value.snippet)
            if memory is value.memory and snippet == value.snippet:
                return value
            return replace(value, memory=memory, snippet=snippet)
        return value

    def guard(self, content: object) -> object:
        """Memory content about to be written, with the ``credential_policy`` applied:
        credentials and vault secrets redacted (default), refused, or allowed."""
        return guard(content, self.settings.credential_policy, self.scrubber)

    def flush(self) -> int:
        """Block until every queued chunk has its vector; returns how many were embedded.
        Raises if the embedder fails (the chunks stay queued)."""
        return self.indexer.flush()

    def reindex(self, progress: Any = None) -> int:
        """Re-embed every chunk with this store's embedder (after a model change);
        ``progress(done, total)`` is called per batch. Returns the chunks embedded."""
        return self.indexer.reindex(progress)

    @property
    def location(self) -> str:
        return self.backend.location

    def scope(self, name: str, *, shared: Sequence[str] = ()) -> ScopedMemory:
        """A handle that reads and writes scope ``name`` and may read ``shared`` scopes."""
        return ScopedMemory(self, name, shared=shared)

    def scopes(self) -> list[str]:
        return self.backend.scopes()

    def stats(self) -> dict[str, Any]:
        """Counts over every scope."""
        return self.backend.stats(None, self.clock())

    def iter_memories(self, scopes: Sequence[str] | None = None) -> Iterator[Memory]:
        """Every row of the given scopes (all scopes when ``None``), any status."""
        return self.backend.iter_all(scopes)

    def close(self) -> None:
        self.scrubber.close()
        self.indexer.close()
        self.backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<hivemem.Store {self.location}>"
