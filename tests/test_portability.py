"""Export → import is lossless (every field of every row, history included), import is
idempotent and all-or-nothing, and a bad file gets a clear error naming its line."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import hivemem
from hivemem import Status
from hivemem.lifecycle.copying import copy_store
from hivemem.lifecycle.portability import FORMAT_VERSION, export_jsonl, import_jsonl
from terminal import run_on_a_terminal

SRC = str(Path(hivemem.__file__).resolve().parents[1])


def _rows(store, scopes=None):
    return [m.to_dict() for m in store.iter_memories(scopes)]


def _export(store, scopes=None) -> str:
    buffer = io.StringIO()
    export_jsonl(store, buffer, scopes)
    return buffer.getvalue()


@pytest.fixture
def rich(store, clock):
    """A store with every kind of row: supersede chains (hard and soft), a deleted and
    an archived row, episodes in sessions, tags, attributes, unicode, expiry, usage
    counts, a confirmed memory, a multi-chunk memory, a promotion across scopes."""
    mem = store.scope("team-a", shared=["swarm"])
    mem.save("Never deploy on Fridays", key="deploy", type="warning", tags=["ops", "prod"])
    clock.advance(hours=1)
    mem.save("Deploy Monday to Thursday", key="deploy", supersede_reason="policy changed")
    clock.advance(hours=1)
    mem.save("Deploy Monday–Thursday only", key="deploy", minor=True)
    gone = mem.save("The staging password is in the vault", attributes={"nested": {"a": [1, 2]}})
    mem.delete(gone.id)
    old = mem.save("Sprint 12 notes", source="session_summary", event_time="2025-12-01T10:00:00")
    with store.atomic():
        store.memories.set_status("team-a", old.id, Status.ARCHIVED, clock(), clock(), "test")
    mem.add_episodes(
        [
            {"content": "Hi, I'm Ana 👋", "session_id": "s1", "role": "user"},
            {"content": "Hello Ana!", "session_id": "s1", "role": "agent-x"},
        ]
    )
    confirmed = mem.save("Ana leads the platform team", type="identity", category="person")
    mem.confirm(confirmed.id)
    mem.save(" ".join(f"word{i} filler text." for i in range(900)), key="long")
    mem.search("deploy")  # access counts and last_accessed
    mem.promote(confirmed.id, "swarm")
    store.scope("other").save("Other team fact", key="k")
    return store


def test_round_trip_keeps_every_field_of_every_row(rich, tmp_path):
    text = _export(rich)
    lines = text.splitlines()
    header = json.loads(lines[0])
    assert header["hivemem_export"] == FORMAT_VERSION
    assert header["schema"] == rich.health.schema_version()
    assert header["count"] == len(lines) - 1 == len(_rows(rich))
    statuses = {json.loads(line)["status"] for line in lines[1:]}
    assert statuses == {"active", "superseded", "deleted", "archived"}

    with hivemem.open(tmp_path / "copy.db") as copy:
        report = import_jsonl(copy, io.StringIO(text))
        assert report.ok and report.imported == header["count"]
        assert report.skipped_identical == 0
        assert _rows(copy) == _rows(rich)
        # Derived data is rebuilt: history, search (multi-chunk too) and sessions work.
        original, imported = rich.scope("team-a"), copy.scope("team-a")
        assert [m.to_dict() for m in imported.history("deploy")] == [
            m.to_dict() for m in original.history("deploy")
        ]
        assert len(imported.history("deploy")) == 3
        assert imported.search("word850")[0].memory.key == "long"
        assert [(s.session_id, s.episode_count) for s in imported.sessions()] == [("s1", 2)]


def test_a_text_with_unicode_line_ends_stays_one_line_of_the_export(tmp_path):
    """Found by the damaged-files test in CI: a row holding U+2028 was written as is
    (``ensure_ascii=False``), so a reader that splits lines the way ``str.splitlines``
    does (U+0085, U+2028, U+2029 too) cut the record in two. They are escaped now."""
    text = "first\u2028second\x85third\u2029fourth é"
    with hivemem.open(tmp_path / "a.db") as store:
        store.scope("a").save(text, key="k", tags=["x\u2028y"])
        exported = _export(store)
    lines = exported.splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["content"] == text
    assert "é" in lines[1]  # UTF-8 text stays as it is
    with hivemem.open(tmp_path / "b.db") as copy:
        assert import_jsonl(copy, io.StringIO(exported)).imported == 1
        assert copy.scope("a").get("k").content == text


def test_import_twice_skips_everything_the_second_time(rich, tmp_path):
    text = _export(rich)
    with hivemem.open(tmp_path / "copy.db") as copy:
        first = import_jsonl(copy, io.StringIO(text))
        before = _rows(copy)
        second = import_jsonl(copy, io.StringIO(text))
        assert second.ok
        assert (second.imported, second.skipped_identical) == (0, first.imported)
        assert _rows(copy) == before
        assert copy.scope("team-a").sessions()[0].episode_count == 2  # not counted twice


def test_usage_counters_do_not_make_a_row_different(rich, tmp_path):
    text = _export(rich)
    with hivemem.open(tmp_path / "copy.db") as copy:
        import_jsonl(copy, io.StringIO(text))
        copy.scope("team-a").search("deploy")  # bumps access_count in the copy
        assert import_jsonl(copy, io.StringIO(text)).imported == 0


def test_export_of_chosen_scopes_and_progress(rich):
    seen = []
    buffer = io.StringIO()
    count = export_jsonl(rich, buffer, ["other", "swarm"], progress=seen.append)
    rows = [json.loads(line) for line in buffer.getvalue().splitlines()[1:]]
    assert count == len(rows) == sum(seen) == 2
    assert {r["scope"] for r in rows} == {"other", "swarm"}
    with pytest.raises(hivemem.InvalidInput, match="scopes"):
        export_jsonl(rich, io.StringIO(), [])


def test_import_into_one_scope(rich, tmp_path):
    text = _export(rich, ["team-a"])
    with hivemem.open(tmp_path / "copy.db") as copy:
        report = import_jsonl(copy, io.StringIO(text), scope="archive-2026")
        assert report.ok
        rows = _rows(copy)
        assert {r["scope"] for r in rows} == {"archive-2026"}
        expected = _rows(rich, ["team-a"])
        for row in expected:
            row["scope"] = "archive-2026"
        assert rows == expected
        assert len(copy.scope("archive-2026").history("deploy")) == 3


def test_import_is_all_or_nothing_on_a_bad_line(rich, tmp_path):
    lines = _export(rich).splitlines()
    lines[3] = "{not json"
    bad = json.loads(lines[5])
    bad["type"] = "bogus"
    lines[5] = json.dumps(bad)
    with hivemem.open(tmp_path / "copy.db") as copy:
        report = import_jsonl(copy, io.StringIO("\n".join(lines) + "\n"))
        assert not report.ok and report.imported == 0
        assert [(p.line, p.id) for p in report.errors] == [(4, None), (6, bad["id"])]
        assert str(report.errors[0]).startswith("line 4: not valid JSON")
        assert "line 6: type: unknown type 'bogus'" in str(report.errors[1])
        assert _rows(copy) == []  # nothing half-written
        assert copy.scope("team-a").sessions() == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": None}, "line 2: id: is required"),
        ({"confidence": 2}, "line 2: confidence: must be between 0 and 1"),
        ({"created_at": "yesterday"}, "line 2: created_at: cannot read 'yesterday'"),
        ({"status": "gone"}, "line 2: status: unknown value 'gone'"),
        ({"tags": "ops"}, "line 2: tags: expected a list"),
        ({"colour": "red"}, "line 2: colour: unknown field"),
        ({"supersede_kind": "medium"}, "line 2: supersede_kind: expected 'hard', 'soft'"),
        ({"access_count": -1}, "line 2: access_count: expected a whole number"),
        ({"content": "  "}, "line 2: content: is empty"),
    ],
)
def test_each_bad_field_is_named_with_its_line(store, tmp_path, change, message):
    store.scope("a").save("one fact")
    header, row = _export(store).splitlines()
    record = {**json.loads(row), **change}
    report = import_jsonl(store, io.StringIO(f"{header}\n{json.dumps(record)}\n"))
    assert not report.ok
    assert [str(p) for p in report.errors][0].startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "line 1: empty file"),
        ('{"id": "x"}\n', "line 1: not a HiveMem export"),
        ('{"hivemem_export": 99, "count": 0}\n', "line 1: export format 99 is not supported"),
        ('{"hivemem_export": 1, "count": 2}\n', "line 1: the header announces 2 memories"),
        ('{"hivemem_export": 1, "count": 1}\n[1, 2]\n', "line 2: expected a JSON object"),
        ('{"hivemem_export": 1, "count": 1}\n{"confidence": NaN}\n', "line 2: not valid JSON"),
    ],
)
def test_bad_files_are_reported_not_raised(store, text, message):
    report = import_jsonl(store, io.StringIO(text))
    assert not report.ok and report.imported == 0
    assert str(report.errors[0]).startswith(message)


def test_truncated_file_is_refused(rich, tmp_path):
    lines = _export(rich).splitlines()
    with hivemem.open(tmp_path / "copy.db") as copy:
        report = import_jsonl(copy, io.StringIO("\n".join(lines[:-2])))
        assert not report.ok
        assert "header announces" in report.errors[0].message
        assert _rows(copy) == []


def test_conflicts_are_listed_and_nothing_is_imported(rich, tmp_path):
    text = _export(rich, ["team-a"])
    # The same ids in another scope of the same store: ids are unique store-wide.
    report = import_jsonl(rich, io.StringIO(text), scope="copy")
    assert not report.ok and report.conflicts and not report.errors
    assert "already exists in scope 'team-a'" in report.conflicts[0].message
    assert rich.scope("copy").list() == []

    with hivemem.open(tmp_path / "copy.db") as copy:
        holder = copy.scope("team-a").save("Deploy any day", key="deploy")
        report = import_jsonl(copy, io.StringIO(text))
        assert not report.ok and report.imported == 0
        assert [p.message for p in report.conflicts] == [
            f"key 'deploy' already holds active memory {holder.id} in scope 'team-a'"
        ]
        assert [m.id for m in copy.iter_memories()] == [holder.id]


def test_changed_row_with_a_known_id_is_a_conflict(store):
    mem = store.scope("a")
    fact = mem.save("one fact", key="k")
    text = _export(store)
    mem.confirm(fact.id)
    report = import_jsonl(store, io.StringIO(text))
    assert not report.ok
    assert "differs in: decay_rate, updated_at" in report.conflicts[0].message


def test_two_active_rows_for_one_key_in_a_file_conflict(store, tmp_path):
    store.scope("a").save("first", key="k")
    store.scope("b").save("second", key="k")
    text = _export(store)
    with hivemem.open(tmp_path / "copy.db") as copy:
        report = import_jsonl(copy, io.StringIO(text), scope="merged")
        assert not report.ok
        assert "key 'k' has two active memories in scope 'merged'" in report.conflicts[0].message
        assert report.conflicts[0].line == 3


def test_many_rows_cross_batches(store, tmp_path):
    mem = store.scope("a")
    mem.add_episodes(
        [{"content": f"turn {i}", "session_id": f"s{i % 3}", "role": "user"} for i in range(1203)]
    )
    text = _export(store)
    with hivemem.open(tmp_path / "copy.db") as copy:
        assert import_jsonl(copy, io.StringIO(text)).imported == 1203
        assert _rows(copy) == _rows(store)
        assert sum(s.episode_count for s in copy.scope("a").sessions()) == 1203
        second = import_jsonl(copy, io.StringIO(text + text.split("\n", 1)[1]))
        assert not second.ok  # the rows twice: the header's count no longer matches
        assert second.skipped_identical == 2 * 1203


def test_export_inside_a_write_transaction(store):
    store.scope("a").save("one")
    with store.atomic():
        assert export_jsonl(store, io.StringIO()) == 1


def test_a_repeated_id_with_another_record_conflicts(store, tmp_path):
    store.scope("a").save("one fact")
    header, row = _export(store).splitlines()
    changed = json.dumps({**json.loads(row), "content": "another fact"})
    elsewhere = json.dumps({**json.loads(row), "scope": "b"})
    header = header.replace('"count": 1', '"count": 2')
    with hivemem.open(tmp_path / "copy.db") as copy:
        for second in (changed, elsewhere):
            report = import_jsonl(copy, io.StringIO(f"{header}\n{row}\n{second}\n"))
            assert [str(p) for p in report.conflicts] == [
                f"line 3: id {json.loads(row)['id']} appears again with a different record "
                "(first on line 2)"
            ]
            assert _rows(copy) == []
        report = import_jsonl(copy, io.StringIO(f"{header}\n{row}\n{row}\n"))
        assert (report.ok, report.imported, report.skipped_identical) == (True, 1, 1)


def test_an_import_links_entities_and_embeds_like_a_write(tmp_path):
    import io

    import hivemem
    from hivemem.lifecycle.portability import export_jsonl, import_jsonl

    with hivemem.open(tmp_path / "a.db", embedder="hash") as source:
        source.scope("a").save("Zoltan runs the night shift", wait=True)
        buffer = io.StringIO()
        export_jsonl(source, buffer)
    with hivemem.open(tmp_path / "b.db", embedder="hash") as target:
        assert import_jsonl(target, io.StringIO(buffer.getvalue())).ok
        target.flush()
        entity, memories = target.scope("a").entity("Zoltan")
        assert entity.mention_count == 1 and len(memories) == 1
        assert target.vectors.count() == 1


KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def _exported_with_a_key(tmp_path) -> str:
    """An export holding a credential (written by a store whose policy allowed it)."""
    settings = hivemem.Settings(credential_policy="allow")
    with hivemem.open(tmp_path / "allow.db", settings=settings, embedder="hash") as source:
        source.scope("team-a").save(f"The deploy key is {KEY} for now", tags=[f"key-{KEY}"])
        return _export(source)


def test_import_redacts_credentials_as_a_write_does(db_path, clock, tmp_path):
    """Found on main: ``import`` stored a credential inside a memory verbatim, where a
    save redacts it (credential_policy)."""
    text = _exported_with_a_key(tmp_path)
    assert KEY in text
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        report = import_jsonl(store, io.StringIO(text))
        assert report.ok and report.imported == 1
        [memory] = store.scope("team-a").list()
        assert KEY not in memory.content and "[REDACTED" in memory.content
        assert all(KEY not in tag for tag in memory.tags)
        assert store.scope("team-a").search("deploy key")[0].memory.id == memory.id
        assert import_jsonl(store, io.StringIO(text)).skipped_identical == 1  # idempotent
    if isinstance(db_path, Path):  # a file (the PostgreSQL variant has no bytes to read)
        assert KEY.encode() not in db_path.read_bytes()


def test_import_refuses_a_credential_under_the_reject_policy(db_path, clock, tmp_path):
    text = _exported_with_a_key(tmp_path)
    settings = hivemem.Settings(credential_policy="reject")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        report = import_jsonl(store, io.StringIO(text))
        assert not report.ok and report.imported == 0
        assert "content: contains a credential" in str(report.errors[0])
        assert store.scope("team-a").list() == []


# ----------------------------------------------------------------------------- batches


def _episodes_file(tmp_path, clock, n: int) -> tuple[str, list[dict]]:
    """An export of ``n`` episodes in three sessions (and a vault entry), made in a
    SQLite store of its own; the rows it holds."""
    with hivemem.open(tmp_path / "source.db", clock=clock, embedder="none") as source:
        mem = source.scope("a")
        mem.add_episodes(
            [
                {"content": f"turn {i} of the talk", "session_id": f"s{i % 3}", "role": "user"}
                for i in range(n)
            ]
        )
        source.vault("a").set("region", "eu-west-1")
        return _export(source), _rows(source)


def test_a_bad_last_line_writes_nothing(store, clock, tmp_path):
    text, _ = _episodes_file(tmp_path, clock, 450)
    lines = text.splitlines()
    memory_lines = [i for i, line in enumerate(lines) if '"record"' not in line][1:]
    last = memory_lines[-1]
    lines[last] = lines[last].replace('"kind": "episode"', '"kind": "rumour"')
    report = import_jsonl(store, io.StringIO("\n".join(lines) + "\n"), batch=100)
    assert not report.ok and report.imported == 0
    assert [p.line for p in report.errors] == [last + 1]
    assert "kind" in str(report.errors[0])
    assert _rows(store) == [] and store.scope("a").sessions() == []
    assert "region" not in store.vault("a")


def test_a_writer_gets_in_between_the_batches_of_an_import(store, db_path, clock, tmp_path):
    """A real second writer (its own store handle, its own thread) saves while a large
    import runs: after every committed batch, the import waits until the writer has
    saved once more, and a reader on that handle sees the batches committed so far. An
    import holding one transaction for its whole run fails both (SQLite: the writer's
    save blocks on the lock; both backends: the reader sees nothing until the end)."""
    text, rows = _episodes_file(tmp_path, clock, 1000)
    done = threading.Event()
    saved = threading.Event()
    failures: list[BaseException] = []
    live = hivemem.open(db_path, clock=clock, embedder="none")

    def writer() -> None:
        n = 0
        try:
            while not done.is_set():
                live.scope("live").save(f"written during the import {n}")
                n += 1
                saved.set()
        except BaseException as exc:  # reported by the test below
            failures.append(exc)
            saved.set()

    batches: list[int] = []

    def progress(rows_done: int) -> None:
        saved.clear()
        assert saved.wait(20), "no write got in between two batches of the import"
        batches.append(rows_done)
        # and a reader on another connection sees every batch committed so far
        assert len(list(live.iter_memories(["a"]))) == sum(batches)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        report = import_jsonl(store, io.StringIO(text), progress=progress, batch=100)
    finally:
        done.set()
        thread.join(30)
        live.close()
    assert not failures, failures
    assert report.ok and report.imported == 1000, report.to_dict()
    assert batches == [100] * 10
    assert len(store.scope("live").list(limit=1000)) >= 10
    assert _rows(store, ["a"]) == rows


KILLER = textwrap.dedent(
    """
    import io, os, signal, sys
    sys.path.insert(0, sys.argv[1])
    import hivemem
    from hivemem.lifecycle.portability import import_jsonl

    done = [0]
    store = hivemem.open(sys.argv[2], embedder="none")
    rows = store.memories
    insert_many = rows.insert_many

    def progress(count):
        done[0] += count
        if sys.argv[5] == "between" and done[0] >= int(sys.argv[4]):
            os.kill(os.getpid(), signal.SIGKILL)  # between two batches: the process dies

    def inside(items):
        insert_many(items)
        if sys.argv[5] == "inside" and done[0] >= int(sys.argv[4]):
            os.kill(os.getpid(), signal.SIGKILL)  # the batch written, not committed

    rows.insert_many = inside
    with open(sys.argv[3], encoding="utf-8") as fp:
        import_jsonl(store, fp, progress=progress, batch=100)
    """
)


@pytest.mark.parametrize("where", ["between", "inside"])
def test_an_import_killed_mid_way_completes_on_a_rerun(store, db_path, clock, tmp_path, where):
    """kill -9 after the third batch committed, or inside the fourth (its rows written,
    not committed): the store holds the three batches, and a rerun completes it."""
    text, rows = _episodes_file(tmp_path, clock, 750)
    export = tmp_path / "export.jsonl"
    export.write_text(text, encoding="utf-8")
    died = subprocess.run(
        [sys.executable, "-c", KILLER, SRC, str(db_path), str(export), "300", where],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert died.returncode == -signal.SIGKILL, died.stderr
    assert len(_rows(store)) == 300  # three whole batches, nothing of the fourth
    assert "region" not in store.vault("a")  # the records go last
    with open(export, encoding="utf-8") as fp:
        report = import_jsonl(store, fp, batch=100)
    assert report.ok, report.to_dict()
    assert (report.imported, report.skipped_identical) == (450, 300)
    assert _rows(store) == rows  # exactly the file's rows, none twice
    assert sum(s.episode_count for s in store.scope("a").sessions()) == 750
    assert store.vault("a").get("region") == "eu-west-1"
    again = import_jsonl(store, io.StringIO(text), batch=100)
    assert (again.ok, again.imported, again.skipped_identical) == (True, 0, 750)
    assert os.path.exists(export)


def test_a_key_taken_between_the_check_and_its_batch_stops_the_import_there(store, clock, tmp_path):
    """Another writer takes a key of the file after the check: the batch holding that
    row is rolled back and the import stops with the conflict (its line named); the
    batches before it stay, whole."""
    with hivemem.open(tmp_path / "source.db", clock=clock, embedder="none") as source:
        for i in range(250):
            source.scope("a").save(f"fact number {i}", key=f"k{i}")
        text = _export(source)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if '"key": "k150"' in row)

    taken: list[str] = []

    def progress(count: int) -> None:
        if not taken:  # right after the first batch committed
            taken.append(store.scope("a").save("taken meanwhile", key="k150").id)

    report = import_jsonl(store, io.StringIO(text), progress=progress, batch=100)
    assert not report.ok and report.imported == 100
    assert [(p.line, p.message) for p in report.conflicts] == [
        (line, f"key 'k150' already holds active memory {taken[0]} in scope 'a'")
    ]  # fmt: skip
    assert len(_rows(store)) == 101  # the first batch and the writer's row


def test_a_terminal_sees_the_check_then_the_import(tmp_path, clock):
    """``hivemem import`` on a terminal: a bar for the check (the first pass), then one
    for the writes."""
    text, _ = _episodes_file(tmp_path, clock, 250)
    export = tmp_path / "export.jsonl"
    export.write_text(text, encoding="utf-8")
    done, shown = run_on_a_terminal(
        "--db", str(tmp_path / "t.db"), "import", str(export), "--no-embed"
    )
    assert done.returncode == 0 and b"imported 250 memories" in done.stdout
    assert shown.index("checking") < shown.index("importing")


def test_a_consolidation_cursor_survives_export_and_import(store, tmp_path):
    """A consolidation that stopped after its first batch keeps a cursor: the ``seq`` of
    the last episode it consumed, the source's numbering, which the importing store does
    not share. The copy's next run reads the episodes the source had not consumed (it
    read none: a read-only review), and a file with a bare cursor (written before) starts
    the session over instead of skipping episodes."""
    filler = [{"content": f"filler {i}", "session_id": "x", "role": "user"} for i in range(20)]
    store.scope("b").add_episodes(filler)
    mem = store.scope("a")
    turns = [
        mem.add_episode(f"Alice deployed service {i} to Berlin", "s", "user") for i in range(4)
    ]
    consumed = store.job_state.episodes("a", "s", 0, 10)[1][0]
    with store.atomic():
        store.job_state.set_session_state("a", "s", {"cursor": consumed, "facts": 0})
    text = _export(store, ["a"])
    with hivemem.open(tmp_path / "copy.db") as copy:
        assert import_jsonl(copy, io.StringIO(text)).ok
        state = copy.job_state.session_state("a", "s")
        left = copy.job_state.episodes("a", "s", int(state["cursor"]), 10)
        assert [m.id for _, m in left] == [t.id for t in turns[2:]]
        assert state["facts"] == 0 and "consumed" not in state
        assert import_jsonl(copy, io.StringIO(text)).ok  # again: the same state, present
        assert copy.job_state.session_state("a", "s") == state
    lines = text.splitlines()
    for n, line in enumerate(lines):
        record = json.loads(line)
        if record.get("record") == "session":
            record["attributes"] = json.dumps({"consolidation": {"cursor": consumed, "facts": 0}})
            lines[n] = json.dumps(record)
    with hivemem.open(tmp_path / "old-file.db") as copy:
        assert import_jsonl(copy, io.StringIO("\n".join(lines) + "\n")).ok
        state = copy.job_state.session_state("a", "s")
        assert state == {"facts": 0}  # the bare cursor is another store's: dropped
        assert len(copy.job_state.episodes("a", "s", 0, 10)) == 4


def test_a_session_record_updates_a_session_the_store_holds_on_every_backend(store, tmp_path):
    """The import of a session's consolidation state into a store that already holds the
    session updates it: PostgreSQL refused the statement (``consolidated_at`` was
    ambiguous in the upsert), and its own export, read back, was no longer "present"
    once the state's JSON was written compactly (found by a read-only review)."""
    with hivemem.open(tmp_path / "src.db") as src:
        src.scope("team-a").add_episode("Ana moved to Lisbon", "s1", "user")
        with src.atomic():
            src.job_state.set_session_state("team-a", "s1", {"facts": 3, "method": "x"})
        text = _export(src)
    store.scope("team-a").add_episode("Ana moved to Lisbon", "s1", "user")
    report = import_jsonl(store, io.StringIO(text))
    assert report.ok and report.records == {"session": 1}
    assert store.job_state.session_state("team-a", "s1") == {"facts": 3, "method": "x"}
    again = import_jsonl(store, io.StringIO(_export(store)))
    assert again.ok and again.records == {}, again.records  # the same state: present


