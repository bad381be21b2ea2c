"""The bench runs end to end on real files and reports sane figures.

Benchmarks are commands, not timed tests: nothing here asserts a latency.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
import sqlean as sqlite3

import hivemem
from hivemem import Settings
from hivemem.evaluation import bench
from hivemem.evaluation.bench import (
    BenchReport,
    CorpusGenerator,
    LatencyStats,
    format_table,
    run_bench,
)
from hivemem.providers.embed import HashEmbedder


def test_bench_runs_end_to_end_on_a_real_file(tmp_path):
    seen: list[tuple[str, int, int]] = []
    report = run_bench(
        sizes=(300,),
        queries=20,
        writes=50,
        batch=10,
        path=tmp_path,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
        model=False,
    )
    assert isinstance(report, BenchReport)
    assert report.model is None and report.vector_embedder == "hash-bow:384"
    [result] = report.results
    assert result.size == 300
    assert result.load_seconds > 0 and result.load_episodes_per_s > 0

    # Every loaded turn got its vector, by the worker during the load or by the flush.
    assert result.vectors == 300
    assert result.vectors_embedded_during_load + result.vectors_embedded_during_flush == 300
    assert result.vector_flush_seconds >= 0
    if result.vectors_embedded_during_flush:
        assert result.vector_indexing_per_s > 0
    assert result.load_incl_vectors_seconds >= result.load_seconds
    assert 0 < result.load_incl_vectors_episodes_per_s <= result.load_episodes_per_s

    assert result.add_episode.count == 50
    assert result.add_episodes_batch.count == 5 and result.batch_size == 10
    modes = (result.search_keyword_only, result.search_hybrid, result.vector_lane)
    assert [mode.latency.count for mode in modes] == [20, 20, 20]
    writes = (
        result.add_episode,
        result.add_episodes_batch,
        result.add_episode_keyword_only,
        result.add_episodes_batch_keyword_only,
    )
    for stats in (*writes, *(m.latency for m in modes)):
        assert 0 < stats.p50_ms <= stats.p95_ms <= stats.p99_ms <= stats.max_ms
    assert result.add_episodes_per_episode_ms > 0
    assert result.add_episode_keyword_only.count == 50
    assert result.add_episodes_batch_keyword_only.count == 5
    assert result.keyword_only_load_seconds > 0 and result.keyword_only_load_episodes_per_s > 0
    assert 0 < result.keyword_only_db_bytes < result.db_bytes  # no vectors in that one
    for mode in (result.search_keyword_only, result.search_hybrid):
        assert 0 < mode.mean_results <= 10 and 0 <= mode.no_result < 20
    # The vector lane returns its fetch (limit x candidate_multiplier) of the memories.
    assert result.vector_lane.mean_results == 30 and result.vector_lane.no_result == 0
    # Hybrid search runs the keyword lane too: it finds at least what keyword search finds.
    assert result.search_hybrid.no_result <= result.search_keyword_only.no_result
    assert result.db_bytes > 0 and result.bytes_per_memory > 0

    # The store is a real, kept file holding the corpus and every measured write (both
    # handles), each with its vector (the queue drained before the searches); the
    # keyword-only store of the load is gone.
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["bench-300.db"]
    db = tmp_path / "bench-300.db"
    total = 300 + 2 * (20 + 50 + 5 * 10)  # load, then warm-up and writes on both handles
    with hivemem.open(db, embedder=HashEmbedder(384)) as store:
        assert store.stats()["total"] == total
        assert store.vectors.count() == total
    stages = {stage for stage, _, _ in seen}
    assert stages >= {
        "load 300 keyword only",
        "load 300",
        "vectors 300",
        "add_episode",
        "add_episodes",
        "add_episode keyword only",
        "add_episodes keyword only",
        "search keyword only",
        "search hybrid",
        "vector lane",
    }
    assert "model" not in stages
    assert ("load 300", 300, 300) in seen

    data = report.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["model"] is None
    assert data["results"][0]["search_hybrid"]["latency"]["count"] == 20
    assert data["results"][0]["vector_indexing_per_s"] == result.vector_indexing_per_s

    table = format_table(report)
    for row in (
        "N=300",
        "add_episode p50 (ms)",
        "add_episode keyword only p99 (ms)",
        "load keyword only (episodes/s)",
        "bytes per memory keyword only",
        "load incl. vectors (s)",
        "vector indexing (hash) vectors/s",
        "search keyword only p95 (ms)",
        "search hybrid (hash) p95 (ms)",
        "vector lane p99 (ms)",
    ):
        assert row in table
    assert "embedding model" not in table


def _rows(db) -> dict[str, list[tuple]]:
    """Every row of every stored table of a closed bench store (vec0's shadow tables
    included, its virtual table aside), memory ids replaced by their insertion rank and
    the load's wall-clock stamps (the corpus' event times are in 2025) by a mark."""
    now = re.compile(r"^20(?!25)\d\d-\d\d-\d\dT")
    conn = sqlite3.connect(db)
    try:
        ids = {
            r[0]: f"m{i}"
            for i, r in enumerate(conn.execute("SELECT id FROM memories ORDER BY rowid"))
        }

        def plain(value):
            if isinstance(value, str):
                return ids.get(value, "<now>" if now.match(value) else value)
            return value

        tables = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE '%VIRTUAL%'"
        ).fetchall()
        return {
            name: sorted(
                (tuple(plain(v) for v in row) for row in conn.execute(f'SELECT * FROM "{name}"')),
                key=repr,
            )
            for (name,) in tables
        }
    finally:
        conn.close()


def test_bulk_load_builds_the_store_the_live_load_builds(tmp_path):
    """One load without an embedder, then one flush, leaves the same rows, keyword index
    (FTS5's segments byte for byte) and vectors as the load with the worker beside it."""
    settings = Settings().replace(consolidate_on_session_switch=False)
    generator = CorpusGenerator(5)
    live, bulk = tmp_path / "live.db", tmp_path / "bulk.db"
    seen: list[tuple[str, int, int]] = []
    bench._load(live, 2_500, generator, settings, bench._quiet)
    plain, load = bench._load_bulk(
        bulk, 2_500, generator, settings, lambda *args: seen.append(args)
    )
    assert load["vectors"] == 2_500 and load["before_flush"] == 0
    assert plain["load_ns"] == load["load_ns"] > 0 and plain["db_bytes"] > 0
    assert seen[-1] == ("vectors 2,500", 2_500, 2_500)
    expected, got = _rows(live), _rows(bulk)
    assert len(expected["memories"]) == len(expected["chunk_vectors_rowids"]) == 2_500
    assert expected["chunks_fts_data"] and expected["chunk_vectors_vector_chunks00"]
    assert got == expected


def test_bench_with_bulk_load_loads_once(tmp_path):
    report = run_bench(
        sizes=(200,), queries=5, writes=5, batch=5, path=tmp_path, model=False, bulk_load=True
    )
    [result] = report.results
    assert report.bulk_load and report.to_dict()["bulk_load"] is True
    assert result.vectors_embedded_during_load == 0
    assert result.vectors_embedded_during_flush == result.vectors == 200
    assert result.load_seconds == result.keyword_only_load_seconds > 0
    assert 0 < result.keyword_only_db_bytes < result.db_bytes
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["bench-200.db"]
    for mode in (result.search_keyword_only, result.search_hybrid, result.vector_lane):
        assert mode.latency.count == 5
    assert "Bulk load: the corpus loaded once" in format_table(report)


def test_bench_measures_the_embedding_model_once_per_run():
    seen: list[str] = []
    report = run_bench(
        sizes=(30, 40),
        queries=3,
        writes=3,
        batch=3,
        progress=lambda stage, done, total: seen.append(stage),
        model_sentences=20,
        model_queries=5,
    )
    model = report.model
    assert model is not None and model.model == "all-MiniLM-L6-v2-int8:384"
    assert [m.model for m in report.models] == [
        "all-MiniLM-L6-v2-int8:384",
        "paraphrase-MiniLM-L3-v2-int8:384",
    ]
    assert all(m.ingest_per_s > 0 and m.query_embedding.count == 5 for m in report.models)
    assert model.first_call_seconds > 0 and model.threads >= 1
    batch = Settings().embed_batch_size  # the worker's batch setting
    assert model.sentences == 20 and model.batch_size == batch
    assert model.sentences_per_s > 0 and model.sentences_seconds > 0
    assert model.embed_batch.count == 1  # 20 sentences fit one batch
    assert model.query_embedding.count == 5
    assert 0 < model.query_embedding.p50_ms <= model.query_embedding.p95_ms
    assert seen[0] == "model" and seen.count("model") >= 2  # first, before any load
    table = format_table(report)
    assert table.count("all-MiniLM-L6-v2-int8:384 (default)") == 1
    assert table.count("paraphrase-MiniLM-L3-v2-int8:384") == 1
    assert "ingest with embeddings, 20 turns (memories/s)" in table
    assert "query embedding p95 (ms)" in table and "20 sentences" in table
    assert report.to_dict()["model"]["query_embedding"]["count"] == 5


def test_bench_uses_a_temporary_folder_by_default():
    report = run_bench(sizes=(50, 80), queries=5, writes=5, batch=5, model=False)
    assert [r.size for r in report.results] == [50, 80]
    assert "N=50" in format_table(report) and "N=80" in format_table(report)


def test_bench_reports_the_settings_it_was_given():
    settings = Settings().replace(vector_pool=50, embedder="local")
    report = run_bench(sizes=(40,), queries=3, writes=3, batch=3, settings=settings, model=False)
    assert report.settings_changed == {"vector_pool": 50}  # the bench picks the embedders
    assert "settings changed: vector_pool=50" in format_table(report)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sizes": ()},
        {"sizes": (0,)},
        {"queries": 0},
        {"writes": -1},
        {"batch": True},
        {"model_sentences": 0},
        {"model_queries": 1.5},
    ],
)
def test_bench_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        run_bench(**{"sizes": (10,), **kwargs})


def test_corpus_is_deterministic_conversational_and_streamed():
    a, b = CorpusGenerator(seed=1), CorpusGenerator(seed=1)
    first = list(itertools.islice(a.episodes(10**9), 50))  # lazy: a billion is fine
    assert first == list(itertools.islice(b.episodes(10**9), 50))
    assert first != list(itertools.islice(CorpusGenerator(seed=2).episodes(50), 50))
    for item in first:
        assert 10 <= len(item["content"].split()) <= 45
        assert item["role"] in {"user", "assistant"}
    sessions = {item["session_id"] for item in first}
    assert 1 < len(sessions) < 20  # turns come in sessions of ~20
    questions = a.questions(30)
    assert questions == b.questions(30)
    assert all(q.endswith("?") for q in questions)


def test_latency_stats_use_nearest_rank_percentiles():
    stats = LatencyStats.of([i * 1_000_000 for i in range(1, 101)])  # 1..100 ms
    assert (stats.p50_ms, stats.p95_ms, stats.p99_ms, stats.max_ms) == (50, 95, 99, 100)
    assert stats.mean_ms == 50.5
    assert LatencyStats.of([]).count == 0
