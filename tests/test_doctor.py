"""``doctor`` finds a deliberately damaged store, and ``repair`` fixes what can be
re-derived without ever dropping a memory."""

from __future__ import annotations

import io
import json
import threading

import pytest
import sqlean as sqlite3  # the file holds vec0 shadow tables (STRICT): a current SQLite reads them
from click.testing import CliRunner

import hivemem
from hivemem import Settings
from hivemem.evaluation import doctor
from hivemem.frontends.cli import main
from hivemem.lifecycle.portability import export_jsonl, import_jsonl
from test_vectors import ConceptEmbedder

NAMES = [
    "integrity",
    "schema",
    "keyword_index",
    "chunks",
    "supersede_links",
    "active_keys",
    "vectors",
    "journal_mode",
    "sessions",
    "maintenance",
    "driver",
    "file_size",
    "memories",
]
# A server has no file, FTS5 or journal: its own checks instead (tests/test_postgres_ops.py)
SERVER_NAMES = [
    "server",
    "pgvector",
    "schema",
    "indexes",
    "keyword_index",
    "chunks",
    "supersede_links",
    "active_keys",
    "vectors",
    "sessions",
    "maintenance",
    "memories",
]


def _sabotage(db_path, sql, *params):
    """Damage the file behind HiveMem's back, as a crash or a stray tool could (on
    PostgreSQL: the database, through a connection of its own)."""
    if str(db_path).startswith("postgresql"):
        import psycopg
        from psycopg import errors

        for attempt in range(5):  # the store's embedding worker may hold the same rows
            try:
                with psycopg.connect(str(db_path), autocommit=True) as pg:
                    pg.execute(sql.replace("?", "%s"), params)
                return
            except errors.DeadlockDetected:  # the server chose this side: do it again
                if attempt == 4:
                    raise
        return
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute(sql, params)
    conn.close()


def test_a_healthy_store_passes_every_check(store, mem):
    mem.save("Never deploy on Fridays", key="deploy")
    mem.add_episode("hello", "s1", "user")
    report = doctor.diagnose(store)
    assert report.ok, report.failed
    on_server = str(store.location).startswith("postgresql")
    assert [c.name for c in report.checks] == (SERVER_NAMES if on_server else NAMES)
    by_name = {c.name: c for c in report.checks}
    assert by_name["memories"].detail == "2 memories (2 active)"
    assert by_name["sessions"].detail == "1 sessions not consolidated yet"
    if not on_server:
        assert by_name["journal_mode"].detail == "wal"
    assert all(c.fix == "" for c in report.checks)
    assert report.to_dict()["ok"] is True


def test_a_search_then_writes_leave_the_integrity_check_clean(store, mem):
    """Found while linking cross-references on save (a keyword read per save): a read
    connection that searched the keyword index, then many writes, made ``PRAGMA
    integrity_check`` on that connection report "malformed inverted index" for a sound
    file (the writer and a fresh connection said ok); the inspector showed the store
    as damaged. The check now runs on the writer."""
    for i in range(3):
        mem.save(f"Caroline moved to Berlin, note {i}", kind="fact")
    mem.search("Caroline Berlin")
    for n in range(60):
        mem.add_episode(f"turn of session {n}", session_id=f"s-{n:02d}", role="user")
    report = doctor.diagnose(store)
    assert report.ok, report.failed


def test_missing_chunks_are_found_and_repaired(store, mem, db_path):
    kept = mem.save("The build server is called hopper", key="build")
    mem.save("Another fact")
    _sabotage(db_path, "DELETE FROM chunks WHERE memory_id = ?", kept.id)
    assert mem.search("hopper") == []

    report = doctor.diagnose(store)
    assert not report.ok
    assert [(c.name, c.detail, c.fix) for c in report.failed] == [
        (
            "chunks",
            "1 memories without chunks (not keyword-searchable)",
            "run `hivemem doctor --repair`",
        )
    ]

    before = [m.to_dict() for m in store.iter_memories()]
    fixed = doctor.repair(store)
    assert fixed.to_dict() == {
        "memories_before": 2,
        "memories_after": 2,
        "unchunked_before": 1,
        "unchunked_after": 0,
        "rebuilt": 1,
        "index_rebuilt": False,
        "vector_index_built": False,
        "problems": [],
    }
    assert [m.to_dict() for m in store.iter_memories()] == before
    assert doctor.diagnose(store).ok
    assert mem.search("hopper")[0].memory.id == kept.id


