"""The uvicorn configuration every HiveMem server runs on (``hivemem.frontends.serving``):
httptools parses HTTP where it is installed (the ``http`` extra brings it), h11 else."""

from __future__ import annotations

import socket
import sys
import time

import pytest

pytest.importorskip("uvicorn")

from uvicorn.protocols.http.h11_impl import H11Protocol  # noqa: E402

from hivemem.frontends import serving  # noqa: E402


async def _app(scope, receive, send):  # pragma: no cover - never called
    raise AssertionError


def test_every_server_parses_http_with_httptools():
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    config = serving.config(_app, "127.0.0.1", 0)
    config.load()
    assert issubclass(config.http_protocol_class, HttpToolsProtocol)  # its head bounded
    assert serving.parser_note() == ""


def test_without_httptools_the_server_runs_on_h11_and_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "httptools", None)
    config = serving.config(_app, "127.0.0.1", 0)
    config.load()
    assert config.http_protocol_class is H11Protocol
    assert "pip install 'hivemem[http]'" in serving.parser_note()


@pytest.fixture(params=["httptools", "h11"])
def server(request, monkeypatch):
    """A real server on a free port, with each parser: its address."""
    import threading

    import uvicorn

    if request.param == "h11":
        monkeypatch.setitem(sys.modules, "httptools", None)

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    config = serving.config(app, "127.0.0.1", 0, log_level="critical")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not running.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    yield running.servers[0].sockets[0].getsockname()[:2]
    running.should_exit = True
    thread.join(timeout=10)


def _ask(address, head: bytes) -> bytes:
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(head)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and (b"ok" in answer or b"400" in answer[:12]):
                break
        return answer


def test_a_request_head_past_16_kib_is_refused_whatever_the_parser(server):
    """Found when httptools came in: h11 refuses a head over 16 KiB, httptools read a 20 MB
    header whole. Both parsers now answer 400 past ``HEAD_MAX``, and serve what follows."""
    big = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 2_000_000 + b"\r\n\r\n"
    assert _ask(server, big).startswith(b"HTTP/1.1 400")
    many = b"".join(b"X-%d: y\r\n" % i for i in range(100_000))
    assert _ask(server, b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n").startswith(
        b"HTTP/1.1 400"
    )
    fine = (
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Some: " + b"a" * 8_000 + b"\r\nConnection: close\r\n\r\n"
    )
    assert _ask(server, fine).startswith(b"HTTP/1.1 200")
