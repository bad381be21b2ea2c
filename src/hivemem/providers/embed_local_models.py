"""Stronger models for users who have them: a sentence-transformers model installed on
disk (extra ``hivemem[sentence-transformers]``, which brings PyTorch).

``SentenceTransformersEmbedder(model=FOLDER)`` embeds with the model in ``FOLDER`` (a
sentence-transformers save: ``modules.json``, ``config.json``, the weights), on the CPU
unless ``device`` says otherwise; ``threads`` sets PyTorch's CPU threads (for the whole
process, as PyTorch does) when the model loads. Models load from disk only: the Hugging Face hub is
switched off (``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE`` and ``local_files_only``), and
a name that is not a folder is refused with the fix, never fetched. Registered as the
entry point ``sentence-transformers``; with the settings, ``embedder =
sentence-transformers`` and ``embed_model_path = FOLDER``.

Identity. ``"<model_name>:<dimension>"``, ``model_name`` defaulting to the folder's name
(its parent's when the folder is called ``model``, as in packages that ship one: the
package's name; ``NAME`` inside a Hugging Face or FastEmbed cache,
``models--ORG--NAME/snapshots/<commit>/``, whose folder is named by a commit hash); name
a model you replace in place differently, or ``reindex --force``:
the identity is how vectors of
two models are never mixed (a store opened with another model answers by keyword until
``hivemem reindex``). The dimension is read from the folder's pooling configuration
without loading the model (constructors stay cheap), and checked on every vector.

A missing or damaged model (no folder, a weights file cut short) raises
``MissingDependency`` / ``HiveMemError`` with one line naming the fix; reads fail open
(keyword search goes on), and writes never wait for a model, so nothing is lost.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import HiveMemError, InvalidInput, MissingDependency
from .embed import EachAlone, session_options

Vector = Sequence[float]
_INSTALL = "pip install 'hivemem[sentence-transformers]'"


def _offline() -> None:
    """No hub, ever: set before the libraries read them (they cache the values); and no
    progress bars of theirs on a user's terminal."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _model_folder(model: str | Path, option: str) -> Path:
    if not isinstance(model, str | Path) or not str(model).strip():
        raise InvalidInput(option, "expected the folder of a model installed on disk")
    return Path(model).expanduser()


