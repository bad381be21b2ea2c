"""Embedders: the registry, the deterministic fake, and the real offline default."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest

import hivemem.providers.embed as embed
from hivemem import InvalidInput, MissingDependency, StoreError
from hivemem.providers.calibration import profile
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
import json, sys
from hivemem.providers.embed import get_embedder
e = get_embedder(sys.argv[1])
vectors = e.embed_batch(["The cat sat on the mat", "A cat is sitting on a mat",
                         "Stock prices fell sharply on Monday"])
print(json.dumps({"identity": e.identity, "vectors": [list(map(float, v)) for v in vectors]}))
"""


@pytest.mark.parametrize(
    ("name", "identity"),
    [
        ("local", "all-MiniLM-L6-v2-int8:384"),
        ("local-l3", "paraphrase-MiniLM-L3-v2-int8:384"),
        ("local-per-channel", "all-MiniLM-L6-v2-int8c:384"),
    ],
)
def test_local_embedder_loads_offline_and_embeds_meaningfully(name, identity):
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-c", OFFLINE_SCRIPT, name]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-n", *command]  # no network at all, not even loopback
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["identity"] == identity
    cat, cat2, stocks = out["vectors"]
    assert len(cat) == 384 and sum(x * x for x in cat) == pytest.approx(1.0, abs=1e-4)
    assert cosine(cat, cat2) > 0.8 > cosine(cat, stocks)


# int8 activations are quantised per batch, so a text's vector moves a little with its
# batch companions (L3: cosine > 0.99; L6: > 0.97, which costs it ~4 points of
# vector-only paraphrase hit@10, docs/retrieval.md); unquantised gives the same vector in
# any batch.
@pytest.mark.parametrize(
    ("model", "quantize"),
    [
        ("paraphrase-MiniLM-L3-v2", False),
        ("paraphrase-MiniLM-L3-v2", True),
        ("all-MiniLM-L6-v2", False),
        ("all-MiniLM-L6-v2", True),
    ],
)
def test_a_texts_vector_never_depends_on_the_texts_beside_it(model, quantize):
    # Batched, a text was padded to its longest neighbour, and the int8 model's dynamic
    # quantisation range moved with the padding: the same text got another vector in the
    # worker than in a search (cosine down to ~.97). Each text now runs alone.
    e = LocalEmbedder(model=model, quantize=quantize)
    texts = ["a much longer sentence about the Berlin office and its people", "hi", "mid one"]
    together = e.embed_batch(texts)
    alone = [e.embed_batch([t])[0] for t in texts]
    for x, y in zip(together, alone, strict=True):
        assert list(x) == list(y)
    assert list(e.embed_batch(texts[::-1])[0]) == list(alone[2])  # and in any order
    assert e.embed_batch([]) == []


LONG_FILLER = " ".join(
    f"On day {i} the team reviewed the quarterly budget spreadsheet and the hiring plan."
    for i in range(12)
)


def test_a_long_text_is_embedded_whole_not_only_its_first_128_word_pieces():
    # The model reads 128 word-pieces: a fact after ~180 words of filler is not in the
    # truncated vector. With windows it is: the long text moves toward a question about
    # its tail, and a text of one window keeps exactly its truncated vector.
    tail = " My sister Ana adopted a grey kitten named Pixel from the animal shelter."
    question = "what is the name of the kitten my sister adopted?"
    whole = LocalEmbedder(model="paraphrase-MiniLM-L3-v2", quantize=False, windows=4)
    head = LocalEmbedder(model="paraphrase-MiniLM-L3-v2", quantize=False)  # truncates
    q = whole.embed_batch([question])[0]
    assert q == pytest.approx(list(head.embed_batch([question])[0]), abs=1e-6)
    windowed, truncated = (
        whole.embed_batch([LONG_FILLER + tail])[0],
        head.embed_batch([LONG_FILLER + tail])[0],
    )
    assert sum(x * x for x in windowed) == pytest.approx(1.0, abs=1e-4)
    assert cosine(q, windowed) > cosine(q, truncated) + 0.05
    # Windows are the same whatever the batch holds (a short text beside a long one).
    mixed = whole.embed_batch(["hi", LONG_FILLER + tail])
    assert cosine(mixed[1], windowed) == pytest.approx(1.0, abs=1e-5)


def test_a_tampered_vocabulary_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "vocab.txt"
    bad.write_bytes(embed.VOCAB_FILE.read_bytes() + b"extra\n")
    monkeypatch.setattr(embed, "VOCAB_FILE", bad)
    with pytest.raises(StoreError, match="sha256"):
        LocalEmbedder().embed_batch(["x"])


def test_a_tampered_model_is_refused(tmp_path, monkeypatch):
    spec = embed.MODELS[embed.DEFAULT_MODEL]
    monkeypatch.setitem(embed.MODELS, spec.name, dataclasses.replace(spec, sha256="0" * 64))
    with pytest.raises(StoreError, match="pinned sha256"):
        LocalEmbedder.model_path()
    with pytest.raises(StoreError, match="pinned sha256"):
        LocalEmbedder(cache_dir=tmp_path).embed_batch(["x"])


