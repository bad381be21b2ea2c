"""``EachAlone``: the bundled and ``onnx`` embedders run each text alone, texts spread
over a small thread pool (providers/embed.py). What a user relies on: vectors in the
texts' order, one failure raised once and the pool still usable, a forked worker
process that embeds (the parent's threads do not exist in the child), and ``close()``
ending the threads."""

from __future__ import annotations

import gc
import multiprocessing
import threading
import time

import numpy as np
import pytest

from hivemem.errors import HiveMemError, InvalidInput
from hivemem.providers.embed import EachAlone, LocalEmbedder

TEXTS = [f"note {i}: the {'very ' * (i % 7)}long meeting about budget {i}" for i in range(40)]


def _pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("hivemem-embed")]


def test_texts_come_back_in_order_from_several_threads():
    seen: set[str] = set()

    def run(text: str) -> list[float]:
        seen.add(threading.current_thread().name)
        return [float(len(text))]

    alone = EachAlone(2)
    try:
        assert alone.map(run, TEXTS) == [[float(len(t))] for t in TEXTS]
        assert any(name.startswith("hivemem-embed") for name in seen)
        assert alone.map(run, ["one"]) == [[3.0]]  # one text: the caller's thread
    finally:
        alone.close()


def test_a_failing_text_raises_once_and_the_pool_keeps_working():
    def run(text: str) -> list[float]:
        if text == TEXTS[5]:
            raise HiveMemError("the local embedder failed: boom")
        return [1.0]

    alone = EachAlone(2)
    try:
        with pytest.raises(HiveMemError, match="boom"):
            alone.map(run, TEXTS)
        assert alone.map(lambda text: [2.0], TEXTS) == [[2.0]] * len(TEXTS)
    finally:
        alone.close()


def test_close_ends_the_threads_and_the_next_batch_makes_new_ones():
    others = set(_pool_threads())  # other embedders' pools in this process
    alone = EachAlone(2)
    alone.map(lambda text: [0.0], TEXTS)
    assert set(_pool_threads()) - others
    alone.close()
    assert not set(_pool_threads()) - others
    assert alone.map(lambda text: [0.0], TEXTS[:3]) == [[0.0]] * 3
    alone.close()


def test_an_embedder_dropped_leaves_no_threads_behind():
    # A process that opens and drops stores (tests, evals, a server per tenant) must not
    # gather two idle threads per embedder it ever made.
    others = set(_pool_threads())
    for _ in range(3):
        embedder = LocalEmbedder()
        embedder.embed_batch(TEXTS[:4])
        del embedder
    gc.collect()
    deadline = time.monotonic() + 10
    while set(_pool_threads()) - others and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(_pool_threads()) - others


@pytest.mark.parametrize("width", [0, -1, True, 1.5, "2"])
def test_a_bad_width_is_refused(width):
    with pytest.raises(InvalidInput, match="threads"):
        EachAlone(width)


def _embed_in_child(embedder, texts, out):
    out.put([list(map(float, v)) for v in embedder.embed_batch(texts)])


def test_a_forked_worker_embeds_with_a_pool_of_its_own():
    # A server forks its workers after the parent has embedded: the child inherits a
    # pool whose threads do not exist there, and a batch handed to it never came back.
    embedder = LocalEmbedder()
    parent = embedder.embed_batch(TEXTS[:6])
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_embed_in_child, args=(embedder, TEXTS[:6], out))
    child.start()
    try:
        vectors = out.get(timeout=60)
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
    assert np.allclose(np.asarray(vectors), np.asarray(parent), atol=0)
    embedder.close()


def test_the_default_embedder_answers_from_two_threads_at_once():
    embedder = LocalEmbedder()
    expected = [list(v) for v in embedder.embed_batch(TEXTS)]
    results: list[list[list[float]]] = []

    def call() -> None:
        results.append([list(v) for v in embedder.embed_batch(TEXTS)])

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [expected] * 3
    embedder.close()
