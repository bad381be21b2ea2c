"""Export and import of a store as JSON Lines: a lossless copy, history included.

Format (``hivemem_export`` version 2; version 1, memories only, is still read)::

    {"hivemem_export": 2, "schema": [...], "exported_at": "...", "count": N,
     "records": {"vault": V, ...}, "left_out": {"secret vault entries": S}}
    {"id": "...", "scope": "...", "kind": "fact", ..., "status": "superseded", ...}
    ... N lines, one per memory: every field of ``Memory.to_dict()``, oldest id first
    {"record": "vault", "scope": "...", "key": "...", "value": "...", ...}
    ... one line per record: vault entries, API tokens (hashes), entity aliases and
    the consolidation state of sessions (``hivemem.lifecycle.backup``)

Every row is exported whatever its status (superseded, deleted and archived rows too), so
supersede chains, validity intervals and usage counts survive the trip. Derived data
(chunks, the keyword index, vectors) is not exported: import rebuilds it from the
content. ``hivemem.lifecycle.backup.TABLES`` lists every table and what an export does with it;
what is left out of a given export (secret vault values without ``include_secrets``) is
counted in the header's ``left_out``.

Import contract:

- Every line is validated like a write (same field rules as ``save``); a bad line is
  reported with its line number, never as a traceback.
- Ids, statuses, supersede links, times and access counts are kept as given.
  ``content_hash`` is derived and recomputed.
- A row whose id already exists with the same record (usage counters
  ``access_count``/``last_accessed`` aside) is skipped, so importing a file twice imports
  it once.
- Checked first, written in batches. The input is read once, into a temporary copy
  (in memory up to a few MB, then on disk), and every line is checked before anything
  is written: if any line is invalid or any row conflicts with the store (its id exists
  with a different record, or in another scope; its key already has a different active
  memory; a vault key or token of the file clashes), nothing is written and the report
  lists every problem (up to ``MAX_PROBLEMS``) with its line. Then the rows are written
  ``BATCH`` (500) per transaction, so other writers and readers get in between and the
  write lock is never held for the whole file; the records (vault, tokens, aliases,
  sessions) go last, in one transaction. Each batch is checked again inside its
  transaction: if another writer took a key since the check, that batch is rolled
  back and the import stops, the batches before it kept (``imported`` counts them).
- Interrupted (kill -9, a lost server) between or inside batches, the store holds
  whole batches only; the same import run again skips the rows already there (the
  same record) and writes the rest: the store ends with exactly the file's rows.
- Sessions of imported episodes are registered; their consolidation state comes with the
  session records, a stopped run's cursor as the count of episodes it consumed (a
  ``seq`` is the source's numbering: ``hivemem.lifecycle.backup.portable_state``).
"""

from __future__ import annotations

import json
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from .. import arguments
from .. import text as textmod
from ..errors import Conflict, HiveMemError, InvalidInput
from ..providers.entities import extract
from ..settings import Settings
from ..types import Kind, Memory, Status
from ..write import rules
from ..write.audit import reason_chunks
from ..write.redact import WRITTEN_TEXT_FIELDS
from ..write.retry import attempts, retried
from . import backup
from .exported_rows import memory_from_dict

if TYPE_CHECKING:
    from ..store.handles import StoreHandle