def _count(value: Any, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
        raise InvalidInput(option, "expected a whole number from 1 to 4096")
    return value


def _pooling_dimension(folder: Path) -> int | None:
    """The sentence-embedding size a sentence-transformers folder declares, read from
    its configuration files (no model load); None when they do not say."""
    try:
        modules = json.loads((folder / "modules.json").read_text())
        dimension = None
        for module in modules:
            config = folder / module.get("path", "") / "config.json"
            kind = str(module.get("type", ""))
            if not config.is_file():
                continue
            values = json.loads(config.read_text())
            if kind.endswith("Pooling"):
                dimension = int(values["word_embedding_dimension"])
            elif kind.endswith("Dense"):
                dimension = int(values["out_features"])
        return dimension
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _default_name(folder: Path) -> str:
    resolved = folder.resolve()
    parts = resolved.parts
    for at in range(len(parts) - 3, 0, -1):  # the nearest cache folder first
        if parts[at].startswith("models--") and parts[at + 1] == "snapshots":
            # Trigger: a Hugging Face / FastEmbed cache snapshot. Why: its folder is named
            # by a commit hash, not by the model. Outcome: the repository's NAME (hub
            # names hold no "--"), so the identity says which model made the vectors.
            return parts[at].split("--")[-1]
    return resolved.parent.name if resolved.name == "model" else resolved.name


class SentenceTransformersEmbedder:
    """A sentence-transformers model from a folder on disk (see the module docstring)."""

    def __init__(
        self,
        *,
        model: str | Path,
        model_name: str | None = None,
        dimension: int | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self.folder = _model_folder(model, "model")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise InvalidInput("dimension", "expected the model's vector size, a whole number")
        self.name = (model_name or "").strip() or _default_name(self.folder)
        self._dimension = dimension
        self.device = device
        self.batch_size = _count(batch_size, "batch_size")
        self.threads = None if threads is None else _count(threads, "threads")
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        return f"{self.name}:{self.dimension}"

    @property
    def unavailable(self) -> str | None:
        """Why this model cannot be used (its folder missing, its size unreadable), with
        the fix; None when it looks usable. The store then answers by keyword and keeps
        every write queued (``Indexer``); checked without loading the model."""
        if not (self.folder / "modules.json").is_file():
            return (
                f"{self.folder}: no sentence-transformers model there; set embed_model_path "
                "to the folder of one installed on disk (models are never downloaded)"
            )
        if self.dimension < 1:
            return (
                f"{self.folder}: cannot read the model's vector size from its configuration; "
                "pass dimension=…"
            )
        return None

    @property
    def dimension(self) -> int:
        """The vector size (0 while unknown: see ``unavailable``)."""
        if self._dimension is None:
            found = _pooling_dimension(self.folder)
            if found is None:
                return 0
            self._dimension = found
        return self._dimension

    def _check_folder(self) -> None:
        problem = self.unavailable
        if problem is not None:
            raise HiveMemError(problem)

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._check_folder()
                _offline()
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise MissingDependency(
                        "the sentence-transformers embedder", _INSTALL
                    ) from None
                if self.threads:
                    # PyTorch's worker threads spin while they wait: on a busy 2-core
                    # machine all-mpnet-base-v2 took 566 ms a query on 2 threads, 53 ms on
                    # one (docs/retrieval.md). Process-wide, as PyTorch's setting is.
                    torch.set_num_threads(self.threads)
                try:
                    self._model = SentenceTransformer(
                        str(self.folder), device=self.device, local_files_only=True
                    )
                except Exception as exc:  # torch / safetensors raise their own types
                    reason = " ".join(str(exc).split())  # one line
                    raise HiveMemError(
                        f"the model in {self.folder} could not be loaded ({reason}); "
                        "reinstall it (a damaged or partial copy)"
                    ) from exc
        return self._model

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        model = self._load()
        try:
            rows = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise HiveMemError(f"the model in {self.folder} failed: {exc}") from exc
        out: list[Vector] = []
        for row in rows:
            vector = [float(x) for x in row]
            if len(vector) != self.dimension:
                raise HiveMemError(
                    f"the model in {self.folder} returned {len(vector)} dimensions, "
                    f"expected {self.dimension}"
                )
            norm = math.sqrt(sum(x * x for x in vector)) or 1.0
            out.append([x / norm for x in vector])
        return out


# ----------------------------------------------------------------------------- ONNX folders

_ONNX_FILES = ("model_optimized.onnx", "model.onnx", "onnx/model.onnx")
POOLINGS = ("auto", "mean", "cls")
_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}


def _declared_pooling(folder: Path) -> tuple[str, str] | None:
    """How the sentence-transformers pooling configuration beside the graph pools, and
    the file that says so: the Pooling module ``modules.json`` names, else
    ``1_Pooling/config.json``, in the folder (a Hugging Face snapshot's root, or a
    sentence-transformers save) or, for a folder called ``onnx``, its parent (where
    Hugging Face repositories keep it). ``mean`` or ``cls``, or the mode's own name for
    another mode (which this embedder does not do); None when no configuration says."""
    for home in (folder, folder.parent) if folder.name == "onnx" else (folder,):
        places = ["1_Pooling"]
        try:
            modules = json.loads((home / "modules.json").read_text())
            named = [str(m["path"]) for m in modules if str(m.get("type", "")).endswith("Pooling")]
            places = named + places
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        for place in places:
            config = home / place / "config.json"
            try:
                values = json.loads(config.read_text())
                modes = [
                    k for k, v in values.items() if k.startswith("pooling_mode_") and v is True
                ]
            except (OSError, ValueError, TypeError, AttributeError):
                continue
            said = str(config.relative_to(folder)) if home == folder else str(config)
            if len(modes) == 1 and modes[0] in _MODES:
                return _MODES[modes[0]], said
            return " + ".join(modes) or "no pooling mode", said
    return None


class OnnxModelEmbedder:
    """An ONNX sentence-embedding model in a folder on disk — the layout FastEmbed keeps
    its models in (``model.onnx`` or ``model_optimized.onnx``, ``tokenizer.json``,
    ``config.json``), and what ``optimum`` exports — run on onnxruntime + tokenizers,
    which HiveMem already depends on: no extra, no PyTorch, no hub. Registered as the
    entry point ``onnx``; with the settings, ``embedder = onnx`` and
    ``embed_model_path = FOLDER``.

    ``pooling`` (setting ``embed_pooling``) is ``mean`` (MiniLM, mpnet, e5), ``cls`` (bge)
    or ``auto``: what the folder's ``1_Pooling/config.json`` says (``_declared_pooling``);
    without one, ``cls`` for a bge model (``bge`` in its name, or in ``_name_or_path`` of
    ``config.json``: FastEmbed's downloads of bge carry no pooling configuration), ``mean``
    otherwise. ``notice`` says which, and why. A model whose output is already one vector
    per text is used as it is. Vectors are L2-normalised. Identity and dimension as for
    ``SentenceTransformersEmbedder`` (``hidden_size`` of ``config.json``, or
    ``dimension=``), read without loading the model; a cls-pooled model's identity is
    ``"<model_name>+cls:<dimension>"``, so vectors of one pooling never mix with the
    other's (mean-pooled ones keep the plain identity they always had)."""

    def __init__(
        self,
        *,
        model: str | Path,
        model_name: str | None = None,
        dimension: int | None = None,
        pooling: str = "auto",
        model_file: str | None = None,
        max_tokens: int = 256,
        threads: int = 2,
    ) -> None:
        self.folder = _model_folder(model, "model")
        if pooling not in POOLINGS:
            raise InvalidInput("pooling", f"expected auto, mean or cls, got {pooling!r:.60}")
        if dimension is not None and (
            isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1
        ):
            raise InvalidInput("dimension", "expected the model's vector size, a whole number")
        self.name = (model_name or "").strip() or _default_name(self.folder)
        self._dimension = dimension
        self.pooling_asked = pooling
        self._pooling: tuple[str, str] | None = None  # (pooling, why), once read
        self.model_file = model_file
        self.max_tokens = max(8, int(max_tokens))
        self._alone = EachAlone(threads)
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        # Trigger: cls pooling. Why: stores of a bge folder hold mean-pooled vectors
        # recorded under the plain identity (mean was the only pooling settings reached).
        # Outcome: cls vectors get their own identity; such a store reindexes, never mixes.
        marked = "+cls" if self.pooling == "cls" else ""
        return f"{self.name}{marked}:{self.dimension}"

    @property
    def pooling(self) -> str:
        """``mean`` or ``cls`` (or, from a configuration, a mode this embedder does not
        do: ``unavailable`` says so); read once the folder holds a model."""
        return self._pooled()[0]

    @property
    def notice(self) -> str:
        """Which pooling the vectors get, and why (``hivemem doctor`` shows it)."""
        pooling, why = self._pooled()
        return f"{pooling} pooling ({why})"

    def _pooled(self) -> tuple[str, str]:
        if self._pooling is not None:
            return self._pooling
        if self.pooling_asked != "auto":
            found = (self.pooling_asked, "as asked: embed_pooling")
        elif (declared := _declared_pooling(self.folder)) is not None:
            found = (declared[0], f"from {declared[1]}")
        elif "bge" in self._names().lower():
            found = ("cls", "a bge model without a pooling configuration")
        else:
            found = ("mean", "the default: no pooling configuration, not a bge model")
        if self._onnx_path() is not None:  # a model is there: its configuration stays
            self._pooling = found
        return found

    def _names(self) -> str:
        """The model's names: ours, and the one its ``config.json`` was saved from."""
        try:
            saved = json.loads((self.folder / "config.json").read_text())["_name_or_path"]
        except (OSError, ValueError, KeyError, TypeError):
            saved = ""
        return f"{self.name} {saved}"

    def _onnx_path(self) -> Path | None:
        names = (self.model_file,) if self.model_file else _ONNX_FILES
        for name in names:
            if name and (self.folder / name).is_file():
                return self.folder / name
        return None

    @property
    def unavailable(self) -> str | None:
        """Why this model cannot be used, with the fix; None when it looks usable."""
        if self._onnx_path() is None or not (self.folder / "tokenizer.json").is_file():
            return (
                f"{self.folder}: no ONNX model with its tokenizer.json there; set "
                "embed_model_path to the folder of one installed on disk (models are never "
                "downloaded)"
            )
        if self.dimension < 1:
            return (
                f"{self.folder}: cannot read the model's vector size from config.json; "
                "pass dimension=…"
            )
        if self.pooling not in ("mean", "cls"):
            return (
                f"{self.folder}: {self.notice}, but this embedder pools by mean or cls only; "
                "set embed_pooling to the one the model was trained with"
            )
        return None

    @property
    def dimension(self) -> int:
        """The vector size (0 while unknown: see ``unavailable``)."""
        if self._dimension is None:
            try:
                config = json.loads((self.folder / "config.json").read_text())
                self._dimension = int(config["hidden_size"])
            except (OSError, ValueError, KeyError, TypeError):
                return 0
        return self._dimension

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            problem = self.unavailable
            if problem is not None:
                raise HiveMemError(problem)
            import onnxruntime as ort
            from tokenizers import Tokenizer

            path = self._onnx_path()
            options = session_options(ort)
            try:
                session = ort.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
            except Exception as exc:  # onnxruntime and tokenizers raise their own types
                reason = " ".join(str(exc).split())  # one line
                raise HiveMemError(
                    f"the model in {self.folder} could not be loaded ({reason}); "
                    "reinstall it (a damaged or partial copy)"
                ) from exc
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.no_padding()
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer = tokenizer
            self._session = session

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        self._load()
        return self._alone.map(self._one, texts)

    def close(self) -> None:
        """End the threads that embed batches (made again on the next batch)."""
        self._alone.close()

    def _one(self, text: str) -> Vector:
        import numpy as np

        ids = np.asarray([self._tokenizer.encode(text).ids], np.int64)
        mask = np.ones_like(ids)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        feed = {k: v for k, v in feed.items() if k in self._inputs}
        try:
            output = self._session.run(None, feed)[0]
        except Exception as exc:
            raise HiveMemError(f"the model in {self.folder} failed: {exc}") from exc
        if output.ndim == 3:
            if self.pooling == "cls":
                output = output[:, 0]
            else:
                weights = mask[..., None].astype(np.float32)
                output = (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        if output.shape[1] != self.dimension:
            raise HiveMemError(
                f"the model in {self.folder} returned {output.shape[1]} dimensions, "
                f"expected {self.dimension}"
            )
        vector = output[0].astype(np.float32)
        return vector / max(float(np.linalg.norm(vector)), 1e-12)
