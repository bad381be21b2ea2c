"""A sentence-transformers model converted once to a dynamic-int8 ONNX graph, on first use.

Why: all-mpnet-base-v2 (``local-mpnet``) on PyTorch takes ~49 ms a query and embeds ~12
documents a second on one busy core; its int8 ONNX graph on onnxruntime took 12.6 ms and
44 documents a second in the same sitting, and found as many answers (docs/retrieval.md,
"A stronger model from wheels"). The export needs PyTorch, which the fp32 model already
needs, so the conversion runs where the model is first used and the graph is cached.

The recipe (``convert``):

1. ``torch.onnx.export`` of the transformer (input ids and attention mask in, the last
   hidden state out; pooling and normalising stay in ``OnnxModelEmbedder``), opset 17;
2. onnxruntime's ``quantize_dynamic``, int8 weights with one scale per output channel,
   except the MatMuls named in ``fp32_matmuls``, kept fp32. Dynamic int8 quantises each
   MatMul's input with one scale per batch, which activation outliers break: in
   all-mpnet-base-v2 the input of the feed-forward output projection of layers 6-10
   peaks at 57-99 where its 99.9th percentile is 2-4 (max / p99.9 of 13-35; every other
   MatMul input of the model stays under 10; layer 0's 29 is the largest of the rest),
   and quantising them all gives cosine .87 to the fp32 vectors. The names kept fp32 are
   pinned beside the model's pinned sha256 (``SplitModel.fp32_matmuls``), as measured:
   layers 0 and 6-10 gave cosine .990 (min .975) over 200 LongMemEval turns and the
   full-search figures of docs/retrieval.md. Pinned rather than re-measured at each
   conversion: the model cannot change under its hash, and a rule would have to be
   chosen on the same measurements. A pinned name missing from the exported graph (a
   PyTorch that names nodes otherwise) refuses the graph rather than quantising it all;
3. the check: the graph's vectors against the fp32 model's (``reference``) on
   ``CALIBRATION``, sentences shipped here, batched as the embedder batches them; a
   mean cosine under ``MIN_AGREEMENT`` refuses the graph (``Refused``: the caller keeps
   fp32 and says why).

The graph, the tokenizer and config it runs with, and a manifest (the source zip's
sha256, ``CONVERTER``, each file's size and the graph's sha256, the agreement measured)
are written into a temporary folder renamed into place: a conversion killed mid-write
leaves a ``.tmp`` folder that is never read (and is removed by the next conversion once
its process is gone), never a half graph. ``whole`` checks the manifest and the sizes
(cheap, for ``unavailable``); ``intact`` hashes the graph (once per load).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import HiveMemError
from .embed import Vector, file_sha256

CONVERTER = 1  # the recipe's version: a graph made by another one is made again
MIN_AGREEMENT = 0.98  # mean cosine of the int8 vectors to the fp32 ones on CALIBRATION
MANIFEST = ".hivemem-int8.json"
GRAPH = "model.onnx"
REFUSED = ".hivemem-int8-refused.json"  # beside the folder: why no graph is used
_CARRIED = ("tokenizer.json", "config.json")  # what OnnxModelEmbedder reads beside the graph

# Sentences the graph is checked on: the kinds of text a memory store embeds (chat turns
# as "Speaker: text", facts, questions about "the user", one-word and long ones), in one
# batch as the worker and a search send them. Small on purpose: the check runs at every
# conversion, and the tests run it.
CALIBRATION = (
    "I moved to Berlin last spring and I still get lost on the U-Bahn.",
    "Maya: We finally adopted a dog from the shelter, a three-legged beagle called Pixel!",
    "What did the user say about their sister's wedding in Lisbon?",
    "The old billing system was retired in 2024 after the migration to the new provider.",
    "Remind me to renew my passport before the trip to Japan in March.",
    "Tom: honestly the marathon training is brutal, my knees hate me",
    "Which programming language does the user prefer for data pipelines?",
    "hello",
    "The meeting moved from Tuesday to Thursday at 3 pm because the client asked for it.",
    "My allergist said to avoid peanuts and shellfish, and to carry the epinephrine pen.",
    "Priya: I've been painting watercolours of the harbour every weekend since June.",
    "When is the user's daughter starting kindergarten?",
    "We switched the deployment to blue-green releases; rollbacks now take two minutes.",
    "Grandma's lemon cake recipe needs three eggs, zest of two lemons and a cup of sugar.",
    "Sam: did you ever finish that book about the history of salt?",
    "The user is vegetarian but eats fish occasionally when travelling.",
)

log = logging.getLogger(__name__)


class Refused(HiveMemError):
    """The converted graph does not stand in for the fp32 model (its reason, one line)."""


def whole(folder: Path, source_sha256: str) -> dict[str, Any] | None:
    """The manifest of ``folder`` when it holds a graph of this source and recipe whose
    files have their recorded sizes (no hashing); None otherwise."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        if manifest.get("source_sha256") != source_sha256 or manifest.get("converter") != CONVERTER:
            return None
        for name, size in manifest["files"].items():
            if (folder / name).stat().st_size != size:
                return None
        return manifest if isinstance(manifest.get("sha256"), str) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def intact(folder: Path, manifest: dict[str, Any]) -> bool:
    """The graph's bytes are those converted (a damaged copy of the same size is not)."""
    try:
        return file_sha256(folder / GRAPH) == manifest["sha256"]
    except OSError:
        return False


