"""The LLM seam against a real local HTTP server speaking the OpenAI chat protocol, with
scripted replies; and the reply parser and schema check as pure functions."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hivemem.errors import InvalidInput, MissingDependency
from hivemem.providers.llm import (
    LLM,
    AnthropicLLM,
    LLMError,
    OpenAIChatLLM,
    get_llm,
    parse_json_reply,
    schema_errors,
)

PERSON = {
    "title": "person",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
ASK = [
    {"role": "system", "content": "You extract people."},
    {"role": "user", "content": "Ada is 36."},
]


@dataclass
class Reply:
    """One scripted answer: a chat completion with ``content``, or ``status`` with an
    error ``body``; ``hang`` holds the request open until the server closes."""

    content: str | None = None
    status: int = 200
    body: dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    refusal: str | None = None


class _Server:
    """POST /v1/chat/completions answered from a queue of replies; records every request."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.replies: deque[Reply] = deque()
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers["Authorization"], **body}
                )
                reply = outer.replies.popleft() if outer.replies else Reply(status=418)
                if reply.hang:
                    outer.release.wait(10)
                    return
                if reply.status == 200:
                    payload = {
                        "id": f"chatcmpl-{len(outer.requests)}",
                        "object": "chat.completion",
                        "created": 1767268800,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {
                                    "role": "assistant",
                                    "content": reply.content,
                                    "refusal": reply.refusal,
                                },
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
                    }
                else:
                    payload = reply.body or {"error": {"message": "no scripted reply left"}}
                raw = json.dumps(payload).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(  # a short poll interval keeps shutdown (and each test) quick
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()

    def script(self, *replies: str | Reply) -> None:
        self.replies.extend(r if isinstance(r, Reply) else Reply(content=r) for r in replies)

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def llm_at(server: _Server, **options) -> OpenAIChatLLM:
    return OpenAIChatLLM("qwen2.5:7b", base_url=server.url, **{"max_retries": 0, **options})


# ----------------------------------------------------------------------------- text


def test_plain_completion_sends_the_messages_and_returns_the_text(server):
    llm = llm_at(server)
    server.script("Ada is a person.")
    assert llm.complete(ASK) == "Ada is a person."
    assert isinstance(llm, LLM) and llm.identity == "openai:qwen2.5:7b"
    [request] = server.requests
    assert request == {
        "path": "/v1/chat/completions",
        "auth": "Bearer no-key",
        "model": "qwen2.5:7b",
        "messages": ASK,
        "temperature": 0.0,
    }


def test_api_key_and_max_tokens_are_sent_when_given_and_temperature_can_be_left_out(server):
    llm = llm_at(server, api_key="sk-test", max_tokens=50, temperature=None)
    server.script("ok")
    llm.complete([{"role": "user", "content": "hi"}])
    [request] = server.requests
    assert request["auth"] == "Bearer sk-test"
    assert request["max_tokens"] == 50 and "temperature" not in request


@pytest.mark.parametrize("content", ["", "   \n", None])
def test_an_empty_reply_is_an_error(server, content):
    server.script(Reply(content=content))
    with pytest.raises(LLMError, match=r"model qwen2.5:7b at http://127.0.0.1:\d+/v1 gave an"):
        llm_at(server).complete(ASK)


def test_a_refusal_is_an_error_that_carries_it(server):
    server.script(Reply(refusal="I can't help with that."))
    with pytest.raises(LLMError, match="qwen2.5:7b at .* refused to answer: I can't help"):
        llm_at(server).complete(ASK)


# ----------------------------------------------------------------------------- structured


def test_structured_output_uses_json_schema_where_the_server_takes_it(server):
    server.script('{"name": "Ada", "age": 36}')
    assert llm_at(server).complete(ASK, schema=PERSON) == {"name": "Ada", "age": 36}
    [request] = server.requests
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "person", "schema": PERSON, "strict": False},
    }
    assert request["messages"] == ASK  # the schema travels in response_format only


