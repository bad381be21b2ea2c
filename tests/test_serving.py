"""The uvicorn configuration every HiveMem server runs on (``hivemem.frontends.serving``):
httptools parses HTTP where it is installed (the ``http`` extra brings it), h11 else."""

from __future__ import annotations

import sys

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
    assert config.http_protocol_class is HttpToolsProtocol
    assert serving.parser_note() == ""


def test_without_httptools_the_server_runs_on_h11_and_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "httptools", None)
    config = serving.config(_app, "127.0.0.1", 0)
    config.load()
    assert config.http_protocol_class is H11Protocol
    assert "pip install 'hivemem[http]'" in serving.parser_note()
