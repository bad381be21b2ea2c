"""The notes folder: files become ``note`` memories keyed by path, re-indexed by hash,
removed files soft-deleted, bad files skipped with a reason; ``--watch`` with a real
file change."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from datetime import timedelta

import pytest
from click.testing import CliRunner

import hivemem
from hivemem import InvalidInput, MissingDependency, Settings
from hivemem.frontends.cli import main
from hivemem.lifecycle.notes import index_folder, note_key, watch_folder


@pytest.fixture
def notes(tmp_path):
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "deploy.md").write_text("# Deploys\n\nNever deploy on Fridays.\n")
    (folder / "sub" / "kafka.txt").write_text("Kafka brokers run on port 9092.\n")
    (folder / ".hidden.md").write_text("hidden files are not notes")
    (folder / "image.png").write_bytes(b"\x89PNG not a note")
    return folder


def _counts(report):
    d = report.to_dict()
    return (d["added"], d["updated"], d["unchanged"], d["removed"], len(d["skipped"]))


def test_files_become_notes_keyed_by_path(mem, notes, clock):
    report = index_folder(mem, notes)
    assert _counts(report) == (2, 0, 0, 0, 0)
    assert report.files == 2
    note = mem.get(note_key(notes.resolve() / "deploy.md", 200))
    assert note.kind.value == "note"
    assert note.source == "file_index"
    assert note.type.value == "reference"
    assert note.content == "# Deploys\n\nNever deploy on Fridays.\n"
    assert note.attributes["path"] == "deploy.md"
    assert note.expires_at - note.created_at == timedelta(days=30)
    hits = mem.search("which port do kafka brokers use")
    assert hits[0].memory.attributes["path"] == "sub/kafka.txt"


def test_reindex_skips_unchanged_supersedes_changed_and_removes_deleted(mem, notes):
    index_folder(mem, notes)
    assert _counts(index_folder(mem, notes)) == (0, 0, 2, 0, 0)
    # Touched but identical: unchanged (by hash), nothing written.
    os.utime(notes / "deploy.md", ns=(1, 1))
    assert _counts(index_folder(mem, notes)) == (0, 0, 2, 0, 0)
    (notes / "sub" / "kafka.txt").write_text("Kafka brokers moved to port 9093.\n")
    (notes / "deploy.md").unlink()
    (notes / "new.md").write_text("A new note about Redis.")
    assert _counts(index_folder(mem, notes)) == (1, 1, 0, 1, 0)
    key = note_key(notes.resolve() / "sub" / "kafka.txt", 200)
    versions = mem.history(key)
    assert [v.status.value for v in versions] == ["superseded", "active"]
    assert versions[1].supersede_reason == "file changed"
    assert [h.memory.content for h in mem.search("kafka port")][:1] == [
        "Kafka brokers moved to port 9093.\n"
    ]
    assert mem.search("Fridays") == []  # the removed file's note is soft-deleted
    assert len(mem.list(kind="note")) == 2
    assert mem.stats()["total"] == 4  # nothing lost: 2 active, 1 superseded, 1 deleted


def test_bad_files_are_skipped_with_a_reason_and_keep_their_notes(db_path, clock, notes):
    settings = Settings().replace(notes_max_file_bytes=100)
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        index_folder(mem, notes)
        (notes / "deploy.md").write_bytes(b"caf\xe9 latin-1, not UTF-8")
        (notes / "big.md").write_text("x" * 101)
        (notes / "empty.txt").write_text("  \n")
        report = index_folder(mem, notes)
        assert _counts(report) == (0, 0, 1, 0, 3)
        assert dict(report.skipped) == {
            "big.md": "101 bytes is over the limit of 100 (setting notes_max_file_bytes)",
            "deploy.md": "not UTF-8 text (byte 3)",
            "empty.txt": "empty",
        }
        # The earlier note of the file that went bad is still there.
        assert "Fridays" in mem.get(note_key(notes.resolve() / "deploy.md", 200)).content


def test_missing_folder_or_a_file_is_a_clear_error(mem, tmp_path):
    with pytest.raises(InvalidInput, match="does not exist"):
        index_folder(mem, tmp_path / "nope")
    (tmp_path / "f.md").write_text("x")
    with pytest.raises(InvalidInput, match="is not a folder"):
        index_folder(mem, tmp_path / "f.md")


def test_an_expired_note_of_an_unchanged_file_is_saved_again(mem, notes, clock):
    index_folder(mem, notes)
    clock.advance(days=31)
    assert mem.search("Fridays") == []  # expired
    assert _counts(index_folder(mem, notes)) == (0, 2, 0, 0, 0)
    assert mem.search("Fridays")[0].memory.supersede_reason == "expired, file unchanged"


def test_credentials_in_notes_follow_the_policy(db_path, clock, notes):
    (notes / "keys.md").write_text("aws key AKIAIOSFODNN7EXAMPLE for the backups")
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        index_folder(store.scope("a"), notes)
        note = store.scope("a").get(note_key(notes.resolve() / "keys.md", 200))
        assert note.content == "aws key [REDACTED:aws-access-key] for the backups"
        assert _counts(index_folder(store.scope("a"), notes)) == (0, 0, 3, 0, 0)  # by hash
    settings = Settings().replace(credential_policy="reject")
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        report = index_folder(store.scope("b"), notes)
        assert _counts(report) == (2, 0, 0, 0, 1)
        assert report.skipped[0][0] == "keys.md"
        assert "contains a credential" in report.skipped[0][1]


def test_folders_are_per_scope_and_a_note_can_be_promoted(store, notes):
    agent = store.scope("agent-1", shared=["team"])
    index_folder(agent, notes)
    assert store.scope("agent-2").search("Fridays") == []
    note = agent.search("Fridays")[0].memory
    shared = agent.promote(note.id, to="team")
    assert store.scope("team").get(shared.id).attributes["promoted_from"]["id"] == note.id
    # Indexing the same folder into another scope is independent of the first.
    assert _counts(index_folder(store.scope("agent-2"), notes)) == (2, 0, 0, 0, 0)


def test_long_paths_get_a_bounded_unique_key(tmp_path):
    deep = tmp_path / ("d" * 120) / ("e" * 120) / "note.md"
    key = note_key(deep, 200)
    assert len(key) <= 200 and key.endswith("note.md")
    assert key != note_key(deep.with_name("other.md"), 200)


def test_watch_reindexes_on_a_real_file_change(mem, notes):
    pytest.importorskip("watchfiles")
    reports, stop = [], threading.Event()
    seen = threading.Condition()

    def on_report(report):
        with seen:
            reports.append(report)
            seen.notify_all()

    worker = threading.Thread(
        target=watch_folder,
        args=(mem, notes),
        kwargs={"on_report": on_report, "stop_event": stop, "debounce_ms": 50},
        daemon=True,
    )
    worker.start()
    try:
        with seen:
            assert seen.wait_for(lambda: len(reports) >= 1, timeout=10)
        # The watcher starts right after the first pass: a change made before it is
        # watching is not seen, so change the file until a pass reports it (at most 15 s).
        deadline = time.monotonic() + 15
        for port in range(9094, 9200):
            (notes / "sub" / "kafka.txt").write_text(f"Kafka now listens on {port}.\n")
            with seen:
                if seen.wait_for(lambda: any(r.updated for r in reports[1:]), timeout=1):
                    break
            assert time.monotonic() < deadline, "no pass saw the change"
    finally:
        stop.set()
        worker.join(timeout=10)
    assert not worker.is_alive()
    assert _counts(reports[0]) == (2, 0, 0, 0, 0)
    # The note holds one of the changes (a later one may still be on its way).
    assert mem.search("kafka listens")[0].memory.content.startswith("Kafka now listens on 9")


def test_watch_without_the_extra_names_the_install_command(mem, notes, monkeypatch):
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # import fails as if absent
    with pytest.raises(MissingDependency, match=r"pip install 'hivemem\[watch\]'"):
        watch_folder(mem, notes)


# ----------------------------------------------------------------------------- CLI


@pytest.fixture
def cli(db_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("HIVEMEM_") and name != "HIVEMEM_EMBEDDER":
            monkeypatch.delenv(name)
    runner = CliRunner()
    return lambda *args: runner.invoke(main, ["--db", str(db_path), "--scope", "a", *args])


def test_cli_index_prints_counts_and_warnings(cli, notes):
    (notes / "bad.md").write_bytes(b"\xff\xfe")
    first = cli("index", str(notes))
    assert first.exit_code == 0, first.output
    assert first.stdout.endswith("2 added, 0 updated, 0 unchanged, 0 removed, 1 skipped\n")
    assert "warning: skipped bad.md: not UTF-8 text (byte 0)" in first.stderr
    again = json.loads(cli("index", str(notes), "--json").stdout)
    assert (again["added"], again["unchanged"], again["skipped"][0]["path"]) == (0, 2, "bad.md")


def test_cli_index_errors(cli, tmp_path, monkeypatch):
    missing = cli("index", str(tmp_path / "nope"))
    assert missing.exit_code == 2
    assert "error: folder:" in missing.stderr and "does not exist" in missing.stderr
    monkeypatch.setitem(sys.modules, "watchfiles", None)
    no_extra = cli("index", str(tmp_path), "--watch")
    assert no_extra.exit_code == 5
    assert "pip install 'hivemem[watch]'" in no_extra.stderr