@pytest.mark.parametrize("status", [400, 422])
def test_a_server_refusing_json_schema_is_asked_in_the_prompt_from_then_on(server, status):
    llm = llm_at(server)
    refusal = {"error": {"message": "response_format type json_schema is not supported"}}
    server.script(
        Reply(status=status, body=refusal),
        'Sure! Here it is:\n```json\n{"name": "Ada", "age": 36,}\n```',
        'Per [1], Bob is {"name": "Bob", "age": 7} as asked.',  # the schema skips "[1]"
    )
    assert llm.complete(ASK, schema=PERSON) == {"name": "Ada", "age": 36}
    ask_bob = [{"role": "user", "content": "Bob is 7."}]
    assert llm.complete(ask_bob, schema=PERSON) == {"name": "Bob", "age": 7}

    first, fallback, second = server.requests
    assert "response_format" in first
    assert "response_format" not in fallback and "response_format" not in second
    system = fallback["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You extract people.")
    assert json.dumps(PERSON) in system["content"]  # one system message, schema appended
    assert fallback["messages"][1:] == ASK[1:]
    assert second["messages"][0]["role"] == "system"  # added where there was none
    assert json.dumps(PERSON) in second["messages"][0]["content"]
    assert second["messages"][1:] == ask_bob


def test_a_400_after_json_schema_was_accepted_is_an_error_not_a_fallback(server):
    llm = llm_at(server)
    too_long = {"error": {"message": "context length exceeded"}}
    server.script('{"name": "Ada", "age": 36}', Reply(status=400, body=too_long))
    llm.complete(ASK, schema=PERSON)
    with pytest.raises(LLMError, match="refused the request: .*context length exceeded"):
        llm.complete(ASK, schema=PERSON)
    assert len(server.requests) == 2


def test_a_400_that_the_prompt_fallback_gets_too_is_an_error_and_not_remembered(server):
    llm = llm_at(server)
    too_long = {"error": {"message": "context length exceeded"}}
    server.script(Reply(status=400, body=too_long), Reply(status=400, body=too_long))
    with pytest.raises(LLMError, match="refused the request: .*context length exceeded"):
        llm.complete(ASK, schema=PERSON)
    server.script('{"name": "Ada", "age": 36}')
    assert llm.complete(ASK, schema=PERSON) == {"name": "Ada", "age": 36}
    assert ["response_format" in r for r in server.requests] == [True, False, True]


def test_a_reply_missing_a_required_key_is_sent_back_once_and_the_retry_wins(server):
    server.script('{"name": "Ada"}', '{"name": "Ada", "age": 36}')
    assert llm_at(server).complete(ASK, schema=PERSON) == {"name": "Ada", "age": 36}
    first, retry = server.requests
    assert retry["messages"][: len(ASK)] == ASK
    assert retry["messages"][len(ASK)] == {"role": "assistant", "content": '{"name": "Ada"}'}
    assert retry["messages"][-1]["role"] == "user"
    assert "$: missing key 'age'" in retry["messages"][-1]["content"]
    assert retry["response_format"] == first["response_format"]


def test_no_json_twice_is_an_error_that_quotes_the_reply(server):
    server.script("I cannot tell.", "Still no idea, sorry.")
    with pytest.raises(LLMError, match="after 2 attempts: the reply holds no JSON: 'Still no"):
        llm_at(server).complete(ASK, schema=PERSON)
    assert len(server.requests) == 2
    assert "holds no JSON" in server.requests[1]["messages"][-1]["content"]


# ----------------------------------------------------------------------------- transport


def test_a_5xx_is_retried_by_the_client(server):
    # retry-after-ms keeps the client's back-off (0.5 s by default) out of the test's time
    overloaded = {"error": {"message": "overloaded"}}
    server.script(Reply(status=500, body=overloaded, headers={"retry-after-ms": "10"}), "recovered")
    assert llm_at(server, max_retries=1).complete(ASK) == "recovered"
    assert len(server.requests) == 2


def test_a_5xx_without_retries_left_names_the_endpoint_and_model(server):
    server.script(Reply(status=503, body={"error": {"message": "model not loaded"}}))
    with pytest.raises(LLMError, match=r"model qwen2.5:7b at http://127.*/v1 failed: .*not loaded"):
        llm_at(server).complete(ASK)


def test_a_slow_server_times_out_quickly_with_a_clear_error(server):
    server.script(Reply(hang=True))
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"timed out after 0.3s"):
        llm_at(server, timeout=0.3).complete(ASK)
    assert time.monotonic() - started < 3


def test_an_unreachable_server_is_a_clear_error():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = OpenAIChatLLM("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=2)
    with pytest.raises(LLMError, match=f"model m at http://127.0.0.1:{port}/v1 could not be"):
        llm.complete(ASK)


# ----------------------------------------------------------------------------- input


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([], "messages"),
        ("hello", "messages"),
        (["hello"], "messages[0]"),
        ([{"role": "user", "content": "x", "name": "ada"}], "messages[0]"),
        ([{"role": "user", "content": "x"}, {"role": "robot", "content": "x"}], "messages[1].role"),
        ([{"role": "user"}], "messages[0].content"),
        ([{"role": "user", "content": 3}], "messages[0].content"),
    ],
)
def test_bad_messages_are_refused_before_any_request(server, messages, field):
    with pytest.raises(InvalidInput) as err:
        llm_at(server).complete(messages)
    assert err.value.field == field
    with pytest.raises(InvalidInput) as err:
        llm_at(server).complete(ASK, schema="person")
    assert err.value.field == "schema"
    assert server.requests == []