def test_an_unknown_bundled_model_is_refused():
    with pytest.raises(InvalidInput, match="unknown bundled model"):
        LocalEmbedder(model="nope")


def test_the_default_model_finds_an_answer_that_shares_no_word_with_the_question(tmp_path):
    # The reason it is the default (docs/retrieval.md): the old default, L3, scores the
    # Berlin turn below an unrelated one for this question; L6 ranks it first.
    question = "Where does the user live now?"
    turns = ["I moved to Berlin last spring", "Deploy any weekday before 15:00"]
    for model, linked in (("all-MiniLM-L6-v2", True), ("paraphrase-MiniLM-L3-v2", False)):
        e = LocalEmbedder(model=model, cache_dir=tmp_path)
        q, berlin, deploy = e.embed_batch([question, *turns])
        assert bool(cosine(q, berlin) > cosine(q, deploy)) is linked, model


@pytest.mark.parametrize("model", sorted(embed.MODELS))
def test_the_int8_model_is_made_once_cached_with_its_checksum_and_remade_if_damaged(
    tmp_path, model
):
    # L3 ships fp32 and is quantised; L6 ships int8 weights that its graph dequantises on
    # every run (slow): they are folded to fp32, then quantised the same way.
    e = LocalEmbedder(model=model, cache_dir=tmp_path)
    path = e.quantized_path()
    digest = path.with_name(path.name + ".sha256")
    assert path.parent == tmp_path and digest.read_text().strip() == embed.file_sha256(path)
    if not e.spec.weights_int8:
        assert path.stat().st_size < LocalEmbedder.model_path(e.spec).stat().st_size / 2
    made = path.stat().st_mtime_ns
    assert LocalEmbedder(model=model, cache_dir=tmp_path).quantized_path() == path
    assert path.stat().st_mtime_ns == made  # reused, not made again
    path.write_bytes(path.read_bytes()[:1000])  # a truncated copy
    assert LocalEmbedder(model=model, cache_dir=tmp_path).quantized_path() == path
    assert digest.read_text().strip() == embed.file_sha256(path)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".fp32.onnx"))]
    text = ["The quarterly report is due on Friday"]
    int8 = e.embed_batch(text)[0]
    shipped = LocalEmbedder(model=model, quantize=False)
    assert e.identity != shipped.identity
    assert cosine(int8, shipped.embed_batch(text)[0]) > 0.95


def test_without_onnx_the_int8_model_asks_for_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)
    with pytest.raises(MissingDependency, match="pip install onnx"):
        LocalEmbedder(cache_dir=tmp_path).quantized_path()


def test_per_channel_int8_is_a_model_of_its_own_closer_to_the_unquantised_one(tmp_path):
    # Opt-in (``local-per-channel``, docs/retrieval.md): one int8 scale per output channel
    # keeps vectors closer to the shipped model's than one per tensor, and is cached and
    # named apart, so a store never mixes its vectors with the default's.
    texts = [
        "The quarterly report is due on Friday",
        "I moved to Berlin last spring and finally unpacked the last boxes",
        "Where does the user live now?",
    ]
    tensor = LocalEmbedder(cache_dir=tmp_path)
    channel = get_embedder("local-per-channel", cache_dir=tmp_path)
    assert isinstance(channel, LocalEmbedder) and channel.per_channel
    assert channel.identity == "all-MiniLM-L6-v2-int8c:384" != tensor.identity
    assert channel.quantized_path() != tensor.quantized_path()
    assert profile(channel.identity).match_floor == profile(tensor.identity).match_floor == 0.3
    shipped = LocalEmbedder(quantize=False).embed_batch(texts)
    by_channel = [cosine(a, b) for a, b in zip(channel.embed_batch(texts), shipped, strict=True)]
    by_tensor = [cosine(a, b) for a, b in zip(tensor.embed_batch(texts), shipped, strict=True)]
    assert min(by_channel) > 0.97
    assert sum(by_channel) > sum(by_tensor)


def test_a_store_of_the_default_model_asks_for_reindex_under_per_channel(tmp_path):
    import hivemem
    from hivemem.evaluation import doctor

    path = tmp_path / "m.db"
    with hivemem.open(path) as store:
        store.scope("a").save("I moved to Berlin last spring", wait=True)
    with hivemem.open(path, embedder="local-per-channel") as store:
        check = {c.name: c for c in doctor.diagnose(store).checks}["vectors"]
        assert not check.ok and check.fix == "run `hivemem reindex`"
        assert "all-MiniLM-L6-v2-int8:384" in check.detail
        assert "all-MiniLM-L6-v2-int8c:384" in check.detail
        assert store.reindex() == 1
        check = {c.name: c for c in doctor.diagnose(store).checks}["vectors"]
        assert check.ok and "by all-MiniLM-L6-v2-int8c:384" in check.detail