def test_a_session_row_of_no_episodes_is_new_to_its_first_episode_on_every_backend(store, clock):
    """A session row without episodes (a restored backup's) is new when its first
    episode comes, on both backends (PostgreSQL said known: found by a read-only review)."""
    when = clock()
    with store.atomic():
        row = {"scope": "team-a", "session_id": "s9", "consolidated_at": None, "attributes": "{}"}
        store.backup_rows.put_session(row, clock().isoformat())
        assert store.session_rows.note_session("team-a", "s9", when, when, 1) is True
        assert store.session_rows.note_session("team-a", "s9", when, when, 1) is False


def test_a_cursor_never_skips_an_episode_when_seq_and_id_orders_differ(tmp_path):
    """An import or a copy numbers a session's episodes in id order; the source's order
    (``seq``) may differ (writers that overlap make ids before the write lock; here an
    import of a file not in id order). The carried cursor then counts only the episodes
    in id order that were all consumed: the target may read some again, never skip one
    (it had skipped two: a read-only review)."""
    with hivemem.open(tmp_path / "src.db", embedder="none") as src:
        turns = [
            src.scope("a").add_episode(f"Alice shipped build {i}", "s", "user") for i in range(4)
        ]
        text = _export(src)
    head, *rest = text.splitlines()
    rows = [line for line in rest if "record" not in json.loads(line)]
    records = [line for line in rest if "record" in json.loads(line)]
    reversed_file = "\n".join([head, *reversed(rows), *records]) + "\n"
    with hivemem.open(tmp_path / "a.db", embedder="none") as a:
        assert import_jsonl(a, io.StringIO(reversed_file)).ok
        order = a.job_state.episodes("a", "s", 0, 10)
        assert [m.id for _, m in order] == [t.id for t in reversed(turns)]
        with a.atomic():  # a stopped run consumed a's first two
            a.job_state.set_session_state("a", "s", {"cursor": order[1][0], "facts": 0})
        unread = {m.id for _, m in order[2:]}
        with hivemem.open(tmp_path / "b.db", embedder="none") as b:
            assert import_jsonl(b, io.StringIO(_export(a))).ok
            cursor = int(b.job_state.session_state("a", "s").get("cursor", 0))
            assert unread <= {m.id for _, m in b.job_state.episodes("a", "s", cursor, 10)}
        with hivemem.open(tmp_path / "c.db", embedder="none") as c:
            copy_store(a, c)
            cursor = int(c.job_state.session_state("a", "s").get("cursor", 0))
            assert unread <= {m.id for _, m in c.job_state.episodes("a", "s", cursor, 10)}


