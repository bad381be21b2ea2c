"""Embedders: the registry, the deterministic fake, and the real offline default."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

import hivemem.providers.embed as embed
from hivemem import InvalidInput, MissingDependency, StoreError
from hivemem.providers.embed import Embedder, HashEmbedder, LocalEmbedder, get_embedder
from hivemem.retrieval.ranking import cosine


def test_registry_finds_builtins_and_rejects_unknown_names():
    assert isinstance(get_embedder("hash"), HashEmbedder)
    assert isinstance(get_embedder("local"), LocalEmbedder)
    with pytest.raises(InvalidInput, match="unknown embedder 'nope'"):
        get_embedder("nope")


def test_hash_embedder_is_deterministic_and_normalised():
    e = HashEmbedder(dimension=32)
    assert isinstance(e, Embedder) and e.identity == "hash-bow:32"
    a, b, c = e.embed_batch(["the red fox", "the red fox", "quantum chromodynamics"])
    assert a == b and len(a) == 32
    assert sum(x * x for x in a) == pytest.approx(1.0)
    assert cosine(a, b) > cosine(a, c)
    with pytest.raises(InvalidInput):
        HashEmbedder(dimension=1)


OFFLINE_SCRIPT = """
import json
from hivemem.providers.embed import LocalEmbedder
e = LocalEmbedder()
vectors = e.embed_batch(["The cat sat on the mat", "A cat is sitting on a mat",
                         "Stock prices fell sharply on Monday"])
print(json.dumps({"identity": e.identity, "vectors": [list(map(float, v)) for v in vectors]}))
"""


def test_local_embedder_loads_offline_and_embeds_meaningfully():
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-c", OFFLINE_SCRIPT]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-n", *command]  # no network at all, not even loopback
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["identity"] == "paraphrase-MiniLM-L3-v2-int8:384"
    cat, cat2, stocks = out["vectors"]
    assert len(cat) == 384 and sum(x * x for x in cat) == pytest.approx(1.0, abs=1e-4)
    assert cosine(cat, cat2) > 0.8 > cosine(cat, stocks)


# int8 activations are quantised per batch, so a text's vector moves a little with its
# batch companions (cosine > 0.99); fp32 gives the same vector in any batch.
@pytest.mark.parametrize(("quantize", "tolerance"), [(False, 1e-5), (True, 1e-2)])
def test_batching_by_length_keeps_the_input_order(quantize, tolerance):
    e = LocalEmbedder(batch_size=2, quantize=quantize)
    texts = ["a much longer sentence about the Berlin office and its people", "hi", "mid one"]
    together = e.embed_batch(texts)
    alone = [e.embed_batch([t])[0] for t in texts]
    for x, y in zip(together, alone, strict=True):
        assert cosine(x, y) == pytest.approx(1.0, abs=tolerance)
    assert e.embed_batch([]) == []


def test_a_tampered_vocabulary_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "vocab.txt"
    bad.write_bytes(embed.VOCAB_FILE.read_bytes() + b"extra\n")
    monkeypatch.setattr(embed, "VOCAB_FILE", bad)
    with pytest.raises(StoreError, match="sha256"):
        LocalEmbedder().embed_batch(["x"])


def test_a_tampered_model_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(embed, "MODEL_SHA256", "0" * 64)
    with pytest.raises(StoreError, match="pinned sha256"):
        LocalEmbedder.model_path()


def test_the_int8_model_is_made_once_cached_with_its_checksum_and_remade_if_damaged(tmp_path):
    e = LocalEmbedder(cache_dir=tmp_path)
    path = e.quantized_path()
    digest = path.with_name(path.name + ".sha256")
    assert path.parent == tmp_path and digest.read_text().strip() == embed.file_sha256(path)
    assert path.stat().st_size < LocalEmbedder.model_path().stat().st_size / 2
    made = path.stat().st_mtime_ns
    assert LocalEmbedder(cache_dir=tmp_path).quantized_path() == path
    assert path.stat().st_mtime_ns == made  # reused, not made again
    path.write_bytes(path.read_bytes()[:1000])  # a truncated copy
    assert LocalEmbedder(cache_dir=tmp_path).quantized_path() == path
    assert digest.read_text().strip() == embed.file_sha256(path)
    assert not list(tmp_path.glob("*.tmp"))
    text = ["The quarterly report is due on Friday"]
    int8 = e.embed_batch(text)[0]
    fp32 = LocalEmbedder(quantize=False).embed_batch(text)[0]
    assert e.identity != LocalEmbedder(quantize=False).identity
    assert cosine(int8, fp32) > 0.95


def test_without_onnx_the_int8_model_asks_for_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)
    with pytest.raises(MissingDependency, match="pip install onnx"):
        LocalEmbedder(cache_dir=tmp_path).quantized_path()