def refusal(folder: Path, source_sha256: str) -> str | None:
    """Why this source's graph was refused by this recipe, when it was; None otherwise."""
    try:
        record = json.loads(folder.with_name(folder.name + REFUSED).read_text())
        if record.get("source_sha256") == source_sha256 and record.get("converter") == CONVERTER:
            return str(record["reason"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def record_refusal(folder: Path, source_sha256: str, reason: str) -> None:
    path = folder.with_name(folder.name + REFUSED)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    record = {"source_sha256": source_sha256, "converter": CONVERTER, "reason": reason}
    partial.write_text(json.dumps(record))
    os.replace(partial, path)


def convert(
    source: Path,
    target: Path,
    *,
    source_sha256: str,
    fp32_matmuls: Sequence[str],
    reference: Callable[[list[str]], list[Vector]],
    candidate: Callable[[Path], Callable[[list[str]], list[Vector]]],
    settings: dict[str, Any],
    min_agreement: float | None = None,
) -> dict[str, Any]:
    """Convert the sentence-transformers folder ``source`` into ``target`` (see the module
    docstring) and return its manifest. ``reference`` embeds with the fp32 model;
    ``candidate(folder)`` gives the embedding function of a graph in ``folder``;
    ``settings`` (how the graph is run: pooling, word-pieces read) go into the manifest.
    Raises ``Refused`` when the graph does not agree (nothing is left at ``target``)."""
    if min_agreement is None:
        min_agreement = MIN_AGREEMENT
    _clear_stale(target)
    work = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        fp32 = work / "fp32.onnx"
        versions = _export(source, fp32)
        missing = [name for name in fp32_matmuls if name not in _matmuls(fp32)]
        if missing:
            raise Refused(
                f"the exported graph has no MatMul {missing[0]!r} to keep fp32 (PyTorch "
                f"{versions['torch']} names its nodes otherwise)"
            )
        _quantize(fp32, work / GRAPH, fp32_matmuls)
        fp32.unlink()
        for name in _CARRIED:
            shutil.copyfile(source / name, work / name)
        texts = list(CALIBRATION)
        mean, low = _agreement(reference(texts), candidate(work)(texts))
        if mean < min_agreement:
            raise Refused(
                f"its int8 graph agrees with the fp32 model at mean cosine {mean:.3f} on "
                f"{len(texts)} calibration sentences, under the {min_agreement} required"
            )
        files = {p.name: p.stat().st_size for p in sorted(work.iterdir()) if p.is_file()}
        manifest = {
            "source_sha256": source_sha256,
            "converter": CONVERTER,
            "sha256": file_sha256(work / GRAPH),
            "files": files,
            "fp32_matmuls": list(fp32_matmuls),
            "agreement": {"mean": round(mean, 5), "min": round(low, 5), "texts": len(texts)},
            **settings,
            **versions,
        }
        (work / MANIFEST).write_text(json.dumps(manifest, indent=1))
        shutil.rmtree(target, ignore_errors=True)  # a damaged or older graph, made again
        try:
            os.replace(work, target)
        except OSError:
            if whole(target, source_sha256) is None:  # not another process's whole graph
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest


def _clear_stale(target: Path) -> None:
    """Remove the temporary folders of conversions whose process is gone (killed mid-way:
    the fp32 export alone is ~440 MB for mpnet)."""
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        try:
            pid = int(stale.name[len(target.name) + 2 :].split(".")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except (ValueError, OSError):
            continue  # not ours to judge: another user's process, or a name not ours


def _export(source: Path, out: Path) -> dict[str, str]:
    """The transformer of ``source`` as an fp32 ONNX graph; the versions that made it."""
    import onnxruntime
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(source), local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    sample = tokenizer(["a sample sentence to trace", "short"], padding=True, return_tensors="pt")

    class Hidden(torch.nn.Module):
        """The last hidden state only: the graph's one output."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.m = inner  # node names read /m/encoder/layer.N/... (fp32_matmuls)

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    axes = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and tracer notes
        torch.onnx.export(
            Hidden(model),
            (sample["input_ids"], sample["attention_mask"]),
            str(out),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
            opset_version=17,
            dynamo=False,  # the TorchScript exporter: the dynamo one needs onnxscript
        )
    return {"torch": str(torch.__version__), "onnxruntime": str(onnxruntime.__version__)}


def _matmuls(path: Path) -> set[str]:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return {node.name for node in graph.node if node.op_type == "MatMul"}


def _quantize(source: Path, out: Path, fp32_matmuls: Sequence[str]) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from .embed import _DropRecords

    quiet = _DropRecords("Please consider to run pre-processing")  # advice for images
    logging.getLogger().addFilter(quiet)
    try:
        quantize_dynamic(
            str(source),
            str(out),
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_exclude=list(fp32_matmuls),
        )
    finally:
        logging.getLogger().removeFilter(quiet)


def _agreement(expected: list[Vector], found: list[Vector]) -> tuple[float, float]:
    """Mean and lowest cosine of the pairs (both sides are L2-normalised)."""
    import numpy as np

    a = np.asarray(expected, dtype=np.float64)
    b = np.asarray(found, dtype=np.float64)
    cosines = (a * b).sum(axis=1) / np.maximum(
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12
    )
    return float(cosines.mean()), float(cosines.min())