@pytest.mark.parametrize(
    ("options", "field"),
    [({"model": " "}, "model"), ({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries")],
)
def test_bad_options_name_the_field(options, field):
    with pytest.raises(InvalidInput) as err:
        OpenAIChatLLM(**{"model": "m", **options})
    assert err.value.field == field


def test_get_llm_knows_the_built_ins_and_lists_them_for_an_unknown_name(server):
    llm = get_llm("openai", model="qwen2.5:7b", base_url=server.url)
    assert isinstance(llm, OpenAIChatLLM) and llm.base_url == server.url
    claude = get_llm("anthropic", model="claude-sonnet-4-5")
    assert isinstance(claude, AnthropicLLM) and claude.identity == "anthropic:claude-sonnet-4-5"
    with pytest.raises(InvalidInput, match=r"unknown LLM provider 'gpt'.*'anthropic', 'openai'"):
        get_llm("gpt")


@pytest.mark.parametrize(
    ("module", "llm", "install"),
    [
        ("openai", OpenAIChatLLM("m"), "pip install 'hivemem[openai]'"),
        ("anthropic", AnthropicLLM("claude-sonnet-4-5"), "pip install 'hivemem[anthropic]'"),
    ],
)
def test_a_missing_client_gives_the_install_command(monkeypatch, module, llm, install):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import <module>` fail
    with pytest.raises(MissingDependency) as err:
        llm.complete(ASK)
    assert err.value.install == install and f"`{install}`" in str(err.value)


# ----------------------------------------------------------------------------- parser


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('Here:\n```\n{"a": 1}\n```\nDone.', {"a": 1}),
        ('Sure, the answer is {"a": {"b": 2}} - hope that helps!', {"a": {"b": 2}}),
        ('Note [a]: see {x}. Result: {"a": "}{ ]"}.', {"a": "}{ ]"}),
        ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}),
        ('{"a": "keep , } this",}', {"a": "keep , } this"}),
        ('{"a": "say \\"hi\\" {"}', {"a": 'say "hi" {'}),
        ('<think>maybe {"a": 2}?</think>\n{"a": 1}', {"a": 1}),
    ],
)
def test_parse_json_reply_tolerates_what_models_write(reply, value):
    assert parse_json_reply(reply) == value


@pytest.mark.parametrize("reply", ["I don't know.", '{"a": [1, 2', "", "x" * 300])
def test_parse_json_reply_refuses_replies_without_json_and_quotes_their_start(reply):
    with pytest.raises(LLMError) as err:
        parse_json_reply(reply)
    assert repr(reply[:200]) in str(err.value) and "x" * 201 not in str(err.value)


def test_schema_errors_checks_types_required_keys_and_nesting():
    schema = {
        "type": "object",
        "required": ["facts"],
        "properties": {
            "facts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["text"],
                    "properties": {
                        "text": {"type": "string"},
                        "weight": {"type": "number"},
                        "count": {"type": "integer"},
                        "kind": {"enum": ["fact", "preference"]},
                        "note": {"type": ["string", "null"]},
                        "sure": {"type": "boolean"},
                    },
                },
            }
        },
    }
    good = {
        "facts": [
            {"text": "a", "weight": 1, "count": 2.0, "kind": "fact", "note": None, "sure": True}
        ]
    }
    assert schema_errors(good, schema) == []
    bad = {
        "facts": [
            {"weight": "heavy", "count": True, "kind": "rumour", "note": 3},
            {"text": 1, "sure": 1},
        ]
    }
    assert schema_errors(bad, schema) == [
        "$.facts[0]: missing key 'text'",
        "$.facts[0].weight: expected number, got str",
        "$.facts[0].count: expected integer, got bool",
        "$.facts[0].kind: 'rumour' is not one of ['fact', 'preference']",
        "$.facts[0].note: expected string or null, got int",
        "$.facts[1].text: expected string, got int",
        "$.facts[1].sure: expected boolean, got int",
    ]
    assert schema_errors([], schema) == ["$: expected object, got list"]
