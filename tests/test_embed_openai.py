"""The OpenAI-compatible embedder against a real local HTTP server speaking the protocol."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hivemem import HiveMemError, InvalidInput
from hivemem.providers.embed import HashEmbedder, OpenAIEmbedder, get_embedder
from hivemem.retrieval.ranking import cosine


class _Server:
    """POST /v1/embeddings answered from a HashEmbedder; records every request."""

    def __init__(self, dimension: int = 8, status: int = 200) -> None:
        self.requests: list[dict] = []
        self.dimension = dimension
        self.status = status
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers["Authorization"], **body}
                )
                if outer.status != 200:
                    payload = {"error": {"message": "model not loaded", "type": "server_error"}}
                else:
                    # Like text-embedding-3-*: the full size, or the Matryoshka prefix the
                    # request's ``dimensions`` asks for.
                    size = body.get("dimensions") or outer.dimension
                    vectors = HashEmbedder(size).embed_batch(body["input"])
                    data = [
                        {"object": "embedding", "index": i, "embedding": [3 * x for x in v]}
                        for i, v in enumerate(vectors)
                    ]
                    payload = {
                        "object": "list",
                        "data": data[::-1],
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                raw = json.dumps(payload).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def test_embeds_in_order_across_batches_and_normalises(server):
    e = get_embedder(
        "openai",
        model="nomic-embed-text",
        dimension=8,
        base_url=server.url,
        batch_size=2,
        max_retries=0,
    )
    texts = ["red fox", "blue whale", "red fox jumps", "green tea", "blue sky"]
    vectors = e.embed_batch(texts)
    assert e.identity == "nomic-embed-text:8"
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert {r["path"] for r in server.requests} == {"/v1/embeddings"}
    assert {r["model"] for r in server.requests} == {"nomic-embed-text"}
    expected = HashEmbedder(8).embed_batch(texts)  # the server's vectors, scaled by 3
    for got, want in zip(vectors, expected, strict=True):
        assert got == pytest.approx(want)  # in input order, despite the reversed reply
        assert sum(x * x for x in got) == pytest.approx(1.0)
    assert cosine(vectors[0], vectors[2]) > cosine(vectors[0], vectors[3])


def test_the_api_key_is_sent_when_given(server):
    OpenAIEmbedder(
        model="m", dimension=8, base_url=server.url, api_key="sk-test", max_retries=0
    ).embed_batch(["x"])
    assert server.requests[0]["auth"] == "Bearer sk-test"


def test_a_wrong_dimension_is_refused_loudly(server):
    e = OpenAIEmbedder(model="m", dimension=16, base_url=server.url, max_retries=0)
    with pytest.raises(HiveMemError, match="returned 8 dimensions, expected 16"):
        e.embed_batch(["x"])


def test_server_errors_and_unreachable_servers_are_clear_errors():
    failing = _Server(status=500)
    try:
        e = OpenAIEmbedder(model="m", dimension=8, base_url=failing.url, max_retries=0)
        with pytest.raises(HiveMemError, match="embedding request to .* failed"):
            e.embed_batch(["x"])
    finally:
        failing.close()
    gone = OpenAIEmbedder(
        model="m", dimension=8, base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2
    )
    with pytest.raises(HiveMemError, match="failed"):
        gone.embed_batch(["x"])


def test_bad_configuration_names_the_field():
    with pytest.raises(InvalidInput) as err:
        OpenAIEmbedder(model="", dimension=8)
    assert err.value.field == "model"
    with pytest.raises(InvalidInput) as err:
        OpenAIEmbedder(model="m", dimension=0)
    assert err.value.field == "dimension"


def test_missing_extra_gives_the_install_command(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_openai(name, *args, **kwargs):
        if name == "openai":
            raise ImportError("No module named 'openai'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_openai)
    from hivemem import MissingDependency

    with pytest.raises(MissingDependency, match=r"pip install 'hivemem\[openai\]'"):
        OpenAIEmbedder(model="m", dimension=8, base_url="http://127.0.0.1:9/v1").embed_batch(["x"])


def test_matryoshka_dimensions_are_sent_and_recorded_in_the_identity():
    full = _Server(dimension=24)  # the model's own size; the seeds ask for less
    try:
        e = OpenAIEmbedder(
            model="text-embedding-3-large", dimensions=8, base_url=full.url, max_retries=0
        )
        assert e.dimension == 8
        assert e.identity == "text-embedding-3-large@8:8"
        vectors = e.embed_batch(["red fox", "blue whale"])
        assert [len(v) for v in vectors] == [8, 8]
        assert [r["dimensions"] for r in full.requests] == [8]
        # Without the parameter the same configuration got 24 numbers: refused loudly.
        plain = OpenAIEmbedder(model="text-embedding-3-large", dimension=8, base_url=full.url)
        with pytest.raises(HiveMemError, match="returned 24 dimensions, expected 8"):
            plain.embed_batch(["x"])
        with pytest.raises(InvalidInput) as err:
            OpenAIEmbedder(model="m", dimension=16, dimensions=8)
        assert err.value.field == "dimension"
        with pytest.raises(InvalidInput) as err:
            OpenAIEmbedder(model="m", dimensions=0)
        assert err.value.field == "dimensions"
    finally:
        full.close()


def test_the_openai_embedder_from_settings_fills_a_store_and_searches(tmp_path):
    import hivemem
    from hivemem import Settings

    full = _Server(dimension=24)
    try:
        settings = Settings().replace(
            embedder="openai",
            embed_model="text-embedding-3-small",
            embed_dimensions=16,
            embed_base_url=full.url,
        )
        with hivemem.open(tmp_path / "m.db", settings=settings, embed_api_key="sk-x") as store:
            assert store.indexer.identity == "text-embedding-3-small@16:16"
            mem = store.scope("a")
            mem.save("the red fox jumps over the fence", wait=True)
            assert store.vectors.count() == 1
            assert store.health.meta()["embedding_identity"] == "text-embedding-3-small@16:16"
            hits = mem.search("red fox")
            assert hits and "vector" in hits[0].explain.lanes
        assert {r["dimensions"] for r in full.requests} == {16}
        assert {r["auth"] for r in full.requests} == {"Bearer sk-x"}
    finally:
        full.close()
