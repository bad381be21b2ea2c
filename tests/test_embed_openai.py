"""The OpenAI-compatible embedder against a real local HTTP server speaking the protocol."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hivemem import HiveMemError, InvalidInput
from hivemem.embed import HashEmbedder, OpenAIEmbedder, get_embedder
from hivemem.ranking import cosine


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
                    vectors = HashEmbedder(outer.dimension).embed_batch(body["input"])
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
