"""The bench runs end to end on real files and reports sane figures.

Benchmarks are commands, not timed tests: nothing here asserts a latency.
"""

from __future__ import annotations

import itertools
import json

import pytest

import hivemem
from hivemem.bench import (
    BenchReport,
    CorpusGenerator,
    LatencyStats,
    format_table,
    run_bench,
)


def test_bench_runs_end_to_end_on_a_real_file(tmp_path):
    seen: list[tuple[str, int, int]] = []
    report = run_bench(
        sizes=(300,),
        queries=20,
        writes=50,
        batch=10,
        path=tmp_path,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    assert isinstance(report, BenchReport)
    [result] = report.results
    assert result.size == 300
    assert result.load_seconds > 0 and result.load_episodes_per_s > 0
    assert result.add_episode.count == 50
    assert result.add_episodes_batch.count == 5 and result.batch_size == 10
    assert result.search.count == 20
    for stats in (result.add_episode, result.add_episodes_batch, result.search):
        assert 0 < stats.p50_ms <= stats.p95_ms <= stats.p99_ms <= stats.max_ms
    assert result.add_episodes_per_episode_ms > 0
    assert 0 < result.search_mean_hits <= 10 and 0 <= result.search_empty < 20
    assert result.db_bytes > 0 and result.bytes_per_memory > 0

    # The store is a real, kept file holding the corpus and every measured write.
    db = tmp_path / "bench-300.db"
    with hivemem.open(db) as store:
        assert store.stats()["total"] == 300 + 20 + 50 + 5 * 10  # load, warm-up, writes
    assert {stage for stage, _, _ in seen} >= {"load 300", "add_episode", "search"}
    assert ("load 300", 300, 300) in seen

    data = report.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["results"][0]["search"]["count"] == 20

    table = format_table(report)
    assert "N=300" in table and "search p95 (ms)" in table and "add_episode p50 (ms)" in table


def test_bench_uses_a_temporary_folder_by_default():
    report = run_bench(sizes=(50, 80), queries=5, writes=5, batch=5)
    assert [r.size for r in report.results] == [50, 80]
    assert "N=50" in format_table(report) and "N=80" in format_table(report)


@pytest.mark.parametrize(
    "kwargs",
    [{"sizes": ()}, {"sizes": (0,)}, {"queries": 0}, {"writes": -1}, {"batch": True}],
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