# The characters ``str.splitlines`` (and some JSON Lines readers) take for line ends that
# ``json.dumps(ensure_ascii=False)`` writes as they are: escaped, so a record is one line to
# every reader (found by the damaged-files test: a rescued row's bytes held U+2028).
_LINE_ENDS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def jsonl(value: Any) -> str:
    """``value`` as one JSON Lines record: UTF-8 text as is, line-end characters escaped."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).translate(_LINE_ENDS)


FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
MAX_PROBLEMS = 100  # problems listed in one report; validation stops after that many
BATCH = 500  # memories written per transaction
_CHECK_BATCH = 500  # rows compared with the store per read
_SPOOL_BYTES = 8 << 20  # checked rows held in memory before the spool goes to disk
_USAGE_FIELDS = ("access_count", "last_accessed")

Progress = Callable[[int], None]  # called with the number of rows just handled


# ----------------------------------------------------------------------------- export


def export_jsonl(
    store: StoreHandle,
    fp: IO[str],
    scopes: Iterable[str] | None = None,
    progress: Progress | None = None,
    *,
    include_secrets: bool = False,
    details: dict[str, Any] | None = None,
) -> int:
    """Write the memories of ``scopes`` (every scope when ``None``) to ``fp`` as JSON
    Lines: a header line, then one line per memory of any status. Returns the number of
    memories written. The export reads one consistent snapshot of the store, so the
    header's count is exact even while other processes write. Secret values of the vault
    are redacted from every line unless ``include_secrets`` (and secret vault entries
    left out). ``details``, when given, receives ``records`` (counts per record kind) and
    ``left_out`` (what was not exported, counted)."""
    progress = arguments.callback(progress, "progress")
    chosen = _scope_list(scopes, store.settings)
    with store.snapshot():
        count = store.memories.stats(chosen, store.clock())["total"]
        records, left_out = backup.export_records(store, chosen, include_secrets)
        kinds: dict[str, int] = {}
        for record in records:
            kinds[record["record"]] = kinds.get(record["record"], 0) + 1
        header = {
            "hivemem_export": FORMAT_VERSION,
            "schema": store.health.schema_version(),
            "exported_at": store.clock().isoformat(),
            "count": count,
            "records": kinds,
            "left_out": left_out,
        }
        fp.write(json.dumps(header) + "\n")
        written = 0
        for memory in store.memories.iter_all(chosen):
            if not include_secrets:
                memory = store.scrubbed(memory)
            line = jsonl(memory.to_dict())
            fp.write((line if include_secrets else store.scrub(line)) + "\n")
            written += 1
            if progress is not None and written % 100 == 0:
                progress(100)
        if progress is not None and written % 100:
            progress(written % 100)
        for record in records:
            line = jsonl(record)
            secret = record["record"] == "vault" and record["is_secret"]
            fp.write((line if include_secrets or secret else store.scrub(line)) + "\n")
    if details is not None:
        details.update(records=kinds, left_out=left_out)
    if written != count:  # impossible inside a snapshot; a loud guard against silent loss
        raise HiveMemError(f"export wrote {written} memories but counted {count}")
    return written


def _scope_list(scopes: Iterable[str] | None, settings: Settings) -> list[str] | None:
    if scopes is None:
        return None
    if isinstance(scopes, str):
        scopes = [scopes]
    out = [rules.name(s, "scopes", settings.max_scope_chars) for s in scopes]
    if not out:
        raise InvalidInput("scopes", "is empty; pass None to export every scope")
    return list(dict.fromkeys(s for s in out if s is not None))


# ----------------------------------------------------------------------------- import


@dataclass(frozen=True, slots=True)
class ImportProblem:
    """Why one line was not imported. ``line`` is 1-based; ``id`` is the row's id when
    it could be read."""

    line: int
    message: str
    id: str | None = None

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "id": self.id, "message": self.message}


@dataclass(frozen=True, slots=True)
class ImportReport:
    """The outcome of one ``import_jsonl`` call.

    ``ok`` is true when the file was imported; then ``imported`` rows were written and
    ``skipped_identical`` were already present. When it is false ``errors`` (invalid
    lines) and ``conflicts`` (valid rows that clash with the store or with each other)
    say why; nothing was written (``imported`` is 0), unless another writer changed the
    store between the check and a batch: ``imported`` then counts the rows of the
    batches committed before that one.
    """

    imported: int
    skipped_identical: int
    conflicts: tuple[ImportProblem, ...] = ()
    errors: tuple[ImportProblem, ...] = ()
    rows: int = 0  # memory lines read
    records: Mapping[str, int] = field(default_factory=dict)  # imported, per record kind
    truncated: bool = False  # validation stopped after MAX_PROBLEMS problems
    header: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.conflicts and not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "imported": self.imported,
            "skipped_identical": self.skipped_identical,
            "rows": self.rows,
            "records": dict(self.records),
            "conflicts": [p.to_dict() for p in self.conflicts],
            "errors": [p.to_dict() for p in self.errors],
            "truncated": self.truncated,
            "header": dict(self.header),
        }


class _Rollback(Exception):
    """Raised inside a transaction to undo it when a problem was found."""


def import_jsonl(
    store: StoreHandle,
    fp: Iterable[str],
    scope: str | None = None,
    progress: Progress | None = None,
    *,
    batch: int = BATCH,
    checked: Progress | None = None,
) -> ImportReport:
    """Import a file written by ``export_jsonl`` (see the module docstring for the
    contract). ``scope`` puts every row into that one scope instead of its own.
    ``batch`` is the number of memories written per transaction. ``checked`` is told
    the memory lines checked (the first pass), ``progress`` those written or skipped
    (the second).

    Returns the report; it never raises for a bad file (only for a store that cannot be
    written, ``StoreError``). When ``report.ok`` is false nothing was written, unless
    the store changed under the import between its check and a batch (``imported``
    then counts the rows of the batches committed before; a rerun completes it).
    """
    progress = arguments.callback(progress, "progress")
    checked = arguments.callback(checked, "checked")
    target = rules.name(scope, "scope", store.settings.max_scope_chars, optional=True)
    run = _Import(store, target, progress, max(1, batch), checked)
    # The checked rows wait in a temporary copy (in memory up to a few MB, then on
    # disk), so the input is read once and memory stays flat whatever its size.
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
        run.read(fp, spool)
        if not run.failed:
            run.check_records()
        if not run.failed:
            spool.seek(0)
            run.write(spool)
    return run.report()


class _Import:
    """The state of one import: rows validated so far, problems, counts.

    ``read`` is the check (nothing written): every line validated, the rows compared
    with each other and with the store, the valid new rows spooled. ``write`` then
    inserts the spooled rows, ``batch`` per transaction, each batch checked again
    against the store inside its transaction (another writer may have come between)."""

    def __init__(
        self,
        store: StoreHandle,
        target: str | None,
        progress: Progress | None,
        batch: int,
        checked: Progress | None = None,
    ) -> None:
        self.checked = checked
        self.store = store
        self.memories = store.memories
        self.settings = store.settings
        self.target = target
        self.progress = progress
        self.batch = batch
        self.header: dict[str, Any] = {}
        self.errors: list[ImportProblem] = []
        self.conflicts: list[ImportProblem] = []
        self.imported = 0
        self.skipped = 0
        self.rows = 0
        self.spooled = 0
        self.truncated = False
        # id -> (the line it first appeared on, its offset in the spool or -1)
        self.seen: dict[str, tuple[int, int]] = {}
        self.active_keys: dict[tuple[str, str], tuple[int, str]] = {}  # -> (line, id)
        self.records: list[tuple[int, dict[str, Any]]] = []  # non-memory lines, checked
        self.records_imported: dict[str, int] = {}

    @property
    def failed(self) -> bool:
        return bool(self.errors or self.conflicts)

    def problem(self, into: list[ImportProblem], line: int, message: str, id: Any = None) -> None:
        if len(self.errors) + len(self.conflicts) >= MAX_PROBLEMS:
            self.truncated = True
            return
        into.append(ImportProblem(line, message, id if isinstance(id, str) else None))

    # ------------------------------------------------------------------ the check

    def read(self, fp: Iterable[str], spool: IO[bytes]) -> None:
        batch: list[tuple[int, Memory]] = []
        last_line = 0
        for line_no, raw in _lines(fp):
            last_line = line_no
            if raw is None:
                self.problem(
                    self.errors, line_no, "not UTF-8 text (at or after this line); reading stopped"
                )
                break
            if self.truncated:
                break
            if not raw.strip():
                continue
            value = self.parse(line_no, raw)
            if not self.header:
                self.read_header(line_no, value)
                if not self.header:
                    return  # not an export: every later line would be noise
                continue
            if isinstance(value, dict) and "record" in value:
                self.read_record(line_no, value)
                continue
            self.rows += 1
            memory = self.validate(line_no, value)
            if memory is not None:
                batch.append((line_no, memory))
            if len(batch) >= _CHECK_BATCH:
                self.check(batch, spool)
                batch = []
            if self.checked is not None and self.rows % 100 == 0:
                self.checked(100)
        if batch:
            self.check(batch, spool)
        if self.checked is not None and self.rows % 100:
            self.checked(self.rows % 100)
        if not self.header and not self.errors:
            self.problem(self.errors, max(last_line, 1), "empty file: no export header")
        announced = self.header.get("records") or {}
        found: dict[str, int] = {}
        for _, record in self.records:
            found[record["record"]] = found.get(record["record"], 0) + 1
        if self.header and not self.truncated and not self.errors and announced != found:
            self.problem(
                self.errors,
                last_line,
                f"the header announces records {announced} but the file holds {found} "
                "(truncated or edited file?)",
            )
        expected = self.header.get("count")
        if self.header and not self.truncated and expected != self.rows:
            self.problem(
                self.errors,
                last_line,
                f"the header announces {expected} memories but the file holds {self.rows} "
                "(truncated or edited file?)",
            )

    def read_record(self, line_no: int, value: dict[str, Any]) -> None:
        problem = backup.check_record(value)
        if problem is not None:
            self.problem(self.errors, line_no, problem)
        else:
            self.records.append((line_no, value))

    def check_records(self) -> None:
        """The records' conflicts with the store (a vault key holding another value, a
        token clashing): found by writing them in a transaction that is rolled back."""
        if not self.records:
            return
        try:
            with self.store.atomic():
                _, conflicts = backup.import_records(self.store, self.records, self.target)
                raise _Rollback
        except _Rollback:
            pass
        for line_no, message in conflicts:
            self.problem(self.conflicts, line_no, message)

    def parse(self, line_no: int, raw: str) -> Any:
        try:
            return json.loads(raw, parse_constant=_reject_constant)
        except (ValueError, RecursionError) as exc:
            self.problem(self.errors, line_no, f"not valid JSON: {exc}")
            return None

    def read_header(self, line_no: int, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, dict) or "hivemem_export" not in value:
            self.problem(
                self.errors,
                line_no,
                'not a HiveMem export: the first line must be the header {"hivemem_export": 1, …}',
            )
            return
        version = value["hivemem_export"]
        if version not in READABLE_VERSIONS or isinstance(version, bool):
            newer = isinstance(version, int) and version > FORMAT_VERSION
            hint = "; upgrade hivemem to import it" if newer else ""
            self.problem(
                self.errors,
                line_no,
                f"export format {version!r} is not supported (this HiveMem reads "
                f"{FORMAT_VERSION}){hint}",
            )
            return
        count = value.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            self.problem(
                self.errors, line_no, f"header: count must be a whole number >= 0, got {count!r}"
            )
            return
        schema = value.get("schema", [])
        if not isinstance(schema, list) or not all(isinstance(n, str) for n in schema):
            self.problem(self.errors, line_no, "header: schema must be a list of migration names")
            return
        records = value.get("records", {})
        if not isinstance(records, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in records.values()
        ):
            self.problem(self.errors, line_no, "header: records must map kinds to counts")
            return
        self.header = dict(value)

    def validate(self, line_no: int, value: Any) -> Memory | None:
        if value is None:
            return None  # already reported as bad JSON
        if not isinstance(value, dict):
            self.problem(
                self.errors, line_no, f"expected a JSON object, got {type(value).__name__}"
            )
            return None
        try:
            return self.guarded(memory_from_dict(value, self.settings, scope=self.target))
        except InvalidInput as exc:
            self.problem(self.errors, line_no, str(exc), value.get("id"))
            return None

    def guarded(self, memory: Memory) -> Memory:
        """``memory`` with the ``credential_policy`` applied as a write applies it (every
        text field: credential shapes and vault secrets redacted, or the row refused,
        ``InvalidInput``, so the import fails with nothing written). Found on main: an
        import stored an API key inside a memory verbatim, where a save redacts it."""
        fields = {
            name: getattr(memory, name)
            for name in sorted(WRITTEN_TEXT_FIELDS, key=lambda n: (n != "content", n))
            if getattr(memory, name, None) is not None
        }
        clean = self.store.guard_fields(fields)
        changed = {name: value for name, value in clean.items() if value != fields[name]}
        if not changed:
            return memory
        if "tags" in changed:
            changed["tags"] = tuple(changed["tags"])
        if "source_ids" in changed:
            changed["source_ids"] = tuple(changed["source_ids"])
        if "content" in changed:
            changed["content_hash"] = textmod.content_hash(changed["content"])
        return replace(memory, **changed)

    def check(self, batch: list[tuple[int, Memory]], spool: IO[bytes]) -> None:
        """Check a batch of valid rows against the rows before them and the store (reads
        only); spool the new ones."""
        where, existing = self.stored(batch)
        for line_no, memory in batch:
            first = self.seen.get(memory.id)
            if first is not None:
                self.repeated(line_no, memory, first, spool)
                continue
            self.seen[memory.id] = (line_no, -1)
            if memory.id in where:
                problem = _compare(memory, where[memory.id], existing)
                if problem is None:
                    self.skipped += 1
                else:
                    self.problem(self.conflicts, line_no, problem, memory.id)
                continue
            if not self.key_in_file(line_no, memory):
                continue
            problem = self.key_in_store(memory)
            if problem is not None:
                self.problem(self.conflicts, line_no, problem, memory.id)
                continue
            if not self.failed:
                self.seen[memory.id] = (line_no, spool.tell())
                pickle.dump((line_no, memory), spool, protocol=pickle.HIGHEST_PROTOCOL)
                self.spooled += 1

    def repeated(
        self, line_no: int, memory: Memory, first: tuple[int, int], spool: IO[bytes]
    ) -> None:
        """An id seen earlier in the file: the same record is skipped, another one is a
        conflict. The first one is in the spool (read back from its offset) or was found
        in the store, unless it was refused (then the import fails anyway)."""
        first_line, offset = first
        if offset >= 0:
            end = spool.tell()
            spool.seek(offset)
            earlier: Memory | None = pickle.load(spool)[1]  # noqa: S301 - our own file
            spool.seek(end)
        else:
            earlier = self.memories.get([memory.scope], memory.id)
            if earlier is None and self.failed:
                return  # the first was refused: no comparison to make
        if earlier is not None and _comparable(earlier) == _comparable(memory):
            self.skipped += 1
            return
        self.problem(
            self.conflicts,
            line_no,
            f"id {memory.id} appears again with a different record (first on line {first_line})",
            memory.id,
        )

    def stored(self, batch: list[tuple[int, Memory]]) -> tuple[dict[str, str], dict[str, Memory]]:
        """The store's scope of each id of ``batch`` it holds, and those rows."""
        where = self.memories.scopes_of([m.id for _, m in batch])
        existing: dict[str, Memory] = {}
        for scope in set(where.values()):
            ids = [m.id for _, m in batch if where.get(m.id) == scope == m.scope]
            existing.update((m.id, m) for m in self.memories.get_many([scope], ids))
        return where, existing

    def key_in_file(self, line_no: int, memory: Memory) -> bool:
        """The partial unique index allows one ACTIVE row per (scope, key): the file may
        not hold two."""
        if memory.status is not Status.ACTIVE or memory.key is None:
            return True
        slot = (memory.scope, memory.key)
        earlier = self.active_keys.get(slot)
        if earlier is not None:
            self.problem(
                self.conflicts,
                line_no,
                f"key {memory.key!r} has two active memories in scope {memory.scope!r} "
                f"({earlier[1]} on line {earlier[0]}, and {memory.id})",
                memory.id,
            )
            return False
        self.active_keys[slot] = (line_no, memory.id)
        return True

    def key_in_store(self, memory: Memory) -> str | None:
        """Why the row's key cannot be active in the store (another row holds it)."""
        if memory.status is not Status.ACTIVE or memory.key is None:
            return None
        holder = self.memories.by_key([memory.scope], memory.key)
        if holder is not None and holder.id != memory.id:
            return (
                f"key {memory.key!r} already holds active memory {holder.id} in scope "
                f"{memory.scope!r}"
            )
        return None

    # ------------------------------------------------------------------ the writes

    def write(self, spool: IO[bytes]) -> None:
        """The spooled rows, ``batch`` per transaction (other writers and readers come
        between), then the records. A batch that meets a conflict (the store changed
        since the check) is rolled back and the import stops there."""
        handled = self.rows - self.spooled  # skipped by the check: nothing to write
        if self.progress is not None and handled:
            self.progress(handled)
        batch: list[tuple[int, Memory]] = []
        for _ in range(self.spooled):
            batch.append(pickle.load(spool))  # noqa: S301 - our own temporary file
            if len(batch) >= self.batch:
                if not self.write_batch(batch):
                    return
                batch = []
        if batch and not self.write_batch(batch):
            return
        try:
            for attempt in attempts():
                with attempt, self.store.atomic():
                    self.write_records()
                    if self.conflicts:
                        raise _Rollback
        except _Rollback:
            pass

    @retried  # one batch, one unit of work: a deadlock runs the batch again
    def write_batch(self, batch: list[tuple[int, Memory]]) -> bool:
        sessions: dict[tuple[str, str], tuple[datetime, datetime, int]] = {}
        new: list[tuple[int, Memory]] = []
        skipped = 0
        try:
            with self.store.atomic():
                where, existing = self.stored(batch)
                for line_no, memory in batch:
                    if memory.id in where:  # written since the check (another import)
                        problem = _compare(memory, where[memory.id], existing)
                        if problem is None:
                            skipped += 1
                            continue
                    else:
                        problem = self.key_in_store(memory)
                    if problem is not None:
                        self.problem(self.conflicts, line_no, problem, memory.id)
                        continue
                    new.append((line_no, memory))
                    _note_episode(sessions, memory)
                if self.conflicts:
                    raise _Rollback
                self.insert(new)
                for (scope, session_id), (when, last, count) in sessions.items():
                    self.store.session_rows.note_session(scope, session_id, when, last, count)
        except _Rollback:
            return False
        self.imported += len(new)
        self.skipped += skipped
        self.store.index_written(False)  # the batch's chunks are queued for vectors
        if self.progress is not None:
            self.progress(len(batch))
        return True

    def insert(self, rows: list[tuple[int, Memory]]) -> None:
        """Inside the batch's transaction: the rows, their chunks and entity links, in as
        few round trips as the backend can; a row refused (another writer came between
        the check and the batch) is a conflict that rolls the batch back."""
        size, overlap = self.settings.chunk_tokens, self.settings.chunk_overlap_tokens
        items = [
            (m, textmod.chunk(m.content, size, overlap) + reason_chunks(m), extract(m.content))
            for _, m in rows
        ]
        try:
            self.memories.insert_many(items)
        except Conflict as exc:
            line_no = next((n for n, m in rows if m.id in str(exc)), rows[0][0])
            self.problem(self.conflicts, line_no, str(exc))
            raise _Rollback from None

    def write_records(self) -> None:
        imported, conflicts = backup.import_records(self.store, self.records, self.target)
        for line_no, message in conflicts:
            self.problem(self.conflicts, line_no, message)
        self.records_imported = imported

    def report(self) -> ImportReport:
        return ImportReport(
            imported=self.imported,
            skipped_identical=self.skipped,
            conflicts=tuple(self.conflicts),
            errors=tuple(self.errors),
            rows=self.rows,
            records={} if self.failed else self.records_imported,
            truncated=self.truncated,
            header=self.header,
        )