def test_session_attributes_that_are_not_a_json_object_travel_as_they_are(tmp_path):
    """A session record whose attributes are not JSON, or whose cursor is not a number,
    is exported and imported without a traceback (the cursor's translation raised:
    a read-only review); a cursor that is not a number is dropped (the session starts
    over), text that is not JSON is kept as it is."""
    with hivemem.open(tmp_path / "src.db", embedder="none") as src:
        src.scope("a").add_episode("Bob shipped build 2", "t", "user")
        with src.atomic():
            src.job_state.set_session_state("a", "t", {"cursor": None, "facts": 1})
        text = _export(src)
    with hivemem.open(tmp_path / "dst.db", embedder="none") as dst:
        report = import_jsonl(dst, io.StringIO(text))
        assert report.ok and report.records == {"session": 1}
        assert dst.job_state.session_state("a", "t") == {"facts": 1}
    lines = text.splitlines()
    for n, line in enumerate(list(lines)):
        record = json.loads(line)
        if record.get("record") == "session":
            lines[n] = json.dumps({**record, "attributes": "not json"})
    with hivemem.open(tmp_path / "other.db", embedder="none") as other:
        report = import_jsonl(other, io.StringIO("\n".join(lines) + "\n"))
        assert report.ok and report.records == {"session": 1}
        assert other.backup_rows.sessions(["a"])[0]["attributes"] == "not json"
