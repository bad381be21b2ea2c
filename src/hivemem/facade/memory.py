"""The public facade: ``ScopedMemory``, a handle bound to one scope, with read access to
shared scopes (``hivemem.facade.database`` opens the ``Store`` that hands them out).

Write rules (DESIGN §1) live here, once, for every front end:

- A key names at most one ACTIVE memory per scope. Saving under a key that has one is
  rejected (``Conflict``, showing the current entry) unless the call gives a
  ``supersede_reason`` (hard supersede: a new belief) or ``minor=True`` (soft supersede:
  a correction of wording that keeps the old row's usage and confidence). Re-saving the
  identical content is a no-op, and an expired holder of the key is superseded silently.
- The old row becomes ``superseded`` (``valid_until`` = now), the new one points at it
  with ``supersedes_id``; ``history`` walks that chain.
- Delete is soft. Superseded rows stay searchable, flagged and ranked lower; deleted
  rows never appear in search. Types are never changed automatically.
- Each write is one transaction: validation first, then the row, its chunks and the FTS
  index, or nothing.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import arguments
from ..errors import Conflict, InvalidInput, NotFound
from ..lifecycle import sessions
from ..lifecycle.maintenance import crossrefs, cycle
from ..providers.entities import Mention
from ..retrieval import deep as retrieval
from ..retrieval import entity_profiles, fresh
from ..types import (
    Entity,
    Hit,
    Kind,
    ListFilter,
    Memory,
    MemoryType,
    Query,
    Related,
    Source,
    Status,
    as_tuple,
)
from ..write import (
    audit,
    categories,
    chains,
    episodes,
    expiry,
    learning,
    promotion,
    retry,
    rights,
    rules,
)
from ..write import purge as purgemod
from ..write.redact import scrubs_output

if TYPE_CHECKING:  # pragma: no cover
    from ..lifecycle.maintenance import JobResult
    from ..write.purge import PurgeReport
    from .database import Store

_DEFAULT = rules.DEFAULT


class ScopedMemory:
    """Memory as one agent, user or team sees it.

    Reads see the own scope and the ``shared`` scopes (own first); writes go to the own
    scope only, except ``promote``, which copies a memory up into a shared scope.
    """

    def __init__(
        self,
        store: Store,
        name: str,
        *,
        shared: Sequence[str] = (),
        lead_of: Sequence[str] | str | None = None,
        actor: str | None = None,
    ) -> None:
        settings = store.settings
        scope = rules.name(name, "scope", settings.max_scope_chars)
        assert scope is not None
        rules.scope_slug(scope, settings, store._backend.scopes)
        shared_clean: list[str] = []
        for other in as_tuple(shared):
            clean = rules.name(other, "shared", settings.max_scope_chars)
            if clean is not None and clean != scope and clean not in shared_clean:
                shared_clean.append(clean)
        self._store = store
        # The whole backend, for the retrieval pipeline (the facade's own; services
        # below get the narrow protocols from the store by name).
        self._backend = store._backend
        self.settings = settings
        self.name = scope
        self.shared = tuple(shared_clean)
        self.visible = (scope, *self.shared)
        # Rights to change other scopes (``hivemem.write.rights``), and who writes: the
        # session or agent bound to this handle, recorded as ``updated_by``.
        self.lead_of = rights.clean_patterns(lead_of, settings.max_scope_chars)
        self.actor = rules.name(actor, "actor", 200, optional=True) or scope

    def __repr__(self) -> str:
        shared = f", shared={list(self.shared)}" if self.shared else ""
        return f"<hivemem.ScopedMemory {self.name!r}{shared}>"

    @property
    def store(self) -> Store:
        """The store this handle reads and writes (its vault, scrubber, LLM, indexer)."""
        return self._store

    def _now(self) -> datetime:
        return self._store.clock()

    # ------------------------------------------------------------------ writes

    @scrubs_output
    @retry.retried  # one unit of work: run again on TryAgain
    def save(
        self,
        content: str,
        *,
        key: str | None = None,
        type: str | MemoryType | None = None,  # noqa: A002 - the domain's word
        kind: str | Kind = Kind.FACT,
        source: str = Source.MANUAL,
        supersede_reason: str | None = None,
        minor: bool = False,
        tags: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
        confidence: float | None = None,
        decay_rate: float | None = None,
        event_time: datetime | str | None = None,
        expires_at: Any = _DEFAULT,
        session_id: str | None = None,
        role: str | None = None,
        source_ids: Sequence[str] | None = None,
        category: str | None = None,
        updated_by: str | None = None,
        wait: bool = False,
    ) -> Memory:
        """Save a memory under the write rules (see the module docstring).

        Returns the stored memory: the new row, or the existing one when the save was a
        no-op (identical content under the same key, or an exact duplicate of a keyless
        memory of the same kind). ``expires_at`` overrides the TTL policy of ``source``
        (``None`` = never). The memory is keyword-searchable when this returns; its vector
        follows from the background worker, or before returning with ``wait=True``.
        """
        record = self._build(
            content=content,
            key=key,
            type=type,
            kind=kind,
            source=source,
            tags=tags,
            attributes=attributes,
            confidence=confidence,
            decay_rate=decay_rate,
            event_time=event_time,
            expires_at=expires_at,
            session_id=session_id,
            role=role,
            source_ids=source_ids,
            category=category,
            updated_by=updated_by,
        )
        reason = rules.name(supersede_reason, "supersede_reason", 1000, optional=True)
        arguments.flag(minor, "minor")
        arguments.flag(wait, "wait")
        pieces = self._derive(record.content)
        explicit = type is not None
        if explicit:  # openhive: a soft, non-blocking suggestion, logged
            audit.type_suggestion(record.content, record.type)
        record, sure = categories.categorized(record, given=category is not None)
        with self._backend.atomic():
            stored, inserted = self._save_row(record, pieces, reason, minor, explicit, expires_at)
            if inserted:
                self._store.job_state.note_categories([(stored.id, sure)])
        if inserted:
            self._store.index_written(wait)
            crossrefs.on_save(self._store, stored)  # corvid: getRelated is current on save
        return stored

    def _save_row(
        self,
        record: Memory,
        pieces: tuple[list[str], list[Mention]],
        reason: str | None,
        minor: bool,
        explicit_type: bool,
        expires_at: Any,
    ) -> tuple[Memory, bool]:
        """The transaction of ``save``: the stored memory, and whether a row was written."""
        with self._backend.atomic():
            # Times are taken once the key's lock is held (``by_key`` and
            # ``find_duplicate`` take it on PostgreSQL; SQLite's write lock is held from
            # the start), and a new version never starts before its parent
            # (``chains.successor_time``, for clocks of several nodes): a writer that
            # waited for another supersedes it later than it, not earlier.
            if record.key is None:
                if record.kind is not Kind.EPISODE:
                    duplicate = self._backend.find_duplicate(
                        self.name, record.kind.value, record.content_hash
                    )
                    if duplicate is not None:
                        return duplicate, False
                record = self._stamped(record, None, expires_at)
                self._backend.insert(record, *pieces)
                return record, True
            current = self._backend.by_key([self.name], record.key)
            record = self._stamped(record, current, expires_at)
            if current is None:
                self._backend.insert(record, *pieces)
                return record, True
            record = self._supersede_or_refuse(
                current, record, reason, minor, explicit_type=explicit_type
            )
            if record is current:
                return current, False
            self._backend.insert(record, pieces[0] + audit.reason_chunks(record), pieces[1])
            return record, True

    def _stamped(self, record: Memory, parent: Memory | None, expires_at: Any) -> Memory:
        """``record`` with its times: now, after ``parent`` (the version it may replace)."""
        now = chains.successor_time(self._now(), parent)
        return replace(
            record,
            created_at=now,
            updated_at=now,
            valid_from=now,
            expires_at=(
                rules.expiry(record.source, now, self.settings)
                if expires_at is _DEFAULT
                else record.expires_at
            ),
        )

    def _supersede_or_refuse(
        self,
        current: Memory,
        record: Memory,
        reason: str | None,
        minor: bool,
        *,
        explicit_type: bool,
    ) -> Memory:
        """Inside a transaction: mark ``current`` superseded and return ``record`` linked
        to it, or return ``current`` for a no-op, or raise ``Conflict``."""
        now = record.created_at
        reason = self._store.guard_fields({"supersede_reason": reason})["supersede_reason"]
        if current.is_expired(now):
            reason, kind = reason or "expired", "hard"
        elif reason is not None:
            kind = "hard"
        elif minor:
            reason, kind = "minor correction", "soft"
        elif current.content_hash == record.content_hash and (
            not explicit_type or current.type is record.type
        ):
            return current
        else:
            raise Conflict(
                f"key {current.key!r} already holds an active memory in scope {self.name!r} "
                f"({current.id}, type {current.type.value}): {current.content!r}. "
                "Give a supersede reason to replace it, or mark a small correction minor.",
                current=current,  # scrubbed on the way out (scrubs_output)
            )
        inherited: dict[str, Any] = {"supersedes_id": current.id, "supersede_reason": reason}
        inherited["supersede_kind"] = kind
        if not explicit_type:
            inherited["type"] = current.type  # types never change unless asked
        if not record.tags:
            inherited["tags"] = current.tags
        if kind == "soft":
            inherited.update(
                confidence=current.confidence,
                decay_rate=current.decay_rate,
                access_count=current.access_count,
                last_accessed=current.last_accessed,
                event_time=record.event_time or current.event_time,
                attributes={**current.attributes, **record.attributes},
            )
        self._backend.set_status(
            self.name, current.id, Status.SUPERSEDED, now, now, record.updated_by
        )
        return replace(record, **inherited)

    def add_episode(
        self,
        content: str,
        session_id: str,
        role: str,
        event_time: datetime | str | None = None,
        *,
        attributes: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        type: str | MemoryType | None = None,  # noqa: A002
        source: str = Source.CONVERSATION,
        wait: bool = False,
    ) -> Memory:
        """Store one dialogue turn: the hot path. Validate, then one transaction (row,
        chunks, FTS, session). No network, no model: the turn is embedded in the
        background (or before returning, with ``wait=True``)."""
        return self.add_episodes(
            [
                {
                    "content": content,
                    "session_id": session_id,
                    "role": role,
                    "event_time": event_time,
                    "attributes": attributes,
                    "tags": tags,
                    "type": type,
                    "source": source,
                }
            ],
            wait=wait,
        )[0]

    @scrubs_output
    @retry.retried
    def add_episodes(
        self, items: Iterable[Mapping[str, Any]], *, wait: bool = False
    ) -> list[Memory]:
        """Store many turns in one transaction: all of them, or (on any invalid item) none.

        Each item is a mapping with the arguments of ``add_episode`` (``content``,
        ``session_id``, ``role``, ``event_time``, ``attributes``, ``tags``, ``type``,
        ``source``, ``expires_at``: the TTL policy's unless given). ``wait=True`` returns
        only once their vectors are stored.
        """
        items = arguments.batch(items)
        arguments.flag(wait, "wait")
        records = episodes.rows(
            items,
            scope=self.name,
            settings=self.settings,
            now=self._now,
            guard=lambda fields, refresh: self._store.guard_fields(fields, refresh=refresh),
            actor=self.actor,
            default_expiry=_DEFAULT,
        )
        if not records:
            return []
        sessions: dict[str, tuple[datetime, datetime, int]] = {}
        for record, *_ in records:
            assert record.session_id is not None
            when = record.event_time or record.created_at
            first, last, count = sessions.get(record.session_id, (when, when, 0))
            sessions[record.session_id] = (min(first, when), max(last, when), count + 1)
        with self._backend.atomic():
            self._backend.insert_many([(r, chunks, found) for r, _, chunks, found in records])
            self._store.job_state.note_categories([(r.id, sure) for r, sure, *_ in records])
            started = [
                session_id
                for session_id, (when, last, count) in sessions.items()
                if self._backend.note_session(self.name, session_id, when, last, count)
            ]
        self._store.index_written(wait)
        self._store.session_worker.session_started(self.name, started)  # queued, not run here
        return [record for record, *_ in records]

    def _derive(self, content: str) -> tuple[list[str], list[Mention]]:
        return episodes.derive(content, self.settings)  # chunks and entity mentions

    def _build(self, *, refresh: bool = True, **fields: Any) -> Memory:
        """Validate every field and build the row to insert (nothing is written). Secrets in
        any text field follow ``credential_policy`` (``hivemem.write.redact``); ``refresh=False``:
        the vault's values as this write last read them (a batch's later rows)."""
        fields = self._store.guard_fields(fields, refresh=refresh)
        fields["updated_by"] = fields.get("updated_by") or self.actor
        return rules.build_memory(self.name, self.settings, self._now(), **fields)

    @scrubs_output
    @retry.retried
    def correct(
        self,
        memory_id: str,
        new_content: str,
        *,
        reason: str | None = None,
        minor: bool = False,
        updated_by: str | None = None,
    ) -> Memory:
        """Replace a memory's content with a new version linked to it.

        ``minor=True`` is a soft supersede (wording fix: usage and confidence carry over);
        otherwise a hard one with ``reason`` (default "corrected"). Only the current
        (active) version of a memory of the own scope (or of a scope this handle leads,
        ``hivemem.write.rights``) can be corrected.
        """
        memory_id = arguments.ref(memory_id, "id", what="a memory id")
        reason = rules.name(reason, "reason", 1000, optional=True)
        arguments.flag(minor, "minor")
        led = rights.owner(self, memory_id, "correct")
        if led is not None:
            by = updated_by or self.actor
            return led[0].correct(led[1], new_content, reason=reason, minor=minor, updated_by=by)
        with self._backend.atomic():
            current = self._own_active(memory_id)
            record = self._build(
                content=new_content,
                key=current.key,
                type=current.type,
                kind=current.kind,
                source=current.source,
                tags=current.tags,
                attributes=current.attributes,
                event_time=current.event_time,
                expires_at=current.expires_at,
                session_id=current.session_id,
                role=current.role,
                source_ids=current.source_ids,
                category=current.category,
                updated_by=updated_by,
            )
            if record.content_hash == current.content_hash:
                return current
            why = None if minor else (reason or "corrected")
            record = self._supersede_or_refuse(current, record, why, minor, explicit_type=True)
            chunks, mentions = self._derive(record.content)
            self._backend.insert(record, chunks + audit.reason_chunks(record), mentions)
        self._store.index_written(False)
        return record

    @scrubs_output
    @retry.retried
    def confirm(self, memory_id: str, *, updated_by: str | None = None) -> Memory:
        """Mark a memory as confirmed: confidence 1.0 and protected from decay."""
        memory_id = arguments.ref(memory_id, "id", what="a memory id")
        led = rights.owner(self, memory_id, "confirm")
        if led is not None:
            return led[0].confirm(led[1], updated_by=updated_by or self.actor)
        by = rules.name(updated_by, "updated_by", 200, optional=True) or self.actor
        with self._backend.atomic():
            current = self._own_active(memory_id)
            now = self._now()
            self._backend.update(
                self.name, current.id, now, confidence=1.0, decay_rate=0.0, updated_by=by
            )
            return replace(
                current,
                confidence=1.0,
                decay_rate=0.0,
                updated_at=now,
                updated_by=by or current.updated_by,
            )

    @scrubs_output
    @retry.retried
    def delete(self, id_or_key: str, *, updated_by: str | None = None) -> Memory:
        """Soft-delete a memory (by id, or the active one under a key) of the own scope.
        It disappears from search and lists; ``get`` and ``history`` still show it. A
        lead may delete in the scopes it leads (``hivemem.write.rights``)."""
        by = rules.name(updated_by, "updated_by", 200, optional=True) or self.actor
        id_or_key = arguments.ref(id_or_key, "id")
        led = rights.owner(self, id_or_key, "delete")
        if led is not None:
            return led[0].delete(led[1], updated_by=by)
        with self._backend.atomic():
            current = self._backend.get([self.name], id_or_key) or self._backend.by_key(
                [self.name], id_or_key
            )
            if current is None:
                raise NotFound(f"no memory {id_or_key!r} in scope {self.name!r}")
            if current.status is Status.DELETED:
                return current
            now = self._now()
            until = current.valid_until or now
            self._backend.set_status(self.name, current.id, Status.DELETED, until, now, by)
            return replace(
                current,
                status=Status.DELETED,
                valid_until=until,
                updated_at=now,
                updated_by=by or current.updated_by,
            )

    def delete_all(self, *, updated_by: str | None = None) -> int:
        """Soft-delete every active memory of the own scope; returns how many. (To erase
        them for good: ``purge_all``.)"""
        return purgemod.delete_all(self, updated_by or self.actor)

    def renew(self, ids: Sequence[str], *, expires_at: datetime | str | None) -> int:
        """Move the expiry of active memories of the own scope (``None`` = never) without
        a new version; returns how many were renewed (``hivemem.write.expiry``)."""
        return expiry.renew(self, ids, expires_at)

    def purge(self, id_or_key: str, **options: Any) -> PurgeReport:
        """Erase for good the chain holding ``id_or_key`` (own scope, or a led one) and
        what was drawn from it: rows, chunks, index entries, vectors, entity links; an
        audit row without content stays. Options: ``dry_run``, ``vacuum`` (default True),
        ``derived`` (default True). See ``hivemem.write.purge``."""
        return purgemod.purge(self, id_or_key, **options)

    def purge_all(self, **options: Any) -> PurgeReport:
        """Erase for good everything this scope holds (memories and all derived rows,
        sessions, vault, run log, tokens bound to it alone). See ``hivemem.write.purge``."""
        return purgemod.purge_all(self, **options)

    @scrubs_output
    def promote(
        self,
        memory_id: str,
        to: str,
        *,
        supersede_reason: str | None = None,
        updated_by: str | None = None,
    ) -> Memory:
        """Copy a current, live memory into the shared scope ``to`` (one of this handle's
        shared scopes), with provenance: ``source="promotion"``, ``source_ids=[original]``
        and ``attributes.promoted_from``. The shared scope's key rules apply. A superseded
        version is refused with ``Conflict`` naming the current one; a deleted or expired
        memory is refused (``hivemem.write.promotion``)."""
        return promotion.promote(self, memory_id, to, supersede_reason, updated_by)

    @scrubs_output
    def inject_learning(self, content: str, category: str, **options: Any) -> Memory:
        """A lead's learning for its workers: into the learning scope (default) or one
        worker's scope, both of which this handle must lead (``hivemem.write.learning``)."""
        return learning.inject(self, content, category, **options)

    def _own_active(self, memory_id: str) -> Memory:
        current = self._backend.get([self.name], memory_id)
        if current is None:
            raise NotFound(f"no memory {memory_id!r} in scope {self.name!r}")
        if current.status is not Status.ACTIVE:
            raise Conflict(
                f"memory {memory_id} is {current.status.value}; only the current version "
                "can be changed (see history)",
                current=current,
            )
        return current

    # ------------------------------------------------------------------ reads

    @scrubs_output
    def get(self, id_or_key: str, *, as_of: datetime | str | None = None) -> Memory:
        """A memory by id (any status, expired included) or by key (the active one, or
        the one valid at ``as_of``). Raises ``NotFound``."""
        if not isinstance(id_or_key, str) or not id_or_key:
            raise InvalidInput("id", "expected a memory id or key")
        rules.utf8(id_or_key, "id")
        when = rules.optional_time(as_of, "as_of")
        found = None if when is not None else self._backend.get(self.visible, id_or_key)
        if found is None:
            found = self._backend.by_key(self.visible, id_or_key, as_of=when)
        if found is None:
            raise NotFound(f"no memory {id_or_key!r} visible from scope {self.name!r}")
        if self.settings.track_access:
            self._touch([found.id])
        return found

    @scrubs_output
    def list(
        self,
        *,
        kind: str | Kind | Sequence[str | Kind] | None = None,
        type: str | MemoryType | Sequence[str | MemoryType] | None = None,  # noqa: A002
        tags: Sequence[str] | str | None = None,
        session_id: str | Sequence[str] | None = None,
        exclude_sessions: Sequence[str] | str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        status: str | Status | Sequence[str | Status] | None = None,
        as_of: datetime | str | None = None,
        include_expired: bool = True,
        key: str | None = None,
        limit: int = 100,
        offset: int = 0,
        category: str | Sequence[str] | None = None,
    ) -> list[Memory]:
        """Memories of the visible scopes, newest first, filtered (``category``: the
        automatic category, any of those given)."""
        common = rules.filters(
            self.settings, kind, type, tags, session_id, exclude_sessions, since, until, as_of
        )
        common["categories"] = categories.valid(category)
        flt = ListFilter(
            **common,
            statuses=rules.statuses(status) or (Status.ACTIVE,),
            include_expired=bool(include_expired),
            key=rules.name(key, "key", self.settings.max_key_chars, optional=True),
        )
        offset = arguments.offset(offset)
        found = self._backend.list(self.visible, flt, rules.limit(limit), offset, self._now())
        return found

    @scrubs_output
    def history(self, id_or_key: str) -> builtins.list[Memory]:
        """The whole supersede chain that holds ``id_or_key``, oldest first: every version
        under that key, or every ancestor and descendant of that id (``hivemem.write.chains``)."""
        return chains.history(self, id_or_key)

    @scrubs_output
    def search(
        self,
        query: str | Query,
        limit: int = 10,
        *,
        kind: str | Kind | Sequence[str | Kind] | None = None,
        type: str | MemoryType | Sequence[str | MemoryType] | None = None,  # noqa: A002
        tags: Sequence[str] | str | None = None,
        session_id: str | Sequence[str] | None = None,
        exclude_sessions: Sequence[str] | str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        status: str | Status | Sequence[str | Status] | None = None,
        as_of: datetime | str | None = None,
        min_score: float = 0.0,
        include_expired: bool = False,
        fts_syntax: bool = False,
        category: str | Sequence[str] | None = None,
        mode: str = "fast",
    ) -> builtins.list[Hit]:
        """Find memories: hits best first, each with a score in [0, 1] and an explanation.

        ``query`` is natural language (any text is safe); ``fts_syntax=True`` opts in to
        FTS5 query syntax, at most ``max_query_terms`` words, stopped past
        ``fts_time_limit_ms``. Deleted memories never appear; superseded ones do, flagged by
        status and ranked lower; expired ones only with ``include_expired``. A
        ``category`` filter that leaves nothing is dropped (corvid's rule): the hits are
        then unfiltered and each says so in its explanation's notes. ``mode="deep"``: a
        slower search for recall (``hivemem.retrieval.deep``).
        """
        deep = retrieval.check_mode(mode) == "deep"
        if isinstance(query, Query):
            q = query
            if q.seat_page:  # 0: the limit; else a page no longer than a search's
                arguments.limit(q.seat_page, "seat_page", maximum=1000)
        else:
            if not isinstance(query, str):
                raise InvalidInput("query", f"expected text, got {query.__class__.__name__}")
            statuses = rules.statuses(status)
            if Status.DELETED in statuses:
                raise InvalidInput("status", "deleted memories are never searchable")
            size = rules.limit(limit, maximum=1000)  # named first when several are bad
            common = rules.filters(
                self.settings, kind, type, tags, session_id, exclude_sessions, since, until, as_of
            )
            q = Query(
                text=query,
                limit=size,
                **common,
                statuses=statuses or (Status.ACTIVE, Status.SUPERSEDED),
                min_score=rules.unit_interval(min_score, "min_score"),
                include_expired=bool(include_expired),
                fts_syntax=bool(fts_syntax),
                categories=categories.valid(category),
            )
        arguments.query(q.text, q.fts_syntax, self.settings)  # bounded cost
        store = self._store

        # One consistent view per search where the backend gives one cheaply (SQLite's read
        # pool), the scopes' newest queued chunks embedded just before it; elsewhere none.
        view = getattr(self._backend, "search_view", None)

        def run(query: Query) -> list[Hit]:
            embed = functools.partial(fresh.embed_fresh, store.indexer, self.visible, query)
            queued = functools.partial(fresh.queued, store.indexer, self.visible, query)
            viewed: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
            if view is None:
                embed(self.settings)
            else:  # the queue asked inside the view, ``embed`` run only with work to do
                viewed = view(lambda: embed(self.settings), lambda: queued(self.settings))
            with viewed:
                return retrieval.search_in_mode(
                    deep, self._backend, store.indexer, self.visible, query, self.settings,
                    self._now(), store.reranker, store.llm,
                )  # fmt: skip

        hits = run(q)
        if not hits and q.categories:
            hits = categories.unfiltered(run(replace(q, categories=())), q.categories)
        if hits and self.settings.track_access:  # under access_counts=get: the clock only
            self._touch([h.memory.id for h in hits], int(self.settings.access_counts == "search"))
        return hits

    @scrubs_output
    def entity(self, name: str, *, limit: int = 100) -> tuple[Entity, builtins.list[Memory]]:
        """Everything about ``name``: the entity it names (type, aliases, summary; by
        canonical name, alias or, for a date, any common form; own scope first) and the
        active memories that mention it, newest first."""
        return entity_profiles.profile(self, name, limit)

    @scrubs_output
    def alias(self, name: str, alias: str) -> Entity:
        """Let ``alias`` (say "Mel") name the entity ``name`` names ("Melanie"), so
        queries and new mentions under either reach the same memories. Own scope only."""
        return entity_profiles.alias(self, name, alias)

    def describe_entity(self, name: str, **fields: Any) -> Entity:
        """Set ``type``, ``summary`` or ``protected`` of the entity ``name`` names (own
        scope; ``hivemem.retrieval.entity_profiles.describe``)."""
        return entity_profiles.describe(self, name, **fields)

    def stats(self) -> dict[str, Any]:
        """Counts for the own scope, and per shared scope."""
        now = self._now()
        out = self._backend.stats([self.name], now)
        out["scope"] = self.name
        if self.shared:
            out["shared"] = {name: self._backend.stats([name], now) for name in self.shared}
        return out

    @scrubs_output
    def sessions(self) -> builtins.list[Any]:
        return self._backend.sessions(self.name)

    def consolidate(self, session_id: str | None = None) -> JobResult:
        """Consolidate now: the episodes of this scope's ended sessions (or of
        ``session_id``, ended or not) become facts, as the scheduled job does (see
        ``hivemem.lifecycle.maintenance.consolidate``; the store's LLM, or extractive without one).
        Returns what the run did (also in the run log); a failure (an unreachable LLM)
        is logged and raised, and a rerun resumes where it stopped."""
        session = rules.name(session_id, "session_id", 200, optional=True)
        return cycle.consolidate(self._store, self.name, session)

    def consolidate_cycle(
        self, session_id: str | None = None, *, trigger: str = "manual"
    ) -> builtins.list[JobResult]:  # ``list`` is the method above, in this class
        """ADR 005's consolidate(): ``consolidate`` (as above), then ``decay`` (which
        soft-deletes facts faded below the floor), then ``reflect`` (when one is due);
        one result per job, each run logged with ``trigger``. Raises as ``consolidate``
        does; a failed decay or reflect is in its result (``lifecycle/maintenance/cycle.py``)."""
        session = rules.name(session_id, "session_id", 200, optional=True)
        how = rules.name(trigger, "trigger", 40)
        return cycle.consolidate_cycle(self._store, self.name, session, trigger=str(how))

    def end_session(self, session_id: str) -> Memory | None:
        """Consolidate ``session_id`` now; its ``session_summary`` memory, or None."""
        return sessions.end_session(self, session_id)

    def add_task_result(self, output: str, *, status: str = "completed", **fields: Any) -> Memory:
        """A finished or failed task's output, source ``task_completion`` (TTL 7 days);
        fields ``task_id``, ``error``, ``session_id``, ``tags``, ``attributes``."""
        return sessions.add_task_result(self, output, status=status, **fields)

    @scrubs_output
    def related(self, memory_id: str, *, limit: int = 10) -> builtins.list[Related]:
        """Memories related to ``memory_id`` by the ``crossrefs`` job (links either way),
        best first; empty until the job has seen it. Raises ``NotFound``."""
        return chains.related(self, memory_id, limit)

    @scrubs_output
    def context(
        self,
        query: str | None = None,
        session_id: str | None = None,
        max_entries: int = 50,
        max_tokens: int | None = None,
        *,
        profile: str | None = None,
        max_relevant: int | None = None,
        min_score: float | None = None,
    ) -> str:
        """The memory block for a system prompt, within ``max_entries`` and ``max_tokens``
        (its sections, shares and floor: ``hivemem.lifecycle.context.build_context``)."""
        from ..lifecycle.context import build_context

        return build_context(
            self, query=query, session_id=session_id, max_entries=max_entries,
            max_tokens=max_tokens, profile=profile, max_relevant=max_relevant,
            min_score=min_score,
        )  # fmt: skip

    def _touch(self, ids: builtins.list[str], count: int = 1) -> None:
        self._backend.touch(self.visible, ids, self._now(), count)