def _note_episode(
    sessions: dict[tuple[str, str], tuple[datetime, datetime, int]], memory: Memory
) -> None:
    if memory.kind is not Kind.EPISODE or memory.session_id is None:
        return
    slot = (memory.scope, memory.session_id)
    when = memory.event_time or memory.created_at
    first, last, count = sessions.get(slot, (when, when, 0))
    sessions[slot] = (min(first, when), max(last, when), count + 1)


def _compare(memory: Memory, scope: str, existing: Mapping[str, Memory]) -> str | None:
    """Why ``memory`` clashes with the stored row of its id (``None``: the same record)."""
    if scope != memory.scope:
        return f"id {memory.id} already exists in scope {scope!r} (ids are unique across the store)"
    stored, record = _comparable(existing[memory.id]), _comparable(memory)
    if stored == record:
        return None
    changed = sorted(k for k, v in stored.items() if record.get(k) != v)
    return (
        f"id {memory.id} already exists with a different record (differs in: {', '.join(changed)})"
    )


def _lines(fp: Iterable[str]) -> Iterator[tuple[int, str | None]]:
    """Numbered lines; a line the stream cannot decode comes as ``None`` and ends it."""
    lines = iter(fp)
    line_no = 0
    while True:
        line_no += 1
        try:
            raw = next(lines)
        except StopIteration:
            return
        except UnicodeDecodeError:
            yield line_no, None
            return
        yield line_no, raw


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _comparable(memory: Memory) -> dict[str, Any]:
    record = memory.to_dict()
    for name in _USAGE_FIELDS:
        record.pop(name)
    return record


__all__ = [
    "FORMAT_VERSION",
    "ImportProblem",
    "ImportReport",
    "export_jsonl",
    "import_jsonl",
    "memory_from_dict",
]
