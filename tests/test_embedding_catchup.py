"""Long embedding work shows honest progress and says what to do (issue 12, items 3-4):
reindex owns the work and its bar reaches its total, a finished store has nothing to do,
import finishes the embedding it caused, and doctor names a large queue with the command
to run."""

from __future__ import annotations

import io
import os

import pytest
from click.testing import CliRunner

import hivemem
from hivemem import Settings
from hivemem.frontends.cli import main
from hivemem.lifecycle.portability import export_jsonl
from hivemem.providers.embed import HashEmbedder


@pytest.fixture
def cli(monkeypatch):
    for name in list(os.environ):
        if name.startswith("HIVEMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")

    def invoke(*args, env=None):
        return CliRunner().invoke(main, list(args), env=env, prog_name="hivemem")

    return invoke


def _fill(path, n, clock, background=True):
    settings = Settings(embed_in_background=background)
    store = hivemem.open(path, clock=clock, embedder="hash", settings=settings)
    store.scope("a").add_episodes(
        [
            {
                "content": f"turn {i} about topic {i % 37} and item {i}",
                "session_id": "s",
                "role": "u",
            }
            for i in range(n)
        ]
    )
    return store


def test_reindex_owns_the_work_and_its_progress_reaches_the_total(db_path, clock):
    store = _fill(db_path, 3000, clock)
    store.flush()
    store.scope("a").add_episodes(  # the background worker is busy with these
        [{"content": f"late turn {i}", "session_id": "s", "role": "u"} for i in range(300)]
    )
    calls: list[tuple[int, int]] = []
    done = store.reindex(lambda d, t: calls.append((d, t)), force=True)
    assert calls, "no progress reported"
    assert calls[-1][0] == calls[-1][1] == done  # the bar ends at 100%
    assert done == 3300  # every chunk (one per turn), none taken by the worker
    assert all(t == calls[0][1] for _, t in calls)  # the total never moves
    assert store.indexer.pending() == 0
    store.close()


def test_reindex_on_a_finished_store_has_nothing_to_do(cli, db_path, clock):
    store = _fill(db_path, 50, clock)
    store.flush()
    store.close()
    result = cli("--db", str(db_path), "reindex")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("nothing to do: every chunk has its vector from hash-bow")
    forced = cli("--db", str(db_path), "reindex", "--force")
    assert forced.stdout.startswith("embedded 50 chunks")


def test_reindex_after_a_model_change_embeds_every_chunk(db_path, clock):
    _fill(db_path, 40, clock).close()
    store = hivemem.open(db_path, clock=clock, embedder=HashEmbedder(dimension=64))
    assert not store.indexer.enabled
    assert store.reindex() == 40
    assert store.reindex() == 0
    store.close()


def _export(tmp_path, clock, n):
    source = _fill(tmp_path / "source.db", n, clock)
    source.flush()
    path = tmp_path / "backup.jsonl"
    with path.open("w") as fp:
        export_jsonl(source, fp)
    source.close()
    return path


def test_import_finishes_the_embedding_it_caused(cli, tmp_path, clock):
    backup = _export(tmp_path, clock, 700)
    target = tmp_path / "target.db"
    result = cli("--db", str(target), "import", str(backup))
    assert result.exit_code == 0, result.output
    assert "imported 700 memories" in result.stdout
    assert "embedded 700 chunks with hash-bow" in result.stdout
    store = hivemem.open(target, clock=clock, embedder="hash")
    assert store.indexer.pending() == 0
    store.close()


def test_import_without_embedding_says_how_to_finish(cli, tmp_path, clock):
    backup = _export(tmp_path, clock, 300)
    env = {"HIVEMEM_EMBED_IN_BACKGROUND": "false"}
    result = cli("--db", str(tmp_path / "t.db"), "import", str(backup), "--no-embed", env=env)
    assert result.exit_code == 0, result.output
    assert "300 chunks wait for their vectors" in result.stderr
    assert "run `hivemem reindex`" in result.stderr


def test_doctor_names_a_large_queue_and_the_command(cli, db_path, clock):
    _fill(db_path, 1200, clock, background=False).close()
    env = {"HIVEMEM_EMBED_IN_BACKGROUND": "false"}
    result = cli("--db", str(db_path), "doctor", env=env)
    assert result.exit_code == 1, result.output
    line = next(x for x in result.stdout.splitlines() if "vectors" in x)
    assert line.startswith("FAIL") and "1200 queued" in line
    assert "run `hivemem reindex`" in result.stdout
    assert result.stderr == "error: 1 check(s) failed: vectors\n"
    assert cli("--db", str(db_path), "reindex", env=env).stdout.startswith("embedded 1200")
    assert cli("--db", str(db_path), "doctor", env=env).exit_code == 0


def test_search_note_gives_the_remedy(db_path, clock):
    # More queued than a search embeds itself (search_embed_max, 64): the rest wait.
    store = _fill(db_path, 70, clock, background=False)
    hits = store.scope("a").search("topic item")
    assert any("hivemem reindex" in note for note in hits[0].explain.notes)
    store.close()


def test_export_of_a_store_is_readable(tmp_path, clock):  # the helper writes a real export
    text = _export(tmp_path, clock, 3).read_text()
    assert io.StringIO(text).readline().startswith('{"hivemem_export"')