def test_broken_links_and_duplicate_active_keys_are_reported(store, mem, db_path):
    first = mem.save("v1", key="k")
    mem.save("v2", key="k", supersede_reason="newer")
    _sabotage(db_path, "UPDATE memories SET supersedes_id = 'missing' WHERE id != ?", first.id)
    _sabotage(db_path, "DROP INDEX memories_active_key")
    _sabotage(db_path, "UPDATE memories SET status = 'active' WHERE id = ?", first.id)
    failed = {c.name: c for c in doctor.diagnose(store).failed}
    assert set(failed) == {"supersede_links", "active_keys"}
    assert failed["supersede_links"].detail == "1 memories supersede a row that does not exist"
    assert failed["active_keys"].fix
    assert doctor.repair(store).memories_after == 2  # repair touches no memory row


def test_cli_doctor_exit_code_and_repair(db_path):
    runner = CliRunner()
    db = ["--db", str(db_path)]
    assert runner.invoke(main, [*db, "add", "The build server is called hopper"]).exit_code == 0
    healthy = runner.invoke(main, [*db, "doctor"])
    assert healthy.exit_code == 0 and "FAIL" not in healthy.output

    _sabotage(db_path, "DELETE FROM chunks")
    broken = runner.invoke(main, [*db, "doctor"])
    assert broken.exit_code == 1
    assert "FAIL  chunks" in broken.output and "doctor --repair" in broken.output

    repaired = runner.invoke(main, [*db, "doctor", "--repair"])
    assert repaired.exit_code == 0, repaired.output
    assert (
        "repair: memories 1 before, 1 after; memories without chunks 1 → 0 (1 rebuilt)"
        in repaired.output
    )
    assert "FAIL" not in repaired.output
    found = runner.invoke(main, [*db, "search", "hopper", "--json"])
    assert len(json.loads(found.stdout)) == 1


# Removes a chunk from the FTS index under the wrong words: the index no longer matches.
_UNINDEX_WRONG_WORDS = (
    "INSERT INTO chunks_fts (chunks_fts, rowid, text) "
    "SELECT 'delete', id, 'words that were never indexed' FROM chunks WHERE memory_id = ?"
)


def test_a_damaged_keyword_index_is_reported_and_export_import_rebuilds_it(
    store, mem, db_path, tmp_path
):
    kept = mem.save("The build server is called hopper")
    _sabotage(db_path, _UNINDEX_WRONG_WORDS, kept.id)
    failed = doctor.diagnose(store).failed
    assert [c.name for c in failed] == ["keyword_index"]
    assert "--repair" in failed[0].fix

    dump = io.StringIO()
    export_jsonl(store, dump)
    with hivemem.open(tmp_path / "rebuilt.db") as rebuilt:
        assert import_jsonl(rebuilt, io.StringIO(dump.getvalue())).ok
        assert doctor.diagnose(rebuilt).ok
        assert rebuilt.scope("team-a").search("hopper")[0].memory.id == kept.id


def test_repair_rebuilds_a_damaged_keyword_index(store, mem, db_path):
    kept = mem.save("The build server is called hopper")
    _sabotage(db_path, _UNINDEX_WRONG_WORDS, kept.id)
    assert not doctor.diagnose(store).ok
    fixed = doctor.repair(store)
    assert fixed.index_rebuilt and fixed.memories_before == fixed.memories_after
    assert doctor.diagnose(store).ok
    assert mem.search("hopper")[0].memory.id == kept.id


def test_a_corrupted_file_gives_a_store_error_not_a_traceback(tmp_path):
    path = tmp_path / "c.db"
    with hivemem.open(path, embedder="hash") as s:
        m = s.scope("a")
        for i in range(300):
            m.save(f"memory number {i} " + "padding text " * 40)
    data = bytearray(path.read_bytes())
    for offset in range(4096 * 3, len(data), 4096):  # trash every page after the first few
        data[offset + 100 : offset + 400] = b"\xff" * 300
    path.write_bytes(bytes(data))
    with pytest.raises(hivemem.StoreError), hivemem.open(path) as s:
        s.scope("a").search("memory number")
        s.scope("a").list()


def test_doctor_reports_the_vector_lane_and_a_model_change(tmp_path):
    path = tmp_path / "v.db"
    with hivemem.open(path, embedder="hash") as store:
        store.scope("a").save("the build server is hopper", wait=True)
        check = {c.name: c for c in doctor.diagnose(store).checks}["vectors"]
        assert check.ok and check.detail == "1 chunk vectors by hash-bow:256; 0 queued"
    with hivemem.open(path, embedder=hivemem.providers.embed.HashEmbedder(dimension=32)) as store:
        check = {c.name: c for c in doctor.diagnose(store).checks}["vectors"]
        assert not check.ok and "hash-bow:256" in check.detail
        assert check.fix == "run `hivemem reindex`"
        assert store.reindex() == 1
        assert {c.name: c for c in doctor.diagnose(store).checks}["vectors"].ok
    with hivemem.open(path, embedder="none") as store:
        check = {c.name: c for c in doctor.diagnose(store).checks}["vectors"]
        assert check.ok and "keyword and entity lanes only" in check.detail


class EndpointDown(ConceptEmbedder):
    """Every call raises what a client library might: not a HiveMemError, two lines."""

    def embed_batch(self, texts):
        raise RuntimeError("connection refused\n  while posting to /v1/embeddings")


class WrongSize(ConceptEmbedder):
    """Answers with vectors one dimension short of the size it declares."""

    def embed_batch(self, texts):
        return [vector[:-1] for vector in super().embed_batch(texts)]


@pytest.mark.parametrize(
    ("embedder", "said"),
    [
        (EndpointDown(), "connection refused while posting to /v1/embeddings"),
        (WrongSize(), "one text sent, 1 vectors of 31 dimensions returned (expected one of 32)"),
    ],
)
def test_doctor_embeds_a_text_itself_and_any_failure_is_the_finding(db_path, embedder, said):
    # Nothing has tried the embedder yet (no worker, no search): doctor finds out itself.
    quiet = Settings(embed_in_background=False)
    with hivemem.open(db_path, embedder=embedder, settings=quiet) as store:
        store.scope("a").save("the build server is hopper")
        assert store.indexer.last_error is None
        check = {c.name: c for c in doctor.diagnose(store).checks}["vectors"]
    assert not check.ok
    assert (
        check.detail
        == f"0 chunk vectors by concept-test:32; 1 queued; the embedder cannot embed: {said}"
    )
    assert (
        check.fix
        == "check the embedder (endpoint, model); queued chunks are embedded once it works"
    )


def test_a_failed_maintenance_run_is_reported_with_its_error(db_path, clock):
    from hivemem.providers.llm import OpenAIChatLLM

    unreachable = OpenAIChatLLM("m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=1)
    with hivemem.open(db_path, clock=clock, embedder="none", llm=unreachable) as store:
        check = {c.name: c for c in doctor.diagnose(store).checks}["maintenance"]
        assert check.ok and check.detail.startswith("no job has run yet")
        store.scope("a").add_episodes(
            [{"content": "I moved to Lisbon last month", "session_id": "s1", "role": "user"}]
        )
        hivemem.run_job(store, "decay", "a")
        hivemem.run_job(store, "consolidate", "a", session_id="s1")
        check = {c.name: c for c in doctor.diagnose(store).checks}["maintenance"]
        assert not check.ok
        assert (
            check.detail.startswith("consolidate failed at")
            and "could not be reached" in check.detail
        )
        assert "hivemem maintain consolidate" in check.fix
        hivemem.run_job(store, "consolidate", "a")  # no ended session: a clean run
        assert {c.name: c for c in doctor.diagnose(store).checks}["maintenance"].ok


class Hangs(ConceptEmbedder):
    """An endpoint that accepts the request and never answers (until released)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def embed_batch(self, texts):
        self.release.wait(30)
        return super().embed_batch(texts)


def test_an_embedder_that_never_answers_is_a_finding_not_a_hang(db_path, monkeypatch):
    monkeypatch.setattr(doctor, "PROBE_SECONDS", 0.2)
    hangs = Hangs()
    quiet = Settings(embed_in_background=False)
    try:
        with hivemem.open(db_path, embedder=hangs, settings=quiet) as store:
            check = {c.name: c for c in doctor.diagnose(store).checks}["vectors"]
            assert not check.ok
            assert check.detail.endswith(
                "the embedder cannot embed: no answer within 0.2 s "
                "(a model loading for the first time may take that "
                "long: run doctor again)"
            )
            assert check.fix.startswith("check the embedder (endpoint, model)")
    finally:
        hangs.release.set()
